"""The time an SRE's question names ("since 05:18 UTC on 2022-08-22", "2022-08-22 05:18 开始",
"in the last 15 minutes", "过去 20 分钟"), read against the run's clock, so the telemetry tools look at
the incident's window without the model having to write timestamps. Times without a zone are UTC;
a time of day without a date is the latest such time not after the clock."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_DATE_TIME = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})?(?:[ T]|\s*(?:at|on)?\s*)?"
    r"(?<![\d:])(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?(?![\d:])"
)
_DATE_AFTER = re.compile(r"(?:on|于)?\s*(?P<date>\d{4}-\d{2}-\d{2})")
_LAST = re.compile(
    r"(?:last|past|previous)\s+(?P<n>\d+)\s*(?P<u>min(?:ute)?s?|h(?:our)?s?)|(?:最近|过去|近)\s*(?P<zn>\d+)\s*(?P<zu>分钟|小时)",
    re.I,
)


def incident_start(question: str, as_of: float) -> float | None:
    """The earliest instant not after ``as_of`` that the question names, or None."""
    clock = datetime.fromtimestamp(as_of, UTC)
    found: list[float] = []
    for m in _DATE_TIME.finditer(question):
        date = m.group("date")
        if not date:
            after = _DATE_AFTER.search(question[m.end() : m.end() + 24])
            date = after.group("date") if after else None
        h, mi, s = int(m.group("h")), int(m.group("m")), int(m.group("s") or 0)
        if date:
            try:
                t = datetime.strptime(date, "%Y-%m-%d").replace(hour=h, minute=mi, second=s, tzinfo=UTC)
            except ValueError:
                continue
        else:
            t = clock.replace(hour=h, minute=mi, second=s, microsecond=0)
            if t > clock:
                t -= timedelta(days=1)
        if t.timestamp() <= as_of:
            found.append(t.timestamp())
    for m in _LAST.finditer(question):
        n = int(m.group("n") or m.group("zn"))
        unit = (m.group("u") or m.group("zu") or "").lower()
        seconds = 3600 if unit.startswith("h") or unit == "小时" else 60
        found.append(as_of - n * seconds)
    return min(found) if found else None
