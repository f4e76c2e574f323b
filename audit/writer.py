"""The batching audit writer: a bounded in-memory queue, a spill file beyond it, ordered batches.

``submit`` never waits for the database. A background task takes batches, restores each run's
order by sequence number (``ReorderBuffer``), and writes them in a worker thread. A failed batch is
kept and retried first, with exponential back-off, so a database outage delays writes and loses
nothing; the store's idempotent inserts make a retried batch harmless if it had in fact committed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from audit.records import AuditRecord
from audit.settings import AuditSettings

log = logging.getLogger(__name__)


async def wait_event(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait for ``event`` at most ``timeout_s``; True if it was set.

    Not ``asyncio.wait_for``: on Python 3.11 it can swallow a cancellation that arrives as the
    event is set, which left a background loop impossible to stop.
    """
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    return True


async def stop_task(task: asyncio.Task[None] | None) -> None:
    """Cancel a background loop and wait until it has really ended."""
    if task is None:
        return
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass


class BatchStore(Protocol):
    def write_batch(self, records: Sequence[AuditRecord]) -> None: ...


@dataclass
class _RunOrder:
    next_seq: int = 1
    held: dict[int, AuditRecord] = field(default_factory=dict)
    waiting_since: float | None = None


class ReorderBuffer:
    """Releases each run's records in sequence order; a gap older than ``timeout_s`` is skipped."""

    def __init__(self, timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout_s = timeout_s
        self.clock = clock
        self._runs: dict[str, _RunOrder] = {}

    def __len__(self) -> int:
        return sum(len(r.held) for r in self._runs.values())

    def push(self, records: Iterable[AuditRecord]) -> list[AuditRecord]:
        out: list[AuditRecord] = []
        for rec in records:
            if rec.seq is None:
                out.append(rec)
                continue
            state = self._runs.setdefault(rec.run_id, _RunOrder())
            if rec.seq < state.next_seq:
                out.append(rec)  # a redelivery; the store ignores it by natural key
                continue
            state.held[rec.seq] = rec
            self._release(rec.run_id, state, out)
        return out

    def _release(self, run_id: str, state: _RunOrder, out: list[AuditRecord]) -> None:
        while state.next_seq in state.held:
            rec = state.held.pop(state.next_seq)
            out.append(rec)
            state.next_seq += 1
            if rec.kind == "run_finished" and not state.held:
                self._runs.pop(run_id, None)
                return
        state.waiting_since = (state.waiting_since or self.clock()) if state.held else None

    def expired(self, force: bool = False) -> list[AuditRecord]:
        """Records stuck behind a gap for longer than the timeout (all of them when ``force``)."""
        out: list[AuditRecord] = []
        now = self.clock()
        for run_id, state in list(self._runs.items()):
            if not state.held or state.waiting_since is None:
                continue
            if not force and now - state.waiting_since < self.timeout_s:
                continue
            log.warning(
                "audit run %s: sequence %d never arrived; releasing %d later records",
                run_id,
                state.next_seq,
                len(state.held),
            )
            state.next_seq = min(state.held)
            state.waiting_since = None
            self._release(run_id, state, out)
        return out


class SpillFile:
    """Append-only JSON-lines overflow for records beyond the in-memory bound."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.count = 0
        if self.path.exists():
            with self.path.open(encoding="utf-8") as fh:
                self.count = sum(1 for line in fh if line.strip())

    def append(self, records: Sequence[AuditRecord]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            for rec in records:
                fh.write(rec.model_dump_json() + "\n")
        self.count += len(records)

    def take_all(self) -> list[AuditRecord]:
        if not self.count:
            return []
        self.count = 0
        try:
            with self.path.open(encoding="utf-8") as fh:
                records = [AuditRecord.model_validate(json.loads(line)) for line in fh if line.strip()]
        except FileNotFoundError:
            # Taken by someone else (a replica adopting a gone owner's file, or an old shared file):
            # those records ship from there; this one must not fail every later attempt over it.
            return []
        self.path.unlink(missing_ok=True)
        return records


@dataclass
class WriterStats:
    received: int = 0
    written: int = 0
    batches: int = 0
    spilled: int = 0
    failed_attempts: int = 0
    last_error: str | None = None


class AuditWriter:
    """Owns the queue and the background loop; call ``start`` inside a running event loop."""

    def __init__(self, store: BatchStore, settings: AuditSettings) -> None:
        self.store = store
        self.settings = settings
        self.stats = WriterStats()
        self._queue: deque[AuditRecord] = deque()
        self._retry: list[AuditRecord] = []
        self._reorder = ReorderBuffer(settings.reorder_timeout_s)
        self._spill = SpillFile(settings.spill_path)
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._backoff = settings.retry_initial_s
        self._closing = False

    # -- producer side -----------------------------------------------------------------------

    def submit(self, records: Iterable[AuditRecord]) -> None:
        """Queue records without waiting; past the bound they go to the spill file."""
        records = list(records)
        self.stats.received += len(records)
        room = max(0, self.settings.queue_bound - len(self._queue))
        self._queue.extend(records[:room])
        if len(records) > room:
            self._spill.append(records[room:])
            self.stats.spilled += len(records) - room
        self._idle.clear()
        if len(self._queue) >= self.settings.batch_size:
            self._wake.set()

    @property
    def pending(self) -> int:
        return len(self._queue) + len(self._retry) + len(self._reorder) + self._spill.count

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="audit-writer")

    async def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until everything queued so far is written; False if the database stayed down."""
        deadline = time.monotonic() + timeout_s
        while self.pending:
            self._wake.set()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._idle.clear()
            await wait_event(self._idle, min(remaining, 0.5))
        return True

    async def close(self, timeout_s: float = 30.0) -> bool:
        """Flush (releasing records held behind gaps), then stop the loop."""
        self._closing = True
        done = await self.flush(timeout_s)
        await stop_task(self._task)
        self._task = None
        if not done:
            # Whatever could not be written survives in the spill file for the next start.
            leftover = self._retry + list(self._queue) + self._reorder.expired(force=True)
            self._spill.append(leftover)
            log.error("audit writer closed with %d records spilled to %s", len(leftover), self._spill.path)
        return done

    # -- the loop ----------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await wait_event(self._wake, self.settings.flush_interval_s)
            self._wake.clear()
            while await self._write_once():
                pass
            if not self.pending:
                self._idle.set()

    def _next_batch(self) -> list[AuditRecord]:
        if self._retry:
            batch, self._retry = self._retry, []
            return batch
        if self._spill.count and len(self._queue) < self.settings.queue_bound // 2:
            self._queue.extend(self._spill.take_all())
        take = min(len(self._queue), self.settings.batch_size)
        ready = self._reorder.push(self._queue.popleft() for _ in range(take))
        ready += self._reorder.expired(force=self._closing)
        return ready

    async def _write_once(self) -> bool:
        """Write one batch; True if there may be more to do right away."""
        batch = self._next_batch()
        if not batch:
            return False
        try:
            await asyncio.to_thread(self.store.write_batch, batch)
        except Exception as err:
            self._retry = batch
            self.stats.failed_attempts += 1
            self.stats.last_error = f"{type(err).__name__}: {str(err)[:300]}"
            log.warning(
                "audit batch of %d failed (%s); retry in %.2fs", len(batch), self.stats.last_error, self._backoff
            )
            await asyncio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, self.settings.retry_max_s)
            return not self._closing or bool(self._retry)
        self._backoff = self.settings.retry_initial_s
        self.stats.written += len(batch)
        self.stats.batches += 1
        self.stats.last_error = None
        return bool(self._queue) or bool(self._spill.count)
