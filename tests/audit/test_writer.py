"""The batching writer: order restored under shuffled delivery, outages survived, nothing lost."""

from __future__ import annotations

import asyncio
import random
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
