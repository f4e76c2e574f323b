"""Every free parameter of the root-cause ranking, swept one at a time on both development days, and
chosen leave-one-day-out: pick the value on one day, score it on the other, both ways.

A parameter fitted to one day does not travel (issue 54: the log and lost-event gains, fitted to the
TrainTicket day's code faults, left an unseen day's network delays where they were). So each value is
scored tools-only (``rank_anomalies``, no model) on

- OnlineBoutique 2022-08-22 (metrics, per-edge latency files, traces for 43 fault minutes, logs once),
- TrainTicket 2023-01-29 (metrics, logs, traces; no per-edge latency files),
- OnlineBoutique 2022-08-22 *without* its per-edge latency files (``source_50.csv``,
  ``destination_50.csv``, ``dependency.csv``): pod metrics and traces only, what a TrainTicket day
  holds — the condition under which its network delays must be found from spans alone. It is a view
  of the same day, not a third day: it is reported, never used to choose.

For each parameter the value chosen on one day (best AS@1, then AS@3, then the nearest to the
default) is scored on the other; ``kept`` says whether the shipped default is what either day
chooses or, where the days disagree, whether neither day loses against its own choice by more than
one case. Written to ``benchmarks/results/rca_parameters.json``; docs/evaluation.md renders it.

    python benchmarks/rca_parameters.py [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from deployments.provenance import ROOT, stamp
from evaluation.rca import MODALITY_SETS, Case, ToolFactory, load_cases, tools_only
from telemetry.analysis import edge_delay
from telemetry.signals import SIGNALS

SHARED = ROOT.parent / "shared" / "data"
DAYS = {
    "OnlineBoutique 2022-08-22": SHARED / "nezha-rca-onlineboutique",
    "TrainTicket 2023-01-29": SHARED / "nezha-rca-trainticket",
}
EDGE_FILES = ("source_50.csv", "destination_50.csv", "dependency.csv")
NO_EDGE_FILES = "OnlineBoutique 2022-08-22, no per-edge latency files"
DELAY_S = 300.0


@contextmanager
def _signal_field(name: str, field: str, value: float) -> Iterator[None]:
    """The catalogue's signal ``name`` with ``field`` (its weight or floor) set to ``value``."""
    saved = SIGNALS[name]
    changes: dict[str, Any] = {field: value}
    SIGNALS[name] = dataclasses.replace(saved, **changes)
    try:
        yield
    finally:
        SIGNALS[name] = saved


@contextmanager
def _module_value(attr: str, value: float) -> Iterator[None]:
    saved = getattr(edge_delay, attr)
    setattr(edge_delay, attr, value)
    try:
        yield
    finally:
        setattr(edge_delay, attr, saved)


@dataclasses.dataclass
class Parameter:
    name: str
    where: str  # the code that holds it
    default: float
    values: list[float]
    apply: Callable[[float], Any]  # a context manager setting the value


PARAMETERS = [
    Parameter(
        "edge_delay weight",
        "telemetry/signals.py",
        SIGNALS["edge_delay"].weight,
        [0.5, 1.0, 2.0, 4.0],
        lambda v: _signal_field("edge_delay", "weight", v),
    ),
    Parameter(
        "edge_gap floor (s)",
        "telemetry/signals.py",
        SIGNALS["edge_gap"].floor,
        [0.001, 0.005, 0.02],
        lambda v: _signal_field("edge_gap", "floor", v),
    ),
    Parameter(
        "edge gap reference quantile",
        "telemetry/analysis/edge_delay.py TAIL_QUANTILE",
        edge_delay.TAIL_QUANTILE,
        [0.5, 0.9, 0.95, 0.99, 1.0],
        lambda v: _module_value("TAIL_QUANTILE", v),
    ),
    Parameter(
        "edge gap minimum run (calls)",
        "telemetry/analysis/edge_delay.py MIN_RUN",
        edge_delay.MIN_RUN,
        [2, 3, 5],
        lambda v: _module_value("MIN_RUN", int(v)),
    ),
    Parameter(
        "log_errors weight",
        "telemetry/signals.py",
        SIGNALS["log_errors"].weight,
        [1.0, 4.0, 8.0, 16.0],
        lambda v: _signal_field("log_errors", "weight", v),
    ),
    Parameter(
        "lost_events weight",
        "telemetry/signals.py",
        SIGNALS["lost_events"].weight,
        [1.0, 4.0, 8.0, 16.0],
        lambda v: _signal_field("lost_events", "weight", v),
    ),
]


