"""Traces and logs beside metrics: the TrainTicket day's gzip logs and spans, the call graph read from
spans, the clock guard on spans, and the per-bucket signals the ranking derives from logs and traces."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from telemetry.analysis.derived import BUCKET_S, contiguous, log_error_series, span_latency_series
from telemetry.backends.nezha import NezhaTelemetry, _message
from telemetry.combined import ClockedTelemetry
from telemetry.model import Edge, LogRecord, Span

FAULT = datetime(2023, 1, 29, 8, 43, 4, tzinfo=UTC).timestamp()  # ts-contacts-service, "return"


@pytest.fixture(scope="module")
def trainticket_day(shared_dir: Path) -> Path:
    return shared_dir / "data" / "nezha-rca-trainticket" / "rca_data" / "2023-01-29"


@pytest.fixture(scope="module")
def trainticket(trainticket_day: Path) -> NezhaTelemetry:
    """One backend for the module: the day's logs and spans are read once."""
    return NezhaTelemetry(trainticket_day)


def test_logback_lines_give_their_level_and_lose_time_and_trace_ids() -> None:
    raw = (
        '{"log":"16:43:17.120 ERROR  c.s.ContactsServiceImpl#37 TraceID: dc7d SpanID: b6ce '
        '[findContactsById][No contacts according to contactsId]\\n","stream":"stdout"}'
    )
    assert _message(raw) == (
        "ERROR",
        "c.s.ContactsServiceImpl#37 [findContactsById][No contacts according to contactsId]",
    )
    assert _message('{"log":"no level here"}') == ("", "no level here")


async def test_gzip_logs_and_spans_are_read_in_place(trainticket_day: Path, trainticket: NezhaTelemetry) -> None:
    assert not list((trainticket_day / "log").glob("*.csv")), "the day ships gzip only: this reads .csv.gz"
    backend = trainticket
    logs = await backend.logs("ts-contacts-service", FAULT, FAULT + 120)
    assert logs and any(r.level == "ERROR" and "No contacts according to contactsId" in r.message for r in logs)
    spans = await backend.spans(FAULT - 60, FAULT + 120)
    assert spans is not None and len(spans) > 1000
    assert all(FAULT - 60 <= s.start and s.end <= FAULT + 120 for s in spans)
    # The first row of 08_44's file, as its CSV has it.
    with gzip.open(trainticket_day / "trace" / "08_44_trace.csv.gz", "rt") as fh:
        fh.readline()
        first = fh.readline().strip().split(",")
    match = [s for s in spans if s.span_id == first[1]]
    assert len(match) == 1 and match[0].trace_id == first[0] and match[0].operation == first[4]
    assert match[0].parent_id == ("" if first[2] == "root" else first[2])
    assert match[0].duration == pytest.approx((int(first[6]) - int(first[5])) / 1e9, abs=1e-6)  # float seconds


async def test_the_call_graph_comes_from_spans_where_no_dependency_file_exists(
    trainticket_day: Path, trainticket: NezhaTelemetry
) -> None:
    assert not (trainticket_day / "metric" / "dependency.csv").exists()
    edges = await trainticket.edges()
    assert Edge("ts-gateway-service", "ts-auth-service") in edges
    assert Edge("ts-auth-service", "ts-gateway-service") not in edges
    assert all(e.caller != e.callee for e in edges)


async def test_no_span_that_ends_after_the_clock_gets_out(trainticket: NezhaTelemetry) -> None:
    spans = await ClockedTelemetry(trainticket, FAULT).spans(FAULT - 3600, FAULT + 3600)
    assert spans and max(s.end for s in spans) <= FAULT
    unclocked = await trainticket.spans(FAULT - 3600, FAULT + 3600)
    assert unclocked is not None and max(s.end for s in unclocked) > FAULT


def _without_traces(day: Path, tmp_path: Path) -> Path:
    """The day's metrics and labels without its trace/ folder (the shared day gained traces)."""
    copy = tmp_path / day.name
    copy.mkdir()
    for part in day.iterdir():
        if part.name not in ("trace", "traceid"):
            (copy / part.name).symlink_to(part)
    return copy


