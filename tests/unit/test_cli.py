from __future__ import annotations

from pathlib import Path

import pytest

from audit.db import make_engine
from audit.migrate import upgrade
from audit.store import AuditStore
from cli.main import main
from tests.audit.run_script import seed_run


def test_trace_prints_a_readable_timeline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"audit:\n  db_url: {url}\n")
    upgrade(url)
    engine = make_engine(url)
    AuditStore(engine).write_batch(seed_run(run_id="run-x", session_id="sess-x").records)
    engine.dispose()
    assert main(["--config", str(cfg), "trace", "run-x"]) == 0
    out = capsys.readouterr().out
    assert "run run-x  session sess-x  status SUCCEEDED" in out
    assert out.count("MODEL_TOKEN_USAGE") == 4 and "RUN_FINISHED" in out
    assert "tool_invocations 1/1" in out and "complete=True  tokens_reconciled=True" in out
    assert main(["--config", str(cfg), "trace", "missing"]) == 1


def test_bad_config_exits_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("audit:\n  nope: 1\n")
    assert main(["--config", str(cfg), "check-config"]) == 2
    assert "audit.nope" in capsys.readouterr().err


def test_db_upgrade_command(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"audit:\n  db_url: sqlite:///{tmp_path / 'b.db'}\n")
    assert main(["--config", str(cfg), "db", "upgrade"]) == 0
    assert (tmp_path / "b.db").exists()


def test_telemetry_check(tmp_path: Path, capsys: pytest.CaptureFixture[str], nezha_day: Path) -> None:
    import json

    from tests.conftest import REPO

    assert main(["--config", str(REPO / "configs" / "serve.local.yaml"), "telemetry", "check", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["backend"] == "file" and report["clock"] == "2026-11-30T10:15:00Z"
    assert "payment-service" in report["services"] and "payment-service" in report["log_services"]
    cfg = tmp_path / "c.yaml"
    cfg.write_text("telemetry:\n  log_roots: []\n  metric_roots: []\n")
    assert main(["--config", str(cfg), "telemetry", "check", "--nezha-day", str(nezha_day), "--json"]) == 0
    day = json.loads(capsys.readouterr().out)
    assert len(day["services"]) == 10 and day["call_graph_edges"] == 14 and day["first"] == "2022-08-22T03:51:19Z"
    cfg.write_text("telemetry:\n  backend: prometheus\n  log_roots: []\n  prometheus: {url: 'http://127.0.0.1:9'}\n")
    assert main(["--config", str(cfg), "telemetry", "check"]) == 1
    assert "unreachable" in capsys.readouterr().err
