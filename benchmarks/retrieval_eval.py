"""Retrieval quality on real data: dense / BM25 / hybrid nDCG@10, recall@10, recall@100 for BEIR SciFact
(test split) and CMRC2018 (dev split) from ../shared/data, through the service's own chunking, embedder
and Milvus store (`raydiag eval retrieval` on each set). Writes benchmarks/results/retrieval.json.

    python benchmarks/retrieval_eval.py [--only scifact|cmrc2018]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.config import load_config  # noqa: E402
from deployments.provenance import stamp  # noqa: E402
from rag.embedding import embedder_for  # noqa: E402
from rag.eval import evaluate, format_table  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SETS = {"scifact": ("beir-scifact", "test"), "cmrc2018": ("cmrc2018-zh-retrieval", "dev")}
OUT = ROOT / "benchmarks" / "results" / "retrieval.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=sorted(SETS), default=None)
    args = parser.parse_args()
    cfg = load_config(None)
    embedder = embedder_for(cfg.search)
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    for name, (folder, split) in SETS.items():
        if args.only and name != args.only:
            continue
        with tempfile.TemporaryDirectory(prefix="raydiag-eval-") as scratch:
            res = asyncio.run(
                evaluate(
                    DATA / folder,
                    embedder,
                    f"{scratch}/eval.db",
                    split,
                    fusion=cfg.search.fusion,
                    max_chars=cfg.search.chunk_max_chars,
                )
            )
        res["fusion"] = cfg.search.fusion.model_dump()
        res["embedder"] = cfg.search.embedder
        res["chunk_max_chars"] = cfg.search.chunk_max_chars
        res.update(stamp())  # per set: `--only` reruns one set and keeps the other's entry
        results[name] = res
        print(format_table(name, res), flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
