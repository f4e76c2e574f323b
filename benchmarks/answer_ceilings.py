"""Where do wrong answers come from? Two ceilings of the correctness benchmark, on the same questions and
answer keys (``benchmarks/diagnosis_correctness.py``), each without the rest of the service:

* ``closed-book``: the model alone, asked each question with no tool and no runbook, gets three guesses
  ("list the 3 most likely root causes"); a case counts when the guesses name the asked component and an
  accepted cause, the benchmark's own rule. What the model knows by itself.
* ``retrieval``: the playbook's lookup of each question (the service's first runbook search, the same
  words, settings and knowledge base as the benchmark's) in this process; a case counts when a returned
  block names an accepted cause. The most an answer written from the retrieved runbooks can get right,
  whatever the model. For the demo-incident questions the service also searches for the ranking's
  suspected fault category, so there this is a lower bound.

Neither is an answer anybody reads; both say which part to improve. Above both, an answer needs what
neither the models nor the runbooks hold.

    python benchmarks/answer_ceilings.py closed-book [--model NAME] [--split tune|report|all]
    python benchmarks/answer_ceilings.py retrieval [--split tune|report|all]

Results: ``benchmarks/results/answer_ceilings.json`` (``--out``), one entry per measurement, model and
split, each with its commit and command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.diagnosis_correctness import (  # noqa: E402
    QUESTIONS,
    lang_of,
    names_answer,
    names_cause,
    own_knowledge_config,
    rate,
    select,
)
from deployments.provenance import stamp  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "answer_ceilings.json"
CONFIG = ROOT / "configs" / "serve.local.yaml"
GUESSES = {
    "en": "List the 3 most likely root causes, one short line each, no explanation.",
    "zh": "列出最可能的 3 个根因，每行一个，简短，不要解释。",
}
SYSTEM = "You are a senior SRE on call. Answer in the language of the question."
MAX_TOKENS = 120


def closed_book(cases: list[dict[str, Any]], model: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Each question to the model through vLLM's offline engine, greedy, as the service's engine runs it."""
    from vllm import LLM, SamplingParams

    from cli.model_pull import model_dir
    from deployments.config import LLMSettings
    from deployments.llm import engine_dtype

    settings = LLMSettings(**{**config.get("llm", {}), "model": model})
    # As the service's engine: a KV cache of the configured size, not vLLM's share of all memory.
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(int(max(1, settings.kv_cache_gib))))
    engine = LLM(
        model=str(model_dir(ROOT / settings.model_root, model)),
        dtype=engine_dtype(settings),
        max_model_len=2048,
        enforce_eager=True,
    )
    chats = [
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"{c['q']}\n\n{GUESSES[lang_of(c)]}"}]
        for c in cases
    ]
    outputs = engine.chat(chats, SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS))
    rows = []
    for case, out in zip(cases, outputs, strict=True):
        text = out.outputs[0].text.strip()
        rows.append(
            {"id": case["id"], "q": case["q"], "lang": lang_of(case), "text": text, "correct": names_answer(case, text)}
        )
    return rows


def retrieval(cases: list[dict[str, Any]], config_path: Path) -> list[dict[str, Any]]:
    """The playbook's lookup of each question over the benchmark's knowledge base, ingested into a scratch
    collection."""
    from deployments.config import load_config
    from harness.playbook import QUESTION_CHARS
    from harness.ruled_out import without_ruled_out
    from rag.in_process import in_process_lookup

    with tempfile.TemporaryDirectory(prefix="raydiag-ceiling-") as tmp:
        cfg = load_config(str(own_knowledge_config(config_path, Path(tmp))))
        lookup, store = in_process_lookup(cfg.search)

        async def run() -> list[dict[str, Any]]:
            rows = []
            for case in cases:
                found = await lookup.lookup(without_ruled_out(case["q"])[:QUESTION_CHARS], "ceiling")
                blocks = found.agent_view["evidence"]
                text = "\n".join(f"{b['heading']}\n{b['text']}" for b in blocks)
                rows.append(
                    {
                        "id": case["id"],
                        "q": case["q"],
                        "lang": lang_of(case),
                        "keys": [b["key"] for b in blocks],
                        "attempt": found.retrieval_details.get("selected_attempt"),
                        "similarity": max((b["qualityScore"] for b in blocks), default=None),
                        "correct": names_cause(case, text),
                    }
                )
            return rows

        try:
            return asyncio.run(run())
        finally:
            store.close()


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def share(part: list[dict[str, Any]]) -> float | None:
        return rate(sum(r["correct"] for r in part), len(part))

    by_lang = {lang: share([r for r in rows if r["lang"] == lang]) for lang in ("zh", "en")}
    return {
        "cases": len(rows),
        "correct_rate": share(rows),
        "correct_rate_zh": by_lang["zh"],
        "correct_rate_en": by_lang["en"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["closed-book", "retrieval"])
    parser.add_argument("--questions", default=str(QUESTIONS))
    parser.add_argument("--split", default="tune", choices=["report", "tune", "all"])
    parser.add_argument("--config", default=str(CONFIG))
    parser.add_argument("--model", default=None, help="closed-book: the model (default: the config's)")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    data = json.loads(Path(args.questions).read_text(encoding="utf-8"))
    cases, _ = select(data, args.split, None)
    config = yaml.safe_load(Path(args.config).read_text(encoding="utf-8")) or {}
    provenance = stamp()
    started = time.time()
    if args.what == "closed-book":
        model = args.model or config.get("llm", {}).get("model")
        rows = closed_book(cases, model, config)
        key = f"closed-book/{model}/{args.split}"
    else:
        rows = retrieval(cases, Path(args.config))
        key = f"retrieval/{args.split}"
    entry = {
        **provenance,
        "questions": os.path.relpath(Path(args.questions).resolve(), ROOT),
        "split": args.split,
        "wall_s": round(time.time() - started),
        "summary": summary(rows),
        "cases": rows,
    }
    out = Path(args.out)
    whole = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    whole[key] = entry
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(whole, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(key, json.dumps(entry["summary"]))


if __name__ == "__main__":
    main()
