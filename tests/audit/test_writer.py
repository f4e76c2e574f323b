"""The batching writer: order restored under shuffled delivery, outages survived, nothing lost."""

from __future__ import annotations

import asyncio
import json
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from audit.db import make_engine
from audit.migrate import upgrade
from audit.models import AgentStep, DiagnosisRun, DiagnosisTraceEvent, ToolInvocation
from audit.records import AuditRecord
from audit.settings import AuditSettings
from audit.store import AuditStore
from audit.trace_reader import TraceReader
from audit.writer import AuditWriter, ReorderBuffer
from tests.audit.run_script import seed_run
from tests.fakes.tcp_proxy import TcpProxy


def _settings(tmp_path: Path, **kw: Any) -> AuditSettings:
    base: dict[str, Any] = {
        "batch_size": 7,
        "flush_interval_s": 0.02,
        "spill_path": str(tmp_path / "spill.jsonl"),
        "retry_initial_s": 0.05,
        "retry_max_s": 0.5,
    }
    return AuditSettings(**{**base, **kw})


def _runs(n: int) -> list[list[AuditRecord]]:
    return [seed_run(run_id=f"run-{i}", session_id=f"sess-{i % 3}").records for i in range(n)]


def test_reorder_buffer_releases_in_sequence() -> None:
    records = seed_run().records
    shuffled = records[:]
    random.Random(7).shuffle(shuffled)
    buf = ReorderBuffer(timeout_s=60)
    out: list[AuditRecord] = []
    for rec in shuffled:
        out += buf.push([rec])
    assert [r.seq for r in out] == [r.seq for r in records]
    assert len(buf) == 0


def test_reorder_buffer_skips_a_gap_after_the_timeout() -> None:
    now = [0.0]
    buf = ReorderBuffer(timeout_s=5, clock=lambda: now[0])
    records = seed_run().records
    assert buf.push(records[1:4]) == []  # seq 1 missing
    now[0] = 6.0
    assert [r.seq for r in buf.expired()] == [2, 3, 4]


def _count(engine: Any, model: Any, run_id: str | None = None) -> int:
    stmt = select(func.count()).select_from(model)
    if run_id is not None:
        stmt = stmt.where(model.run_id == run_id)
    with engine.connect() as conn:
        return int(conn.scalar(stmt) or 0)


async def test_shuffled_delivery_keeps_order_and_step_binding(db_url: str, tmp_path: Path) -> None:
    upgrade(db_url)
    engine = make_engine(db_url)
    writer = AuditWriter(AuditStore(engine), _settings(tmp_path))
    writer.start()
    runs = _runs(6)
    everything = [r for run in runs for r in run]
    random.Random(42).shuffle(everything)
    # Delivered in small, out-of-order chunks, as concurrent hand-offs to an async actor arrive.
    for i in range(0, len(everything), 5):
        writer.submit(everything[i : i + 5])
        await asyncio.sleep(0)
    assert await writer.flush(10)
    reader = TraceReader(engine)
    for i in range(6):
        trace = reader.trace(f"sess-{i % 3}", f"run-{i}")
        # Rows were inserted in sequence order: ids grow with sequence numbers.
        ids = [e["id"] for e in trace["timeline"]]
        assert ids == sorted(ids)
        assert trace["toolInvocations"][0]["step_id"] == trace["steps"][0]["id"]
        assert trace["summary"]["tokens_reconciled"] is True
    assert writer.stats.written == len(everything)
    await writer.close()
    engine.dispose()


async def test_spill_file_beyond_the_bound(sqlite_url: str, tmp_path: Path) -> None:
    upgrade(sqlite_url)
    engine = make_engine(sqlite_url)
    writer = AuditWriter(AuditStore(engine), _settings(tmp_path, queue_bound=10))
    records = [r for run in _runs(3) for r in run]
    writer.submit(records)  # not started yet: everything beyond 10 spills
    assert writer.stats.spilled == len(records) - 10
    assert (tmp_path / "spill.jsonl").exists()
    writer.start()
    assert await writer.flush(10)
    assert _count(engine, DiagnosisTraceEvent) == 45 and _count(engine, DiagnosisRun) == 3
    assert not (tmp_path / "spill.jsonl").exists()
    await writer.close()
    engine.dispose()


