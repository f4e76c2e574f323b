"""Robust deviation and the anomaly ranking: synthetic series for the rules, the Nezha day for the
whole method (its accuracy over all faults is benchmarks/anomaly_ranking.py's job, not a test's)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from telemetry.analysis.deviation import deviation
from telemetry.analysis.ranking import categorize, rank_anomalies, rank_services
from telemetry.backends.nezha import NezhaTelemetry
from telemetry.clock import Window, baseline_window
from telemetry.model import Edge, Series
from telemetry.signals import SIGNALS, signal_spec
from tests.nezha_labels import faults, inject_time


def _series(values: list[float], signal: str = "latency_p90", service: str = "svc") -> Series:
    return Series(service, signal, f"{service}-pod", np.arange(len(values), dtype=float) * 60, np.array(values))


def test_a_baseline_holding_an_earlier_anomaly_does_not_mask_the_new_one() -> None:
    calm = [0.10, 0.11, 0.09, 0.10, 0.12, 0.10, 0.11, 0.10, 0.09, 0.10]
    earlier_fault = [0.10, 0.11, 2.0, 2.1, 0.10, 0.12, 0.10, 0.11, 0.09, 0.10]  # an earlier fault, 2 of 10 minutes
    window = Window(600.0, 840.0)
    for base in (calm, earlier_fault):
        s = _series([*base, 1.5, 1.6, 1.4, 1.5, 1.6])
        d = deviation(s, window, Window(0.0, 600.0), SIGNALS["latency_p90"])
        assert d.score > 30 and d.onset == 600.0


def test_one_stray_sample_is_not_an_anomaly_and_drops_do_not_count_for_latency() -> None:
    window, base = Window(600.0, 840.0), Window(0.0, 600.0)
    spike = _series([0.1] * 10 + [5.0, 0.1, 0.1, 0.1, 0.1])
    assert not deviation(spike, window, base, SIGNALS["latency_p90"]).anomalous
    drop = _series([1.0] * 10 + [0.1] * 5)
    assert deviation(drop, window, base, SIGNALS["latency_p90"]).score == 0
    traffic_drop = _series([100.0] * 10 + [10.0] * 5, "throughput")
    assert deviation(traffic_drop, window, base, SIGNALS["throughput"]).anomalous  # either direction counts


def test_a_p99_spike_the_baseline_already_had_is_not_news() -> None:
    # A quiet service's per-minute p99: mostly 0.1 s, and one minute in ten a slow request sets it.
    window, base = Window(600.0, 840.0), Window(0.0, 600.0)
    usual = [0.1, 0.1, 0.1, 2.0, 0.1, 0.1, 0.1, 0.1, 0.1, 2.2]
    again = _series([*usual, 0.1, 2.1, 0.1, 2.0, 0.1], "latency_p99")
    assert deviation(again, window, base, SIGNALS["latency_p90"]).anomalous  # the MAD alone sees 0.1 s
    assert not deviation(again, window, base, SIGNALS["latency_p99"]).anomalous
    new = _series([*usual, 9.0, 9.5, 9.2, 9.1, 9.4], "latency_p99")
    assert deviation(new, window, base, SIGNALS["latency_p99"]).anomalous


def test_the_callee_at_the_bottom_of_a_slow_chain_ranks_first() -> None:
    window, base = Window(600.0, 840.0), Window(0.0, 600.0)
    slow = [0.1] * 10 + [2.0] * 5
    devs = [
        deviation(_series(slow, service="frontend"), window, base, SIGNALS["latency_p90"]),
        deviation(_series([v * 0.9 for v in slow], service="db"), window, base, SIGNALS["latency_p90"]),
        deviation(_series([0.1] * 15, service="cache"), window, base, SIGNALS["latency_p90"]),
    ]
    ranked = rank_services(devs, [Edge("frontend", "db"), Edge("frontend", "cache")])
    assert [a.service for a in ranked][:2] == ["db", "frontend"]
    assert ranked[1].explained_by == "db" and ranked[0].explained_by is None


def test_categories() -> None:
    window, base = Window(600.0, 840.0), Window(0.0, 600.0)

    def dev(signal: str, values: list[float]):  # type: ignore[no-untyped-def]
        return deviation(_series(values, signal), window, base, SIGNALS[signal])

    flat, up = [0.1] * 15, [0.1] * 10 + [1.0] * 5
    assert categorize([dev("cpu", up), dev("latency_p90", up)])[0] == "cpu"
    assert categorize([dev("call_latency", up), dev("latency_p90", flat)])[0] == "network"
    assert categorize([dev("error_rate", [0.0] * 10 + [30.0] * 5)])[0] == "code"
    assert categorize([dev("latency_p90", up)])[0] == "unknown"


def test_a_service_waiting_on_its_database_is_a_dependency_fault() -> None:
    """Its pool's waiting connections rise while nothing of its own does: the database holds it up. A
    database server's own exporter metric says nothing about a dependency of the service it is on."""
    window, base = Window(600.0, 840.0), Window(0.0, 600.0)

    def dev(signal: str, values: list[float]):  # type: ignore[no-untyped-def]
        return deviation(_series(values, signal), window, base, signal_spec(signal))

    waiting, slow = [0.0] * 10 + [50.0] * 5, [0.1] * 10 + [30.0] * 5
    category, reason = categorize([dev("hikaricp_connections_pending", waiting), dev("latency_p99", slow)])
    assert category == "dependency"
    assert reason.startswith("it waits on its database (hikaricp_connections_pending ")
    assert categorize([dev("mysql_global_status_slow_queries", waiting)])[0] == "unknown"
    # A resource signal of its own still comes first.
    assert categorize([dev("cpu", slow), dev("db_client_connections_pending_requests", waiting)])[0] == "cpu"


async def test_ranking_on_the_logged_fault(nezha_day: Path) -> None:
    fault = next(f for f in faults(nezha_day) if f["inject_time"].endswith("05:18:09"))
    t0 = inject_time(fault)
    window = Window(t0 - t0 % 60, t0 + 300)
    ranked = await rank_anomalies(NezhaTelemetry(nezha_day), window, baseline_window(window))
    assert ranked[0].service == "currencyservice" and ranked[0].category == "cpu"
    assert ranked[0].onset is not None and window.contains(ranked[0].onset)
