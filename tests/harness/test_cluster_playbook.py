"""A question about something on Kubernetes: the cluster playbook looks at it before the model writes,
and the analyzers' fact decides the root cause and the conclusion (the recorded demo cluster, the
scripted model, no telemetry about the asked components)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cluster.settings import ClusterSettings
from harness.contracts import ChatRequest, event_data
from harness.rules_model import RulesModel
from harness.settings import HarnessSettings
from harness.wiring import build_pipeline, bundled_telemetry
from tests.conftest import REPO
from tests.fakes.sinks import ListSink

DEMO = ClusterSettings(backend="recorded", recordings=str(REPO / "knowledge" / "cluster" / "demo.json"))


async def _ask(question: str, cluster: ClusterSettings | None = DEMO) -> tuple[list[dict[str, Any]], ListSink]:
    sink = ListSink()
    pipeline = build_pipeline(sink, HarnessSettings(), bundled_telemetry(Path(REPO)), RulesModel(), cluster=cluster)
    events = [e async for e in pipeline.run(ChatRequest(Id="k8s-1", Question=question), None)]
    return [{"event": e.event, **event_data(e)} for e in events], sink


def _content(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["event"] == "content")


async def test_an_oom_killed_pod_is_the_root_cause_and_the_conclusion() -> None:
    events, _ = await _ask("Why do our checkout pods keep restarting since the last release?")
    content = _content(events)
    assert content["content_type"] == "DIAGNOSIS_REPORT"
    payload = content["payload"]
    [cause] = payload["root_causes"]
    assert (cause["component"], cause["category"], cause["added_by"], cause["confidence"]) == (
        "checkout",
        "memory",
        "analyzer",
        "high",
    )
    assert cause["cause"] == "container checkout was OOMKilled (exit code 137): it exceeded its memory limit of 256Mi"
    conclusion = payload["report"]["conclusion"]
    assert conclusion == {
        "text": "checkout: container checkout was OOMKilled (exit code 137): it exceeded its memory limit of 256Mi.",
        "based_on_analysis_ids": conclusion["based_on_analysis_ids"],
        "written_by": "template",
    }
    details = [e.get("detail", "") for e in events if e["event"] == "status"]
    assert "tool kubectl_describe started (cluster playbook)" in details
    assert any(d.startswith("FINDING (measured by kubectl_describe") and "OOMKilled" in d for d in details)
    assert events[-1] == {"event": "done", "outcome": "SUCCESS"}


async def test_the_calls_are_audited_in_order_and_the_first_looks_for_the_resource() -> None:
    _, sink = await _ask("Why do our checkout pods keep restarting since the last release?")
    calls = [(r.data["tool_name"], r.data["request"]) for r in sink.records if r.kind == "tool_invocation"]
    k8s = [c for c in calls if c[0].startswith(("kubectl", "fetch_pod"))]
    assert k8s[:3] == [
        ("kubectl_find_resource", {"kind": "pod", "keyword": "checkout"}),
        ("kubectl_describe", {"kind": "pod", "name": "checkout-7d9f8b6c5d-x2k4p", "namespace": "shop"}),
        ("fetch_pod_logs", {"pod_name": "checkout-7d9f8b6c5d-x2k4p", "namespace": "shop"}),
    ]
    assert ("kubectl_previous_logs", {"pod_name": "checkout-7d9f8b6c5d-x2k4p", "namespace": "shop"}) in k8s


async def test_a_healthy_deployment_is_an_answer_with_no_root_cause() -> None:
    events, _ = await _ask("Is the catalog deployment healthy?")
    payload = _content(events)["payload"]
    assert payload["root_causes"] == []
    assert payload["report"]["conclusion"]["text"] == (
        "pod shop/catalog-5c6b7d8f9-q8w2z: the pod is Running and healthy: every container ready, 0 restarts."
    )


async def test_a_chinese_question_gets_the_same_fact() -> None:
    events, _ = await _ask("checkout 服务的 pod 一直重启，为什么？")
    payload = _content(events)["payload"]
    assert payload["report"]["conclusion"]["text"] == (
        "checkout 的根因属于内存问题（由工具分析得出）：container checkout was OOMKilled (exit code 137): "
        "it exceeded its memory limit of 256Mi。"
    )


async def test_without_a_cluster_no_cluster_tool_is_called() -> None:
    _, sink = await _ask("Why do our checkout pods keep restarting since the last release?", cluster=None)
    names = {r.data["tool_name"] for r in sink.records if r.kind == "tool_invocation"}
    assert not {n for n in names if n.startswith("kubectl") or n == "fetch_pod_logs"}


async def test_a_resource_the_cluster_does_not_have_is_said_plainly() -> None:
    events, _ = await _ask("What is wrong with the ledger-writer deployment?")
    content = _content(events)
    text = content["payload"].get("text") or content["payload"]["report"]["conclusion"]["text"]
    assert "The cluster tools found nothing about ledger-writer" in text
    assert content["payload"]["root_causes"] == []


class _NoFindingModel(RulesModel):
    """A model whose answer keeps no finding (as the 0.5B's did when it copied a runbook's words)."""

    def _grounded_answer(self, request: Any) -> Any:
        return self._json({"findings": [], "summary": "The memory limit was hit."})


async def test_when_the_models_finding_does_not_survive_the_fact_still_answers() -> None:
    sink = ListSink()
    pipeline = build_pipeline(sink, HarnessSettings(), bundled_telemetry(Path(REPO)), _NoFindingModel(), cluster=DEMO)
    question = "Why do our checkout pods keep restarting since the last release?"
    events = [
        {"event": e.event, **event_data(e)} async for e in pipeline.run(ChatRequest(Id="k8s-2", Question=question))
    ]
    content = _content(events)
    assert content["content_type"] == "DIAGNOSIS_REPORT"
    first = content["payload"]["report"]["analysis"][0]
    assert first["added"] is True and "was OOMKilled (exit code 137)" in first["text"]
    assert content["payload"]["report"]["conclusion"]["written_by"] == "template"
