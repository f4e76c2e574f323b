"""The audit deployment's class without Ray: a graceful shutdown flushes everything queued."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from audit.db import make_engine
from audit.settings import AuditSettings
from audit.trace_reader import TraceReader
from deployments.audit_actor import AuditWriterDeployment
from tests.audit.run_script import seed_run


async def test_shutdown_flushes_the_queue(db_url: str, tmp_path: Path) -> None:
    cls = AuditWriterDeployment.func_or_class
    settings = AuditSettings(db_url=db_url, flush_interval_s=30, spill_path=str(tmp_path / "spill.jsonl"))
    actor = cls.__new__(cls)
    await actor.__init__(settings)  # Serve awaits the async constructor the same way
    runs = [seed_run(run_id=f"r{i}", session_id="s").records for i in range(3)]
    for records in runs:
        await actor.submit([r.model_dump() for r in records])
    # The flush interval is 30 s: nothing is written unless the shutdown hook flushes.
    await actor.__del__()
    engine = make_engine(db_url)
    reader = TraceReader(engine)
    for i in range(3):
        assert reader.trace("s", f"r{i}")["summary"]["stored"]["timeline_events"] == 15
    engine.dispose()
    assert not (tmp_path / "spill.jsonl").exists()


async def test_trace_read_of_unknown_run_is_not_found(sqlite_url: str, tmp_path: Path) -> None:
    cls = AuditWriterDeployment.func_or_class
    actor = cls.__new__(cls)
    await actor.__init__(AuditSettings(db_url=sqlite_url, spill_path=str(tmp_path / "s.jsonl")))
    result = await actor.trace("nobody", None, None)
    assert result == {"ok": False, "error": "session nobody has no runs"}
    await actor.__del__()


async def test_a_writer_replica_dying_with_batches_in_memory_loses_none_of_them(
    sqlite_url: str, tmp_path: Path
) -> None:
    """The ingress keeps each batch until a writer confirms it committed (or durably spilled) it. The
    first writer stops writing with batches queued in its memory and never answers (its replica died);
    the calls to it fail, the same batches go to the next writer, and every run's trail is whole.
    Before the confirmed hand-off, ``submit`` answered on queueing and those batches were lost."""
    import asyncio

    from audit.writer import stop_task
    from deployments.audit_client import BufferedAuditSink

    cls = AuditWriterDeployment.func_or_class

    async def writer(name: str) -> Any:
        actor = cls.__new__(cls)
        spill = str(tmp_path / f"{name}.jsonl")  # its own disk: nothing is inherited from the first
        await actor.__init__(AuditSettings(db_url=sqlite_url, spill_path=spill, handoff_confirm_s=60))
        return actor

    first = await writer("first")
    target = {"writer": first}

    async def ship(batch: list[dict[str, Any]], floors: dict[str, int]) -> Any:
        # A Ray call to a replica that died fails; the short timeout stands in for that failure.
        return await asyncio.wait_for(target["writer"].submit(batch, floors), 0.5)

    sink = BufferedAuditSink(ship, batch_size=8, spill_path=str(tmp_path / "ingress.jsonl"), retry_max_s=0.2)
    runs = [seed_run(run_id=f"r{i}", session_id="s").records for i in range(4)]
    for records in runs:
        for rec in records[:10]:
            sink.emit(rec)
    assert await sink.flush(10)  # the first halves are committed by the first writer
    await stop_task(first.writer._task)  # it dies: its loop stops, its memory is gone with it
    for records in runs:
        for rec in records[10:]:
            sink.emit(rec)
    await asyncio.sleep(1.5)
    assert sink.failed_attempts > 0 and sink.pending > 0  # kept, not forgotten
    second = await writer("second")
    # Its reorder buffer would hold the second halves for 30 s waiting for sequence 1; the floors
    # that come with the re-sent batches let it write them at once.
    target["writer"] = second
    assert await sink.flush(10)
    await sink.close()
    reader = TraceReader(make_engine(sqlite_url))
    for i in range(4):
        summary = reader.trace("s", f"r{i}")["summary"]
        assert summary["complete"] is True, summary
        assert summary["stored"]["timeline_events"] == 15
    await second.__del__()


async def test_a_flush_waits_for_the_batch_the_shipper_has_in_flight(tmp_path: Path) -> None:
    """A trace read flushes first; the batch the background loop is handing off right then must count
    (it did not: flush saw an empty buffer and returned while that batch was unconfirmed)."""
    import asyncio

    from deployments.audit_client import BufferedAuditSink

    release = asyncio.Event()
    shipped: list[int] = []

    async def slow_ship(batch: list[dict[str, Any]], floors: dict[str, int]) -> None:
        await release.wait()  # the writer has not confirmed yet
        shipped.append(len(batch))

    sink = BufferedAuditSink(slow_ship, batch_size=100, interval_s=0.01, spill_path=str(tmp_path / "i.jsonl"))
    for rec in seed_run().records:
        sink.emit(rec)
    await asyncio.sleep(0.1)  # the loop has taken the batch and waits for the confirmation
    flush = asyncio.create_task(sink.flush(5))
    await asyncio.sleep(0.2)
    assert not flush.done() and sink.pending == 21
    release.set()
    assert await flush is True and shipped == [21] and sink.pending == 0
    await sink.close()
