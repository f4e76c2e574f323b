"""What a window of spans says against its baseline: per call edge and per operation, how many calls
and how slow (p90), so a reader sees where the time went and which edge changed.

The baseline spans are those of the capture that runs up to the window without a gap (``derived.py``):
with continuous tracing that is the whole baseline window; in a replay that kept only the minutes
around each fault it is the quiet time just before the window.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from telemetry.analysis.derived import bucket, contiguous
from telemetry.model import Span, with_callers


@dataclass
class Timing:
    """Calls and p90 latency (seconds) of one edge or operation, in the window and in the baseline."""

    name: str
    calls: int
    p90_s: float
    baseline_calls: int
    baseline_p90_s: float | None

    @property
    def ratio(self) -> float | None:
        if self.baseline_p90_s is None or self.baseline_p90_s <= 0:
            return None
        return self.p90_s / self.baseline_p90_s


def baseline_spans(spans: list[Span], window_start: float) -> list[Span]:
    """The spans before the window that belong to the capture running up to it."""
    before = [s for s in spans if s.start < window_start]
    keep = set(contiguous(sorted({bucket(s.start) for s in before}), window_start))
    return [s for s in before if bucket(s.start) in keep]


def _edge_durations(spans: list[Span]) -> dict[str, list[float]]:
    """``caller->callee``: the durations of the callee's spans whose parent span is the caller's."""
    out: dict[str, list[float]] = defaultdict(list)
    for s, caller in with_callers(spans):
        if caller and caller != s.service:
            out[f"{caller}->{s.service}"].append(s.duration)
    return out


def _operation_durations(spans: list[Span]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for s in spans:
        out[f"{s.service} {s.operation}"].append(s.duration)
    return out


def _timings(window: dict[str, list[float]], baseline: dict[str, list[float]]) -> list[Timing]:
    out = []
    for name, durations in window.items():
        base = baseline.get(name) or []
        out.append(
            Timing(
                name,
                len(durations),
                float(np.percentile(durations, 90)),
                len(base),
                float(np.percentile(base, 90)) if base else None,
            )
        )
    return out


def edge_timings(window: list[Span], baseline: list[Span]) -> list[Timing]:
    return _timings(_edge_durations(window), _edge_durations(baseline))


def operation_timings(window: list[Span], baseline: list[Span]) -> list[Timing]:
    return _timings(_operation_durations(window), _operation_durations(baseline))


def most_changed(timings: list[Timing]) -> list[Timing]:
    """Slower against the baseline first (the largest p90 ratio), then the new ones, then the slowest."""
    return sorted(timings, key=lambda t: (-(t.ratio or 0.0), t.baseline_p90_s is not None, -t.p90_s, t.name))
