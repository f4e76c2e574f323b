"""Secrets planted in a question, in a tool argument and in a runbook never reach the audit database,
the logs or the trace API in clear (the report to the asking user may quote the runbook: that is
the user's own knowledge base, not the audit trail)."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from deployments.config import parse_config
from harness.contracts import ChatRequest
from harness.rules_model import RulesModel
from harness.wiring import build_pipeline
from tests.fakes.audit_db import persist_and_trace
from tests.fakes.sinks import ListSink
from tests.harness.test_rules_model import OneRunbook

QUESTION_SECRET = "hunter2-question-secret"
TOOL_SECRET = "sk-live-0123456789abcdefTOOLARG"
RUNBOOK_SECRET = "AKIAABCDEFGHIJKLMNOP"
SECRETS = (QUESTION_SECRET, TOOL_SECRET, RUNBOOK_SECRET)


class SecretRunbook(OneRunbook):
    """A runbook whose text carries an AWS key id, as a careless runbook might."""

    async def lookup(self, query: str, tool_call_id: str, domain: str | None = None):  # type: ignore[no-untyped-def]
        out = await super().lookup(query, tool_call_id, domain)
        block = out.agent_view["evidence"][0]
        block["text"] = f"Rotate the key {RUNBOOK_SECRET} after a leak.\n{block['text']}"
        return out


async def test_planted_secrets_stay_out_of_db_logs_and_trace(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    cfg = parse_config({}, "test", env={})
    sink = ListSink()
    pipeline = build_pipeline(sink, cfg.harness, cfg.telemetry, model=RulesModel(), lookup=SecretRunbook(True))
    # The rules model passes the question on as the lookup tool's `query` argument, so the question's
    # secrets are also a tool argument's.
    question = f"HikariCP pool exhausted; db password={QUESTION_SECRET} api_key: {TOOL_SECRET}"
    events = [e async for e in pipeline.run(ChatRequest(Id="sec-1", Question=question), None)]
    assert events[-1].event == "done"
    tool_args = [json.dumps(r.data) for r in sink.records if r.kind == "tool_invocation"]
    assert tool_args, "the lookup tool ran"

    trace = persist_and_trace(sink.records, tmp_path, "sec-1")
    trace_text = json.dumps(trace, ensure_ascii=False, default=str)
    with sqlite3.connect(tmp_path / "audit.db") as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
        dump = "\n".join(str(row) for t in tables for row in db.execute(f'select * from "{t}"'))
    for secret in SECRETS:
        assert secret not in dump, f"{secret} reached the audit database"
        assert secret not in trace_text, f"{secret} reached the trace API"
        assert secret not in caplog.text, f"{secret} reached the logs"
    assert "[REDACTED]" in dump  # masked, not silently dropped: the reader sees something was there
    assert "HikariCP pool exhausted" in dump  # the rest of the question stays readable
