"""Write a run's audit records into a fresh SQLite database and read its trace back, as the service does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from audit.db import make_engine
from audit.migrate import upgrade
from audit.records import AuditRecord
from audit.store import AuditStore
from audit.trace_reader import TraceReader


def persist_and_trace(records: list[AuditRecord], folder: Path, session_id: str) -> dict[str, Any]:
    url = f"sqlite:///{folder / 'audit.db'}"
    upgrade(url)
    engine = make_engine(url)
    try:
        AuditStore(engine).write_batch(records)
        return TraceReader(engine).trace(session_id)
    finally:
        engine.dispose()
