"""`raydiag eval rca` on a two-fault slice of the Nezha day: cases, clocks, scoring, skipped days, a
fallback scored as a miss, the fault list kept away from the pipeline; and --tools-only end to end."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from evaluation.rca import evaluate, load_cases
from harness.contracts import ChatRequest, event_data
from harness.rules_model import RulesModel
from harness.scope import RunOptions
from harness.settings import HarnessSettings
from harness.wiring import build_pipeline
from telemetry.combined import ClockedTelemetry
from telemetry.settings import TelemetrySettings
from tests.fakes.sinks import ListSink
from tests.nezha_labels import faults


@pytest.fixture
def slice_dir(tmp_path: Path, nezha_day: Path) -> Path:
    """Two faults of 2022-08-22 (currencyservice cpu_contention with logs, then its network delay), the
    day's metric and log folders linked, and a day without metrics that must be skipped."""
    root = tmp_path / "rca"
    day = root / "rca_data" / "2022-08-22"
    day.mkdir(parents=True)
    (day / "metric").symlink_to(nezha_day / "metric")
    (day / "log").symlink_to(nezha_day / "log")
    picked = [f for f in faults(nezha_day) if f["inject_time"] in ("2022-08-22 05:18:09", "2022-08-22 05:27:06")]
    (day / "2022-08-22-fault_list.json").write_text(json.dumps({"05": picked}), encoding="utf-8")
    empty = root / "rca_data" / "2022-08-23"
    empty.mkdir()
    (empty / "2022-08-23-fault_list.json").write_text(json.dumps({"01": picked[:1]}), encoding="utf-8")
    return root


def test_cases_hold_only_what_an_on_call_engineer_has(slice_dir: Path) -> None:
    cases, skipped = load_cases(slice_dir)
    assert skipped == ["2022-08-23"] and len(cases) == 2
    assert [c.lang for c in cases] == ["en", "zh"]
    for c in cases:
        assert "OnlineBoutique" in c.question and c.truth_service not in c.question
        assert c.truth_type not in c.question and "cpu" not in c.question.lower()
    assert "05:18 UTC on 2022-08-22" in cases[0].question and "2022-08-22 05:27 UTC" in cases[1].question


