"""Fault injection through the running Serve application, with the audit trail counted afterwards.

The scripted-model profile on Ray Serve (real ingress, embedder, search on Milvus Lite, audit writer)
with its audit trail in MariaDB reached through a loopback TCP proxy that can be cut. Each fault runs
20 concurrent chat sessions, each asking questions back to back until the fault is over:

- ``mariadb_down_15s``: the database connection cut for 15 s mid-load, then restored;
- ``search_replica_killed``: the search deployment's replica killed (Serve restarts it).

Afterwards every run's trace is read back: an audit event is **lost** when a run's timeline is not
contiguous from 1, has no RUN_FINISHED, or persisted != returned; **duplicated** rows are counted with
SQL over the natural keys. Streams are checked for exactly one ``done``. Writes
benchmarks/results/faults.json: ``{"faults": [{"name", "runs", "outcomes", "lost", "duplicated", …}]}``.

    python benchmarks/faults.py        (MariaDB on 127.0.0.1:3306, root, no password)
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import sse_load  # noqa: E402

from audit.migrate import upgrade  # noqa: E402
from tests.fakes.tcp_proxy import TcpProxy  # noqa: E402  (the fault injector the audit tests use)

ADMIN = "mysql+pymysql://root@127.0.0.1:3306/test"
OUT = ROOT / "benchmarks" / "results" / "faults.json"
SESSIONS, PER_SESSION = 20, 2
# Table and column names below are constants of our schema, never input.
DUP_SQL = {
    "diagnosis_trace_event": "run_id, sequence_no",
    "agent_step": "run_id, step_index",
    "tool_invocation": "run_id, tool_call_id",
}


async def load(base: str, name: str, inject: Any) -> list[dict[str, Any]]:
    """20 sessions asking questions back to back for as long as the fault lasts (and at least
    PER_SESSION each), so the load spans the whole outage and its recovery."""
    results: list[dict[str, Any]] = []
    injector = threading.Thread(target=inject, daemon=True)

    async def session(i: int) -> None:
        k = 0
        while k < PER_SESSION or injector.is_alive():
            q = sse_load.QUESTIONS[(i + k) % len(sse_load.QUESTIONS)]
            results.append(await sse_load.one_chat(client, f"fault-{name}-{i}", q))
            k += 1

    async with httpx.AsyncClient(base_url=base, timeout=300) as client:
        injector.start()
        await asyncio.gather(*(session(i) for i in range(SESSIONS)))
        injector.join()
    return results


async def audit_check(base: str, results: list[dict[str, Any]]) -> tuple[int, list[str]]:
    lost: list[str] = []
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        for r in results:
            if not r.get("run_id"):
                continue
            deadline = time.monotonic() + 60  # the writer drains its spill file after an outage
            while True:
                resp = await c.get(f"/api/diagnosis/{r['session']}/trace", params={"runId": r["run_id"]})
                tr = resp.json() if resp.status_code == 200 else None
                ok = bool(
                    tr
                    and tr["summary"]["timeline_contiguous"]
                    and tr["summary"]["persisted"] == tr["summary"]["returned"]
                    and tr["timeline"]
                    and tr["timeline"][-1]["event_type"] == "RUN_FINISHED"
                )
                if ok or time.monotonic() > deadline:
                    break
                await asyncio.sleep(1)
            if not ok:
                lost.append(r["run_id"])
    return len(lost), lost[:3]


def duplicates(db_url: str) -> int:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return sum(
                int(
                    conn.execute(
                        text(f"SELECT COUNT(*) FROM (SELECT {cols} FROM {table} GROUP BY {cols} HAVING COUNT(*) > 1) d")
                    ).scalar_one()
                )
                for table, cols in DUP_SQL.items()
            )
    finally:
        engine.dispose()


def summary(
    name: str, results: list[dict[str, Any]], lost: int, samples: list[str], dup: int, note: str
) -> dict[str, Any]:
    outcomes: dict[str, int] = {}
    for r in results:
        err = str(r.get("error") or "")
        key = (
            "FAILED" if err.startswith("run FAILED") else ("stream_error" if err else (r.get("content_type") or "none"))
        )
        outcomes[key] = outcomes.get(key, 0) + 1
    return {
        "name": name,
        "runs": len(results),
        "outcomes": outcomes,
        "streams_without_one_done": sum(1 for r in results if "exactly one done" in str(r.get("error") or "")),
        "lost": lost,
        "lost_samples": samples,
        "duplicated": dup,
        "note": note,
    }


def main() -> None:
    db = f"raydiag_faults_{int(time.time())}"
    admin = create_engine(ADMIN)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE DATABASE {db}"))
    direct = f"mysql+pymysql://root@127.0.0.1:3306/{db}"
    upgrade(direct)
    proxy = TcpProxy("127.0.0.1", 3306)
    via_proxy = f"mysql+pymysql://root@127.0.0.1:{proxy.port}/{db}"
    faults: list[dict[str, Any]] = []
    port = sse_load.free_port()
    try:
        with tempfile.TemporaryDirectory(prefix="faults-") as tmp:
            sse_load.start_app("scripted", Path(tmp), port, {"audit": {"db_url": via_proxy, "retry_max_s": 2.0}})
            base = f"http://127.0.0.1:{port}"
            try:
                asyncio.run(sse_load.run_level(base, "scripted", 2, 1))  # warm-up

                def cut_db() -> None:
                    time.sleep(2)
                    proxy.cut()
                    time.sleep(15)
                    proxy.resume()

                res = asyncio.run(load(base, "db", cut_db))
                lost, samples = asyncio.run(audit_check(base, res))
                faults.append(
                    summary("mariadb_down_15s", res, lost, samples, duplicates(direct), "audit DB cut 15 s mid-load")
                )
                print(json.dumps(faults[-1]), flush=True)

                def kill_search() -> None:
                    import ray

                    time.sleep(1.5)
                    actors = [
                        a for a in ray.util.list_named_actors(all_namespaces=True) if "search" in a["name"].lower()
                    ]
                    for a in actors:
                        if "replica" in a["name"].lower():
                            ray.kill(ray.get_actor(a["name"], namespace=a["namespace"]), no_restart=False)
                    time.sleep(8)  # keep the load on while Serve restarts the replica

                res = asyncio.run(load(base, "search", kill_search))
                lost, samples = asyncio.run(audit_check(base, res))
                faults.append(
                    summary(
                        "search_replica_killed", res, lost, samples, duplicates(direct), "Serve restarts the replica"
                    )
                )
                print(json.dumps(faults[-1]), flush=True)
            finally:
                sse_load.stop_app()
    finally:
        proxy.close()
        with admin.begin() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {db}"))
        admin.dispose()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"faults": faults}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
