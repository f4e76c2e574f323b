"""``raydiag eval rca``: labelled microservice faults replayed through the real pipeline and scored.

A dataset in the Nezha layout (``DIR/rca_data/<day>/<day>-fault_list.json`` + ``metric/``, optionally
``log/`` and ``trace/``) gives one case per fault; several datasets are scored in one run, pooled and
per day (``days``, keyed "system day"). The fault list is read here only, to build each case's question
and clock and to score the answer; the run gets the day's telemetry folder and its clock through the
internal run context (harness/scope.py), never the fault. The question holds what an on-call engineer
has: the system, the time, a generic symptom (English and Chinese alternate). The clock stands at
``inject_time`` (read as UTC) + the investigation delay, so no later sample is visible.

Scoring: the report's ``root_causes`` components in order → AS@1 / AS@3 at service level; the first
cause's category against the injected type → type accuracy. A fallback is scored by the anomaly
ranking's suspects it names (``root_causes`` added by the ranking, said as unconfirmed), the answer the
user got; a fallback without them, or a failure, is a miss. The
tools-only ranking (``rank_anomalies`` on the same windows, no model) is always scored beside it, and
``changed_top`` shows where the model's first answer differs from the tools' first.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.scope import RunScope
from harness.tools.base import Tool
from harness.tools.read_skill import load_skills
from harness.wiring import tool_factory
from telemetry.backends.nezha import is_nezha_day
from telemetry.model import service_of
from telemetry.settings import TelemetrySettings

ToolFactory = Callable[[RunScope], list[Tool]]

CATEGORY = {
    "cpu_contention": "cpu",
    "cpu_consumed": "cpu",
    "network_delay": "network",
    "exception": "code",
    "return": "code",
}
QUESTIONS = {
    "en": "Users of {system} see errors or slow responses since {hhmm} UTC on {date}. "
    "Find the root-cause service and the kind of fault.",
    "zh": "{system} 的用户从 {date} {hhmm} UTC 起反馈报错或响应变慢，请找出根因服务和故障类型。",
}

Diagnose = Callable[[str, str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass
class Case:
    day: str
    day_dir: Path
    inject_time: str
    t0: float
    truth_service: str
    truth_type: str
    system: str
    lang: str

    @property
    def question(self) -> str:
        when = datetime.fromtimestamp(self.t0, UTC)
        return QUESTIONS[self.lang].format(
            system=self.system, hhmm=when.strftime("%H:%M"), date=when.strftime("%Y-%m-%d")
        )


def load_cases(dataset: Path) -> tuple[list[Case], list[str]]:
    """Every fault of every day that has metrics; the days without are returned as skipped."""
    root = dataset / "rca_data"
    if not root.is_dir():
        raise FileNotFoundError(f"{dataset} has no rca_data/ folder (the Nezha layout)")
    cases: list[Case] = []
    skipped: list[str] = []
    for day_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        labels = day_dir / f"{day_dir.name}-fault_list.json"
        if not is_nezha_day(day_dir) or not labels.exists():
            skipped.append(day_dir.name)
            continue
        pods = [p.name for p in (day_dir / "metric").glob("*_metric.csv")]
        system = "TrainTicket" if any(p.startswith("ts-") for p in pods) else "OnlineBoutique"
        faults = [f for hour in json.loads(labels.read_text(encoding="utf-8")).values() for f in hour]
        for f in sorted(faults, key=lambda f: f["inject_time"]):
            t0 = datetime.strptime(f["inject_time"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
            cases.append(
                Case(
                    day_dir.name,
                    day_dir,
                    f["inject_time"],
                    t0,
                    service_of(f["inject_pod"]),
                    f["inject_type"],
                    system,
                    "en" if len(cases) % 2 == 0 else "zh",
                )
            )
    return cases, skipped


# The tools-only ranking on each set of modalities, so each one's worth is visible (a day without logs
# or traces scores the same on all three).
MODALITY_SETS: dict[str, tuple[str, ...]] = {
    "metrics": ("metrics",),
    "metrics+logs": ("metrics", "logs"),
    "metrics+logs+traces": ("metrics", "logs", "traces"),
}


DEFAULT_SET = "metrics+logs+traces"  # what the service's tools rank by default (telemetry_for's)


def telemetry_for(case: Case, modalities: tuple[str, ...] = MODALITY_SETS[DEFAULT_SET]) -> TelemetrySettings:
    return TelemetrySettings(
        log_roots=[], metric_roots=[], nezha_days=[str(case.day_dir.resolve())], modalities=list(modalities)
    )


async def tools_only(
    case: Case, delay_s: float, factories: dict[Path, ToolFactory], modalities: tuple[str, ...]
) -> tuple[list[str], str]:
    """rank_anomalies alone, on the window the question names, at the case's clock. One tool factory
    per day: its backend reads the day's files once for all of the day's faults."""
    start = case.t0 - case.t0 % 60
    if case.day_dir not in factories:
        factories[case.day_dir] = tool_factory(telemetry_for(case), load_skills())
    scope = RunScope(case.t0 + delay_s, start, telemetry_for(case, modalities))
    tools = {t.name: t for t in factories[case.day_dir](scope)}
    result = await tools["rank_anomalies"].run({})
    ranking = result.output.get("ranking") or []
    return [str(r["service"]) for r in ranking], str(ranking[0]["suspected_category"]) if ranking else "unknown"


async def run_case(case: Case, n: int, diagnose: Diagnose, delay_s: float) -> dict[str, Any]:
    options = {"as_of": case.t0 + delay_s, "telemetry": telemetry_for(case).model_dump(), "origin": "eval"}
    started = time.perf_counter()
    try:
        out = await diagnose(f"rca-{case.day}-{n:03d}", case.question, options)
    except Exception as err:  # a failed call is a miss, scored like a FAILED run
        out = {"events": [{"event": "failure", "error_code": type(err).__name__}], "totals": {}}
    duration = time.perf_counter() - started
    content = next((e for e in out["events"] if e["event"] == "content"), None)
    run_id = next((e.get("run_id") for e in out["events"] if e["event"] == "metadata"), None)
    causes = (content or {}).get("payload", {}).get("root_causes") or []
    predicted = list(dict.fromkeys(str(c.get("component", "")) for c in causes))
    return {
        "day": case.day,
        "system": case.system,
        "inject_time": case.inject_time,
        "truth_service": case.truth_service,
        "truth_type": case.truth_type,
        "question": case.question,
        "predicted": predicted,
        "predicted_category": str(causes[0].get("category")) if causes else None,
        "content_type": content["content_type"] if content else "FAILED",
        "run_id": run_id,
        "duration_s": round(duration, 2),
        "tokens": (out.get("totals") or {}).get("total_token_count"),
    }


def _rate(hits: int, n: int) -> float | None:
    return round(hits / n, 3) if n else None


def summarize(cases: list[dict[str, Any]], tools: list[tuple[list[str], str]]) -> dict[str, Any]:
    n = len(cases)

    def hit(pred: list[str], truth: str, k: int) -> bool:
        return truth in pred[:k]

    reports = [c for c in cases if c["content_type"] == "DIAGNOSIS_REPORT"]
    pipeline = any(c["content_type"] != "TOOLS_ONLY" for c in cases)
    summary = {
        "n": n,
        "as1": _rate(sum(hit(c["predicted"], c["truth_service"], 1) for c in cases), n),
        "as3": _rate(sum(hit(c["predicted"], c["truth_service"], 3) for c in cases), n),
        "type_acc": _rate(sum(c["predicted_category"] == CATEGORY.get(c["truth_type"]) for c in cases), n),
        "report_rate": _rate(len(reports), n) if pipeline else None,
        "fallback_rate": _rate(sum(c["content_type"] == "SAFE_FALLBACK" for c in cases), n) if pipeline else None,
        "failed": sum(c["content_type"] not in ("DIAGNOSIS_REPORT", "SAFE_FALLBACK", "CHAT_ANSWER") for c in cases)
        if pipeline
        else None,
        "median_duration_s": round(statistics.median(c["duration_s"] for c in cases), 2) if cases else None,
        "tokens_per_case": round(statistics.mean(c["tokens"] for c in cases if c["tokens"]), 1)
        if any(c["tokens"] for c in cases)
        else None,
    }
    tools_summary = {
        "as1": _rate(sum(hit(t[0], c["truth_service"], 1) for c, t in zip(cases, tools, strict=True)), n),
        "as3": _rate(sum(hit(t[0], c["truth_service"], 3) for c, t in zip(cases, tools, strict=True)), n),
        "type_acc": _rate(sum(t[1] == CATEGORY.get(c["truth_type"]) for c, t in zip(cases, tools, strict=True)), n),
    }
    changed = [(c, t) for c, t in zip(cases, tools, strict=True) if c["predicted"][:1] != t[0][:1]]
    changed_top = {
        "n": len(changed),
        "model_right": sum(hit(c["predicted"], c["truth_service"], 1) for c, _ in changed),
        "tools_right": sum(hit(t[0], c["truth_service"], 1) for c, t in changed),
    }
    return {"summary": summary, "tools_only": tools_summary, "changed_top": changed_top}


def modality_summary(cases: list[Case], ranked: list[tuple[list[str], str]]) -> dict[str, Any]:
    """AS@1 and AS@3 of one modality set's tools-only ranking, overall and per fault type."""

    def scores(pairs: list[tuple[Case, list[str]]]) -> dict[str, Any]:
        n = len(pairs)
        return {
            "n": n,
            "as1": _rate(sum(c.truth_service in p[:1] for c, p in pairs), n),
            "as3": _rate(sum(c.truth_service in p[:3] for c, p in pairs), n),
        }

    pairs = [(c, r[0]) for c, r in zip(cases, ranked, strict=True)]
    types = sorted({c.truth_type for c in cases})
    return {**scores(pairs), "by_type": {t: scores([p for p in pairs if p[0].truth_type == t]) for t in types}}


