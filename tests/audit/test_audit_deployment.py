"""The audit deployment's class without Ray: a graceful shutdown flushes everything queued."""

from __future__ import annotations

from pathlib import Path

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
