"""Retrieval quality on real data: dense / BM25 / hybrid nDCG@10, recall@10, recall@100 for BEIR SciFact
(test split), CMRC2018 (dev split) and the cross-lingual set (Chinese questions, English runbooks:
benchmarks/data/crosslingual_queries.jsonl over ~750 runbooks of ../shared/data; its tune, report and
held-out KubeSphere parts scored apart), through the service's own chunking, embedder and Milvus store
(`raydiag eval retrieval` on each BEIR set). Beside the configured fusion, the same index scores the
fusion variants below side by side. Writes benchmarks/results/retrieval.json.

    python benchmarks/retrieval_eval.py [--only scifact|cmrc2018|crosslingual]
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
from evaluation.retrieval import BeirDataset, evaluate_dataset, format_table, load_beir  # noqa: E402
from rag.embedders import embedder_for  # noqa: E402
from rag.store import FusionSettings  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks" / "data"))
import make_crosslingual_set  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
BEIR_SETS = {"scifact": ("beir-scifact", "test"), "cmrc2018": ("cmrc2018-zh-retrieval", "dev")}
SETS = (*BEIR_SETS, "crosslingual")
OUT = ROOT / "benchmarks" / "results" / "retrieval.json"
CROSSLINGUAL = ROOT / "benchmarks" / "data" / "crosslingual_queries.jsonl"


def variants(configured: FusionSettings) -> dict[str, FusionSettings]:
    """Fusions scored beside the configured one on the same index: the configured fusion without the
    gloss list (the default before it), without the script weighting and the gloss list (the default
    before both), without the named list (the default before it), and plain RRF(60) of the dense and
    BM25 lists with equal weights."""
    return {
        "no_gloss": configured.model_copy(update={"gloss": False}),
        "no_named": configured.model_copy(update={"named_weight": 0.0}),
        "no_script": configured.model_copy(update={"script_aware": False, "gloss": False, "named_weight": 0.0}),
        "rrf60": FusionSettings(
            method="rrf", k=60, dense_weight=1.0, bm25_weight=1.0, script_aware=False, gloss=False, named_weight=0.0
        ),
    }


def crosslingual() -> tuple[BeirDataset, dict[str, set[str]]]:
    rows = [json.loads(line) for line in CROSSLINGUAL.read_text(encoding="utf-8").splitlines() if line.strip()]
    qrels = {r["id"]: {d: 1 for d in r["relevant"]} for r in rows}
    subsets: dict[str, set[str]] = {}
    for r in rows:
        subsets.setdefault(r["split"], set()).add(r["id"])
    return BeirDataset(make_crosslingual_set.corpus(), {r["id"]: r["query"] for r in rows}, qrels), subsets


def dataset(name: str) -> tuple[BeirDataset, dict[str, set[str]], str]:
    """A set's data, the query subsets scored apart, and the split's name."""
    if name == "crosslingual":
        return (*crosslingual(), "all")
    folder, split = BEIR_SETS[name]
    return load_beir(DATA / folder, split), {}, split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=sorted(SETS), default=None)
    args = parser.parse_args()
    cfg = load_config(None)
    embedder = embedder_for(cfg.search)
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    for name in SETS:
        if args.only and name != args.only:
            continue
        data, subsets, split = dataset(name)
        with tempfile.TemporaryDirectory(prefix="raydiag-eval-") as scratch:
            res = asyncio.run(
                evaluate_dataset(
                    data,
                    embedder,
                    f"{scratch}/eval.db",
                    cfg.search.fusion,
                    variants(cfg.search.fusion),
                    max_chars=cfg.search.chunk_max_chars,
                    subsets=subsets,
                )
            )
        res["split"] = split
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
