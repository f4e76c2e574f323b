"""No input reaches a 5xx: fuzzed requests over every route of the service's HTTP app, counted.

The app and the requests are tests/fuzz_requests.py's (the app as the ingress builds it, over the real
pipeline with the rules model; requests from a seed: mutated bodies, JSON nested past the stack, numbers
no type holds, non-UTF-8 bytes, bodies over the caps, odd methods, paths and keys). Writes
benchmarks/results/fuzz_routes.json: how many requests, their statuses per route, and every one >= 500
with what was sent.

    python benchmarks/fuzz_routes.py [--requests 12000] [--seed 20261206]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.provenance import stamp  # noqa: E402
from tests.fuzz_requests import fuzz_app, requests, send_all  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "fuzz_routes.json"


async def run(n: int, seed: int) -> dict[str, object]:
    start = time.perf_counter()
    async with fuzz_app() as app:
        results = await send_all(app, requests(n, seed))
    by_route: dict[str, Counter[int]] = defaultdict(Counter)
    for req, status, _ in results:
        by_route[req.route][status] += 1
    crashes = [
        {"request": req.summary(), "status": status, "body": text} for req, status, text in results if status >= 500
    ]
    return {
        **stamp(),
        "requests": len(results),
        "seed": seed,
        "responses_5xx": len(crashes),
        "statuses": dict(sorted(Counter(s for _, s, _ in results).items())),
        "by_route": {route: dict(sorted(c.items())) for route, c in sorted(by_route.items())},
        "crashes": crashes[:50],
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=12000)
    ap.add_argument("--seed", type=int, default=20261206)
    args = ap.parse_args()
    result = asyncio.run(run(args.requests, args.seed))
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("requests", "responses_5xx", "statuses", "seconds")}))


if __name__ == "__main__":
    main()
