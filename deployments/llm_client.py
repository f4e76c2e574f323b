"""The ingress side of the LLM: the harness's ``ChatModel`` over the LLM deployment's handle."""

from __future__ import annotations

import asyncio
from typing import Any

from ray.serve.handle import DeploymentHandle

from harness.model import ModelError, ModelRequest, ModelResponse


class LLMHandleModel:
    def __init__(self, handle: DeploymentHandle) -> None:
        self.handle = handle

    async def complete(self, request: ModelRequest) -> ModelResponse:
        pending = self.handle.complete.remote(request)
        try:
            result: dict[str, Any] = await pending
        except asyncio.CancelledError:
            pending.cancel()  # the replica aborts the generation in the engine
            raise
        except Exception as err:  # the replica died or is unreachable
            raise ModelError("UNAVAILABLE", f"the LLM deployment failed: {type(err).__name__}") from err
        if not result["ok"]:
            raise ModelError(result["code"], result["message"])
        response: ModelResponse = result["response"]
        return response
