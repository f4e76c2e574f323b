"""What the cluster-wide tenant cap costs per admission, side by side with the per-replica cap alone.

An authenticated chat is admitted by the replica's ``RunLimiter`` and, with the cluster cap, by one
call to the cluster's control actor (``deployments/admission.py``) and released by another. This runs
``admit`` + ``release`` cycles from ``concurrency`` concurrent callers in one process (as one ingress
replica's event loop would) against a real local Ray cluster's control actor, and the same cycles with
the replica's limiter only, in the same run. Per level: admission latency p50/p99 (µs) and cycles/s.

    python benchmarks/admission_overhead.py [--cycles 2000] [--levels 1,8,32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.admission import Admission, ClusterTenantCap  # noqa: E402
from deployments.limits import RunLimiter  # noqa: E402
from deployments.provenance import stamp  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "admission.json"
TENANTS = 4


async def cycles(admission: Admission, total: int, concurrency: int) -> dict[str, float]:
    """``total`` admit + start + release cycles from ``concurrency`` callers; admission latency and rate."""
    latencies: list[float] = []
    left = iter(range(total))

    async def caller(i: int) -> None:
        for n in left:
            tenant = f"tenant-{(i + n) % TENANTS}"
            t0 = time.perf_counter()
            ticket, reason = await admission.admit(tenant)
            latencies.append(time.perf_counter() - t0)
            if ticket is None:
                raise RuntimeError(f"refused under the cap: {reason}")
            admission.start(ticket)
            await asyncio.sleep(0)  # the run: others interleave while it holds its slot
            await admission.release(ticket)

    t0 = time.perf_counter()
    await asyncio.gather(*(caller(i) for i in range(concurrency)))
    elapsed = time.perf_counter() - t0
    lat = sorted(latencies)
    return {
        "admit_p50_us": round(statistics.median(lat) * 1e6, 1),
        "admit_p99_us": round(lat[int(len(lat) * 0.99) - 1] * 1e6, 1),
        "cycles_per_s": round(total / elapsed, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=2000)
    ap.add_argument("--levels", default="1,8,32")
    args = ap.parse_args()
    import ray

    os.environ["RAY_AUTH_MODE"] = "disabled"  # a private loopback cluster, as the service starts one
    work = tempfile.mkdtemp(prefix="raydiag-admission-")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=f"{work}/ray", _node_ip_address="127.0.0.1")
    try:
        cap = 10_000  # never reached: the cost of asking is measured, not refusals
        levels: list[dict[str, Any]] = []

        async def run() -> None:
            cluster = ClusterTenantCap("bench", "replica-1", cap, timeout_s=5.0)
            await cluster.acquire("warm-up") and None  # the actor is created by the first caller
            for c in (int(x) for x in args.levels.split(",")):
                replica_only = await cycles(Admission(RunLimiter(1000, cap)), args.cycles, c)
                with_cluster = await cycles(Admission(RunLimiter(1000, cap), cluster), args.cycles, c)
                levels.append({"concurrency": c, "replica_only": replica_only, "cluster_cap": with_cluster})
                print(json.dumps(levels[-1]), flush=True)
            assert cluster.unreachable == 0, "the control actor did not answer: the numbers are not of it"

        asyncio.run(run())
    finally:
        ray.shutdown()
    out = {"cycles": args.cycles, "tenants": TENANTS, "levels": levels, **stamp()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