def breakdown(cases: list[dict[str, Any]], key: str) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for c in cases:
        groups.setdefault(c[key], []).append(c)
    return {
        k: {
            "n": len(v),
            "as1": _rate(sum(c["truth_service"] in c["predicted"][:1] for c in v), len(v)),
            "as3": _rate(sum(c["truth_service"] in c["predicted"][:3] for c in v), len(v)),
        }
        for k, v in sorted(groups.items())
    }


def _progress(done: int, total: int, started: float) -> None:
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}  {time.perf_counter() - started:.0f}s")
    sys.stderr.flush()


def score(
    rows: list[dict[str, Any]], cases: list[Case], ranked: dict[str, list[tuple[list[str], str]]]
) -> dict[str, Any]:
    """One set of cases scored: the answers, the default tools-only ranking beside them, each modality
    set's ranking, and per fault type."""
    tools = ranked[DEFAULT_SET]
    return {
        **summarize(rows, tools),
        "tools_by_modality": {name: modality_summary(cases, r) for name, r in ranked.items()},
        "by_type": breakdown(rows, "truth_type"),
    }


def per_day(
    rows: list[dict[str, Any]], cases: list[Case], ranked: dict[str, list[tuple[list[str], str]]]
) -> dict[str, Any]:
    """``score`` of each day on its own, keyed "system day": targets are per system, and a pooled figure
    hides a day the method does not carry to."""
    out: dict[str, Any] = {}
    for key in dict.fromkeys(f"{c.system} {c.day}" for c in cases):
        pick = [i for i, c in enumerate(cases) if f"{c.system} {c.day}" == key]
        first = cases[pick[0]]
        out[key] = {
            "system": first.system,
            "day": first.day,
            "dataset": str(first.day_dir.parent.parent),
            **score(
                [rows[i] for i in pick],
                [cases[i] for i in pick],
                {name: [r[i] for i in pick] for name, r in ranked.items()},
            ),
        }
    return out


