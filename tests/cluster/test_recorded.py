"""A recorded cluster answers a call only with a recording whose parameters match it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from cluster.recorded import RecordedCluster, unwrap

CALLS = [
    {
        "tool": "kubectl_describe",
        "params": {"kind": "Pod", "name": "a", "namespace": "x"},
        "output": "stdout:\nA\n\nstderr:\n",
    },
    {"tool": "kubectl_describe", "params": {}, "output": "ANY"},
    {"tool": "fetch_pod_logs", "params": {"pod_name": "*", "namespace": "x"}, "output": "LOGS", "status": "success"},
    {
        "tool": "kubectl_previous_logs",
        "params": {"pod_name": "a"},
        "output": "",
        "status": "error",
        "error": "no previous",
    },
    {"tool": "kubectl_logs", "params": {"pod_name": "s"}, "output": "DB_PASSWORD=hunter2 ok", "status": "success"},
]


def _call(cluster: RecordedCluster, tool: str, **params: str):  # type: ignore[no-untyped-def]
    return asyncio.run(cluster.call(tool, params))


def test_the_most_specific_matching_recording_answers_kinds_caseless() -> None:
    cluster = RecordedCluster(CALLS)
    assert _call(cluster, "kubectl_describe", kind="pod", name="a", namespace="x").text == "A"
    assert _call(cluster, "kubectl_describe", kind="pod", name="b", namespace="x").text == "ANY"


def test_a_wildcard_matches_any_value_but_not_a_missing_one() -> None:
    cluster = RecordedCluster(CALLS)
    assert _call(cluster, "fetch_pod_logs", pod_name="p", namespace="x").text == "LOGS"
    reply = _call(cluster, "fetch_pod_logs", namespace="x")
    assert reply.status == "error" and reply.error and reply.error.startswith("not recorded: fetch_pod_logs(")


def test_a_recorded_error_stays_an_error_and_unknown_tools_are_not_recorded() -> None:
    cluster = RecordedCluster(CALLS)
    assert _call(cluster, "kubectl_previous_logs", pod_name="a").status == "error"
    assert (
        _call(cluster, "kubectl_top_pods").error == "not recorded: kubectl_top_pods() is not in this recorded cluster"
    )


def test_recorded_outputs_are_redacted() -> None:
    assert _call(RecordedCluster(CALLS), "kubectl_logs", pod_name="s").text == "DB_PASSWORD=[redacted] ok"


def test_a_case_of_a_cases_file(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": [{"id": "c1", "tools": CALLS[:1]}, {"id": "c2", "tools": CALLS[1:2]}]}))
    cluster = RecordedCluster.from_file(path, "c2")
    assert _call(cluster, "kubectl_describe", kind="pod", name="a", namespace="x").text == "ANY"


def test_unwrap_keeps_the_output_itself() -> None:
    assert unwrap("stdout:\nline 1\nline 2\n\nstderr:\n") == "line 1\nline 2"
    assert unwrap("plain") == "plain"
