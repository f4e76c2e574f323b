"""The small protocols the harness depends on; deployments/ adapts Ray handles to them and
tests/fakes/ implements them in memory."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from audit.records import AuditRecord


@runtime_checkable
class AuditSink(Protocol):
    """Where the pipeline hands audit records. ``emit`` must not block: nothing on the request path
    waits for the database."""

    def emit(self, record: AuditRecord) -> None: ...
