"""A loopback TCP proxy that a test can cut and restore, to take a real database "down".

The database server itself stays up (other tests and sessions share it); clients connected through
the proxy see their connections reset and new connections refused, as during an outage.
"""

from __future__ import annotations

import asyncio
import socket
import threading


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread.start()
        self.resume()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*self.target)
        except OSError:
            client_w.close()
            return
        self._writers.update((client_w, up_w))
        await asyncio.gather(self._pipe(client_r, up_w), self._pipe(up_r, client_w))
        self._writers.discard(client_w)
        self._writers.discard(up_w)

    def _call(self, coro):  # type: ignore[no-untyped-def]
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    def resume(self) -> None:
        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, reuse_address=True)

        self._call(start())

    def cut(self) -> None:
        """Stop listening and reset every open connection."""

        async def stop() -> None:
            if self._server is not None:
                self._server.close()
                self._server = None
            for w in list(self._writers):
                transport = w.transport
                if transport is not None:
                    transport.abort()
            self._writers.clear()

        self._call(stop())

    def close(self) -> None:
        self.cut()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
