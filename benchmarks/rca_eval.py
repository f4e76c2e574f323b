"""Root-cause accuracy of the whole service on labelled real faults: `raydiag eval rca` on both
development days — Nezha OnlineBoutique 2022-08-22 (metrics) and TrainTicket 2023-01-29 (metrics, logs
and traces) — with the configured (default: embedded) model, beside the reference baseline.

Runs the same command a user runs (the configured app is started once for both days; the pipeline,
tools and model are the service's own) and adds the reference baseline
``../shared/tools/naive_rca_baseline.py`` on each day, so everything lands in one results file:
``benchmarks/results/rca.json`` (pooled, and per day under ``days``). ``--tools-only`` scores the
anomaly ranking alone. The published numbers of other methods on this data family are in
``benchmarks/results/rca_published.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.anomaly_ranking import SHARED, naive  # noqa: E402
from cli.main import main as raydiag  # noqa: E402

DEV_DAYS = [SHARED / "data" / "nezha-rca-onlineboutique", SHARED / "data" / "nezha-rca-trainticket"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "serve.local.yaml"))
    parser.add_argument("--dataset", nargs="+", default=[str(d) for d in DEV_DAYS])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rca.json"))
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--tools-only", action="store_true", help="the anomaly ranking alone (no model, no app)")
    args = parser.parse_args()
    command = ["--config", args.config, "eval", "rca", "--dataset", *args.dataset, "--out", args.out]
    command += ["--tools-only"] if args.tools_only else []
    command += ["--concurrency", str(args.concurrency)] + (["--limit", str(args.limit)] if args.limit else [])
    started = time.perf_counter()
    code = raydiag(command)
    if code:
        raise SystemExit(code)
    result = json.loads(Path(args.out).read_text(encoding="utf-8"))
    baselines = {str(Path(d)): naive(Path(d)) for d in args.dataset}
    for day in result["days"].values():
        # The naive tool scores a whole dataset folder: a development day is its folder's only labelled
        # day; where a folder holds several, each of its days gets the folder's figure, said so.
        folder_days = sum(d["dataset"] == day["dataset"] for d in result["days"].values())
        scope = {"scope": f"all {folder_days} labelled days of {day['dataset']}"} if folder_days > 1 else {}
        day["naive_baseline"] = {**baselines[day["dataset"]], **scope}
    result["wall_s"] = round(time.perf_counter() - started, 1)
    result["command"] = "python benchmarks/rca_eval.py " + " ".join(sys.argv[1:])
    Path(args.out).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for key, day in result["days"].items():
        print(f"{key}: naive baseline AS@1 {day['naive_baseline']['as1']}  AS@3 {day['naive_baseline']['as3']}")
    print(f"wall time {result['wall_s']} s; wrote {args.out}")


if __name__ == "__main__":
    main()
