"""Are the answers right? Incident questions with answer keys asked of the running service, scored
against the keys (DESIGN.md §8, "Answer-correctness protocol").

The question file (``--questions``, default ``benchmarks/data/diagnosis_truth.json``) has this format,
which other tools' sets share, so it is read exactly so::

    {"cases": [{"id", "q", "about": [terms naming the asked component],
                "causes": [[synonyms of one accepted cause, both languages], ...],
                "wrong": [components that must not be blamed], "telemetry": true|false}, ...],
     "offtopic": [questions], "split": {"tune": [ids], "report": [ids]}   # split: optional}

A case is **correct** when the released text (a report's conclusion, analysis, action plan,
recommendations and root causes with their ``cause``; a fallback's text and next steps) names a term of
``about``, a term of one ``causes`` group, and no ``root_causes`` component contains a ``wrong`` term;
**misattributed** when a ``root_causes`` component contains a ``wrong`` term. Terms match
case-insensitively as substrings. An off-topic question is right when it gets a CHAT_ANSWER.

The service is started as ``make run`` starts it (``raydiag serve`` on ``--config``, default model or
``--model``), with a knowledge base of its own holding what ``make run`` serves: the default knowledge packs
(``raydiag ingest --packs default``, ``knowledge/packs/``), none written for these questions.
``--base-url`` uses a service already running (its own knowledge).

    python benchmarks/diagnosis_correctness.py [--split report|tune|all] [--model NAME] [--ids t01,t02]

Results: ``benchmarks/results/diagnosis_correctness.json`` (``--out``), one entry per model and split,
each with its commit and command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.diagnosis_quality import decode_rate, pct, start_service, stop_service  # noqa: E402
from deployments.provenance import stamp  # noqa: E402
from deployments.sse import parse  # noqa: E402
from evaluation.answer_form import answer_form, form_figures  # noqa: E402
from evaluation.answer_keys import names_answer, names_cause, released_text, score  # noqa: E402,F401

QUESTIONS = ROOT / "benchmarks" / "data" / "diagnosis_truth.json"
OUT = ROOT / "benchmarks" / "results" / "diagnosis_correctness.json"
TARGETS = {"correct_rate": 0.6, "misattributed_rate": 0.05, "chat_rate_offtopic": 1.0, "cost_tokens": 600}
_CJK = re.compile(r"[\u4e00-\u9fff]")

# -- scoring -------------------------------------------------------------------------------------------


def lang_of(case: dict[str, Any]) -> str:
    return str(case.get("lang") or ("zh" if _CJK.search(case["q"]) else "en"))


# -- the knowledge base --------------------------------------------------------------------------------


def own_knowledge_config(config: Path, work: Path) -> Path:
    """The config with the benchmark's own collection, ingested before the service starts (Milvus Lite's
    data dir belongs to one process)."""
    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    data.setdefault("search", {})["milvus_uri"] = str(work / "knowledge.db")
    path = work / "bench.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    cli = [sys.executable, "-m", "cli.main", "--config", str(path)]
    started = time.perf_counter()
    # The default packs, as `make run` ingests them: the knowledge base users get is the one measured.
    done = subprocess.run([*cli, "ingest", "--packs", "default"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ingest failed: {done.stderr[-2000:]}")
    print(done.stdout.strip().splitlines()[-1], f"({time.perf_counter() - started:.0f} s)", flush=True)
    return path


# -- asking --------------------------------------------------------------------------------------------


async def ask(client: httpx.AsyncClient, qid: str, question: str) -> dict[str, Any]:
    session = f"dc-{qid}-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    first_finding: float | None = None
    body = ""
    async with client.stream("POST", "/api/chat", json={"Id": session, "Question": question}) as r:
        if r.status_code != 200:
            return {"error": f"HTTP {r.status_code}", "ttr_s": round(time.perf_counter() - start, 1)}
        async for text in r.aiter_text():
            body += text
            if first_finding is None and '"FINDING' in text:
                first_finding = time.perf_counter() - start
    events = parse(body)
    content = next((d for n, d in events if n == "content"), None) or {}
    failure = next((d for n, d in events if n == "failure"), None)
    done = next((d for n, d in events if n == "done"), {})
    meta = next((d for n, d in events if n == "metadata"), {})
    row: dict[str, Any] = {
        "content_type": content.get("content_type"),
        "payload": content.get("payload") or ({"failure": failure} if failure else {}),
        "run_id": meta.get("run_id"),
        "outcome": done.get("outcome"),
        "ttr_s": round(time.perf_counter() - start, 1),
        "ends_with_done": bool(events) and events[-1][0] == "done",
    }
    if first_finding is not None:
        row["first_finding_s"] = round(first_finding, 1)
    return row


def rate(n: int, d: int) -> float | None:
    return round(n / d, 3) if d else None


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "cases": len(rows),
        "correct_rate": rate(sum(r.get("correct", False) for r in rows), len(rows)),
        "misattributed_rate": rate(sum(r.get("misattributed", False) for r in rows), len(rows)),
        "fallback_rate": rate(sum(r.get("content_type") == "SAFE_FALLBACK" for r in rows), len(rows)),
        "report_rate": rate(sum(r.get("content_type") == "DIAGNOSIS_REPORT" for r in rows), len(rows)),
        "no_answer": sum(r.get("content_type") not in ("DIAGNOSIS_REPORT", "SAFE_FALLBACK") for r in rows),
        # Runs the model did not finish in time: answered with what the tools measured (a degraded answer).
        "model_timeouts": sum((r.get("payload") or {}).get("fallback_type") == "MODEL_TIMEOUT" for r in rows),
    }


def summarize(rows: list[dict[str, Any]], offtopic: list[dict[str, Any]], decode: float) -> dict[str, Any]:
    ttr = [r["ttr_s"] for r in rows if "error" not in r]
    ttr_p50 = pct(ttr, 0.5)
    by_lang = {lang: figures([r for r in rows if r["lang"] == lang]) for lang in sorted({r["lang"] for r in rows})}
    return {
        **figures(rows),
        "by_lang": by_lang,
        "telemetry_cases": figures([r for r in rows if r.get("telemetry")]),
        # Is the answer in a form to act on (evaluation/answer_form.py): first sentence, findings, guidance.
        "form": form_figures([r.get("form") or {} for r in rows]),
        "offtopic_questions": len(offtopic),
        "chat_rate_offtopic": rate(sum(r.get("content_type") == "CHAT_ANSWER" for r in offtopic), len(offtopic)),
        "streams_without_done": sum(not r.get("ends_with_done") for r in [*rows, *offtopic]),
        "decode_tok_per_s": decode,
        "ttr_p50_s": ttr_p50,
        "ttr_p95_s": pct(ttr, 0.95),
        "first_finding_p50_s": pct([r["first_finding_s"] for r in rows if "first_finding_s" in r], 0.5),
        "cost_tokens": round(ttr_p50 * decode, 1) if ttr_p50 is not None else None,
        "targets": TARGETS,
    }


async def measure(base: str, cases: list[dict[str, Any]], offtopic: list[str]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    chats: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(900, connect=30)) as client:
        decode = await decode_rate(client)
        print(f"decode {decode} tok/s", flush=True)
        for case in cases:
            row = {"id": case["id"], "q": case["q"], "lang": lang_of(case), "telemetry": bool(case.get("telemetry"))}
            row |= await ask(client, case["id"], case["q"])
            row |= score(case, row.get("content_type"), row.get("payload") or {})
            row["form"] = answer_form(row.get("content_type"), row.get("payload") or {})
            rows.append(row)
            print(
                f"{row['id']} {row['lang']} {row.get('content_type')} correct={row['correct']} "
                f"misattributed={row['misattributed']} {row['ttr_s']} s",
                flush=True,
            )
        for n, question in enumerate(offtopic, 1):
            row = {"id": f"offtopic-{n}", "q": question} | await ask(client, f"off{n}", question)
            chats.append(row)
            print(f"{row['id']} {row.get('content_type')} {row['ttr_s']} s", flush=True)
    return {"summary": summarize(rows, chats, decode), "cases": rows, "offtopic": chats}


def same_cases(whole: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """A subset run (a model too slow for a whole half here) beside the other models' rows on the same
    cases, taken from their full runs: the only fair comparison."""
    ids = {r["id"] for r in entry["cases"]}
    out: dict[str, Any] = {}
    for name, run in (whole.get("runs") or {}).items():
        if run.get("split") == "ids" or run.get("model") == entry["model"]:
            continue
        rows = [r for r in run["cases"] if r["id"] in ids]
        if {r["id"] for r in rows} == ids:
            ttr = [r["ttr_s"] for r in rows if "error" not in r]
            out[name] = {**figures(rows), "ttr_p50_s": pct(ttr, 0.5), "commit": run["commit"]}
    return out


def select(data: dict[str, Any], split: str, ids: list[str] | None) -> tuple[list[dict[str, Any]], list[str]]:
    cases = list(data["cases"])
    offtopic = list(data.get("offtopic") or [])
    halves = data.get("split") or {}
    if ids:
        return [c for c in cases if c["id"] in ids], []
    if split != "all" and halves:
        chosen = set(halves.get(split) or [])
        cases = [c for c in cases if c["id"] in chosen]
        # Off-topic questions split by position: even ones tune, odd ones report.
        offtopic = offtopic[0::2] if split == "tune" else offtopic[1::2]
    return cases, offtopic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", default=str(QUESTIONS))
    parser.add_argument("--split", default="report", choices=["report", "tune", "all"])
    parser.add_argument("--ids", default=None, help="comma-separated case ids (a quick look; not a figure)")
    parser.add_argument("--config", default=str(ROOT / "configs" / "serve.local.yaml"))
    parser.add_argument("--model", default=None, help="llm.model for this run (default: the config's)")
    parser.add_argument("--base-url", default=None, help="a running service instead of starting one")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    data = json.loads(Path(args.questions).read_text(encoding="utf-8"))
    cases, offtopic = select(data, args.split, args.ids.split(",") if args.ids else None)
    config = Path(args.config)
    default_model = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("llm", {}).get("model")
    model = args.model or default_model
    started = time.time()
    provenance = stamp()  # the code that answers is the code at the start of the run
    if args.base_url:
        result = asyncio.run(measure(args.base_url, cases, offtopic))
    else:
        with tempfile.TemporaryDirectory(prefix="raydiag-dc-") as tmp:
            work = Path(tmp)
            proc, base = start_service(own_knowledge_config(config, work), model, work)
            try:
                result = asyncio.run(measure(base, cases, offtopic))
            finally:
                stop_service(proc)
    entry = {
        **provenance,
        "model": model,
        "questions": os.path.relpath(Path(args.questions).resolve(), ROOT),
        "split": "ids" if args.ids else args.split,
        "wall_s": round(time.time() - started),
        **result,
    }
    out = Path(args.out)
    whole = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    whole["default_model"] = default_model
    whole.setdefault("runs", {})[f"{model}/{entry['split']}"] = entry
    if args.ids:
        entry["others_on_same_cases"] = same_cases(whole, entry)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(whole, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(entry["summary"], ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