async def test_a_day_without_traces_says_so(nezha_day: Path, tmp_path: Path) -> None:
    assert await NezhaTelemetry(_without_traces(nezha_day, tmp_path)).spans(0, 2e9) is None


def test_the_baseline_is_the_capture_that_runs_up_to_the_window() -> None:
    b = BUCKET_S
    buckets = [0.0, b, 10 * b, 11 * b, 12 * b, 13 * b]  # a gap between 1 and 10, then a run into the window
    assert contiguous(buckets, 12 * b) == [10 * b, 11 * b, 12 * b, 13 * b]
    assert contiguous(buckets, 2 * b) == buckets  # with no gap before the window, all of it


def test_error_lines_count_per_captured_bucket_and_zero_where_a_service_was_quiet() -> None:
    t = 1000 * BUCKET_S
    records = {
        "a": [LogRecord(t + 1, "a", "a-1", "ERROR", "x"), LogRecord(t + 2, "a", "a-1", "INFO", "y")],
        "b": [LogRecord(t + BUCKET_S + 1, "b", "b-1", "error", "z"), LogRecord(t - BUCKET_S, "b", "b-1", "INFO", "w")],
    }
    by_service = {s.service: s for s in log_error_series(records, t)}
    assert list(by_service["a"].ts) == [t - BUCKET_S, t, t + BUCKET_S]
    assert list(by_service["a"].values) == [0, 1, 0] and list(by_service["b"].values) == [0, 0, 1]


def test_span_latency_is_that_of_the_spans_a_service_serves() -> None:
    t = 1000 * BUCKET_S

    def span(sid: str, parent: str, service: str, dur: float, at: float = t) -> Span:
        return Span(at, at + dur, service, f"{service}-pod", "op", "trace", sid, parent)

    spans = [
        span("1", "", "gateway", 1.0),
        span("2", "1", "gateway", 0.9),  # internal: its parent is in the same service
        span("3", "2", "orders", 0.5),
        span("4", "", "gateway", 0.2, t + BUCKET_S),
    ]
    by_service = {s.service: s for s in span_latency_series(spans, t)}
    assert by_service["gateway"].values.tolist() == pytest.approx([1.0, 0.2])
    assert by_service["orders"].values[0] == 0.5 and np.isnan(by_service["orders"].values[1])


async def test_query_traces_shows_the_slowed_edges_behind_the_clock(
    trainticket_day: Path, nezha_day: Path, tmp_path: Path
) -> None:
    from harness.tools.telemetry import TelemetryView
    from harness.tools.traces import QueryTracesTool

    fault = datetime(2023, 1, 29, 10, 26, 20, tzinfo=UTC).timestamp()  # an exception in ts-travel2-service
    as_of = fault + 300
    view = TelemetryView(ClockedTelemetry(NezhaTelemetry(trainticket_day), as_of), as_of, fault - fault % 60)
    result = await QueryTracesTool(view).run({"service": "ts-travel2-service"})
    assert result.status == "success", result.output
    out = result.output
    assert out["edges"] and all("ts-travel2-service" in e["name"].split("->") for e in out["edges"])
    assert all(o["name"].startswith("ts-travel2-service ") for o in out["operations"])
    first = out["evidence"][0]
    assert first["key"] == "trace:ts-basic-service:ts-travel2-service->ts-basic-service:2023-01-29T10:26Z"
    assert first["text"].startswith("call ts-travel2-service->ts-basic-service: 33 calls in the window, p90 0.772 s")
    assert out["baseline_spans"] > 0 and out["spans_in_window"] > out["baseline_spans"]
    # Nothing past the clock: the same window read an hour later holds more spans.
    later = TelemetryView(
        ClockedTelemetry(NezhaTelemetry(trainticket_day), as_of + 3600), as_of + 3600, view.incident_start
    )
    wider = await QueryTracesTool(later).run({"service": "ts-travel2-service", "end": str(as_of + 3600)})
    assert wider.output["spans_in_window"] > out["spans_in_window"]
    none = await QueryTracesTool(TelemetryView(NezhaTelemetry(_without_traces(nezha_day, tmp_path)), as_of)).run({})
    assert none.status == "no_data" and none.output["error"] == "the backend has no traces"
