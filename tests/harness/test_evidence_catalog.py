"""Runbook spans: verbatim pieces that can stand alone, lists kept with the line that introduces them."""

from __future__ import annotations

from harness.evidence_catalog import SPAN_CHARS, build_catalog
from harness.tools.base import LedgerEntry, ToolResult


def _lookup(heading: str, text: str) -> dict[str, LedgerEntry]:
    block = {"key": "doc#chunk-2", "heading": heading, "text": text}
    result = ToolResult("success", {"evidence": [block]})
    return {"k1": LedgerEntry("k1", "lookup_knowledge", {"query": "q"}, result, 1)}


def test_a_chinese_list_of_causes_is_one_span_in_the_runbooks_words() -> None:
    """Each cause ("集群中的节点不足。", 9 characters) was shorter than a sentence may be and was dropped:
    the answer never saw what the runbook lists. Together with its lead-in it is one span."""
    text = (
        "HPA 无法进行扩容可能的原因：\n\n- 集群中的节点不足。\n- ResourceQuota 设置了限额。\n"
        "- Pod 由于 priority 的限制被驱逐。"
    )
    spans = build_catalog(_lookup("KubeHpaReplicasMismatch > 诊断", text), 10)
    assert [s.text for s in spans] == [
        "HPA 无法进行扩容可能的原因： 集群中的节点不足。 ResourceQuota 设置了限额。 Pod 由于 priority 的限制被驱逐。"
    ]


def test_an_english_list_joins_its_items_and_long_items_stay_sentences() -> None:
    long_item = "Look at the events of the pod: a failed mount or a missing secret shows there first, " + "x" * 40
    text = (
        "Common causes:\n- Misconfigured ServiceMonitor port or path\n"
        f"- A NetworkPolicy blocks the scrape\n- {long_item}"
    )
    spans = build_catalog(_lookup("TargetDown > Diagnosis", text), 10)
    assert [s.text for s in spans] == [
        "Common causes: Misconfigured ServiceMonitor port or path; A NetworkPolicy blocks the scrape",
        long_item,
    ]


def test_a_list_longer_than_a_span_ends_at_a_whole_item() -> None:
    items = "\n".join(f"- cause number {n} of this alert is a misconfigured limit" for n in range(12))
    (span,) = build_catalog(_lookup("X > Causes", f"Possible causes:\n{items}"), 10)
    assert len(span.text) <= SPAN_CHARS
    assert span.text.endswith("cause number 4 of this alert is a misconfigured limit")
