"""File backends on real data: the Nezha day, Loghub, NAB, the bundled demo; the run clock's guard."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from telemetry.backends.files import FileTelemetry
from telemetry.backends.nezha import NezhaTelemetry
from telemetry.combined import ClockedTelemetry, CompositeTelemetry
from telemetry.model import Edge, service_of
from tests.conftest import REPO

T0 = 1661145489.0  # 2022-08-22 05:18:09, the logged fault


def test_pod_names_map_to_services() -> None:
    assert service_of("currencyservice-cf787dd48-vpjrd") == "currencyservice"
    assert service_of("ts-order-service-5d8f4c9b7-x2x9q") == "ts-order-service"
    assert service_of("frontend") == "frontend"


async def test_nezha_day(nezha_day: Path) -> None:
    backend = NezhaTelemetry(nezha_day)
    services = await backend.services()
    assert len(services) == 10 and "loadgenerator" not in services
    edges = await backend.edges()
    assert Edge("frontend", "currencyservice") in edges and Edge("checkoutservice", "paymentservice") in edges
    assert all(not e.callee[0].isdigit() for e in edges)  # IP nodes of dependency.csv are left out
    cpu = await backend.series("cpu", T0 - 600, T0 + 300, "currencyservice")
    assert len(cpu) == 1 and cpu[0].instance == "currencyservice-cf787dd48-vpjrd"
    assert 14 <= len(cpu[0].ts) <= 16 and np.nanmax(cpu[0].values) < 1.0  # millicores became cores
    # adservice's TimeStamp column is 200,000,000 s off; its Time column is the clock.
    ad = await backend.series("cpu", T0 - 600, T0, "adservice")
    assert len(ad) == 1 and len(ad[0].ts) >= 9
    errors = await backend.series("error_rate", T0 - 3600, T0, None)
    assert all(np.nanmin(s.values) >= 0 for s in errors)  # 100 - success rate
    calls = await backend.series("call_latency", T0 - 600, T0, "currencyservice")
    assert {s.instance for s in calls} == {"frontend->currencyservice", "checkoutservice->currencyservice"}
    logs = await backend.logs("currencyservice", T0, T0 + 120)
    assert logs and all(T0 <= r.ts <= T0 + 120 for r in logs)
    assert not any(r.message.startswith("TraceID") for r in logs)
    assert await backend.logs("nope", T0, T0 + 60) is None


async def test_nezha_never_opens_the_labels(nezha_root: Path, nezha_day: Path) -> None:
    opened: list[str] = []

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "open" and isinstance(args[0], str | Path):
            opened.append(str(args[0]))

    sys.addaudithook(hook)  # audit hooks cannot be removed; this one only appends to a list
    backend = NezhaTelemetry(nezha_day)
    await backend.inventory()
    await backend.logs("frontend", T0, T0 + 60)
    labels = [p for p in opened if "fault_list" in p or "root_cause" in p or "construct_data" in p]
    assert any("_metric.csv" in p for p in opened)  # the hook saw the backend's own reads
    assert labels == []


async def test_clock_guard_hides_everything_after_as_of(nezha_day: Path) -> None:
    as_of = T0 + 90
    backend = ClockedTelemetry(NezhaTelemetry(nezha_day), as_of)
    for signal in ("cpu", "latency_p90", "call_latency"):
        for s in await backend.series(signal, T0 - 3600, T0 + 3600):
            assert len(s.ts) and float(s.ts.max()) <= as_of
    lines = await backend.logs("currencyservice", T0 - 60, T0 + 3600)
    assert lines and max(r.ts for r in lines) <= as_of
    assert await backend.series("cpu", as_of + 10, as_of + 100) == []


async def test_loghub_times_per_system(shared_dir: Path) -> None:
    backend = FileTelemetry([shared_dir / "data" / "loghub-2k"], [], yearless_year=2017)
    systems = await backend.log_services()
    assert len(systems) == 10
    for system in systems:
        lines = await backend.logs(system, -math.inf, math.inf)
        assert lines is not None
        parsed = [r.ts for r in lines if r.ts == r.ts]
        assert len(parsed) >= 0.99 * len(lines), system
    ssh = await backend.logs("openssh", -math.inf, math.inf) or []
    assert ssh[0].ts >= 1.48e9  # Dec 10 read in the configured year 2017
    hdfs = await backend.logs("hdfs", 1226263000.0, 1226264000.0)  # 2008-11-09 20:36:40..
    assert hdfs and all(1226263000.0 <= r.ts <= 1226264000.0 for r in hdfs)


async def test_nab_and_demo_compose(shared_dir: Path) -> None:
    nab = FileTelemetry([], [shared_dir / "data" / "nab-metrics" / "data"])
    demo = FileTelemetry([REPO / "knowledge" / "telemetry" / "logs"], [REPO / "knowledge" / "telemetry" / "metrics"])
    both = CompositeTelemetry([nab, demo])
    services = await both.services()
    assert {"realAWSCloudwatch", "payment-service"} <= set(services)
    names = await both.signals("realAWSCloudwatch")
    series = await both.series(names[0], -math.inf, math.inf, "realAWSCloudwatch")
    assert len(series) == 1 and len(series[0].ts) > 1000
    assert await both.logs("payment-service", -math.inf, math.inf)
    inventory = await both.inventory()
    assert inventory.first is not None and inventory.last is not None and inventory.first < inventory.last


def test_not_a_nezha_day(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a Nezha day"):
        NezhaTelemetry(tmp_path)
