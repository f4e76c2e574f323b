"""End-to-end load over real HTTP/SSE against the running Serve application.

Starts Ray and the app on 127.0.0.1 (SQLite audit trail, Milvus Lite with the bundled runbooks), then
for each profile and concurrency level runs that many chat sessions at once, several rounds, and
measures, per level, the time to `metadata` (acceptance), to the first `status` (work began), to
`content` and to `done`, runs/s, errors and the per-stage time split. After each
level every run's trace is read back: its tokens must reconcile and its timeline must be complete
(the trace summary's ``complete``: stored rows equal RUN_FINISHED's emitted counts, no gap). Writes
benchmarks/results/sse_load.json and sse_load.png.

Profiles: ``scripted`` (llm.backend scripted: zero model time; what remains is the service),
``scripted-direct`` (the same with server.direct_ingress: clients reach the ingress replica's own HTTP
server, no proxy hop) and ``vllm`` (the app `make run` starts: `configs/serve.local.yaml`'s engine, harness
budgets and demo telemetry; slow here, so fewer levels).

    python benchmarks/sse_load.py [--profiles scripted,scripted-direct,vllm] [--levels 1,8,32,64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.provenance import stamp  # noqa: E402
from deployments.sse import parse  # noqa: E402

OUT = ROOT / "benchmarks" / "results"
QUESTIONS = [
    "payment-service p99 latency jumped at 10:00 and HikariCP reports pool exhaustion. Root cause?",
    "支付服务 10 点后超时增多，数据库连接池耗尽，根因是什么？",
    "Kafka consumer lag keeps growing on the orders topic, what should I check?",
    "JVM full GC pauses of several seconds on checkout-service, heap near max",
    "节点磁盘满了 No space left on device，怎么处理？",
    "Redis cache evictions spiked and API latency doubled",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def load_client(base: str, concurrency: int, timeout_s: float) -> aiohttp.ClientSession:
    """The load generator's HTTP client. aiohttp, not httpx: on these 2 shared cores httpx's
    pure-Python stream handling added up to 3x to the measured first-event p99 (299-414 ms vs
    121-147 ms against the same running app, side by side), which is the client, not the service."""
    return aiohttp.ClientSession(
        base_url=base,
        connector=aiohttp.TCPConnector(limit=concurrency + 4),
        # A read timeout, as httpx's was: a long run is fine, a stream that goes silent is an error.
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=timeout_s),
    )


# The milestones of a stream, in the order a user sees them: `metadata` is sent on acceptance, before
# any work, so time to it measures the door, not the service; the first `status` is the first sign of
# work (routing began), `content` the answer, `done` the end.
MILESTONES = ("metadata", "status", "content", "done")


def _event_name(frame_text: str) -> str | None:
    for line in frame_text.split("\n"):
        if line.startswith("event:"):
            return line[6:].strip()
    return None


async def one_chat(client: aiohttp.ClientSession, session: str, question: str) -> dict[str, Any]:
    start = time.perf_counter()
    seen: dict[str, float] = {}
    chunks: list[bytes] = []
    pending = ""
    try:
        async with client.post("/api/chat", json={"Id": session, "Question": question}) as r:
            if r.status != 200:
                await r.read()
                return {"error": f"HTTP {r.status}", "done_ms": (time.perf_counter() - start) * 1000}
            async for chunk in r.content.iter_any():
                now = time.perf_counter()
                chunks.append(chunk)
                # Timed as each frame completes, so a milestone is when the client could act on it.
                pending += chunk.decode("utf-8", errors="replace").replace("\r\n", "\n")
                *frames, pending = pending.split("\n\n")
                for f in frames:
                    name = _event_name(f)
                    if name in MILESTONES and name not in seen:
                        seen[name] = now
    except (aiohttp.ClientError, TimeoutError) as err:
        return {"error": type(err).__name__, "done_ms": (time.perf_counter() - start) * 1000}
    end = time.perf_counter()
    events = parse(b"".join(chunks).decode("utf-8"))
    names = [n for n, _ in events]
    meta = next((d for n, d in events if n == "metadata"), {})
    done = [d for n, d in events if n == "done"]
    error = None
    if names.count("done") != 1 or names[-1] != "done":
        error = "stream did not end with exactly one done"
    elif done[0].get("outcome") == "FAILED":
        error = "run FAILED: " + json.dumps([d for n, d in events if n == "failure"])[:200]
    elif any(m not in seen for m in MILESTONES):
        error = "stream lacks " + ",".join(m for m in MILESTONES if m not in seen)
    return {
        "session": session,
        "run_id": meta.get("run_id"),
        "replica": r.headers.get("x-raydiag-replica"),  # which ingress replica served it
        **{f"{m}_ms": (seen[m] - start) * 1000 for m in MILESTONES if m in seen},
        "done_ms": (end - start) * 1000,
        "content_type": next((d.get("content_type") for n, d in events if n == "content"), None),
        "error": error,
    }


def stage_split(trace: dict[str, Any]) -> dict[str, float]:
    """Milliseconds per phase: each gap between consecutive timeline events goes to the later one's phase."""
    tl = trace.get("timeline") or []
    out: dict[str, float] = {}
    prev = None
    for e in tl:
        t = datetime.fromisoformat(e["created_at"]).timestamp()
        if prev is not None:
            out[e["phase"]] = out.get(e["phase"], 0.0) + (t - prev) * 1000
        prev = t
    return out


