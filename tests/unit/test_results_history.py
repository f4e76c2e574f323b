"""The results history: a replaced run survives as one row (benchmark, commit, date, command, headline
figures, never cases), and recording the current files twice adds nothing the second time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.results_history import append, record_current, recorded, row


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_row_keeps_the_headline_and_drops_the_cases(tmp_path: Path) -> None:
    f = _write(
        tmp_path / "rca.json",
        {
            "commit": "abc123def456",
            "date": "2026-12-07T18:00:00Z",
            "command": "python benchmarks/rca_eval.py --tools-only",
            "summary": {"n": 52, "as1": 0.712, "note": "words are left out", "by": {"x": {"y": {"z": 1}}}},
            "days": {"TrainTicket 2023-01-29": {"summary": {"as1": 0.679}, "cases": [{"q": "…"}]}},
            "cases": [{"question": "…"}],
        },
    )
    r = row(f)
    assert r["benchmark"] == "rca_eval" and r["commit"] == "abc123def456" and r["file"] == "rca.json"
    assert r["headline"] == {
        "summary": {"n": 52, "as1": 0.712},
        "day TrainTicket 2023-01-29": {"summary": {"as1": 0.679}},
    }
    assert "cases" not in json.dumps(r)


def test_an_old_file_without_a_commit_takes_the_one_in_its_name(tmp_path: Path) -> None:
    runs = {"runs": {"m/report": {"summary": {"cases": 35}}}}
    f = _write(tmp_path / "diagnosis_correctness_report_053b93e.json", runs)
    r = row(f)
    assert r["commit"] == "053b93e" and r["benchmark"] == "diagnosis_correctness_report_053b93e"
    assert r["headline"] == {"run m/report": {"summary": {"cases": 35}}}


def test_recording_the_current_runs_twice_adds_them_once(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    history = results / "history.jsonl"
    _write(results / "a.json", {"commit": "c1", "date": "d1", "summary": {"x": 1}})
    _write(results / "b.json", {"commit": "c2", "date": "d2", "summary": {"y": 2}})
    assert record_current(results, history) == 2
    assert record_current(results, history) == 0
    _write(results / "a.json", {"commit": "c3", "date": "d3", "summary": {"x": 5}})  # a new run replaces a.json
    assert record_current(results, history) == 1
    assert recorded(history) == {("a.json", "c1", "d1"), ("b.json", "c2", "d2"), ("a.json", "c3", "d3")}
    assert append([], history) == 0