def without_edge_files(dataset: Path, into: Path) -> Path:
    """A view of ``dataset`` (symlinks) without the per-edge latency files."""
    for day in (dataset / "rca_data").iterdir():
        if not (day / "metric").is_dir():
            continue
        target = into / "rca_data" / day.name
        (target / "metric").mkdir(parents=True)
        for item in day.iterdir():
            if item.name != "metric":
                (target / item.name).symlink_to(item.resolve())
        for item in (day / "metric").iterdir():
            if item.name not in EDGE_FILES:
                (target / "metric" / item.name).symlink_to(item.resolve())
    return into


async def _score(cases: list[Case], factories: dict[Path, ToolFactory]) -> dict[str, Any]:
    ranked = [(c, (await tools_only(c, DELAY_S, factories, MODALITY_SETS["metrics+logs+traces"]))[0]) for c in cases]

    def rates(pairs: list[tuple[Case, list[str]]]) -> dict[str, Any]:
        n = len(pairs)
        return {
            "n": n,
            "as1": round(sum(c.truth_service in r[:1] for c, r in pairs) / n, 3) if n else None,
            "as3": round(sum(c.truth_service in r[:3] for c, r in pairs) / n, 3) if n else None,
        }

    delays = [(c, r) for c, r in ranked if c.truth_type == "network_delay"]
    return {**rates(ranked), "network_delay": rates(delays)}


def _choose(param: Parameter, by_value: dict[float, dict[str, Any]]) -> float:
    return max(
        param.values,
        key=lambda v: (by_value[v]["as1"], by_value[v]["as3"], -abs(v - param.default)),
    )


async def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        conditions = {**DAYS, NO_EDGE_FILES: without_edge_files(DAYS["OnlineBoutique 2022-08-22"], Path(tmp))}
        cases = {name: load_cases(path)[0] for name, path in conditions.items()}
        factories: dict[str, dict[Path, ToolFactory]] = {name: {} for name in conditions}
        defaults = {name: await _score(cases[name], factories[name]) for name in conditions}
        out: list[dict[str, Any]] = []
        for param in PARAMETERS:
            scores: dict[str, dict[float, dict[str, Any]]] = {name: {} for name in conditions}
            for value in param.values:
                with param.apply(value):
                    for name in conditions:
                        scores[name][value] = await _score(cases[name], factories[name])
            ob, tt = list(DAYS)
            chosen = {day: _choose(param, scores[day]) for day in DAYS}
            lodo = {
                f"chosen on {ob}, scored on {tt}": {"value": chosen[ob], **scores[tt][chosen[ob]]},
                f"chosen on {tt}, scored on {ob}": {"value": chosen[tt], **scores[ob][chosen[tt]]},
            }
            loss = {day: scores[day][chosen[day]]["as1"] - scores[day][param.default]["as1"] for day in DAYS}
            out.append(
                {
                    "parameter": param.name,
                    "where": param.where,
                    "default": param.default,
                    "chosen": chosen,
                    "kept": param.default in chosen.values() or all(v <= 1 / 24 + 1e-9 for v in loss.values()),
                    "leave_one_day_out": lodo,
                    "by_value": {name: {str(v): s for v, s in by_value.items()} for name, by_value in scores.items()},
                }
            )
        return {"defaults": defaults, "parameters": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rca_parameters.json"))
    args = parser.parse_args()
    provenance = stamp()
    started = time.perf_counter()
    result = asyncio.run(run())
    result.update({**provenance, "wall_s": round(time.perf_counter() - started, 1)})
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name, d in result["defaults"].items():
        print(f"{name}: AS@1 {d['as1']} AS@3 {d['as3']} network delay AS@3 {d['network_delay']['as3']}")
    for p in result["parameters"]:
        print(f"{p['parameter']}: default {p['default']}, chosen {p['chosen']}, kept {p['kept']}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
