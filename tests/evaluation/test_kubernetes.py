"""raydiag eval k8s: each case's recordings become its run's cluster; scored by the answer-key rule."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from evaluation.kubernetes import evaluate, load, options_for

CASES = {
    "cases": [
        {"id": "c1", "q": "what is wrong with api?", "about": ["api"], "causes": [["oomkilled"]], "wrong": ["db"],
         "tools": [{"tool": "kubectl_describe", "params": {}, "output": "x"}]},
        {"id": "c2", "q": "why is db slow?", "about": ["db"], "causes": [["lock"]], "wrong": []},
    ]
}  # fmt: skip


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(CASES))
    (tmp_path / "split.json").write_text(json.dumps({"tune": ["c2"], "report": ["c1"]}))
    return path


def test_a_half_of_a_split_and_the_runs_cluster(tmp_path: Path) -> None:
    path = _file(tmp_path)
    [case] = load(path, tmp_path / "split.json", "report")
    assert options_for(case, path) == {
        "origin": "eval",
        "cluster": {"backend": "recorded", "recordings": str(path.resolve()), "case": "c1"},
    }
    [plain] = load(path, tmp_path / "split.json", "tune")
    assert options_for(plain, path) == {"origin": "eval"}  # no recordings: no cluster


def test_scored_by_the_answer_key_rule(tmp_path: Path) -> None:
    path = _file(tmp_path)
    seen: list[tuple[str, dict[str, Any]]] = []

    async def diagnose(session: str, question: str, options: dict[str, Any]) -> dict[str, Any]:
        seen.append((session, options))
        blamed = "api" if "api" in question else "db"
        text = "api: container api was OOMKilled" if blamed == "api" else "db looks fine"
        payload = {"report": {"conclusion": {"text": text}}, "root_causes": [{"component": blamed}]}
        return {
            "events": [
                {
                    "event": "status",
                    "detail": "FINDING (measured by kubectl_describe, not yet checked): x",
                    "at_s": 0.4,
                },
                {"event": "content", "content_type": "DIAGNOSIS_REPORT", "payload": payload},
                {"event": "done", "outcome": "SUCCESS"},
            ]
        }

    result = asyncio.run(evaluate(load(path), path, diagnose))
    rows = {r["id"]: r for r in result["cases"]}
    assert (rows["c1"]["correct"], rows["c1"]["misattributed"], rows["c1"]["first_finding_s"]) == (True, False, 0.4)
    assert (rows["c2"]["correct"], rows["c2"]["misattributed"]) == (False, False)
    assert result["summary"]["correct_rate"] == 0.5 and result["summary"]["first_finding_p50_s"] == 0.4
    assert [s for s, _ in seen] == ["k8s-c1", "k8s-c2"]
