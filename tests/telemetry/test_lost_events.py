"""Lost events: what a service's requests did before and stopped doing, on hand-made spans and logs
and on a labelled fault of the TrainTicket day."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from telemetry.analysis.derived import BUCKET_S, logs_and_spans
from telemetry.analysis.lost_events import SIGNAL, lost_event_deviations, requests
from telemetry.analysis.ranking import categorize, rank_anomalies
from telemetry.backends.nezha import NezhaTelemetry
from telemetry.clock import Window
from telemetry.combined import ClockedTelemetry
from telemetry.model import LogRecord, Span

T = 1000 * BUCKET_S


def _request(n: int, at: float, logs: bool, level: str = "INFO") -> tuple[list[Span], list[LogRecord]]:
    """One request to routes' GET /routes/{id}: its entry span, a handler span, a call to the database
    service, and (when ``logs``) a line written under the handler span."""
    trace = f"t{n}"
    spans = [
        Span(at, at + 0.05, "gateway", "gateway-1", "GET /*", trace, f"{n}g", ""),
        Span(at, at + 0.04, "routes", "routes-1", "GET /routes/{id}", trace, f"{n}e", f"{n}g"),
        Span(at, at + 0.03, "routes", "routes-1", "RouteController.get", trace, f"{n}h", f"{n}e"),
        Span(at, at + 0.01, "db", "db-1", "SELECT route", trace, f"{n}d", f"{n}h"),
    ]
    lines = [LogRecord(at, "routes", "routes-1", level, f"Query route by id {n}", f"{n}h")] if logs else []
    return spans, lines


def _traffic(per_bucket: int, buckets: range, logs: bool, level: str = "INFO") -> tuple[list[Span], list[LogRecord]]:
    spans: list[Span] = []
    lines: list[LogRecord] = []
    for b in buckets:
        for i in range(per_bucket):
            s, ln = _request(b * 100 + i, T + b * BUCKET_S + i, logs, level)
            spans += s
            lines += ln
    return spans, lines


def test_a_request_carries_its_calls_operations_and_log_lines() -> None:
    spans, lines = _request(1, T, logs=True)
    by_op = {r.operation: r for r in requests(spans, lines)}
    assert by_op["GET /routes/{id}"].events == frozenset(
        {"runs RouteController.get", "calls db", "logs 'Query route by id <*>'"}
    )
    assert by_op["GET /*"].events == frozenset({"calls routes"})


def test_a_log_line_the_handler_stopped_writing_is_lost_from_its_onset() -> None:
    before = _traffic(3, range(-6, 3), logs=True)  # 2 minutes of baseline and a minute of the window
    after = _traffic(3, range(3, 9), logs=False)  # the same requests, no longer logging
    found = lost_event_deviations(before[0] + after[0], before[1] + after[1], Window(T, T + 9 * BUCKET_S))
    assert [(d.service, d.signal, d.instance) for d in found] == [
        ("routes", SIGNAL, "GET /routes/{id}: logs 'Query route by id <*>'")
    ]
    d = found[0]
    assert d.onset == T + 3 * BUCKET_S and d.baseline_median == 1.0 and d.peak == 0.0
    assert d.score == pytest.approx(18**0.5)  # 18 requests expected to log it, none did
    assert categorize([d])[0] == "code"


@pytest.mark.parametrize("level", ["ERROR", "WARN", "warning"])
def test_fewer_requests_lose_nothing_and_errors_or_warnings_that_stop_are_not_lost(level: str) -> None:
    quieter = _traffic(4, range(-6, 3), logs=True)
    fewer = _traffic(1, range(3, 9), logs=True)  # the mix changed, each request still logs and calls
    window = Window(T, T + 9 * BUCKET_S)
    assert lost_event_deviations(quieter[0] + fewer[0], quieter[1] + fewer[1], window) == []
    # A warning reports the unusual path ("[Get Order By ID Fail][Order not found]"), like an error.
    erring = _traffic(3, range(-6, 3), logs=True, level=level)
    healed = _traffic(3, range(3, 9), logs=False)
    assert lost_event_deviations(erring[0] + healed[0], erring[1] + healed[1], window) == []


def test_after_a_gap_in_the_capture_nothing_counts_as_after() -> None:
    before = _traffic(3, range(-6, 3), logs=True)
    later = _traffic(3, range(30, 36), logs=False)  # a capture long after, with a gap between
    assert lost_event_deviations(before[0] + later[0], before[1] + later[1], Window(T, T + 40 * BUCKET_S)) == []


@pytest.fixture(scope="module")
def trainticket(shared_dir: Path) -> NezhaTelemetry:
    return NezhaTelemetry(shared_dir / "data" / "nezha-rca-trainticket" / "rca_data" / "2023-01-29")


async def test_the_route_service_exception_is_found_by_the_line_it_stopped_logging(trainticket: NezhaTelemetry) -> None:
    fault = datetime(2023, 1, 29, 10, 56, 45, tzinfo=UTC).timestamp()  # labelled: exception in ts-route-service
    start = fault - fault % 60
    window = Window(start, fault + 300)
    data = await logs_and_spans(ClockedTelemetry(trainticket, fault + 300), start - 1800, fault + 300)
    lost = {d.service: d for d in lost_event_deviations(data.spans, data.lines, window)}
    route = lost["ts-route-service"]
    assert "Query route by id" in route.instance and route.baseline_median == 1.0 and route.peak == 0.0625
    assert route.score == max(d.score for d in lost.values())
    ranked = await rank_anomalies(ClockedTelemetry(trainticket, fault + 300), window, Window(start - 1800, start))
    assert ranked[0].service == "ts-route-service" and ranked[0].category == "code"


async def test_rank_anomalies_says_what_the_requests_stopped_doing(trainticket: NezhaTelemetry) -> None:
    from harness.tools.telemetry import RankAnomaliesTool, TelemetryView

    fault = datetime(2023, 1, 29, 10, 56, 45, tzinfo=UTC).timestamp()
    view = TelemetryView(ClockedTelemetry(trainticket, fault + 300), fault + 300, fault - fault % 60)
    result = await RankAnomaliesTool(view).run({})
    first = result.output["evidence"][0]
    assert first["key"] == "anomaly:ts-route-service:2023-01-29T10:56Z"
    assert (
        "lost_events (/api/v1/routeservice/routes/byIds/: logs 'r.c.RouteController#53 [getRouteById]" in first["text"]
    )
    assert "100% of requests -> 6% of requests" in first["text"] and "Suspected code" in first["text"]