async def evaluate(
    datasets: Path | list[Path],
    diagnose: Diagnose | None,
    delay_min: float = 5.0,
    limit: int | None = None,
    concurrency: int = 2,
) -> dict[str, Any]:
    """Score every case of every dataset; ``diagnose=None`` scores the tools-only ranking alone."""
    cases: list[Case] = []
    skipped: list[str] = []
    folders = [datasets] if isinstance(datasets, Path) else datasets
    for dataset in folders:
        found, missing = load_cases(dataset)
        cases += found[:limit] if limit else found  # the first N of each dataset: every day stays in
        # with several folders a skipped day says whose it is (two systems can share a date)
        skipped += [f"{dataset.name}/{day}" for day in missing] if len(folders) > 1 else missing
    delay_s = delay_min * 60
    factories: dict[Path, ToolFactory] = {}
    ranked = {
        name: [await tools_only(c, delay_s, factories, modalities) for c in cases]
        for name, modalities in MODALITY_SETS.items()
    }
    tools = ranked[DEFAULT_SET]
    if diagnose is None:
        rows = [
            {
                "day": c.day,
                "system": c.system,
                "inject_time": c.inject_time,
                "truth_service": c.truth_service,
                "truth_type": c.truth_type,
                "question": c.question,
                "predicted": t[0][:3],
                "predicted_category": t[1],
                "content_type": "TOOLS_ONLY",
                "run_id": None,
                "duration_s": 0.0,
                "tokens": None,
            }
            for c, t in zip(cases, tools, strict=True)
        ]
    else:
        gate = asyncio.Semaphore(max(1, concurrency))
        started, done = time.perf_counter(), 0

        async def one(n: int, case: Case) -> dict[str, Any]:
            nonlocal done
            async with gate:
                row = await run_case(case, n, diagnose, delay_s)
            done += 1
            _progress(done, len(cases), started)
            return row

        rows = list(await asyncio.gather(*(one(n, c) for n, c in enumerate(cases, 1))))
        sys.stderr.write("\n")
    return {
        **score(rows, cases, ranked),
        "by_day": breakdown(rows, "day"),
        "days": per_day(rows, cases, ranked),
        "cases": rows,
        "skipped_days": skipped,
        "delay_min": delay_min,
    }


