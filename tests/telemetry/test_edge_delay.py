"""Where a delay sits: per-edge gaps from spans (call by call, since an onset), the service where the
slowed edges meet, the ranking that puts it above its callers, and the tools that cite it. Synthetic
spans for the rules; the OnlineBoutique day for one recorded network delay found from spans alone."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from harness.tools.telemetry import RankAnomaliesTool, TelemetryView
from harness.tools.traces import QueryTracesTool
from telemetry.analysis.deviation import Deviation
from telemetry.analysis.edge_delay import EDGE_DELAY, EDGE_GAP, edge_delay_deviations, span_gap_deviations
from telemetry.analysis.ranking import categorize, rank_services
from telemetry.backends.nezha import NezhaTelemetry
from telemetry.clock import Window
from telemetry.model import Edge, Span

WINDOW = Window(600.0, 900.0)


class _Traces:
    """Builds traces: each call is a caller's span with one child span in the callee."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self._n = 0

    def call(self, at: float, caller: str, callee: str, served_s: float = 0.004, gap_s: float = 0.002) -> None:
        self._n += 1
        trace, parent, child = f"t{self._n}", f"p{self._n}", f"c{self._n}"
        end = at + served_s + gap_s
        self.spans.append(Span(at, end, caller, f"{caller}-pod", "client", trace, parent, ""))
        half = gap_s / 2
        self.spans.append(Span(at + half, end - half, callee, f"{callee}-pod", "server", trace, child, parent))

    def steady(self, caller: str, callee: str, start: float, end: float, every_s: float = 5.0, **kw: float) -> None:
        for at in np.arange(start, end, every_s):
            self.call(float(at), caller, callee, **kw)


def _delayed_at(service: str, delay_s: float, onset: float) -> _Traces:
    """frontend -> cart -> redis and frontend -> ads; ``service`` delays what it sends from ``onset``."""
    t = _Traces()
    for caller, callee in (("frontend", "cart"), ("cart", "redis"), ("frontend", "ads")):
        t.steady(caller, callee, 0.0, onset)
        gap = 0.002 + (delay_s if service in (caller, callee) else 0.0)
        t.steady(caller, callee, onset, 900.0, gap_s=gap)
    return t


def test_the_service_where_the_slowed_edges_meet_takes_them() -> None:
    spans = _delayed_at("cart", 0.3, onset=700.0).spans
    gaps = span_gap_deviations(spans, WINDOW)
    slowed = sorted(d.instance for d in gaps if d.anomalous)
    assert slowed == ["cart->redis (spans)", "frontend->cart (spans)"]
    meets = edge_delay_deviations(gaps)
    assert [(d.service, d.signal) for d in meets] == [("cart", EDGE_DELAY)]
    assert meets[0].instance == "all 2 of its edges (cart->redis, frontend->cart)"
    assert meets[0].peak == pytest.approx(0.3, abs=0.01)
    assert meets[0].onset == pytest.approx(700.0, abs=10.0)


def test_one_slowed_edge_goes_to_the_end_whose_edges_all_slowed() -> None:
    # ads is a leaf; frontend calls two services: a slowed frontend->ads is ads', not frontend's.
    spans = _delayed_at("ads", 0.3, onset=700.0).spans
    meets = edge_delay_deviations(span_gap_deviations(spans, WINDOW))
    assert [d.service for d in meets] == ["ads"] and meets[0].instance == "its only edge (frontend->ads)"


def test_a_slow_mode_the_edge_already_had_and_scattered_slow_calls_are_not_a_delay() -> None:
    t = _Traces()
    # One call in ten waits ~230 ms before and during the window (a client's delayed acknowledgement).
    for n, at in enumerate(np.arange(0.0, 900.0, 5.0)):
        t.call(float(at), "a", "b", gap_s=0.23 if n % 10 == 0 else 0.002)
    # A sparse edge with one slow call near the window's end.
    for at in (100.0, 300.0, 500.0, 620.0, 700.0, 800.0, 880.0):
        t.call(at, "a", "c", gap_s=0.23 if at == 880.0 else 0.002)
    gaps = span_gap_deviations(t.spans, WINDOW)
    assert gaps and not any(d.anomalous for d in gaps)
    assert edge_delay_deviations(gaps) == []


