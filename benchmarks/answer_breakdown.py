"""Where one answer call's seconds go: the README's demo question's real answer-stage request, replayed
on the embedded engine as `configs/serve.local.yaml` sets it up, and taken apart.

1. The request is captured, not written: the shipped pipeline runs the demo question in-process over
   the bundled runbooks (Milvus Lite + the default embedder) and the demo telemetry, with the scripted
   profile's rules model standing in for the model; the answer stage's request (messages, JSON schema,
   token cap) is what any model would get, since the routing, plan and tools do not depend on it.
2. In a process of its own, one vLLM engine with the service's engine arguments (dtype, eager mode,
   prefix caching, xgrammar with compact JSON, the CPU thread binding) serves, in order:
   - the answer call as the service sends it, first time (its schema's grammar compiled) and again;
   - the same prompt with one output token (prefill), with and without a cached prefix;
   - the same prompt, no schema, as many output tokens as the guided answer had (unguided decode).
   The parts measured alone (prefill, unguided decode of that many tokens, and the schema's grammar
   compiled by xgrammar directly) are set against the answer call's wall time: ``explained_share``.
   The per-token cost of guided decoding (the grammar mask) is what a guided call with its grammar
   already compiled takes beyond prefill and unguided decode of its own tokens: ``guidance_overhead_s``.
→ ``benchmarks/results/answer_breakdown.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deployments.provenance import ROOT, stamp

OUT = ROOT / "benchmarks" / "results" / "answer_breakdown.json"
CONFIG = ROOT / "configs" / "serve.local.yaml"
QUESTION = "MySQL connection pool exhausted HikariCP diagnosis"  # the README's demo question


async def capture(question: str) -> dict[str, Any]:
    """The answer stage's request for ``question``, from the shipped pipeline run in-process."""
    from deployments.config import load_config
    from harness.contracts import ChatRequest
    from harness.json_tools import flatten_messages, guided_schema
    from harness.model import ModelRequest, ModelResponse
    from harness.rules_model import RulesModel
    from harness.wiring import build_pipeline
    from rag.embedding import Encoded, Usem3Embedder
    from rag.ingest import ingest_paths
    from rag.lookup import KnowledgeLookupService
    from rag.store import KnowledgeStore
    from tests.fakes.sinks import ListSink

    cfg = load_config(str(CONFIG))
    captured: list[ModelRequest] = []

    class Capture(RulesModel):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            props = (request.json_schema or {}).get("properties", {})
            if request.stage == "executor" and "summary" in props:
                captured.append(request)
            return await super().complete(request)

    embedder = Usem3Embedder()
    with tempfile.TemporaryDirectory(prefix="raydiag-breakdown-") as tmp:
        store = KnowledgeStore(str(Path(tmp) / "m.db"), "kb", embedder.dim)
        ingest_paths([ROOT / "knowledge" / "runbooks"], store, embedder, progress=False)

        async def embed(texts: list[str]) -> Encoded:
            return embedder.encode_sync(texts)

        async def search(q: str, v: Any, lex: Any, mode: Any, k: int, d: list[str] | None, g: Any) -> Any:
            return store.search(q, v, mode, k, d, qlex=lex, gvec=g)

        pipeline = build_pipeline(
            ListSink(), cfg.harness, cfg.telemetry, Capture(), lookup=KnowledgeLookupService(embed, search)
        )
        async for _ in pipeline.run(ChatRequest(Id="breakdown", Question=question)):
            pass
        store.close()
    if not captured:
        raise SystemExit("the pipeline made no answer call for the demo question")
    request = captured[0]
    return {
        "messages": flatten_messages(request),
        "schema": guided_schema(request),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }


