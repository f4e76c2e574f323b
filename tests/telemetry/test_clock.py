"""Time specs and windows against a run's clock."""

from __future__ import annotations

import pytest

from harness.incident_time import incident_start
from telemetry.clock import TimeSpecError, Window, baseline_window, iso, parse_instant, parse_span, resolve_window

AS_OF = 1661145789.0  # 2022-08-22T05:23:09Z


def test_time_specs() -> None:
    assert parse_instant("2022-08-22T05:18:00Z", AS_OF) == 1661145480.0
    assert parse_instant("2022-08-22 05:18", AS_OF) == 1661145480.0  # no zone: UTC
    assert parse_instant("2022-08-22T07:18:00+02:00", AS_OF) == 1661145480.0
    assert parse_instant("1661145480", AS_OF) == 1661145480.0
    assert parse_instant(1661145480, AS_OF) == 1661145480.0
    assert parse_instant("-30m", AS_OF) == AS_OF - 1800
    assert parse_instant("-2h", AS_OF) == AS_OF - 7200
    assert parse_instant("now", AS_OF) == AS_OF
    for bad in ("yesterday-ish", "", "-5x", "2022-13-40"):
        with pytest.raises(TimeSpecError):
            parse_instant(bad, AS_OF)
    assert parse_span("15m", 0) == 900 and parse_span(None, 42) == 42


def test_windows_never_pass_the_clock() -> None:
    w = resolve_window(None, None, AS_OF)
    assert w == Window(AS_OF - 1800, AS_OF)
    assert resolve_window(None, "2030-01-01T00:00:00Z", AS_OF).end == AS_OF  # a future end is clamped
    assert resolve_window(None, None, AS_OF, default_start=1661145480.0).start == 1661145480.0
    assert resolve_window("-10m", None, AS_OF).start == AS_OF - 600
    with pytest.raises(TimeSpecError, match="not before its end"):
        resolve_window("2030-01-01T00:00:00Z", None, AS_OF)
    base = baseline_window(Window(1000.0, 2000.0), 1800, data_start=500.0)
    assert base == Window(500.0, 1000.0)  # shorter when the data starts later


def test_incident_start_from_the_question() -> None:
    assert iso(incident_start("errors since 05:18 UTC on 2022-08-22", AS_OF) or 0) == "2022-08-22T05:18:00Z"
    assert iso(incident_start("2022-08-22 05:18 起用户报错", AS_OF) or 0) == "2022-08-22T05:18:00Z"
    assert incident_start("p99 jumped in the last 15 minutes", AS_OF) == AS_OF - 900
    assert incident_start("过去 20 分钟 订单服务超时", AS_OF) == AS_OF - 1200
    assert incident_start("MySQL connection pool exhausted", AS_OF) is None
    # A time of day later than the clock is yesterday's; a named future instant is ignored.
    assert iso(incident_start("since 23:50", AS_OF) or 0) == "2022-08-21T23:50:00Z"
    assert incident_start("at 2030-01-01 10:00", AS_OF) is None
