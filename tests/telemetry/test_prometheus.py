"""The Prometheus backend against a real Prometheus server holding the backfilled Nezha day: the same
answers as the file backend on the same data, the default catalogue's names, errors as values."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.scope import RunScope
from harness.tools.read_skill import load_skills
from harness.wiring import tool_factory
from telemetry.analysis.ranking import rank_anomalies
from telemetry.backends.nezha import NezhaTelemetry
from telemetry.backends.prometheus import PrometheusTelemetry
from telemetry.clock import Window, baseline_window
from telemetry.openmetrics import NEZHA_CATALOGUE, NEZHA_EDGES
from telemetry.settings import PrometheusSettings, TelemetrySettings
from tests.nezha_labels import faults, inject_time
from tests.prometheus_server import prometheus_with_day

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def prom_url(nezha_day: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with prometheus_with_day(nezha_day, tmp_path_factory.mktemp("prometheus")) as url:
        yield url


def _metrics_only(day: Path, tmp_path: Path) -> Path:
    copy = tmp_path / day.name
    copy.mkdir()
    for part in day.iterdir():
        if part.name not in ("trace", "traceid", "log"):
            (copy / part.name).symlink_to(part)
    return copy


def _backend(url: str) -> PrometheusTelemetry:
    return PrometheusTelemetry(PrometheusSettings(url=url, catalogue=NEZHA_CATALOGUE, edges=NEZHA_EDGES))


async def test_same_ranking_as_the_files_on_every_fault(prom_url: str, nezha_day: Path, tmp_path: Path) -> None:
    # Prometheus holds the day's metrics only; the files without the traces the shared day gained since.
    prom, files = _backend(prom_url), NezhaTelemetry(_metrics_only(nezha_day, tmp_path))
    assert await prom.services() == await files.services()
    assert set(await prom.edges()) == set(await files.edges())
    # Prometheus answers "the value as of each step", the files "the samples in the window": the same
    # samples, aligned up to one step apart (and a rate() needs two of them). Where the baseline is
    # whole, the answer (the top service, its category, its score) agrees; lower ranks are noise.
    data_start = 1661140279.0
    compared = 0
    for fault in faults(nezha_day):
        t0 = inject_time(fault)
        window = Window(t0 - t0 % 60, t0 + 300)
        base = baseline_window(window)
        a, b = await rank_anomalies(prom, window, base), await rank_anomalies(files, window, base)
        if base.start >= data_start + 60:
            assert (a[0].service, a[0].category) == (b[0].service, b[0].category), fault["inject_time"]
            assert a[0].score == pytest.approx(b[0].score, rel=0.2)
            compared += 1
    await prom.close()
    assert compared >= 20


async def test_tools_over_prometheus(prom_url: str, nezha_day: Path) -> None:
    settings = TelemetrySettings(
        backend="prometheus",
        log_roots=[],
        prometheus=PrometheusSettings(url=prom_url, catalogue=NEZHA_CATALOGUE, edges=NEZHA_EDGES),
    )
    t0 = 1661145489.0
    tools = {t.name: t for t in tool_factory(settings, load_skills())(RunScope(t0 + 300, t0 - 9, None))}
    ranked = await tools["rank_anomalies"].run({})
    assert ranked.status == "success" and ranked.output["ranking"][0]["service"] == "currencyservice"
    memory = await tools["query_metrics"].run({"service": "currencyservice", "signal": "memory"})
    files = {
        t.name: t
        for t in tool_factory(
            TelemetrySettings(log_roots=[], metric_roots=[], nezha_days=[str(nezha_day)]), load_skills()
        )(RunScope(t0 + 300, t0 - 9, None))
    }
    same = await files["query_metrics"].run({"service": "currencyservice", "signal": "memory"})
    for field in ("peak", "baseline_median"):
        assert memory.output["signals"][0][field] == pytest.approx(same.output["signals"][0][field], rel=0.01)
    # Prometheus has no logs: the file roots answer (none configured here).
    assert (await tools["query_logs"].run({"service": "currencyservice"})).status == "no_data"


async def test_default_catalogue_reads_the_cadvisor_names(prom_url: str) -> None:
    prom = PrometheusTelemetry(PrometheusSettings(url=prom_url))
    t0 = 1661145489.0
    cpu = await prom.series("cpu", t0 - 1800, t0 + 300, "currencyservice")
    assert len(cpu) == 1 and cpu[0].instance == "currencyservice-cf787dd48-vpjrd" and len(cpu[0].ts) >= 30
    rx = await prom.series("net_rx", t0 - 1800, t0 + 300)
    assert len({s.service for s in rx}) == 10
    assert await prom.series("latency_p90", t0 - 1800, t0) == []  # no OpenTelemetry histograms in this TSDB
    assert await prom.edges() == []
    await prom.close()


async def test_prometheus_down_is_a_tool_error_not_a_crash() -> None:
    settings = TelemetrySettings(
        backend="prometheus", log_roots=[], prometheus=PrometheusSettings(url="http://127.0.0.1:9")
    )
    tools = {t.name: t for t in tool_factory(settings, load_skills())(RunScope(1661145789.0, None, None))}
    result = await tools["rank_anomalies"].run({})
    assert result.status == "error" and "unreachable" in result.output["error"]