def format_table(result: dict[str, Any]) -> str:
    s, t, ch = result["summary"], result["tools_only"], result["changed_top"]
    days = result.get("days") or {}
    lines = [
        *(
            f"{day}: cases {d['summary']['n']}   AS@1 {d['summary']['as1']}   AS@3 {d['summary']['as3']}   "
            f"(tools only {d['tools_only']['as1']} / {d['tools_only']['as3']})"
            for day, d in (days.items() if len(days) > 1 else [])
        ),
        f"cases {s['n']}   AS@1 {s['as1']}   AS@3 {s['as3']}   type {s['type_acc']}   reports {s['report_rate']}   "
        f"fallbacks {s['fallback_rate']}   failed {s['failed']}",
        f"tools only: AS@1 {t['as1']}   AS@3 {t['as3']}   type {t['type_acc']}",
        *(
            f"  tools only on {name}: AS@1 {m['as1']}   AS@3 {m['as3']}"
            for name, m in (result.get("tools_by_modality") or {}).items()
        ),
        f"model's top differs from the tools' top in {ch['n']} cases: model right {ch['model_right']}, "
        f"tools right {ch['tools_right']}",
        f"median {s['median_duration_s']} s per case, {s['tokens_per_case']} tokens per case",
        "",
        f"{'fault':19} {'truth':24} {'type':15} {'predicted':34} outcome",
    ]
    for c in result["cases"]:
        pred = ", ".join(c["predicted"][:2]) or "-"
        mark = "ok " if c["truth_service"] in c["predicted"][:1] else "   "
        row = f"{c['inject_time']:19} {c['truth_service']:24} {c['truth_type']:15} {mark}{pred[:31]:31}"
        lines.append(f"{row} {c['content_type']}")
    if result["skipped_days"]:
        lines.append(f"skipped days (no metric/ folder): {', '.join(result['skipped_days'])}")
    return "\n".join(lines)
