"""Candidate causes from what the telemetry tools measured, on the bundled demo incident: the ranking's
first service waits on its database, and a new log template of it names a lock wait: the cause is the
queries waiting on row locks, where the two tools agree."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from harness.telemetry_causes import AGREED_WEIGHT, WEIGHT, telemetry_findings
from harness.tools.base import LedgerEntry, ToolResult
from harness.tools.telemetry import QueryLogsTool, RankAnomaliesTool, TelemetryView
from telemetry.backends.files import FileTelemetry
from tests.conftest import REPO

CLOCK = datetime(2026, 11, 30, 10, 15, tzinfo=UTC).timestamp()
INCIDENT = datetime(2026, 11, 30, 10, 0, tzinfo=UTC).timestamp()


@pytest.fixture(scope="module")
def view() -> TelemetryView:
    demo = REPO / "knowledge" / "telemetry"
    return TelemetryView(FileTelemetry([demo / "logs"], [demo / "metrics"]), CLOCK, INCIDENT)


def _entry(call: str, tool: str, args: dict[str, Any], result: ToolResult) -> LedgerEntry:
    return LedgerEntry(call, tool, args, result, 1)


async def test_a_database_wait_with_a_lock_wait_template_is_the_lock_contention(view: TelemetryView) -> None:
    ranked = await RankAnomaliesTool(view).run({})
    logs = await QueryLogsTool(view).run({"service": "payment-service"})
    ledger = {
        "c1": _entry("c1", "rank_anomalies", {}, ranked),
        "c2": _entry("c2", "query_logs", {"service": "payment-service"}, logs),
    }
    ((finding, key, text, entry),) = telemetry_findings(ledger)
    assert (finding["component"], finding["category"], finding["weight"]) == (
        "payment-service",
        "dependency",
        AGREED_WEIGHT,
    )
    assert key == "anomaly:payment-service:2026-11-30T10:00Z" and entry is ledger["c1"]
    assert text.startswith("payment-service ranks 1 of 2:")
    assert finding["cause"] == (
        "queries waiting on row locks hold its database connections ('Slow query <*>: UPDATE orders SET "
        "status=? WHERE id=? (lock wait)', 16 new lines; hikaricp_connections_pending 98x its baseline spread)"
    )
    assert len(finding["cause"]) <= 200  # a root cause's cause is cut at 200 characters
    # Without the logs the ranking alone names the wait, at the lower weight.
    ((alone, _, _, _),) = telemetry_findings({"c1": ledger["c1"]})
    assert alone["weight"] == WEIGHT and alone["cause"].startswith("it waits on its database (")


def test_no_cause_where_the_first_service_is_explained_by_its_callee_or_not_anomalous() -> None:
    def ranked(**top: Any) -> dict[str, LedgerEntry]:
        entry = {"service": "a", "anomalous": True, "suspected_category": "cpu", "key": "anomaly:a:t", **top}
        out = {"ranking": [entry], "evidence": [{"key": "anomaly:a:t", "text": "a ranks 1 of 3"}]}
        return {"c1": _entry("c1", "rank_anomalies", {}, ToolResult("success", out))}

    assert telemetry_findings(ranked())[0][0]["cause"] == "CPU saturation"
    assert telemetry_findings(ranked(explained_by="b")) == []
    assert telemetry_findings(ranked(anomalous=False)) == []
    assert telemetry_findings(ranked(suspected_category="unknown")) == []
    assert telemetry_findings({}) == []