@pytest.mark.slow
@pytest.mark.mysql
async def test_database_down_for_ten_seconds_mid_run(mysql_url: str, tmp_path: Path) -> None:
    upgrade(mysql_url)
    url = make_url(mysql_url)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 3306)
    proxied = url.set(port=proxy.port).render_as_string(hide_password=False)
    engine = make_engine(proxied)
    writer = AuditWriter(AuditStore(engine), _settings(tmp_path, retry_max_s=1.0))
    writer.start()
    runs = _runs(4)
    try:
        for run in runs:
            writer.submit(run[:8])  # the first half of every run lands
        assert await writer.flush(10)
        proxy.cut()
        for run in runs:
            writer.submit(run[8:])  # the second half arrives while the database is unreachable
        await asyncio.sleep(10)
        assert writer.stats.failed_attempts > 0 and writer.pending > 0
        proxy.resume()
        assert await writer.flush(30)
    finally:
        await writer.close()
        proxy.close()
        engine.dispose()
    direct = make_engine(mysql_url)
    for i in range(4):
        rid = f"run-{i}"
        assert _count(direct, DiagnosisTraceEvent, rid) == 15
        assert _count(direct, AgentStep, rid) == 2
        assert _count(direct, ToolInvocation, rid) == 1
        trace = TraceReader(direct).trace(f"sess-{i % 3}", rid)
        assert trace["run"]["status"] == "SUCCEEDED"
        assert trace["summary"]["tokens_reconciled"] is True
        assert trace["toolInvocations"][0]["step_id"] == trace["steps"][0]["id"]
    direct.dispose()


async def test_a_batch_still_being_written_is_pending(tmp_path: Path) -> None:
    """A flush that looked while the last batch was in the database's hands said "all written", and
    close then cancelled that write: CI lost two records of a run this way."""
    release = threading.Event()
    written: list[AuditRecord] = []

    class SlowStore:
        def write_batch(self, records: Any) -> None:
            release.wait(5)
            written.extend(records)

        def ping(self) -> None:
            pass

    writer = AuditWriter(SlowStore(), _settings(tmp_path, batch_size=100))
    writer.start()
    records = seed_run().records
    writer.submit(records)
    await asyncio.sleep(0.2)  # the loop has taken the batch and is blocked writing it
    assert writer.pending == len(records)
    assert await writer.flush(0.3) is False
    release.set()
    assert await writer.flush(5) is True
    assert [r.seq for r in written] == [r.seq for r in records]
    await writer.close()


async def test_close_spills_a_batch_whose_write_it_had_to_cancel(tmp_path: Path) -> None:
    release = threading.Event()

    class HangingStore:
        def write_batch(self, records: Any) -> None:
            release.wait(5)
            raise ConnectionError("the connection went away mid-write")

        def ping(self) -> None:
            raise ConnectionError("database unreachable")

    writer = AuditWriter(HangingStore(), _settings(tmp_path, batch_size=100))
    writer.start()
    records = seed_run().records
    writer.submit(records)
    await asyncio.sleep(0.2)
    assert await writer.close(timeout_s=0.3) is False
    release.set()
    lines = (tmp_path / "spill.jsonl").read_text().splitlines()
    assert sorted(AuditRecord.model_validate_json(x).seq or 0 for x in lines) == [r.seq for r in records]


async def test_close_spills_what_the_database_never_took(tmp_path: Path) -> None:
    class DownStore:
        def write_batch(self, records: Any) -> None:
            raise ConnectionError("database unreachable")

    writer = AuditWriter(DownStore(), _settings(tmp_path))
    writer.start()
    records = seed_run().records
    writer.submit(records)
    assert await writer.close(timeout_s=0.5) is False
    lines = (tmp_path / "spill.jsonl").read_text().splitlines()
    assert sorted(AuditRecord.model_validate_json(x).seq or 0 for x in lines) == [r.seq for r in records]


# -- the confirmed hand-off and the dead-letter file ---------------------------------------------


class DownStore:
    """A database that cannot be reached: every write and every ping fails."""

    def write_batch(self, records: Any) -> None:
        raise ConnectionError("database unreachable")

    def ping(self) -> None:
        raise ConnectionError("database unreachable")


async def test_a_receipt_settles_only_when_its_records_are_committed(sqlite_url: str, tmp_path: Path) -> None:
    upgrade(sqlite_url)
    engine = make_engine(sqlite_url)
    writer = AuditWriter(AuditStore(engine), _settings(tmp_path, flush_interval_s=30))
    records = seed_run(run_id="r1", session_id="s").records
    receipt = writer.submit(records)
    assert not receipt.settled.is_set()  # queued is not committed
    writer.start()
    assert await writer.confirm(receipt, 10) == "committed"
    # Committed means in the database: the trace is whole the moment the receipt settles.
    assert TraceReader(engine).trace("s", "r1")["summary"]["complete"] is True
    assert not (tmp_path / "spill.jsonl").exists()
    await writer.close()
    engine.dispose()