async def test_scripted_pipeline_scored_with_the_clock_guarded(
    slice_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    latest: list[float] = []
    real_series = ClockedTelemetry.series

    async def spy(self: ClockedTelemetry, signal: str, start: float, end: float, service: str | None = None) -> Any:
        out = await real_series(self, signal, start, end, service)
        latest.extend(float(s.ts.max()) - self.as_of for s in out if len(s.ts))
        return out

    monkeypatch.setattr(ClockedTelemetry, "series", spy)
    opened: list[str] = []
    sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
    sink = ListSink()
    pipeline = build_pipeline(sink, HarnessSettings(), TelemetrySettings(log_roots=[], metric_roots=[]), RulesModel())
    seen_options: list[dict[str, Any]] = []

    async def diagnose(session: str, question: str, options: dict[str, Any]) -> dict[str, Any]:
        seen_options.append(options)
        start = len(opened)
        run = pipeline.run(ChatRequest(Id=session, Question=question), None, RunOptions.model_validate(options))
        events = [{"event": e.event, **event_data(e)} async for e in run]
        assert not [p for p in opened[start:] if "fault_list" in p]  # the labels stay with the evaluator
        return {"events": events, "totals": {"total_token_count": 100}}

    result = await evaluate(slice_dir, diagnose, delay_min=5.0)
    s = result["summary"]
    assert s["n"] == 2 and s["report_rate"] == 1.0 and s["failed"] == 0
    assert result["cases"][0]["predicted"][0] == "currencyservice" and s["as1"] == 1.0
    assert result["tools_only"]["as1"] == 1.0 and result["changed_top"]["n"] == 0
    assert result["skipped_days"] == ["2022-08-23"] and s["tokens_per_case"] == 100
    assert latest and max(latest) <= 0  # no sample after the run's clock reached a tool
    for o in seen_options:
        dumped = json.dumps(o)
        assert set(o) == {"as_of", "telemetry", "origin"}
        assert "vpjrd" not in dumped and "cpu_contention" not in dumped and "network_delay" not in dumped


async def test_a_fallback_is_a_miss(slice_dir: Path) -> None:
    async def fallback(session: str, question: str, options: dict[str, Any]) -> dict[str, Any]:
        payload = {"fallback_type": "INSUFFICIENT_EVIDENCE", "text": "x", "outcome": "FALLBACK"}
        return {"events": [{"event": "content", "content_type": "SAFE_FALLBACK", "payload": payload}], "totals": {}}

    result = await evaluate(slice_dir, fallback)
    s = result["summary"]
    assert s["as1"] == 0.0 and s["as3"] == 0.0 and s["fallback_rate"] == 1.0 and s["report_rate"] == 0.0
    assert result["changed_top"] == {"n": 2, "model_right": 0, "tools_right": 2}


def test_tools_only_from_the_command_line(slice_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rca.json"
    assert main(["eval", "rca", "--dataset", str(slice_dir), "--tools-only", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["tools_only"]["as1"] == 1.0 and result["summary"]["as1"] == 1.0
    assert set(result) >= {
        "summary",
        "tools_only",
        "changed_top",
        "by_day",
        "by_type",
        "cases",
        "model",
        "dataset",
        "commit",
        "command",
    }
    assert result["cases"][0]["content_type"] == "TOOLS_ONLY" and "skipped days" in capsys.readouterr().out
    assert main(["eval", "rca", "--dataset", str(tmp_path / "nope"), "--tools-only"]) == 2


def test_traces_and_logs_find_what_metrics_miss(tmp_path: Path, shared_dir: Path) -> None:
    """One TrainTicket fault (basic-service returns wrong values, 2023-01-29 09:03:53) with the day's
    metrics, gzip logs and traces: per-pod metrics alone rank other services first; its error log lines
    put it on top, and the span latencies keep it there. Each modality set is scored beside the others."""
    day_src = shared_dir / "data" / "nezha-rca-trainticket" / "rca_data" / "2023-01-29"
    day = tmp_path / "tt" / "rca_data" / "2023-01-29"
    day.mkdir(parents=True)
    for folder in ("metric", "log", "trace"):
        (day / folder).symlink_to(day_src / folder)
    picked = [f for f in faults(day_src) if f["inject_time"] == "2023-01-29 09:03:53"]
    (day / "2023-01-29-fault_list.json").write_text(json.dumps({"09": picked}), encoding="utf-8")
    out = tmp_path / "rca.json"
    assert main(["eval", "rca", "--dataset", str(tmp_path / "tt"), "--tools-only", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    modality = {name: m["as1"] for name, m in result["tools_by_modality"].items()}
    assert modality == {"metrics": 0.0, "metrics+logs": 1.0, "metrics+logs+traces": 1.0}
    assert result["cases"][0]["predicted"][0] == "ts-basic-service"


def test_two_datasets_are_scored_pooled_and_per_day(slice_dir: Path, tmp_path: Path, shared_dir: Path) -> None:
    """The OnlineBoutique slice (both faults found) and one TrainTicket fault in one run: the pooled
    figures count all three, each day keeps its own, keyed by system and day."""
    day_src = shared_dir / "data" / "nezha-rca-trainticket" / "rca_data" / "2023-01-29"
    day = tmp_path / "tt" / "rca_data" / "2023-01-29"
    day.mkdir(parents=True)
    (day / "metric").symlink_to(day_src / "metric")
    picked = [f for f in faults(day_src) if f["inject_time"] == "2023-01-29 09:03:53"]
    (day / "2023-01-29-fault_list.json").write_text(json.dumps({"09": picked}), encoding="utf-8")
    out = tmp_path / "both.json"
    argv = ["eval", "rca", "--dataset", str(slice_dir), str(tmp_path / "tt"), "--tools-only", "--out", str(out)]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert list(result["days"]) == ["OnlineBoutique 2022-08-22", "TrainTicket 2023-01-29"]
    ob, tt = result["days"].values()
    # metrics alone miss the TrainTicket return fault (the test above): 2 of 3 pooled
    assert (ob["summary"]["n"], ob["tools_only"]["as1"]) == (2, 1.0)
    assert (tt["summary"]["n"], tt["tools_only"]["as1"], tt["dataset"]) == (1, 0.0, str(tmp_path / "tt"))
    assert result["summary"]["n"] == 3 and result["tools_only"]["as1"] == 0.667
    assert result["dataset"] == [str(slice_dir), str(tmp_path / "tt")]
    assert result["skipped_days"] == [f"{slice_dir.name}/2022-08-23"]
