"""The audit writer as a Ray Serve deployment: one replica owns the database connection.

Producers hand it batches of records (``submit``); it queues them in ``audit.writer.AuditWriter``
and writes them off the request path. It also answers trace reads, flushing first so a trace asked
for right after a run sees all of it. On graceful shutdown Serve calls ``__del__``, which flushes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ray import serve

from audit.db import make_engine
from audit.migrate import upgrade
from audit.records import AuditRecord
from audit.settings import AuditSettings
from audit.store import AuditStore
from audit.trace_reader import TraceNotFound, TraceReader
from audit.writer import AuditWriter, dead_letter_path
from deployments.metrics import ServiceMetrics

log = logging.getLogger(__name__)


@serve.deployment(name="audit", num_replicas=1, max_ongoing_requests=256, graceful_shutdown_timeout_s=60)
class AuditWriterDeployment:
    async def __init__(self, settings: AuditSettings) -> None:  # type: ignore[misc]
        self.settings = settings
        self.engine = make_engine(settings.db_url)
        if settings.apply_migrations:
            # A database that is down at start must not keep the service down: retry in the loop.
            try:
                await asyncio.to_thread(upgrade, settings.db_url, "head", self.engine)
                self.migrated = True
            except Exception as err:
                log.error("audit migrations failed, will retry: %s", err)
                self.migrated = False
        else:
            self.migrated = True
        self.writer = AuditWriter(AuditStore(self.engine), settings)
        self.writer.start()
        self.reader = TraceReader(self.engine)
        self.metrics = ServiceMetrics()
        # The writer's backlog as gauges, set on a clock so they are there between submissions too.
        self._gauges = asyncio.get_running_loop().create_task(self.metrics.keep_gauges(self._gauge_values))

    async def _gauge_values(self) -> dict[str, float]:
        s = self.writer.stats
        return {"audit_spilled_records": float(s.spilled), "audit_dead_lettered_records": float(s.dead_lettered)}

    async def _ensure_schema(self) -> None:
        if not self.migrated:
            await asyncio.to_thread(upgrade, self.settings.db_url, "head", self.engine)
            self.migrated = True

    async def submit(self, records: list[dict[str, Any]], floors: dict[str, int] | None = None) -> str:
        """Answers once the records are committed (``committed``) or durably spilled (``spilled``): a
        producer keeps a batch until this returns, so this replica dying loses none of it."""
        receipt = self.writer.submit((AuditRecord.model_validate(r) for r in records), floors)
        return await self.writer.confirm(receipt, self.settings.handoff_confirm_s)

    async def flush(self, timeout_s: float = 30.0) -> bool:
        return await self.writer.flush(timeout_s)

    async def stats(self) -> dict[str, Any]:
        s = self.writer.stats
        return {
            "received": s.received,
            "written": s.written,
            "batches": s.batches,
            "spilled": s.spilled,
            "dead_lettered": s.dead_lettered,
            "failed_attempts": s.failed_attempts,
            "pending": self.writer.pending,
            "last_error": s.last_error,
            "dialect": self.engine.dialect.name,
        }

    async def health(self) -> dict[str, Any]:
        stats = await self.stats()
        # A dead-lettered record needs an operator (the file says which and why): degraded until then.
        state = "ok" if stats["last_error"] is None and not stats["dead_lettered"] else "degraded"
        return {"state": state, **stats, "dead_letter_path": str(dead_letter_path(self.settings))}

    async def _read(self, fn: Any, *args: Any) -> dict[str, Any]:
        await self._ensure_schema()
        await self.writer.flush(timeout_s=5.0)
        try:
            return {"ok": True, "value": await asyncio.to_thread(fn, *args)}
        except TraceNotFound as err:
            return {"ok": False, "error": str(err)}

    async def trace(self, session_id: str, run_id: str | None, tenant_id: str | None) -> dict[str, Any]:
        return await self._read(self.reader.trace, session_id, run_id, tenant_id)

    async def reasoning(self, session_id: str, run_id: str | None, tenant_id: str | None) -> dict[str, Any]:
        return await self._read(self.reader.reasoning, session_id, run_id, tenant_id)

    async def runs(self, session_id: str, tenant_id: str | None) -> dict[str, Any]:
        return await self._read(self.reader.runs, session_id, tenant_id)

    async def run_exists(self, session_id: str, run_id: str, tenant_id: str | None) -> bool:
        result = await self._read(self.reader.run_exists, session_id, run_id, tenant_id)
        return bool(result.get("value"))

    async def __del__(self) -> None:
        flushed = await self.writer.close(timeout_s=self.settings.retry_max_s * 6)
        log.info("audit writer closed (flushed=%s)", flushed)
        self.engine.dispose()
