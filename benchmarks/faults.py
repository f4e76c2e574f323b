"""Fault injection through the running Serve application, with the audit trail counted afterwards.

The scripted-model profile on Ray Serve (real ingress, embedder, search on Milvus Lite, audit writer)
with its audit trail in MariaDB reached through a loopback TCP proxy that can be cut. Each fault runs
20 concurrent chat sessions, each asking questions back to back until the fault is over:

- ``mariadb_down_15s``: the database connection cut for 15 s mid-load, then restored;
- ``search_replica_killed``: the search deployment's replica killed (Serve restarts it);
- ``graceful_stop_under_load``: ``graceful_stop`` (what ``raydiag stop`` and SIGTERM to ``raydiag
  serve`` do) mid-load: the ingress drains, then the application is deleted; it is deployed again
  afterwards so the trails can be read back through the API;
- ``audit_replica_killed``: the audit writer's replica killed mid-load (Serve starts another); the
  batches it held in memory were never confirmed, so the ingress sends them again;
- ``two_ingress_replicas``: the ingress at two replicas, then a rolling update to one mid-load (Serve
  drains both and starts the new one); each turn must see every earlier turn of its session whichever
  replica served it (``history_mismatches``: a turn whose ROUTING_ATTEMPT counted another number);
- ``llm_replica_killed``: with the embedded vLLM model (8 sessions), the LLM replica killed while runs
  wait on it; the load goes on until Serve has a new replica serving.

Afterwards every run's trace is read back: an audit event is **lost** when the trace summary is not
``complete`` (the stored rows differ from RUN_FINISHED's emitted counts, a gap, no RUN_FINISHED);
**duplicated** rows are counted with SQL over the natural keys. Streams are checked for exactly one ``done``. Writes
benchmarks/results/faults.json: ``{"faults": [{"name", "runs", "outcomes", "lost", "duplicated", …}]}``.

    python benchmarks/faults.py        (MariaDB on 127.0.0.1:3306, root, no password)
"""

from __future__ import annotations

import asyncio
import json
import re
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
from deployments.provenance import stamp  # noqa: E402
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


async def load(
    base: str, name: str, inject: Any, sessions: int = SESSIONS, stop_on_refusal: bool = False
) -> list[dict[str, Any]]:
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
            if stop_on_refusal and str(results[-1].get("error") or "").startswith("HTTP "):
                return  # told the service is stopping (503) or gone (404): this client stops asking

    async with sse_load.load_client(base, sessions, 300) as client:
        injector.start()
        await asyncio.gather(*(session(i) for i in range(sessions)))
        injector.join()
    return results


async def audit_check(base: str, results: list[dict[str, Any]]) -> tuple[int, list[str]]:
    lost, _ = await read_traces(base, results)
    return len(lost), lost[:3]


