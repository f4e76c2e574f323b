"""LLM throughput: output tokens/s through the Ray Serve deployment (1, 8, 32 concurrent requests)
and, in the same run, on the bare vLLM engine (8 concurrent), with the same prompts and limits.

    python benchmarks/llm_throughput.py [--model qwen2.5-coder-0.5b-instruct] [--device cpu|cuda] [--max-tokens 128]

``--model`` is a name `raydiag models pull` knows or a model directory; the default is the model the
default config serves (what users get). Each run replaces its model's entry in llm.json and keeps the
others' (SmolLM2-135M, the test model, is the second row). On a GPU machine pass ``--device cuda``
(vLLM with CUDA must be installed there).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.config import LLMSettings, load_config  # noqa: E402
from deployments.provenance import stamp  # noqa: E402
from harness.model import Message, ModelRequest  # noqa: E402

BENCH_TIMEOUT_S = 900.0
TOPICS = ["a database outage", "a full disk", "a slow API", "a memory leak", "a network partition", "a cache stampede"]


def request(i: int, max_tokens: int) -> ModelRequest:
    topic = TOPICS[i % len(TOPICS)]
    return ModelRequest(
        messages=[Message("user", f"Write a detailed 400-word incident report about {topic} (#{i}).")],
        stage="bench",
        max_tokens=max_tokens,
        temperature=0.0,
        # 32 requests at once on two cores: a 0.5B's last one finishes after minutes, not a timeout.
        timeout_s=BENCH_TIMEOUT_S,
    )


async def measure(call: Any, n: int, max_tokens: int) -> tuple[float, int]:
    start = time.perf_counter()
    outs = await asyncio.gather(*(call(request(i, max_tokens)) for i in range(n)))
    wall = time.perf_counter() - start
    tokens = sum(o for o in outs)
    return tokens / wall, tokens


async def through_deployment(settings: LLMSettings, model_dir: str, max_tokens: int) -> dict[str, Any]:
    import ray
    from ray import serve

    from deployments.llm import LLMServer

    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _temp_dir=tempfile.mkdtemp(prefix="rb-"),
        _node_ip_address="127.0.0.1",
        runtime_env={"env_vars": {"RAY_AUTH_MODE": "disabled"}},
    )
    app = LLMServer.options(  # type: ignore[attr-defined]
        max_ongoing_requests=64, ray_actor_options={"num_cpus": settings.num_cpus, "num_gpus": settings.num_gpus}
    ).bind(settings, model_dir)
    handle = serve.run(app, name="bench", route_prefix=None)

    async def call(req: ModelRequest) -> int:
        result = await handle.complete.remote(req)
        assert result["ok"], result
        return int(result["response"].usage.output_tokens)

    await measure(call, 2, 16)  # warm-up
    out: dict[str, Any] = {}
    for n, key in ((1, "single"), (8, "concurrent8"), (32, "concurrent32")):
        rate, tokens = await measure(call, n, max_tokens)
        out[f"{key}_tok_per_s"] = round(rate, 1)
        out[f"{key}_tokens"] = tokens
    serve.shutdown()
    ray.shutdown()
    return out


async def bare_engine(settings: LLMSettings, model_dir: str, max_tokens: int) -> dict[str, Any]:
    from vllm import SamplingParams
    from vllm.v1.engine.async_llm import AsyncLLM

    from deployments.llm import cpu_engine_env, engine_args

    if settings.device == "cpu":
        os.environ.update(cpu_engine_env(settings))  # as the deployment's replica does
    engine = AsyncLLM.from_engine_args(engine_args(settings, model_dir))
    tok = engine.get_tokenizer()

    async def call(req: ModelRequest) -> int:
        msgs = [{"role": m.role, "content": m.content} for m in req.messages]
        prompt = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)  # type: ignore[arg-type]
        final = None
        params = SamplingParams(max_tokens=req.max_tokens, temperature=0.0)
        async for o in engine.generate(prompt, params, request_id=f"b{id(req)}"):
            final = o
        assert final is not None
        return len(final.outputs[0].token_ids)

    await measure(call, 2, 16)
    rate, tokens = await measure(call, 8, max_tokens)
    engine.shutdown()
    return {"bare_concurrent8_tok_per_s": round(rate, 1), "bare_concurrent8_tokens": tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=default_model())
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--model-root", default=str(ROOT / "var" / "models"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "llm.json"))
    args = parser.parse_args()

    from cli.model_pull import MODELS, pull

    model_dir = str(pull(args.model, Path(args.model_root))) if args.model in MODELS else args.model
    # The engine as the default config sets it up (dtype, thread binding): until 2026-12-06 this took
    # LLMSettings' own default, bfloat16, which on this project's CPUs is the slow path.
    local = load_config(env={}).llm
    settings = LLMSettings(
        backend="vllm",
        model=args.model,
        device=args.device,
        dtype=local.dtype,
        cpu_threads_bind=local.cpu_threads_bind,
        max_model_len=4096,
        kv_cache_gib=2,
        num_cpus=1,
        num_gpus=1 if args.device == "cuda" else 0,
        request_timeout_s=BENCH_TIMEOUT_S,
    )
    from deployments.llm import engine_dtype

    result: dict[str, Any] = {
        "model": args.model,
        "device": args.device,
        "dtype": engine_dtype(settings),
        "max_tokens": args.max_tokens,
    }
    result.update(asyncio.run(through_deployment(settings, model_dir, args.max_tokens)))
    result.update(asyncio.run(bare_engine(settings, model_dir, args.max_tokens)))
    result["concurrency8_over_single"] = round(result["concurrent8_tok_per_s"] / result["single_tok_per_s"], 2)
    result["deployment_over_bare"] = round(result["concurrent8_tok_per_s"] / result["bare_concurrent8_tok_per_s"], 3)
    result.update(stamp())
    out = Path(args.out)
    data = json.loads(out.read_text()) if out.exists() else {}
    data = {"default_model": default_model(), "models": {**data.get("models", {}), args.model: result}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def default_model() -> str:
    from deployments.config import load_config

    return load_config(env={}).llm.model.rsplit("/", 1)[-1]


if __name__ == "__main__":
    main()
