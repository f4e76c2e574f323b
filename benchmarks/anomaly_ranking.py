"""rank_anomalies alone on labelled faults, beside the reference baseline, and the tool's latency on a
real Prometheus server.

For each fault of ``--dataset`` (Nezha layout) the clock stands at the injection time (``inject_time``
read as UTC) + ``--delay-min``; the window starts at the minute the question would name (the
injection minute) and the baseline is the 30 minutes before it. Scored at service level: AS@1 / AS@3
(the true service first / among the first three), and type accuracy (the top service's suspected
category against the injected type: cpu_contention, cpu_consumed → cpu; network_delay → network;
exception, return → code). The day is reported whole and in halves by time: the first half is where
the method's free parameters were checked, the second half was not used for choosing them.
``../shared/tools/naive_rca_baseline.py`` runs on the same data in the same run.

    python benchmarks/anomaly_ranking.py [--dataset DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deployments.provenance import ROOT, stamp
from evaluation.rca import CATEGORY
from harness.scope import RunScope
from harness.tools.read_skill import load_skills
from harness.wiring import tool_factory
from telemetry.analysis.drain import grouping_accuracy, mine
from telemetry.analysis.ranking import rank_anomalies
from telemetry.backends.nezha import NezhaTelemetry
from telemetry.clock import Window, baseline_window
from telemetry.model import service_of
from telemetry.openmetrics import NEZHA_CATALOGUE, NEZHA_EDGES
from telemetry.settings import PrometheusSettings, TelemetrySettings
from tests.nezha_labels import faults, inject_time
from tests.prometheus_server import prometheus_with_day

SHARED = ROOT.parent / "shared"


def score(cases: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(cases)
    by_type: dict[str, list[int]] = {}
    for c in cases:
        hit = by_type.setdefault(c["truth_type"], [0, 0])
        hit[0] += c["rank"] == 1
        hit[1] += 1
    return {
        "n": n,
        "as1": round(sum(c["rank"] == 1 for c in cases) / n, 3) if n else None,
        "as3": round(sum(1 <= c["rank"] <= 3 for c in cases) / n, 3) if n else None,
        "type_acc": round(sum(c["category"] == CATEGORY[c["truth_type"]] for c in cases) / n, 3) if n else None,
        "by_type": {k: f"{a}/{b}" for k, (a, b) in sorted(by_type.items())},
    }


async def rank_day(day: Path, delay_s: float) -> list[dict[str, Any]]:
    backend = NezhaTelemetry(day)
    cases = []
    for f in faults(day):
        t0 = inject_time(f)
        window = Window(t0 - t0 % 60, t0 + delay_s)
        ranked = await rank_anomalies(backend, window, baseline_window(window))
        names = [a.service for a in ranked]
        truth = service_of(f["inject_pod"])
        cases.append(
            {
                "inject_time": f["inject_time"],
                "truth_service": truth,
                "truth_type": f["inject_type"],
                "predicted": names[:3],
                "category": ranked[0].category,
                "rank": names.index(truth) + 1 if truth in names else 0,
            }
        )
    return cases


def naive(dataset: Path) -> dict[str, Any]:
    tool = SHARED / "tools" / "naive_rca_baseline.py"
    done = subprocess.run([sys.executable, str(tool), str(dataset)], capture_output=True, text=True, check=True)
    last = json.loads(done.stdout.strip().splitlines()[-1])
    return {"as1": last["as1"], "as3": last["as3"], "tool": "../shared/tools/naive_rca_baseline.py"}


async def tool_latency(day: Path, url: str | None, repeats: int = 3) -> dict[str, float]:
    if url:
        settings = TelemetrySettings(
            backend="prometheus",
            log_roots=[],
            prometheus=PrometheusSettings(url=url, catalogue=NEZHA_CATALOGUE, edges=NEZHA_EDGES),
        )
    else:
        settings = TelemetrySettings(log_roots=[], metric_roots=[], nezha_days=[str(day)])
    factory = tool_factory(settings, load_skills())
    times = []
    for _ in range(repeats):
        for f in faults(day):
            t0 = inject_time(f)
            tools = {t.name: t for t in factory(RunScope(t0 + 300, t0 - t0 % 60, None))}
            start = time.perf_counter()
            result = await tools["rank_anomalies"].run({})
            times.append((time.perf_counter() - start) * 1000)
            assert result.status in ("success", "no_data"), result.output
    times.sort()
    return {
        "p50": round(statistics.median(times), 1),
        "p95": round(times[int(0.95 * (len(times) - 1))], 1),
        "calls": len(times),
    }


def drain_accuracy() -> dict[str, float]:
    import csv

    out = {}
    for path in sorted((SHARED / "data" / "loghub-2k").glob("*/*_structured.csv")):
        with path.open(encoding="utf-8", errors="replace", newline="") as fh:
            rows = list(csv.DictReader(fh))
        _, ids = mine([r["Content"] for r in rows])
        out[path.parent.name] = round(grouping_accuracy(ids, [r["EventId"] for r in rows]), 3)
    out["mean"] = round(sum(out.values()) / len(out), 3)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    dataset = Path(args.dataset)
    days = [d for d in sorted((dataset / "rca_data").iterdir()) if (d / "metric").is_dir()]
    cases: list[dict[str, Any]] = []
    for day in days:
        cases += [dict(c, day=day.name) for c in await rank_day(day, args.delay_min * 60)]
    half = len(cases) // 2
    with tempfile.TemporaryDirectory() as scratch, prometheus_with_day(days[0], Path(scratch)) as url:
        prom_latency = await tool_latency(days[0], url)
    result = {
        "nezha": {**score(cases), "first_half": score(cases[:half]), "second_half": score(cases[half:])},
        "naive": naive(dataset),
        "tool_latency_ms": {
            "prometheus": prom_latency,
            "file": await tool_latency(days[0], None),
            # metrics, logs and traces: Drain templates, span trees and the lost-event search per call
            "file_logs_traces": await tool_latency(Path(args.logs_traces_day), None, repeats=1),
        },
        "drain_grouping_accuracy": drain_accuracy(),
        "cases": cases,
        "params": {"delay_min": args.delay_min, "window": "injection minute .. clock", "baseline_min": 30},
        "dataset": str(dataset.relative_to(ROOT.parent)) if dataset.is_relative_to(ROOT.parent) else str(dataset),
        **stamp(),
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default=str(SHARED / "data" / "nezha-rca-onlineboutique"))
    parser.add_argument("--delay-min", type=float, default=5.0)
    parser.add_argument(
        "--logs-traces-day",
        default=str(SHARED / "data" / "nezha-rca-trainticket" / "rca_data" / "2023-01-29"),
        help="a Nezha day with logs and traces, for the tool's latency on all three modalities",
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "anomaly_ranking.json"))
    args = parser.parse_args()
    result = asyncio.run(run(args))
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    n, first, second = result["nezha"], result["nezha"]["first_half"], result["nezha"]["second_half"]
    print(f"rank_anomalies: AS@1 {n['as1']}  AS@3 {n['as3']}  type {n['type_acc']}  (n={n['n']})")
    print(f"  first half {first['as1']}/{first['as3']}  second half {second['as1']}/{second['as3']}")
    print(f"naive baseline: AS@1 {result['naive']['as1']}  AS@3 {result['naive']['as3']}")
    latency = result["tool_latency_ms"]
    print(
        f"tool latency p50: prometheus {latency['prometheus']['p50']} ms, file {latency['file']['p50']} ms, "
        f"file with logs and traces {latency['file_logs_traces']['p50']} ms"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
