"""The playbook's follow-up lookup: the causes of the runbook the question's lookup ranked first."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from harness.playbook import _runbook_causes_query
from harness.tools.base import LedgerEntry, ToolResult

QUESTION = "告警 KubePodCrashLooping：billing-api 的 pod 一直在重启，应该从哪些方向找原因？"


def _ctx(blocks: list[dict[str, str]], lang: str = "zh") -> Any:
    entry = LedgerEntry("k1", "lookup_knowledge", {"query": QUESTION}, ToolResult("success", {"evidence": blocks}), 1)
    return cast(Any, SimpleNamespace(question=QUESTION, lang=lang, boundary=SimpleNamespace(ledger={"k1": entry})))


def _block(key: str, heading: str, title: str = "KubePodCrashLooping") -> dict[str, str]:
    return {"key": key, "title": title, "heading": heading, "text": "…"}


def test_a_lookup_that_found_only_what_the_alert_means_asks_for_its_causes() -> None:
    blocks = [
        _block("kubepodcrashlooping#chunk-0", "KubePodCrashLooping > 含义"),
        _block("kubeaggregatedapidown#chunk-0", "KubeAggregatedAPIDown > 含义", "KubeAggregatedAPIDown"),
    ]
    assert _runbook_causes_query(_ctx(blocks)) == "KubePodCrashLooping 诊断 可能的原因 排查"
    assert _runbook_causes_query(_ctx(blocks, "en")) == "KubePodCrashLooping diagnosis possible causes"


def test_no_follow_up_when_the_best_runbooks_diagnosis_was_found_or_nothing_was() -> None:
    found = [
        _block("kubepodcrashlooping#chunk-0", "KubePodCrashLooping > 含义"),
        _block("kubepodcrashlooping#chunk-2", "KubePodCrashLooping > 诊断"),
    ]
    assert _runbook_causes_query(_ctx(found)) == ""
    assert _runbook_causes_query(_ctx([])) == ""