async def check_traces(base: str, results: list[dict[str, Any]]) -> tuple[int, int, dict[str, float]]:
    """(unreconciled runs, runs with missing events, mean ms per stage) from the trace API."""
    unreconciled = missing = 0
    splits: list[dict[str, float]] = []
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        for r in results:
            if not r.get("run_id"):
                missing += 1
                continue
            resp = await c.get(f"/api/diagnosis/{r['session']}/trace", params={"runId": r["run_id"]})
            if resp.status_code != 200:
                missing += 1
                continue
            tr = resp.json()
            s = tr["summary"]
            unreconciled += 0 if s["tokens_reconciled"] else 1
            missing += 0 if s["complete"] else 1
            splits.append(stage_split(tr))
    phases = sorted({p for sp in splits for p in sp})
    mean = {p: round(statistics.fmean(sp.get(p, 0.0) for sp in splits), 2) for p in phases} if splits else {}
    return unreconciled, missing, mean


async def run_fixed_work(base: str, profile: str, concurrency: int, runs: int) -> dict[str, Any]:
    """The same `runs` diagnosis questions at every level, `concurrency` at a time: with run times
    that vary 10x between questions (a real model), only a fixed workload compares levels fairly."""
    queue = [QUESTIONS[i % len(QUESTIONS)] for i in range(runs)]
    results: list[dict[str, Any]] = []

    async def worker(i: int) -> None:
        while queue:
            q = queue.pop(0)
            results.append(await one_chat(client, f"load-{profile}-{concurrency}-{i}-{len(queue)}", q))

    async with load_client(base, concurrency, 900) as client:
        start = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(concurrency)))
        wall = time.perf_counter() - start
    return await summarise(base, results, [], wall)


async def summarise(
    base: str, results: list[dict[str, Any]], warmups: list[dict[str, Any]], wall: float
) -> dict[str, Any]:
    ok = [r for r in results if not r.get("error")]
    unreconciled, missing, stages = await check_traces(base, results)
    errors = [r["error"] for r in results + warmups if r.get("error")]
    return {
        "runs": len(results),
        "errors": len(errors),  # counted and warm-up chats alike
        "error_samples": errors[:3],
        **{
            f"{m}_{name}_ms": round(pct([r[f"{m}_ms"] for r in ok], q), 1)
            for m in MILESTONES
            for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
        },
        "runs_per_s": round(len(ok) / wall, 3),
        "unreconciled": unreconciled,
        "missing_events": missing,
        "content_types": {ct: sum(1 for r in ok if r["content_type"] == ct) for ct in {r["content_type"] for r in ok}},
        "stage_ms_mean": stages,
    }


async def run_level(base: str, profile: str, concurrency: int, rounds: int) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    # Closed loop: `concurrency` sessions, each asking `rounds` questions back to back (a follow-up
    # starts when the previous answer is done), so there are always `concurrency` streams open. Each
    # session's first chat opens its connection and is not counted: the numbers are steady state,
    # not the connection burst of the first second (that chat's stream is still checked for errors).
    warmups: list[dict[str, Any]] = []
    measure_from = asyncio.Event()
    started = 0

    async def session(i: int) -> None:
        nonlocal started
        warmups.append(await one_chat(client, f"load-{profile}-{concurrency}-{i}", QUESTIONS[i % len(QUESTIONS)]))
        started += 1
        if started == concurrency:
            measure_from.set()
        await measure_from.wait()
        for rnd in range(rounds):
            q = QUESTIONS[(rnd + i + 1) % len(QUESTIONS)]
            results.append(await one_chat(client, f"load-{profile}-{concurrency}-{i}", q))

    async with load_client(base, concurrency, 600) as client:
        tasks = [asyncio.create_task(session(i)) for i in range(concurrency)]
        await measure_from.wait()
        start = time.perf_counter()
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - start
    return await summarise(base, results, warmups, wall)


