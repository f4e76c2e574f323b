"""The batching audit writer: a bounded in-memory queue, a spill file beyond it, ordered batches.

``submit`` never waits for the database. A background task takes batches, restores each run's
order by sequence number (``ReorderBuffer``), and writes them in a worker thread. A failed batch is
kept and retried first, with exponential back-off, so a database outage delays writes and loses
nothing; the store's idempotent inserts make a retried batch harmless if it had in fact committed.

``submit`` returns a ``Receipt`` that a producer may wait on (``confirm``): it settles when every record
of the submission is committed, durably spilled or dead-lettered, so a producer that keeps a batch
until then loses nothing when this process dies (at-least-once across the hop). A batch that keeps
failing while the database answers is written record by record, and a record the database still
rejects goes to the dead-letter file instead of blocking every later write.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
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

    def ping(self) -> None:
        """Raise if the database cannot be reached (tells a poison record from an outage)."""
        ...


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

    def advance(self, run_id: str, floor: int) -> list[AuditRecord]:
        """The producer knows every record of ``run_id`` up to ``floor`` is durable already (committed,
        or spilled by a writer that is gone): wait for none of them. Records held at or below the
        floor are released now, in order, with whatever they were blocking."""
        state = self._runs.setdefault(run_id, _RunOrder())
        out: list[AuditRecord] = []
        if floor < state.next_seq:
            return out
        out.extend(state.held.pop(seq) for seq in sorted(s for s in state.held if s <= floor))
        state.next_seq = floor + 1
        self._release(run_id, state, out)
        return out

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


class _JsonLines:
    """An append-only JSON-lines file whose lines are counted (from disk at start)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.count = 0
        if self.path.exists():
            with self.path.open(encoding="utf-8") as fh:
                self.count = sum(1 for line in fh if line.strip())

    def _append_lines(self, lines: Sequence[str]) -> None:
        if not lines:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())  # what is here confirms a hand-off: it must survive this process
        self.count += len(lines)


class SpillFile(_JsonLines):
    """Append-only JSON-lines overflow for records beyond the in-memory bound."""

    def append(self, records: Sequence[AuditRecord]) -> None:
        self._append_lines([rec.model_dump_json() for rec in records])

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


class DeadLetterFile(_JsonLines):
    """Records the database rejected on their own while it answered: kept with the error, for an
    operator, instead of being retried forever in front of every later write."""

    def append(self, record: AuditRecord, error: str) -> None:
        line = json.dumps({"error": error, "record": record.model_dump(mode="json")}, ensure_ascii=False)
        self._append_lines([line])


def dead_letter_path(settings: AuditSettings) -> Path:
    """``settings.dead_letter_path``, or beside the spill file: ``var/audit-spill.dead-letter.jsonl``."""
    if settings.dead_letter_path:
        return Path(settings.dead_letter_path)
    spill = Path(settings.spill_path)
    return spill.with_name(f"{spill.stem}.dead-letter.jsonl")


class Receipt:
    """One submission's records until each is committed, durably spilled or dead-lettered."""

    def __init__(self, records: Sequence[AuditRecord]) -> None:
        self.waiting = {id(r): r for r in records}
        self.settled = asyncio.Event()
        if not self.waiting:
            self.settled.set()

    def settle(self, record: AuditRecord) -> None:
        self.waiting.pop(id(record), None)
        if not self.waiting:
            self.settled.set()


