"""The one error body every route sends: ``{"error": {"code", "message", "type", "param"}}``.

``code`` and ``message`` are raydiag's contract; ``type`` and ``param`` are OpenAI's, so that the
``openai`` SDK (and LangChain over it) reads a refusal of ``/v1`` as it reads OpenAI's own:
``BadRequestError`` with the offending parameter named. The extra fields cost ``/api`` clients nothing.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse

_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}


def error_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    return _TYPES.get(status, "invalid_request_error")


def error_body(status: int, code: str, message: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "type": error_type(status), "param": param}}


def error_bytes(status: int, code: str, message: str) -> bytes:
    """The body for plain-ASGI refusals (authentication, the body cap) sent before FastAPI runs."""
    return json.dumps(error_body(status, code, message)).encode()


def error(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, param: str | None = None
) -> JSONResponse:
    return JSONResponse(error_body(status, code, message, param), status_code=status, headers=headers)