def start_app(profile: str, work: Path, port: int, extra: dict[str, Any] | None = None) -> Any:
    from ray import serve

    from deployments.app import build_app
    from deployments.config import parse_config
    from deployments.runtime import start_ray

    llm: dict[str, Any] = {"backend": "scripted"}  # scripted and scripted-direct
    app_sections: dict[str, Any] = {}
    if profile == "vllm":
        # The app `make run` starts: its engine, harness budgets and telemetry (the demo incident's clock).
        local = yaml.safe_load((ROOT / "configs" / "serve.local.yaml").read_text(encoding="utf-8"))
        llm = {**local["llm"], "model_root": str(ROOT / local["llm"]["model_root"])}
        llm["model"] = os.environ.get("RAYDIAG_BENCH_MODEL", llm["model"])
        telemetry = local.get("telemetry", {})
        roots = {k: [str(ROOT / p) for p in telemetry.get(k, [])] for k in ("log_roots", "metric_roots")}
        app_sections = {"harness": local.get("harness", {}), "telemetry": {**telemetry, **roots}}
    cfg = parse_config(
        {
            "server": {"host": "127.0.0.1", "port": port, **(extra or {}).get("server", {})},
            "ray": {"num_cpus": 2, "auth_mode": "disabled", "temp_dir": str(work / "ray")},
            "ingress": {
                "max_ongoing_requests": 128,
                "num_cpus": 0.25,
                **(extra or {}).get("ingress", {}),
            },
            "llm": llm,
            "search": {"milvus_uri": str(work / "milvus.db")},
            "audit": {
                "db_url": f"sqlite:///{work / 'audit.db'}",
                "spill_path": str(work / "spill.jsonl"),
                **(extra or {}).get("audit", {}),
            },
            **app_sections,
        },
        f"sse-load-{profile}",
        env={},
    )
    if profile == "vllm":
        from cli.model_pull import pull

        pull(llm["model"], Path(llm["model_root"]))
    # Milvus Lite is filled before the search replica opens it, in its own process (one owner).
    cfg_file = work / "ingest.yaml"
    cfg_file.write_text(f"search:\n  milvus_uri: {cfg.search.milvus_uri}\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cli.main",
            "--config",
            str(cfg_file),
            "ingest",
            str(ROOT / "knowledge" / "runbooks"),
        ],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    from audit.migrate import upgrade

    upgrade(cfg.audit.db_url)
    start_ray(cfg)
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(build_app(cfg), name="raydiag", route_prefix="/")
    return cfg


def start_profile(profile: str, work: Path, port: int) -> str:
    """Start the app for a profile; its base URL. ``scripted-direct`` is the scripted profile with
    server.direct_ingress on, measured at the ingress replica's own port (no proxy hop)."""
    extra: dict[str, Any] = {}
    if profile == "scripted-direct":
        first = free_port()  # the one ingress replica takes the first port of its range
        extra = {"server": {"direct_ingress": True, "direct_ingress_ports": [first, first + 20]}}
    cfg = start_app(profile, work, port, extra)
    if not cfg.server.direct_ingress:
        return f"http://127.0.0.1:{port}"
    base = f"http://127.0.0.1:{cfg.server.direct_ingress_ports[0]}"
    for _ in range(100):  # the replica starts its own HTTP server while it initialises
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                return base
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the ingress replica does not answer on {base}")


def stop_app() -> None:
    import ray
    from ray import serve

    serve.shutdown()
    ray.shutdown()


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for profile, levels in results["profiles"].items():
        xs = sorted(int(c) for c in levels)

        def get(key: str, levels: dict[str, Any] = levels, xs: list[int] = xs) -> list[float]:
            return [levels[str(c)][key] for c in xs]

        ax1.plot(xs, get("status_p50_ms"), "o-", label=f"{profile} first status p50")
        ax1.plot(xs, get("status_p99_ms"), "o--", label=f"{profile} first status p99")
        ax1.plot(xs, get("done_p50_ms"), "s-", label=f"{profile} done p50")
        ax1.plot(xs, get("done_p99_ms"), "s--", label=f"{profile} done p99")
        ax2.plot(xs, get("runs_per_s"), "o-", label=profile)
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrent chat sessions")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    ax1.set_yscale("log")
    ax1.set_ylabel("latency (ms)")
    ax1.set_title("SSE latency percentiles")
    ax2.set_yscale("log")  # the vllm profile is 100x slower than the scripted one
    ax2.set_ylabel("runs/s")
    ax2.set_title("Throughput")
    fig.suptitle("raydiag over HTTP/SSE on 2 CPUs (Ray Serve, Milvus Lite, SQLite audit)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# Settings of the ingress compared side by side (--compare NAME): the values and the file they go to.
COMPARISONS: dict[str, tuple[str, list[Any], str]] = {
    # the gate on runs working at once in an ingress replica
    "active-runs": ("max_active_runs", [1024, 16, 8, 4], "sse_active_runs.json"),
    # session memory in the cluster's actor (two actor calls a run) vs each replica's own
    "session-memory": ("session_memory", ["cluster", "replica"], "sse_session_memory.json"),
}


def compare(name: str, rounds: int, concurrency: int = 32) -> None:
    """The scripted profile at ``concurrency`` under each value of one ingress setting, in one run."""
    setting, values, file = COMPARISONS[name]
    out: dict[str, Any] = {}
    for v in values:
        port = free_port()
        with tempfile.TemporaryDirectory(prefix="sse-compare-") as tmp:
            start_app("scripted", Path(tmp), port, {"ingress": {setting: v}})
            base = f"http://127.0.0.1:{port}"
            try:
                asyncio.run(run_level(base, "scripted", 2, 1))
                out[str(v)] = asyncio.run(run_level(base, "scripted", concurrency, rounds))
                print(setting, v, json.dumps(out[str(v)]), flush=True)
            finally:
                stop_app()
    path = OUT / file
    body = {"concurrency": concurrency, "setting": f"ingress.{setting}", "results": out, **stamp()}
    path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", default="scripted,scripted-direct,vllm")
    parser.add_argument("--levels", default="1,8,32,64", help="concurrency levels of the scripted profile")
    parser.add_argument("--vllm-levels", default="1,4,8", help="concurrency levels of the vllm profile")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per level (each round = one run per session)")
    # 16 = two runs per session at 8: one long run (a retry round) then no longer sets the whole wall time.
    parser.add_argument("--vllm-runs", type=int, default=16, help="the vllm profile's fixed workload per level")
    parser.add_argument(
        "--compare",
        choices=sorted(COMPARISONS),
        help="the scripted profile at 32 sessions under each value of one ingress setting, side by side",
    )
    args = parser.parse_args()
    if args.compare:
        compare(args.compare, args.rounds)
        return

    out_json = OUT / "sse_load.json"
    # A fresh file every run: profiles of an older script version are never merged into it.
    results: dict[str, Any] = {"profiles": {}}
    for profile in args.profiles.split(","):
        levels = [int(x) for x in (args.vllm_levels if profile == "vllm" else args.levels).split(",")]
        rounds = args.rounds
        port = free_port()
        with tempfile.TemporaryDirectory(prefix="sse-load-") as tmp:
            base = start_profile(profile, Path(tmp), port)
            try:
                asyncio.run(run_level(base, profile, 2, 1))  # warm-up: first lookups load models
                per_level = {}
                for c in levels:
                    if profile == "vllm":
                        per_level[str(c)] = asyncio.run(run_fixed_work(base, profile, c, args.vllm_runs))
                    else:
                        per_level[str(c)] = asyncio.run(run_level(base, profile, c, rounds))
                    print(profile, c, json.dumps(per_level[str(c)]), flush=True)
                results["profiles"][profile] = per_level
            finally:
                stop_app()
    results["machine"] = f"{os.cpu_count()} CPUs, no GPU"
    results.update(stamp())
    OUT.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    plot(results, OUT / "sse_load.png")
    print(f"wrote {out_json} and {OUT / 'sse_load.png'}")


if __name__ == "__main__":
    main()
