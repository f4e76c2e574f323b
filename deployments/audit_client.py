"""The producer side of the audit path inside an ingress replica.

``BufferedAuditSink.emit`` appends to a local list (microseconds); a background task ships the list
to the audit deployment in batches. A failed hand-off is retried with back-off, and records beyond
the bound go to a local spill file, so an audit outage neither blocks a chat nor loses its records.

A batch stays here until the writer answers that it committed or durably spilled it (the ship call
returns only then): if the writer replica dies with the batch in its memory, the call fails and the
batch goes again to the next one (at-least-once; the store's inserts are idempotent by natural key).
With each batch go ``floors``: per run, the highest sequence number already confirmed, so a writer
that started after the earlier records were confirmed does not wait for them (``ReorderBuffer``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from audit.records import AuditRecord
from audit.writer import SpillFile, stop_task, wait_event

log = logging.getLogger(__name__)

Shipper = Callable[[list[dict[str, Any]], dict[str, int]], Awaitable[Any]]


class BufferedAuditSink:
    def __init__(
        self,
        ship: Shipper,
        *,
        batch_size: int = 500,
        interval_s: float = 0.02,
        bound: int = 100_000,
        spill_path: str = "var/audit-ingress-spill.jsonl",
        retry_max_s: float = 5.0,
    ) -> None:
        self._ship = ship
        self.batch_size = batch_size
        self.interval_s = interval_s
        self.bound = bound
        self.retry_max_s = retry_max_s
        self._buf: list[AuditRecord] = []
        self._spill = SpillFile(spill_path)
        self._confirmed: dict[str, int] = {}  # run id -> highest sequence number the writer confirmed
        # One hand-off at a time, and the batch in it counted as pending: a flush must wait for the batch
        # the background loop is shipping, or a trace read right after it misses that batch's records.
        self._ship_lock = asyncio.Lock()
        self._in_flight = 0
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.shipped = 0
        self.failed_attempts = 0

    def emit(self, record: AuditRecord) -> None:
        if len(self._buf) >= self.bound:
            self._spill.append([record])
        else:
            self._buf.append(record)
        if self._task is None:
            self._start()
        elif len(self._buf) >= self.batch_size and self._wake is not None:
            self._wake.set()

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._task = loop.create_task(self._loop(), name="audit-shipper")

    @property
    def pending(self) -> int:
        return len(self._buf) + self._spill.count + self._in_flight

    async def _ship_once(self) -> bool:
        async with self._ship_lock:
            return await self._ship_locked()

    async def _ship_locked(self) -> bool:
        if self._spill.count and len(self._buf) < self.bound // 2:
            self._buf.extend(self._spill.take_all())
        if not self._buf:
            return False
        batch, self._buf = self._buf[: self.batch_size], self._buf[self.batch_size :]
        floors = {r.run_id: self._confirmed[r.run_id] for r in batch if r.run_id in self._confirmed}
        self._in_flight = len(batch)
        try:
            await self._ship([r.model_dump() for r in batch], floors)
        except BaseException:
            self._buf[:0] = batch  # back at the front, order kept
            raise
        finally:
            self._in_flight = 0
        self.shipped += len(batch)
        self._note_confirmed(batch)
        return bool(self._buf)

    def _note_confirmed(self, batch: list[AuditRecord]) -> None:
        for rec in batch:
            if rec.kind == "run_finished":
                self._confirmed.pop(rec.run_id, None)  # the run's last record: nothing follows it
            elif rec.seq is not None:
                self._confirmed[rec.run_id] = max(rec.seq, self._confirmed.get(rec.run_id, 0))
        while len(self._confirmed) > 10_000:  # runs that never finished (a crash mid-run): oldest first
            del self._confirmed[next(iter(self._confirmed))]

    async def _loop(self) -> None:
        assert self._wake is not None
        backoff = 0.05
        while True:
            await wait_event(self._wake, self.interval_s)
            self._wake.clear()
            try:
                while await self._ship_once():
                    pass
                backoff = 0.05
            except Exception as err:
                self.failed_attempts += 1
                log.warning("audit hand-off failed (%s); %d records waiting", err, self.pending)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.retry_max_s)

    async def flush(self, timeout_s: float = 10.0) -> bool:
        """Ship everything buffered now (used before trace reads and on shutdown)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while self.pending:
            try:
                while await self._ship_once():
                    pass
            except Exception:
                if asyncio.get_running_loop().time() > deadline:
                    return False
                await asyncio.sleep(0.1)
        return True

    async def close(self, timeout_s: float = 10.0) -> bool:
        done = await self.flush(timeout_s)
        await stop_task(self._task)
        self._task = None
        if not done:
            self._spill.append(self._buf)
            self._buf = []
        return done
