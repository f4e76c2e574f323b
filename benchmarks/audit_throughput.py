"""Audit throughput into MariaDB: events/s sustained, producer hand-off p99, lost and duplicated.

Producers are concurrent simulated runs driving the real ``RunRecorder`` (the seed's one-lookup run
shape from ``tests/audit/run_script.py``, 21 records each); records go through the ingress-side
``BufferedAuditSink`` into the real ``AuditWriter`` and ``AuditStore`` on MariaDB, in one process.
The hand-off time is what a producer spends building a record and emitting it.

    python benchmarks/audit_throughput.py [--runs 2000] [--concurrency 50] [--db-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, select, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from audit.db import make_engine  # noqa: E402
from audit.migrate import upgrade  # noqa: E402
from audit.models import AgentReasoningAudit, AgentStep, DiagnosisRun, DiagnosisTraceEvent, ToolInvocation  # noqa: E402
from audit.records import AuditRecord  # noqa: E402
from audit.settings import AuditSettings  # noqa: E402
from audit.store import AuditStore  # noqa: E402
from audit.writer import AuditWriter  # noqa: E402
from deployments.audit_client import BufferedAuditSink  # noqa: E402
from deployments.provenance import stamp  # noqa: E402
from harness.recorder import RunRecorder  # noqa: E402
from tests.audit.run_script import seed_run  # noqa: E402

ADMIN_URL = "mysql+pymysql://root@127.0.0.1:3306/test"


HANDOFF_NS: list[int] = []


class TimedRecorder(RunRecorder):
    """Times each hand-off as a producer pays it: building the record and emitting it."""

    def _emit(self, kind: Any, data: dict[str, Any]) -> None:
        t0 = time.perf_counter_ns()
        super()._emit(kind, data)
        HANDOFF_NS.append(time.perf_counter_ns() - t0)


async def one_run(sink: BufferedAuditSink, i: int) -> None:
    seed_run(run_id=f"bench-run-{i}", session_id=f"bench-{i % 97}", sink=sink, recorder_cls=TimedRecorder)
    await asyncio.sleep(0)  # interleave producers as concurrent runs do


def count(engine: Any, model: Any) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).select_from(model)) or 0)


async def bench(db_url: str, runs: int, concurrency: int) -> dict[str, Any]:
    engine = make_engine(db_url)
    tmp = Path(tempfile.mkdtemp(prefix="raydiag-bench-"))
    settings = AuditSettings(db_url=db_url, batch_size=1000, flush_interval_s=0.05, spill_path=str(tmp / "s.jsonl"))
    writer = AuditWriter(AuditStore(engine), settings)
    writer.start()

    async def ship(batch: list[dict[str, Any]], floors: dict[str, int]) -> None:
        # As the audit deployment's submit does: answer once committed (or durably spilled).
        receipt = writer.submit((AuditRecord.model_validate(r) for r in batch), floors)
        await writer.confirm(receipt, settings.handoff_confirm_s)

    buffered = BufferedAuditSink(ship, batch_size=1000, spill_path=str(tmp / "i.jsonl"))
    sink = buffered
    sem = asyncio.Semaphore(concurrency)

    async def guarded(i: int) -> None:
        async with sem:
            await one_run(sink, i)

    t0 = time.perf_counter()
    await asyncio.gather(*(guarded(i) for i in range(runs)))
    await buffered.flush()
    assert await writer.flush(600)
    elapsed = time.perf_counter() - t0
    await buffered.close()
    await writer.close()

    emitted = len(HANDOFF_NS)
    per_run = emitted // runs
    expected = {
        "trace_events": runs * 15,
        "steps": runs * 2,
        "tools": runs,
        "reasoning": runs,
        "runs": runs,
    }
    actual = {
        "trace_events": count(engine, DiagnosisTraceEvent),
        "steps": count(engine, AgentStep),
        "tools": count(engine, ToolInvocation),
        "reasoning": count(engine, AgentReasoningAudit),
        "runs": count(engine, DiagnosisRun),
    }
    with engine.connect() as conn:
        duplicated = int(
            conn.scalar(
                text(
                    "SELECT COUNT(*) FROM (SELECT run_id, sequence_no FROM diagnosis_trace_event "
                    "GROUP BY run_id, sequence_no HAVING COUNT(*) > 1) d"
                )
            )
            or 0
        )
        finished = int(conn.scalar(text("SELECT COUNT(*) FROM diagnosis_run WHERE status = 'SUCCEEDED'")) or 0)
    engine.dispose()
    lost = sum(max(0, expected[k] - actual[k]) for k in expected) + (runs - finished)
    handoff_ms = sorted(ns / 1e6 for ns in HANDOFF_NS)
    return {
        "db": "mariadb",
        "runs": runs,
        "concurrency": concurrency,
        "events": emitted,
        "events_per_run": per_run,
        "elapsed_s": round(elapsed, 3),
        "events_per_s": round(emitted / elapsed, 1),
        "handoff_p50_ms": round(statistics.median(handoff_ms), 4),
        "handoff_p99_ms": round(handoff_ms[int(len(handoff_ms) * 0.99) - 1], 4),
        "handoff_max_ms": round(handoff_ms[-1], 4),
        "lost": lost,
        "duplicated": duplicated,
        "expected_rows": expected,
        "persisted_rows": actual,
        "writer_batches": writer.stats.batches,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--db-url", default=None, help="an empty MySQL database (default: a scratch database)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "audit.json"))
    args = parser.parse_args()

    scratch = None
    db_url = args.db_url
    if db_url is None:
        scratch = f"raydiag_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(ADMIN_URL)
        with admin.begin() as conn:
            conn.execute(text(f"CREATE DATABASE {scratch} CHARACTER SET utf8mb4"))
        db_url = ADMIN_URL.rsplit("/", 1)[0] + f"/{scratch}?charset=utf8mb4"
    try:
        upgrade(db_url)
        result = asyncio.run(bench(db_url, args.runs, args.concurrency))
    finally:
        if scratch:
            with admin.begin() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {scratch}"))
    result.update(stamp())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
