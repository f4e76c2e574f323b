"""A request-body cap for the routes whose bodies FastAPI parses itself (``/v1/*``, where the
``/api`` routes' own reader does not run): a pure ASGI middleware, so streamed responses pass through.

A declared ``Content-Length`` over the cap is refused before anything is read; a body streamed without
one is counted as it arrives and refused once it passes the cap. Either way the caller gets 413 with the
API's JSON error shape, and nothing is parsed.
"""

from __future__ import annotations

from typing import Any

from deployments.errors import error_bytes


class BodyTooLarge(Exception):
    """Raised from the wrapped ``receive`` once a streamed body passes the cap. FastAPI wraps what its
    body reading raises in a 400 HTTPException; the API's handler answers 413 for this cause."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the body is larger than {limit} bytes")
        self.limit = limit


def too_large_body(limit: int) -> bytes:
    return error_bytes(413, "BODY_TOO_LARGE", f"the body is larger than {limit} bytes")


class BodyLimit:
    def __init__(self, app: Any, limit: int, prefix: str = "/v1/") -> None:
        self.app = app
        self.limit = limit
        self.prefix = prefix

    async def _refuse(self, send: Any) -> None:
        body = too_large_body(self.limit)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        received = 0
        started = False

        async def counted() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def watched(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:
            if not started:
                await self._refuse(send)