@dataclass
class WriterStats:
    received: int = 0
    written: int = 0
    batches: int = 0
    spilled: int = 0
    dead_lettered: int = 0
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
        # The batch being written: in none of the lists above, yet not committed. Counted as pending,
        # or a flush that looks while it is in flight says "all written" and close cancels the write.
        self._in_flight: list[AuditRecord] = []
        self._reorder = ReorderBuffer(settings.reorder_timeout_s)
        self._spill = SpillFile(settings.spill_path)
        self._dead = DeadLetterFile(dead_letter_path(settings))
        self.stats.dead_lettered = self._dead.count
        self._receipts: dict[int, Receipt] = {}  # id(record) -> its submission's receipt
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._backoff = settings.retry_initial_s
        self._failures_in_a_row = 0
        self._closing = False

    # -- producer side -----------------------------------------------------------------------

    def submit(self, records: Iterable[AuditRecord], floors: dict[str, int] | None = None) -> Receipt:
        """Queue records without waiting; past the bound they go to the spill file. ``floors``: per run,
        the highest sequence number the producer already knows to be durable (see ``ReorderBuffer.advance``).
        """
        records = list(records)
        receipt = Receipt(records)
        for rec in records:
            self._receipts[id(rec)] = receipt
        self.stats.received += len(records)
        for run_id, floor in (floors or {}).items():
            self._queue.extend(self._reorder.advance(run_id, floor))
        room = max(0, self.settings.queue_bound - len(self._queue))
        self._queue.extend(records[:room])
        if len(records) > room:
            self._spill_durably(records[room:])
            self.stats.spilled += len(records) - room
        self._idle.clear()
        if len(self._queue) >= self.settings.batch_size:
            self._wake.set()
        return receipt

    async def confirm(self, receipt: Receipt, timeout_s: float) -> str:
        """Wait until ``receipt`` settles: ``committed``; or, after ``timeout_s`` (the database is slow
        or down), write what is still waiting to the spill file and answer ``spilled``. The records stay
        queued too: the spilled copies make them durable, and a second write of either is idempotent."""
        self._wake.set()  # a producer is waiting: write now rather than at the next interval
        if await wait_event(receipt.settled, timeout_s):
            return "committed"
        self._spill_durably(list(receipt.waiting.values()))
        return "spilled"

    def _spill_durably(self, records: Sequence[AuditRecord]) -> None:
        self._spill.append(records)
        self._settle(records)

    def _settle(self, records: Iterable[AuditRecord]) -> None:
        for rec in records:
            receipt = self._receipts.pop(id(rec), None)
            if receipt is not None:
                receipt.settle(rec)

    @property
    def pending(self) -> int:
        queued = len(self._queue) + len(self._retry) + len(self._reorder)
        return queued + len(self._in_flight) + self._spill.count

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
            # The batch cancelled mid-write may or may not have committed: spilling it again is harmless.
            leftover = self._in_flight + self._retry + list(self._queue) + self._reorder.expired(force=True)
            self._in_flight = []
            self._spill_durably(leftover)
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
        self._in_flight = batch  # left set if the loop is cancelled mid-write, for close to spill
        try:
            await asyncio.to_thread(self.store.write_batch, batch)
        except Exception as err:
            self.stats.failed_attempts += 1
            self._failures_in_a_row += 1
            self.stats.last_error = _describe(err)
            if self._failures_in_a_row >= self.settings.poison_after_attempts:
                batch = await self._isolate(batch)
                if not batch:
                    self._in_flight = []
                    return self._written_ok()
            self._retry, self._in_flight = batch, []
            log.warning(
                "audit batch of %d failed (%s); retry in %.2fs", len(batch), self.stats.last_error, self._backoff
            )
            await asyncio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, self.settings.retry_max_s)
            return not self._closing or bool(self._retry)
        self._in_flight = []
        self.stats.written += len(batch)
        self.stats.batches += 1
        self._settle(batch)
        return self._written_ok()

    def _written_ok(self) -> bool:
        self._backoff = self.settings.retry_initial_s
        self._failures_in_a_row = 0
        self.stats.last_error = None
        return bool(self._queue) or bool(self._spill.count)

    async def _isolate(self, batch: list[AuditRecord]) -> list[AuditRecord]:
        """Write a batch that keeps failing one record at a time, in order. A record that fails while
        the database answers a ping is poison: dead-lettered. When the database does not answer, it is
        an outage: the rest is returned to be retried whole, and nothing is dead-lettered."""
        for i, rec in enumerate(batch):
            try:
                await asyncio.to_thread(self.store.write_batch, [rec])
            except Exception as err:
                try:
                    await asyncio.to_thread(self.store.ping)
                except Exception:
                    return batch[i:]
                self._dead.append(rec, _describe(err))
                self.stats.dead_lettered += 1
                log.error("audit record %s/%s seq %s dead-lettered: %s", rec.run_id, rec.kind, rec.seq, _describe(err))
            else:
                self.stats.written += 1
            self._in_flight = batch[i + 1 :]
            self._settle([rec])
        self.stats.batches += 1
        return []


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err)[:300]}"