async def read_traces(base: str, results: list[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """Every run's trace once complete: the run ids whose trail never became complete, and the traces."""
    lost: list[str] = []
    traces: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        for r in results:
            if not r.get("run_id"):
                continue
            deadline = time.monotonic() + 60  # the writer drains its spill file after an outage
            while True:
                resp = await c.get(f"/api/diagnosis/{r['session']}/trace", params={"runId": r["run_id"]})
                tr = resp.json() if resp.status_code == 200 else None
                ok = bool(tr and tr["summary"]["complete"])
                if ok or time.monotonic() > deadline:
                    break
                await asyncio.sleep(1)
            if ok:
                traces[r["run_id"]] = tr
            else:
                lost.append(r["run_id"])
    return lost, traces


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
        if err.startswith("HTTP "):
            key = err  # refused before the stream started (503 while draining, 404 once deleted)
        elif err:
            key = "FAILED" if err.startswith("run FAILED") else "stream_error"
        else:
            key = r.get("content_type") or "none"
        outcomes[key] = outcomes.get(key, 0) + 1
    codes: dict[str, int] = {}
    for r in results:
        for code in re.findall(r'"error_code": "([A-Z_]+)"', str(r.get("error") or "")):
            codes[code] = codes.get(code, 0) + 1
    return {
        "name": name,
        "runs": len(results),
        "outcomes": outcomes,
        "failure_codes": codes,
        "streams_without_one_done": sum(1 for r in results if "exactly one done" in str(r.get("error") or "")),
        "lost": lost,
        "lost_samples": samples,
        "duplicated": dup,
        "note": note,
        "commit": stamp()["commit"],  # per scenario: `--only` reruns one and keeps the others
    }


def graceful_stop_fault(base: str, cfg: Any, db_url: str) -> dict[str, Any]:
    from ray import serve

    from deployments.app import build_app
    from deployments.stopping import graceful_stop

    seen: dict[str, Any] = {}

    def stop() -> None:
        time.sleep(2)
        seen.update(graceful_stop("raydiag", 60))

    res = asyncio.run(load(base, "stop", stop, stop_on_refusal=True))
    serve.run(build_app(cfg), name="raydiag", route_prefix="/")  # started again: the trails are read back
    lost, samples = asyncio.run(audit_check(base, res))
    note = f"drained in {seen.get('waited_s')} s, {seen.get('in_flight')} runs left in flight, then deleted"
    out = summary("graceful_stop_under_load", res, lost, samples, duplicates(db_url), note)
    out["hung"] = sum(1 for r in res if "Timeout" in str(r.get("error") or ""))
    return out


def replica_names(deployment: str, app: str = "raydiag") -> dict[str, str]:
    """The deployment's replica actors: name -> namespace."""
    import ray

    prefix = f"SERVE_REPLICA::{app}#{deployment}#"
    actors = ray.util.list_named_actors(all_namespaces=True)
    return {a["name"]: a["namespace"] for a in actors if a["name"].startswith(prefix)}


def kill_replica_and_wait(deployment: str, recovered_s: list[float]) -> None:
    """Kill the deployment's replica; return once Serve has another one and calls it healthy."""
    import ray
    from ray import serve

    killed, namespace = sorted(replica_names(deployment).items())[0]
    ray.kill(ray.get_actor(killed, namespace=namespace), no_restart=True)
    t0 = time.monotonic()
    while True:
        status = serve.status().applications["raydiag"].deployments[deployment].status
        if set(replica_names(deployment)) - {killed} and status == "HEALTHY":
            break
        time.sleep(0.5)
    recovered_s.append(round(time.monotonic() - t0, 1))


def history_mismatches(results: list[dict[str, Any]], traces: dict[str, Any]) -> int:
    """Turns whose router counted a different number of earlier turns than its session had released.
    A session's results are in the order it asked (each session asks one question at a time)."""
    released: dict[str, int] = {}
    wrong = 0
    for r in results:
        trace = traces.get(r.get("run_id") or "")
        if trace is None:
            continue
        attempt = next((e for e in trace["timeline"] if e["event_type"] == "ROUTING_ATTEMPT"), None)
        seen = (attempt or {}).get("details", {}).get("history_turns")
        wrong += seen != min(released.get(r["session"], 0), 20)
        if r.get("content_type"):
            released[r["session"]] = released.get(r["session"], 0) + 1
    return wrong


def two_ingress_fault(db_url: str, direct: str) -> dict[str, Any]:
    """Two ingress replicas under 20 sessions, then a rolling update to one replica mid-load."""
    from ray import serve

    from deployments.app import build_app

    port = sse_load.free_port()
    with tempfile.TemporaryDirectory(prefix="faults-two-") as tmp:
        cfg = sse_load.start_app(
            "scripted", Path(tmp), port, {"ingress": {"num_replicas": 2}, "audit": {"db_url": db_url}}
        )
        base = f"http://127.0.0.1:{port}"
        try:
            asyncio.run(sse_load.run_level(base, "scripted", 2, 1))  # warm-up
            rolled: list[float] = []

            def roll_to_one() -> None:
                time.sleep(3)
                one = cfg.model_copy(update={"ingress": cfg.ingress.model_copy(update={"num_replicas": 1})})
                t0 = time.monotonic()
                serve.run(build_app(one), name="raydiag", route_prefix="/")  # returns once it is running
                rolled.append(round(time.monotonic() - t0, 1))
                time.sleep(3)

            res = asyncio.run(load(base, "two", roll_to_one))
            lost_ids, traces = asyncio.run(read_traces(base, res))
            replicas: dict[str, int] = {}
            for r in res:
                replicas[str(r.get("replica"))] = replicas.get(str(r.get("replica")), 0) + 1
            note = (
                f"2 ingress replicas, rolled to 1 mid-load (serve.run returned after {rolled[0] if rolled else '?'} s)"
            )
            out = summary("two_ingress_replicas", res, len(lost_ids), lost_ids[:3], duplicates(direct), note)
            out["runs_per_replica"] = sorted(replicas.values(), reverse=True)
            out["history_mismatches"] = history_mismatches(res, traces)
            return out
        finally:
            sse_load.stop_app()


def llm_killed_fault() -> dict[str, Any]:
    """The embedded vLLM model's replica killed under 8 sessions; runs go on until it serves again."""
    port = sse_load.free_port()
    with tempfile.TemporaryDirectory(prefix="faults-llm-") as tmp:
        sse_load.start_app("vllm", Path(tmp), port)
        base = f"http://127.0.0.1:{port}"
        recovered_s: list[float] = []
        try:

            def kill_llm() -> None:
                time.sleep(8)  # the first model calls are under way
                kill_replica_and_wait("llm", recovered_s)

            res = asyncio.run(load(base, "llm", kill_llm, sessions=8))
            lost, samples = asyncio.run(audit_check(base, res))
            sqlite_url = f"sqlite:///{Path(tmp) / 'audit.db'}"
            note = f"vLLM replica killed; Serve had a new one serving after {recovered_s[0] if recovered_s else '?'} s"
            return summary("llm_replica_killed", res, lost, samples, duplicates(sqlite_url), note)
        finally:
            sse_load.stop_app()


def main() -> None:
    # `--only NAME[,NAME]` reruns some faults and keeps the others' entries from the last full run.
    only = set(sys.argv[sys.argv.index("--only") + 1].split(",")) if "--only" in sys.argv else None

    def wanted(name: str) -> bool:
        return only is None or name in only

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
            cfg = sse_load.start_app("scripted", Path(tmp), port, {"audit": {"db_url": via_proxy, "retry_max_s": 2.0}})
            base = f"http://127.0.0.1:{port}"
            try:
                asyncio.run(sse_load.run_level(base, "scripted", 2, 1))  # warm-up

                def cut_db() -> None:
                    time.sleep(2)
                    proxy.cut()
                    time.sleep(15)
                    proxy.resume()

                if wanted("mariadb_down_15s"):
                    res = asyncio.run(load(base, "db", cut_db))
                    lost, samples = asyncio.run(audit_check(base, res))
                    faults.append(
                        summary(
                            "mariadb_down_15s", res, lost, samples, duplicates(direct), "audit DB cut 15 s mid-load"
                        )
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

                if wanted("search_replica_killed"):
                    res = asyncio.run(load(base, "search", kill_search))
                    lost, samples = asyncio.run(audit_check(base, res))
                    note = "Serve restarts the replica"
                    faults.append(summary("search_replica_killed", res, lost, samples, duplicates(direct), note))
                    print(json.dumps(faults[-1]), flush=True)

                audit_back: list[float] = []

                def kill_audit() -> None:
                    time.sleep(1.5)
                    kill_replica_and_wait("audit", audit_back)
                    time.sleep(2)  # keep the load on against the new writer

                if wanted("audit_replica_killed"):
                    res = asyncio.run(load(base, "audit", kill_audit))
                    lost, samples = asyncio.run(audit_check(base, res))
                    back = audit_back[0] if audit_back else "?"
                    note = f"audit writer replica killed; Serve had a new one after {back} s"
                    faults.append(summary("audit_replica_killed", res, lost, samples, duplicates(direct), note))
                    print(json.dumps(faults[-1]), flush=True)

                if wanted("graceful_stop_under_load"):
                    faults.append(graceful_stop_fault(base, cfg, direct))
                    print(json.dumps(faults[-1]), flush=True)
            finally:
                sse_load.stop_app()
        if wanted("two_ingress_replicas"):
            faults.append(two_ingress_fault(via_proxy, direct))
            print(json.dumps(faults[-1]), flush=True)
        if wanted("llm_replica_killed"):
            faults.append(llm_killed_fault())
            print(json.dumps(faults[-1]), flush=True)
    finally:
        proxy.close()
        with admin.begin() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {db}"))
        admin.dispose()
    if only is not None and OUT.exists():
        fresh = {f["name"] for f in faults}
        kept = [f for f in json.loads(OUT.read_text())["faults"] if f["name"] not in fresh]
        order = [
            "mariadb_down_15s",
            "search_replica_killed",
            "audit_replica_killed",
            "graceful_stop_under_load",
            "two_ingress_replicas",
            "llm_replica_killed",
        ]
        faults = sorted(kept + faults, key=lambda f: order.index(f["name"]) if f["name"] in order else len(order))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"faults": faults, **stamp()}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
