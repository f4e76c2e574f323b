"""API-key authentication for ``/api/*`` and ``/v1/*``: a pure ASGI middleware (it never buffers a
response, so SSE streams pass through untouched).

Keys map to tenants. A request with a valid ``Authorization: Bearer <key>`` carries its tenant in
``scope["state"]["tenant"]``; the API passes it to the pipeline and the trace reader, so a tenant
sees only its own sessions. Keys are compared in constant time against every configured key and
never logged, audited or echoed.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from deployments.errors import error_bytes

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PROTECTED = ("/api/", "/v1/", "/mcp")


def tenant_for(header: str | None, keys: dict[str, str]) -> str | None:
    """The tenant whose key the header carries, or None. Every key is compared (constant time each),
    so the time taken does not tell which key, or how much of one, matched."""
    if not header or not header.startswith("Bearer "):
        return None
    offered = header.removeprefix("Bearer ").strip().encode()
    found = None
    for tenant, key in keys.items():
        if hmac.compare_digest(offered, key.encode()):
            found = tenant
    return found


class ApiKeyMiddleware:
    def __init__(self, app: ASGIApp, keys: dict[str, str]) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.keys:
            await self.app(scope, receive, send)
            return
        root = str(scope.get("root_path", "")).rstrip("/")
        path = str(scope.get("path", ""))
        path = path[len(root) :] if root and path.startswith(root) else path
        if not path.startswith(PROTECTED):
            await self.app(scope, receive, send)  # the console page and /healthz stay open
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        tenant = tenant_for(headers.get("authorization"), self.keys)
        if tenant is None:
            body = error_bytes(401, "UNAUTHORIZED", "a valid 'Authorization: Bearer <api key>' is required")
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="raydiag"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        scope.setdefault("state", {})["tenant"] = tenant
        await self.app(scope, receive, send)


def parse_keys(spec: str) -> dict[str, str]:
    """``tenant-a:key1,tenant-b:key2`` (RAYDIAG_API_KEYS) → {tenant: key}; a bad entry is an error."""
    out: dict[str, str] = {}
    for item in (p.strip() for p in spec.split(",")):
        if not item:
            continue
        tenant, sep, key = item.partition(":")
        if not sep or not tenant.strip() or len(key.strip()) < 8:
            raise ValueError("RAYDIAG_API_KEYS entries are tenant:key with a key of at least 8 characters")
        out[tenant.strip()] = key.strip()
    return out