def test_a_capture_that_starts_inside_the_window_reads_its_baseline_before_the_onset() -> None:
    t = _Traces()
    t.steady("a", "b", 610.0, 700.0)
    t.steady("a", "b", 700.0, 900.0, gap_s=0.4)
    (gap,) = span_gap_deviations(t.spans, WINDOW)
    assert gap.anomalous and gap.onset == pytest.approx(700.0, abs=10.0) and gap.baseline_median == pytest.approx(0.002)


def _delay(service: str, score: float) -> Deviation:
    return Deviation(service, EDGE_DELAY, "its only edge (x->y)", 0.0, None, 10, 10, 0.3, None, score, 700.0)


def _latency(service: str, score: float) -> Deviation:
    return Deviation(service, "latency_p90", f"{service}-pod", 0.1, 0.01, 30, 5, 0.5, 0.5, score, 700.0)


def test_a_callee_s_slowed_edges_do_not_excuse_its_caller_and_read_as_network() -> None:
    devs = [_latency("frontend", 20.0), _delay("cart", 40.0), _latency("cart", 1.0)]
    ranked = rank_services(devs, [Edge("frontend", "cart")])
    assert [a.service for a in ranked] == ["cart", "frontend"]
    assert ranked[1].explained_by is None  # cart's own latency barely moved: nothing below explains frontend
    category, reason = categorize(ranked[0].deviations)
    assert category == "network" and "300 ms longer between the services" in reason


@pytest.fixture(scope="module")
def boutique_without_edge_files(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The OnlineBoutique day's 05:52 minutes with pod metrics and spans only (no per-edge latency files):
    what a TrainTicket day holds."""
    day = shared_dir / "data" / "nezha-rca-onlineboutique" / "rca_data" / "2022-08-22"
    copy = tmp_path_factory.mktemp("ob") / "2022-08-22"
    (copy / "metric").mkdir(parents=True)
    (copy / "trace").mkdir()
    for pod in day.glob("metric/*_metric.csv"):
        (copy / "metric" / pod.name).symlink_to(pod)
    for minute in ("05_52", "05_53"):
        shutil.copy(day / "trace" / f"{minute}_trace.csv.gz", copy / "trace")
    return copy


async def test_a_recorded_network_delay_is_found_from_spans_and_cited(boutique_without_edge_files: Path) -> None:
    # 2022-08-22 05:52:54, network_delay on paymentservice (the fault list); the day has no edge files here.
    t0 = datetime(2022, 8, 22, 5, 52, 54, tzinfo=UTC).timestamp()
    view = TelemetryView(NezhaTelemetry(boutique_without_edge_files), t0 + 300, t0 - t0 % 60)
    ranked = await RankAnomaliesTool(view).run({})
    top = ranked.output["ranking"][0]
    assert (top["service"], top["suspected_category"]) == ("paymentservice", "network")
    assert top["signals"][0]["signal"] == EDGE_DELAY
    traces = await QueryTracesTool(view).run({"service": "paymentservice"})
    first = traces.output["evidence"][0]
    assert first["key"] == "edge:paymentservice:2022-08-22T05:52Z"
    assert first["text"].startswith(
        "calls between services slowed where they meet paymentservice: its only edge "
        "(checkoutservice->paymentservice), 5"
    )
    assert traces.output["slowed_between"][0]["added_s"] > 0.5


async def test_the_per_edge_latency_files_give_each_edge_its_gap(shared_dir: Path) -> None:
    day = NezhaTelemetry(shared_dir / "data" / "nezha-rca-onlineboutique" / "rca_data" / "2022-08-22")
    t0 = datetime(2022, 8, 22, 5, 52, 0, tzinfo=UTC).timestamp()
    gaps = {s.instance: s for s in await day.series(EDGE_GAP, t0 - 600, t0 + 300)}
    assert "checkoutservice->paymentservice" in gaps and "frontend->checkoutservice" in gaps
    pay = gaps["checkoutservice->paymentservice"]
    # The caller's median minus the callee's: about 0 before the delay, most of a second during it.
    assert abs(float(np.nanmedian(pay.values[pay.ts < t0]))) < 0.01
    assert float(np.nanmax(pay.values[pay.ts >= t0])) > 0.5
