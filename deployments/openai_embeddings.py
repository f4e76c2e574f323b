"""``POST /v1/embeddings``: the embedder deployment that serves the knowledge lookup, served to anyone
else in OpenAI's shape. Requests go through the same ``@serve.batch`` batcher as the lookup's, so
concurrent callers share batches with the diagnoses; the vectors are the ones the runbooks are indexed
with (L2-normalised), so a caller can search the same space.

Input is text: a string or a list of up to 2,048 non-empty strings. Token arrays are refused (this model
does not read another tokenizer's ids; LangChain's ``OpenAIEmbeddings`` sends text with
``check_embedding_ctx_length=False``), and so is a ``dimensions`` other than the model's own.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator
from ray.serve.handle import DeploymentHandle

from deployments.api_docs import request_body
from deployments.api_schemas import EmbeddingList
from deployments.errors import error

MAX_INPUTS = 2048
MAX_INPUT_CHARS = 32_000


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str | None = Field(default=None, description="The embedding model (GET /v1/models); another is a 404")
    input: str | list[str] = Field(description="Text, or a list of texts (token arrays are not accepted)")
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, gt=0, description="Only the model's own dimension")

    @field_validator("input", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        items = v if isinstance(v, list) else [v]
        if any(not isinstance(t, str) for t in items):
            raise ValueError("send text: token arrays are not accepted by this model")
        if not items or len(items) > MAX_INPUTS:
            raise ValueError(f"send 1 to {MAX_INPUTS} texts")
        if any(not t.strip() or len(t) > MAX_INPUT_CHARS for t in items):
            raise ValueError(f"every text must be non-empty and at most {MAX_INPUT_CHARS} characters")
        return v

    def texts(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else list(self.input)


def _vector(row: np.ndarray, encoding: str) -> list[float] | str:
    if encoding == "base64":  # OpenAI's: float32, little-endian, base64
        return base64.b64encode(np.asarray(row, dtype="<f4").tobytes()).decode()
    return [float(x) for x in row]


def add_embedding_route(
    app: FastAPI,
    embedder: DeploymentHandle,
    read_request: Callable[[Request, type[EmbeddingRequest]], Awaitable[EmbeddingRequest | JSONResponse]],
) -> None:
    """``read_request``: the /v1 routes' reader (deployments/openai_api.py): the body as the model, or the
    refusal to send (400 naming what is wrong, 503 while stopping)."""
    known: dict[str, Any] = {}

    @app.post(
        "/v1/embeddings",
        summary="OpenAI-compatible embeddings, from the model the knowledge base is indexed with",
        openapi_extra=request_body(EmbeddingRequest),
        responses={
            200: {"model": EmbeddingList},
            400: {"description": "token arrays, an empty text, or another dimension"},
            404: {"description": "model_not_found"},
            503: {"description": "stopping, or the embedder is not serving"},
        },
    )
    async def embeddings(http: Request) -> Any:
        req = await read_request(http, EmbeddingRequest)
        if isinstance(req, JSONResponse):
            return req
        try:
            info = known or await embedder.info.remote()  # the model's name and size never change
            known.update(info)
        except Exception:
            return error(503, "UNAVAILABLE", "the embedder is not serving yet", headers={"Retry-After": "5"})
        name, dim = str(info["model"]), int(info["dim"])
        if req.model is not None and req.model != name:
            return error(404, "model_not_found", f"the model {req.model!r} does not exist here", param="model")
        if req.dimensions is not None and req.dimensions != dim:
            return error(400, "INVALID_REQUEST", f"dimensions: this model's vectors have {dim}", param="dimensions")
        try:
            out = await embedder.embed_for_api.remote(req.texts())
        except Exception as err:
            return error(503, "ENGINE_ERROR", f"the embedder failed ({type(err).__name__})")
        vectors = np.asarray(out["dense"])
        data = [
            {"object": "embedding", "index": i, "embedding": _vector(row, req.encoding_format)}
            for i, row in enumerate(vectors)
        ]
        tokens = int(out["tokens"])
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": name,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )
