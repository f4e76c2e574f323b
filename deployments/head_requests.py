"""HEAD answered as GET without its body (RFC 9110 §9.3.2), for every GET route: load balancers and
uptime checkers probe with HEAD, and FastAPI's routes answer it 405. A pure ASGI middleware: the
status and headers (Content-Length included) are the GET's; the body is not sent."""

from __future__ import annotations

from typing import Any


class HeadAsGet:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = False

        async def headers_only(message: Any) -> None:
            nonlocal ended
            if message["type"] == "http.response.body":
                if ended:
                    return
                ended = not message.get("more_body", False)
                message = {"type": "http.response.body", "body": b"", "more_body": not ended}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