def measure(request: dict[str, Any]) -> dict[str, Any]:
    """Runs in its own process: the engine, then each call once, in the order the module docstring says."""
    from vllm import LLM, SamplingParams
    from vllm.config import StructuredOutputsConfig
    from vllm.sampling_params import StructuredOutputsParams

    from deployments.config import load_config
    from deployments.llm import cpu_engine_env, engine_dtype

    settings = load_config(str(CONFIG)).llm
    os.environ.update(cpu_engine_env(settings))
    started = time.perf_counter()
    llm = LLM(
        model=str(ROOT / settings.model_root / settings.model),
        dtype=engine_dtype(settings),
        max_model_len=settings.max_model_len,
        enable_prefix_caching=settings.enable_prefix_caching,
        enforce_eager=True,
        structured_outputs_config=StructuredOutputsConfig(backend="xgrammar", disable_any_whitespace=True),
    )
    load_s = time.perf_counter() - started
    tokenizer = llm.get_tokenizer()
    prompt = str(tokenizer.apply_chat_template(request["messages"], tokenize=False, add_generation_prompt=True))

    def run(text: str, params: Any) -> tuple[float, int, int]:
        start = time.perf_counter()
        out = llm.generate([text], params, use_tqdm=False)[0]
        return time.perf_counter() - start, len(out.prompt_token_ids or []), len(out.outputs[0].token_ids)

    llm.generate(["Say hello."], SamplingParams(max_tokens=4, temperature=0), use_tqdm=False)  # warm-up
    guided = SamplingParams(
        max_tokens=request["max_tokens"],
        temperature=request["temperature"],
        structured_outputs=StructuredOutputsParams(json=request["schema"], disable_any_whitespace=True),
    )
    import xgrammar

    compiler = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo.from_huggingface(tokenizer))
    start = time.perf_counter()
    compiler.compile_json_schema(json.dumps(request["schema"]), any_whitespace=False)
    compile_s = time.perf_counter() - start  # measured apart: the engine's own compiler cache stays cold
    cold_s, n_prompt, n_out = run(prompt, guided)  # as the service's first call with this schema
    warm_s, _, n_out_warm = run(prompt, guided)  # grammar cached, prompt prefix cached
    bust = "Request 2.\n" + prompt  # same length within a few tokens, nothing cached
    prefill_s, n_prompt_bust, _ = run(bust, SamplingParams(max_tokens=1, temperature=0))
    prefill_cached_s, _, _ = run(bust, SamplingParams(max_tokens=1, temperature=0))
    bust2 = "Request 3.\n" + prompt
    unguided_s, _, n_unguided = run(bust2, SamplingParams(max_tokens=n_out, temperature=0, ignore_eos=True))
    bust3 = "Request 4.\n" + prompt
    guided_uncached_s, _, n_guided_uncached = run(bust3, guided)  # grammar cached, prompt not
    decode_per_token_s = (unguided_s - prefill_s) / max(1, n_unguided - 1)
    explained = prefill_s + decode_per_token_s * max(0, n_out - 1) + compile_s
    mask_s = guided_uncached_s - (prefill_s + decode_per_token_s * max(0, n_guided_uncached - 1))
    return {
        "engine_load_s": round(load_s, 1),
        "prompt_tokens": n_prompt,
        "output_tokens": n_out,
        "answer_call_cold_s": round(cold_s, 2),
        "answer_call_repeat_s": round(warm_s, 2),
        "answer_call_repeat_output_tokens": n_out_warm,
        "prefill_s": round(prefill_s, 2),
        "prefill_tok_per_s": round(n_prompt_bust / prefill_s, 1),
        "prefill_cached_prefix_s": round(prefill_cached_s, 2),
        "unguided_decode_tok_per_s": round(1 / decode_per_token_s, 2) if decode_per_token_s > 0 else None,
        "decode_s": round(decode_per_token_s * max(0, n_out - 1), 2),
        "grammar_compile_s": round(compile_s, 2),
        "guided_uncached_prompt_s": round(guided_uncached_s, 2),
        "guided_uncached_output_tokens": n_guided_uncached,
        "guidance_overhead_s": round(mask_s, 2),
        "guidance_overhead_per_token_ms": round(1000 * mask_s / max(1, n_guided_uncached), 1),
        "explained_s": round(explained, 2),
        "explained_share": round(explained / cold_s, 3),
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--measure":  # the engine's process: request in, figures out
        request = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
        Path(sys.argv[3]).write_text(json.dumps(measure(request)), encoding="utf-8")
        return
    from deployments.config import load_config

    provenance = stamp()
    model = load_config(str(CONFIG)).llm.model
    request = asyncio.run(capture(QUESTION))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(request, fh)
    figures_file = Path(fh.name + ".out")
    done = subprocess.run(
        [sys.executable, __file__, "--measure", fh.name, str(figures_file)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    os.unlink(fh.name)
    if done.returncode or not figures_file.exists():
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(done.returncode or 1)
    figures = json.loads(figures_file.read_text(encoding="utf-8"))
    figures_file.unlink()
    result = {
        "question": QUESTION,
        "model": model,
        "request": {
            "max_tokens": request["max_tokens"],
            "schema_bytes": len(json.dumps(request["schema"])),
            "messages_chars": sum(len(m["content"]) for m in request["messages"]),
        },
        **figures,
        **provenance,
        "command": "python benchmarks/answer_breakdown.py",
    }
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
