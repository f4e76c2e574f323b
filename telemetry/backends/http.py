"""The HTTP client pool the remote backends (Prometheus, Jaeger) share."""

from __future__ import annotations

import asyncio

import httpx


class LoopClients:
    """One pooled ``httpx.AsyncClient`` per event loop: a client must not outlive the loop it was made on."""

    def __init__(self, base_url: str, timeout_s: float, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.transport = transport
        self._clients: dict[int, httpx.AsyncClient] = {}

    def get(self) -> httpx.AsyncClient:
        loop = id(asyncio.get_running_loop())
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(
                base_url=self.base_url, timeout=self.timeout_s, trust_env=False, transport=self.transport
            )
            self._clients[loop] = client
        return client

    async def close(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
