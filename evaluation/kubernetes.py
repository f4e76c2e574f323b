"""``raydiag eval k8s``: recorded Kubernetes cases replayed through the real pipeline and scored.

A case file in the fixtures' form (``{"cases": [{id, q, about, causes, wrong, tools: [recorded calls]}]}``,
../shared/data/holmesgpt-fixtures/cases.json) gives one run per case: the case's recordings become the
cluster of that run (the internal run options' ``cluster``, a recorded backend on the file and the case
id), the way ``eval rca`` pins a case's telemetry. A case without ``tools`` (a correctness-benchmark
question file, read unchanged) runs against no cluster. Scored by the answer-key rule
(evaluation/answer_keys.py). ``--split FILE --half report`` scores one half of a frozen split.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from evaluation.answer_keys import score

Diagnose = Callable[[str, str, dict[str, Any]], Awaitable[dict[str, Any]]]


def load(
    cases_file: Path, split: Path | None = None, half: str = "all", ids: list[str] | None = None
) -> list[dict[str, Any]]:
    data = json.loads(cases_file.read_text(encoding="utf-8"))
    cases = [c for c in data.get("cases") or [] if isinstance(c, dict) and c.get("id") and c.get("q")]
    chosen: set[str] | None = None
    if ids:
        chosen = set(ids)
    elif half != "all":
        halves = json.loads(split.read_text(encoding="utf-8")) if split else data.get("split") or {}
        if half not in halves:
            raise ValueError(f"no half {half!r} in {split or cases_file}")
        chosen = set(halves[half])
    return [c for c in cases if chosen is None or c["id"] in chosen]


def options_for(case: dict[str, Any], cases_file: Path) -> dict[str, Any]:
    options: dict[str, Any] = {"origin": "eval"}
    if case.get("tools"):
        options["cluster"] = {"backend": "recorded", "recordings": str(cases_file.resolve()), "case": case["id"]}
    return options


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return (
        round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)
        if q != 0.5
        else round(statistics.median(ordered), 1)
    )


async def run_case(case: dict[str, Any], cases_file: Path, diagnose: Diagnose) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        out = await diagnose(f"k8s-{case['id']}", case["q"], options_for(case, cases_file))
    except Exception as err:  # a failed call is a miss, scored like a FAILED run
        out = {"events": [{"event": "failure", "error_code": type(err).__name__}]}
    ttr = round(time.perf_counter() - started, 1)
    events = out.get("events") or []
    content = next((e for e in events if e["event"] == "content"), None) or {}
    finding = next(
        (e.get("at_s") for e in events if e["event"] == "status" and str(e.get("detail", "")).startswith("FINDING")),
        None,
    )
    row = {
        "id": case["id"],
        "q": case["q"],
        "content_type": content.get("content_type", "FAILED"),
        "payload": content.get("payload") or {},
        "ttr_s": ttr,
        "first_finding_s": finding,
        "cluster_calls": sum(1 for e in events if str(e.get("detail", "")).endswith("(cluster playbook)")),
    }
    row |= score(case, row["content_type"], row["payload"])
    return row


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)

    def rate(k: int) -> float | None:
        return round(k / n, 3) if n else None

    return {
        "cases": n,
        "correct_rate": rate(sum(r["correct"] for r in rows)),
        "misattributed_rate": rate(sum(r["misattributed"] for r in rows)),
        "fallback_rate": rate(sum(r["content_type"] == "SAFE_FALLBACK" for r in rows)),
        "failed": sum(r["content_type"] not in ("DIAGNOSIS_REPORT", "SAFE_FALLBACK", "CHAT_ANSWER") for r in rows),
        "ttr_p50_s": _pct([r["ttr_s"] for r in rows], 0.5),
        "first_finding_p50_s": _pct([r["first_finding_s"] for r in rows if r["first_finding_s"] is not None], 0.5),
    }


async def evaluate(
    cases: list[dict[str, Any]], cases_file: Path, diagnose: Diagnose, concurrency: int = 1
) -> dict[str, Any]:
    gate = asyncio.Semaphore(max(1, concurrency))
    done = 0

    async def one(case: dict[str, Any]) -> dict[str, Any]:
        nonlocal done
        async with gate:
            row = await run_case(case, cases_file, diagnose)
        done += 1
        mark = "ok" if row["correct"] else ("MISATTRIBUTED" if row["misattributed"] else "--")
        print(
            f"[{done}/{len(cases)}] {row['id']} {row['content_type']} {mark} {row['ttr_s']} s",
            file=sys.stderr,
            flush=True,
        )
        return row

    rows = list(await asyncio.gather(*(one(c) for c in cases)))
    return {"summary": summarize(rows), "cases": rows}


def by_half(rows: list[dict[str, Any]], split: Path) -> dict[str, Any]:
    """``summarize`` of each half of a split, from one run over all cases."""
    halves = json.loads(split.read_text(encoding="utf-8"))
    return {
        name: summarize([r for r in rows if r["id"] in set(halves[name])])
        for name in ("tune", "report")
        if name in halves
    }


def format_table(result: dict[str, Any]) -> str:
    s = result["summary"]
    lines = [
        f"cases {s['cases']}   correct {s['correct_rate']}   misattributed {s['misattributed_rate']}   "
        f"fallbacks {s['fallback_rate']}   failed {s['failed']}   ttr p50 {s['ttr_p50_s']} s   "
        f"first finding p50 {s['first_finding_p50_s']} s",
        "",
    ]
    for r in result["cases"]:
        payload = r.get("payload") or {}
        conclusion = ((payload.get("report") or {}).get("conclusion") or {}).get("text") or payload.get("text", "")
        mark = "ok " if r["correct"] else ("MIS" if r["misattributed"] else "   ")
        lines.append(f"{r['id']:6} {mark} {r['content_type']:16} {' '.join(str(conclusion).split())[:110]}")
    return "\n".join(lines)
