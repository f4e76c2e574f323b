"""Time windows resolved against a run's explicit clock ``as_of``.

Every instant is a float of epoch seconds (UTC). A time spec is RFC 3339 (``2022-08-22T05:18:00Z``,
``2022-08-22 05:18``), epoch seconds (``1661145480``), ``now``, or relative to ``as_of`` (``-30m``,
``-2h``, ``-1d``, ``-90s``). Nothing after ``as_of`` is ever visible: a window's end is clamped to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

DEFAULT_WINDOW_S = 30 * 60
DEFAULT_BASELINE_S = 30 * 60
_RELATIVE = re.compile(r"^\s*-\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class TimeSpecError(ValueError):
    """A time the user or the model gave that cannot be read; the message says which forms work."""


def parse_instant(spec: str | float | int, as_of: float) -> float:
    """One time spec as epoch seconds (UTC), relative specs counted back from ``as_of``."""
    if isinstance(spec, bool):
        raise TimeSpecError(f"not a time: {spec!r}")
    if isinstance(spec, int | float):
        return float(spec)
    text = str(spec).strip()
    if not text:
        raise TimeSpecError("empty time")
    if text.lower() == "now":
        return as_of
    rel = _RELATIVE.match(text)
    if rel:
        return as_of - float(rel.group(1)) * _UNITS[rel.group(2)]
    if re.fullmatch(r"\d{9,11}(\.\d+)?", text):
        return float(text)
    iso = text.replace("Z", "+00:00").replace("z", "+00:00")
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}", iso):
        iso += ":00"
    try:
        parsed = datetime.fromisoformat(iso)
    except ValueError:
        raise TimeSpecError(
            f"cannot read time {text!r}: use RFC 3339 (2022-08-22T05:18:00Z), epoch seconds, or -30m / -2h / -1d"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)  # times without a zone are UTC, as the tools document
    return parsed.timestamp()


def iso(t: float) -> str:
    """RFC 3339, UTC, to the second."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def minute(t: float) -> str:
    """RFC 3339 to the minute: the form evidence keys use."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%MZ")


@dataclass(frozen=True)
class Window:
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def contains(self, t: float) -> bool:
        return self.start <= t <= self.end

    def describe(self) -> dict[str, str]:
        return {"start": iso(self.start), "end": iso(self.end)}


def resolve_window(
    start: str | float | int | None,
    end: str | float | int | None,
    as_of: float,
    default_start: float | None = None,
    default_span_s: float = DEFAULT_WINDOW_S,
) -> Window:
    """The window a tool looks at: ``[start, end]`` with ``end`` clamped to ``as_of``.

    Defaults: ``end`` = ``as_of``; ``start`` = ``default_start`` (the incident start the question
    named, when it named one) or ``end - 30 min``.
    """
    stop = as_of if end is None or end == "" else min(parse_instant(end, as_of), as_of)
    if start is None or start == "":
        begin = default_start if default_start is not None and default_start < stop else stop - default_span_s
    else:
        begin = parse_instant(start, as_of)
    if begin >= stop:
        raise TimeSpecError(
            f"the window starts at {iso(begin)}, not before its end {iso(stop)} (the clock is {iso(as_of)})"
        )
    return Window(begin, stop)


def baseline_window(window: Window, span_s: float = DEFAULT_BASELINE_S, data_start: float | None = None) -> Window:
    """The ``span_s`` before the window (shorter when the data starts later)."""
    begin = window.start - span_s
    if data_start is not None:
        begin = max(begin, data_start)
    return Window(begin, window.start)


def parse_span(spec: str | float | int | None, default_s: float) -> float:
    """A duration such as ``30m`` / ``2h`` / ``900`` (seconds)."""
    if spec is None or spec == "":
        return default_s
    if isinstance(spec, int | float) and not isinstance(spec, bool):
        return float(spec)
    m = re.fullmatch(r"\s*-?\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(spec))
    if not m:
        raise TimeSpecError(f"cannot read duration {spec!r}: use 30m, 2h, 1d or seconds")
    return float(m.group(1)) * _UNITS.get(m.group(2) or "s", 1)