async def test_a_database_outage_confirms_by_durable_spill_and_dead_letters_nothing(tmp_path: Path) -> None:
    writer = AuditWriter(DownStore(), _settings(tmp_path, poison_after_attempts=1, retry_max_s=0.05))
    writer.start()
    records = seed_run().records
    receipt = writer.submit(records)
    assert await writer.confirm(receipt, 0.5) == "spilled"
    spilled = [AuditRecord.model_validate_json(x) for x in (tmp_path / "spill.jsonl").read_text().splitlines()]
    assert [r.seq for r in spilled] == [r.seq for r in records]
    # Failed batches were written record by record, but the ping failed too: an outage, not poison.
    await asyncio.sleep(0.3)
    assert writer.stats.failed_attempts >= 2
    assert writer.stats.dead_lettered == 0 and not (tmp_path / "spill.dead-letter.jsonl").exists()
    await writer.close(timeout_s=0.2)


async def test_a_poison_record_is_dead_lettered_and_the_writes_behind_it_go_on(db_url: str, tmp_path: Path) -> None:
    """A record the database rejects every time (a NOT NULL column left empty) used to be retried
    forever in front of every later write."""
    upgrade(db_url)
    engine = make_engine(db_url)
    writer = AuditWriter(AuditStore(engine), _settings(tmp_path, batch_size=100, poison_after_attempts=2))
    bad_run = seed_run(run_id="bad", session_id="s").records
    poison = next(r for r in bad_run if r.kind == "trace_event" and r.data["event_type"] == "ROUTING_DECISION")
    poison.data["phase"] = None
    writer.start()
    first = writer.submit(bad_run)
    second = writer.submit(seed_run(run_id="good", session_id="s").records)
    assert await writer.confirm(first, 20) == "committed"
    assert await writer.confirm(second, 20) == "committed"
    assert writer.stats.dead_lettered == 1
    lines = (tmp_path / "spill.dead-letter.jsonl").read_text().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry["record"]["run_id"] == "bad" and entry["record"]["seq"] == poison.seq
    assert "phase" in entry["error"].lower() or "null" in entry["error"].lower()
    reader = TraceReader(engine)
    assert reader.trace("s", "good")["summary"]["complete"] is True
    bad = reader.trace("s", "bad")["summary"]
    assert bad["missing"] == {"timeline_events": 1}  # only the poison record is absent
    await writer.close()
    # The count survives a restart: /healthz keeps saying so until an operator deals with the file.
    assert AuditWriter(AuditStore(engine), _settings(tmp_path)).stats.dead_lettered == 1
    engine.dispose()


async def test_a_writer_started_after_a_crash_does_not_wait_for_records_already_confirmed(
    sqlite_url: str, tmp_path: Path
) -> None:
    """A run's first records were committed by a writer that then died; the producer re-sends the rest
    with the floor it was confirmed up to, and the new writer writes them without a reorder wait."""
    upgrade(sqlite_url)
    engine = make_engine(sqlite_url)
    records = seed_run(run_id="r1", session_id="s").records
    first = AuditWriter(AuditStore(engine), _settings(tmp_path))
    first.start()
    assert await first.confirm(first.submit(records[:6]), 10) == "committed"
    await stop_writer_without_flush(first)
    second = AuditWriter(AuditStore(engine), _settings(tmp_path, reorder_timeout_s=60))
    second.start()
    receipt = second.submit(records[6:], floors={"r1": 6})
    assert await second.confirm(receipt, 3) == "committed"
    assert TraceReader(engine).trace("s", "r1")["summary"]["complete"] is True
    # Without the floor the same records wait for sequence 1, which this writer will never see.
    third = AuditWriter(AuditStore(engine), _settings(tmp_path, reorder_timeout_s=60))
    third.start()
    assert await third.confirm(third.submit(records[6:]), 1) == "spilled"
    await stop_writer_without_flush(third)
    await stop_writer_without_flush(second)
    engine.dispose()


async def stop_writer_without_flush(writer: AuditWriter) -> None:
    """A writer that dies: its loop stops and nothing more happens (no flush, no spill)."""
    from audit.writer import stop_task

    await stop_task(writer._task)
    writer._task = None
