"""In-memory neighbours for harness and audit tests."""

from __future__ import annotations

from audit.records import AuditRecord


class ListSink:
    """An ``AuditSink`` that keeps what it is given."""

    def __init__(self) -> None:
        self.records: list[AuditRecord] = []

    def emit(self, record: AuditRecord) -> None:
        self.records.append(record)

    def kinds(self) -> list[str]:
        return [r.kind for r in self.records]

    def timeline(self) -> list[str]:
        return [r.data["event_type"] for r in self.records if r.kind == "trace_event"]
