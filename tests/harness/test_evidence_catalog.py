"""The citable runbook spans: whole sentences of hard-wrapped runbooks, causes before checks, no code."""

from __future__ import annotations

from harness.evidence_catalog import _sentences, build_catalog, telling
from harness.stages.release import report
from harness.tools.base import LedgerEntry, ToolResult

# Shaped like the public runbooks (prometheus-operator's KubePodNotReady): hard-wrapped at 80 columns,
# a list of checks, then of causes, a fenced command.
DIAGNOSIS = """KubePodNotReady > Diagnosis
- Check pod events via `kubectl -n $NAMESPACE describe pod $POD`.
- Check pod logs via `kubectl -n $NAMESPACE logs $POD -c $CONTAINER`
- readiness and liveness probes may be incorrect - wrong port or command,
  check is failing too fast due to short timeout for response

```shell
kubectl -n monitoring get pods --field-selector=status.phase!=Running
```
"""
IMPACT = """KubePodNotReady > Impact
Service degraded or unavailable, because pods that are not ready receive no traffic from their Service.
"""


def _ledger(*blocks: tuple[str, str, str]) -> dict[str, LedgerEntry]:
    evidence = [{"key": k, "heading": h, "text": t} for k, h, t in blocks]
    return {
        "c1": LedgerEntry("c1", "lookup_knowledge", {"query": "q"}, ToolResult("success", {"evidence": evidence}), 1)
    }


def test_a_hard_wrapped_sentence_is_one_span_and_causes_come_before_checks() -> None:
    spans = build_catalog(_ledger(("kubepodnotready#chunk-2", "KubePodNotReady > Diagnosis", DIAGNOSIS)), 10)
    texts = [s.text for s in spans]
    cause = (
        "readiness and liveness probes may be incorrect - wrong port or command, check is failing too fast "
        "due to short timeout for response"
    )
    assert cause in texts  # one sentence, not its two lines
    assert not any("kubectl -n monitoring get pods" in t for t in texts)  # fenced code is no sentence
    assert telling(cause) > telling("Check pod events via `kubectl -n $NAMESPACE describe pod $POD`.")


def test_an_impact_section_says_what_follows_not_why() -> None:
    ledger = _ledger(
        ("kubepodnotready#chunk-1", "KubePodNotReady > Impact", IMPACT),
        ("kubepodnotready#chunk-2", "KubePodNotReady > Diagnosis", DIAGNOSIS),
    )
    spans = build_catalog(ledger, 10)
    assert [s.describes_symptoms for s in spans][-1] is True and spans[-1].key == "kubepodnotready#chunk-1"


def test_the_added_guidance_is_the_top_runbooks_causes_once_each() -> None:
    """Two copies of the runbook (upstream and a fork) hold the same sentence: it is released once, and
    the cause before the check."""
    from harness.contracts import ExecutorEvidence

    ledger = _ledger(
        ("kubepodnotready#chunk-2", "KubePodNotReady > Diagnosis", DIAGNOSIS),
        ("kubepodnotready#chunk-2b", "KubePodNotReady > Diagnosis", DIAGNOSIS),
    )
    draft = ExecutorEvidence(diagnosis_summary="", claims=[], hypotheses=[], user_facing_answer="")
    payload = report(draft, ledger, "en").payload.model_dump()
    texts = [a["text"] for a in payload["report"]["analysis"] if a["kind"] == "guidance"]
    assert texts[0].startswith("readiness and liveness probes may be incorrect")
    assert len(texts) == len(set(texts)) == 2


def test_the_evidence_lists_labels_are_not_part_of_a_statement() -> None:
    """What a small model copies from the prompt's evidence list (seen in the tuning runs' answers)."""
    from harness.stages.answer import _unlabelled

    assert _unlabelled("资源请求过低？E1") == "资源请求过低？"
    assert _unlabelled("Pod 由于 priority 的限制被驱逐。E3 [kubernetes-kb") == "Pod 由于 priority 的限制被驱逐。"
    assert _unlabelled("E3 [lookup_knowledge] the disk is full") == "the disk is full"
    assert _unlabelled("The E2E suite fails") == "The E2E suite fails"


def test_the_added_guidance_comes_from_the_questions_own_lookup_beside_the_models_pick() -> None:
    """The playbook's lookup for a fault category ran first and found a Redis runbook; the question's own
    lookup found KubePodNotReady. The model picked that runbook's mitigation line: its cause lines are
    still added, the Redis lines are not."""
    from harness.contracts import ExecutorEvidence
    from harness.evidence_catalog import Span
    from harness.playbook import CATEGORY_QUERIES
    from harness.stages.answer import guidance

    redis = {
        "key": "redis#chunk-15",
        "heading": "Redis > Latency",
        "text": "Redis > Latency\n"
        "You may need to enable the latency monitor because it is off by default in most setups.",
    }
    mitigation = {
        "key": "kubepodnotready#chunk-3",
        "heading": "KubePodNotReady > Mitigation",
        "text": "KubePodNotReady > Mitigation\nTalk with developers about the app and define sane default values.",
    }
    diagnosis = {"key": "kubepodnotready#chunk-2", "heading": "KubePodNotReady > Diagnosis", "text": DIAGNOSIS}
    ledger = {
        "c1": LedgerEntry(
            "c1",
            "lookup_knowledge",
            {"query": CATEGORY_QUERIES["en"]["unknown"]},
            ToolResult("success", {"evidence": [redis]}),
            1,
        ),
        "c2": LedgerEntry(
            "c2",
            "lookup_knowledge",
            {"query": "frontend pods never Ready"},
            ToolResult("success", {"evidence": [mitigation, diagnosis]}),
            1,
        ),
    }
    picked = Span(
        "E1",
        "kubepodnotready#chunk-3",
        "lookup_knowledge",
        "c2",
        "Talk with developers about the app and define sane default values.",
    )
    draft = ExecutorEvidence(
        diagnosis_summary="", claims=[guidance(picked, "claim-1")], hypotheses=[], user_facing_answer=""
    )
    payload = report(draft, ledger, "en").payload.model_dump()
    lines = [(a["added"], a["source"]) for a in payload["report"]["analysis"] if a["kind"] == "guidance"]
    assert lines == [
        (False, "kubepodnotready#chunk-3"),
        (True, "kubepodnotready#chunk-2"),
        (True, "kubepodnotready#chunk-2"),
    ]


def test_a_hypothesis_needs_words_not_labels() -> None:
    from harness.stages.answer import _needs

    assert _needs("E1, E2, E3") == ""
    assert _needs("kubelet logs of worker-07 (E2)") == "kubelet logs of worker-07"
    assert _needs("节点 kubelet 日志 E2") == "节点 kubelet 日志"


def test_a_sentence_is_not_split_inside_inline_code() -> None:
    from harness.evidence_catalog import _sentences

    chunk = (
        "HikariCP > 排查\n定位原因：数据库慢查询或锁等待（日志中的 `Slow query ... (lock wait)`）、连接泄漏、"
        "或连接池容量不足。 Then compare `a. b` with the pool's maximum size."
    )
    assert _sentences(chunk) == [
        "定位原因：数据库慢查询或锁等待（日志中的 `Slow query ... (lock wait)`）、连接泄漏、或连接池容量不足。",
        "Then compare `a. b` with the pool's maximum size.",
    ]


# Shaped like KubeSphere's KubeNodeNotReady runbook: the common failures are a list of short items under
# a line that introduces them; alone, each item is a fragment too short to be a span.
SHORT_CAUSES = """KubeNodeNotReady > 诊断
- 查询 kubelet 日志，排查节点未就绪的可能原因。

常见的故障情况：

- 网络问题。
- 资源不足。
- 硬件故障。

Possible causes:

- slow disk
- [fragmentation](https://etcd.io/docs/v3.5/op-guide/maintenance/)
- a member that keeps losing its leader because the network between members drops packets
"""


def test_a_list_of_short_causes_is_one_span_with_its_introduction() -> None:
    from harness.stages.evidence_guard import _norm

    spans = build_catalog(_ledger(("kubenodenotready#chunk-2", "KubeNodeNotReady > 诊断", SHORT_CAUSES)), 10)
    assert "常见的故障情况： - 网络问题。 - 资源不足。 - 硬件故障。" in [s.text for s in spans]
    sentences = _sentences(SHORT_CAUSES)
    assert sentences[-1] == (
        "Possible causes: - slow disk - [fragmentation](https://etcd.io/docs/v3.5/op-guide/maintenance/) "
        "- a member that keeps losing its leader because the network between members drops packets"
    )
    long_list = "T > D\nCommon causes:\n\n" + "".join(
        f"- cause number {n} described at some length here.\n" for n in range(9)
    )
    folded = _sentences(long_list)
    assert folded[0].startswith("Common causes: - cause number 0") and len(folded[0]) <= 320
    assert folded[-1] == "cause number 8 described at some length here."  # what does not fit stays apart
    # An introduction whose object was code (left out) says nothing alone, nor joins the text after it.
    example = (
        "T > D\nThe kernel log then looks like this:\n\n```\nOut of memory: Kill process\n```\n\n"
        "- check the memory limits first\n"
    )
    assert _sentences(example) == ["check the memory limits first"]
    # Verbatim but for whitespace: the evidence guard finds every span in the tool output.
    assert all(_norm(s) in _norm(SHORT_CAUSES) for s in sentences)


def test_a_sentence_that_points_back_is_shown_with_the_one_it_points_to() -> None:
    # Shaped like prometheus-operator's KubeContainerWaiting: "If so, …" alone tells a user nothing.
    chunk = (
        "KubeContainerWaiting > Diagnosis\nCheck whether the pod has init containers that keep failing. "
        "If so, review the logs for all of these containers."
    )
    assert _sentences(chunk) == [
        "Check whether the pod has init containers that keep failing. If so, review the logs for all of these "
        "containers."
    ]
    # Its antecedent sits in the chunk before: nothing to join, so it is not shown.
    assert _sentences("X > Diagnosis\nIf so, review the logs for all of these containers.") == []
    assert _sentences("X > 说明\n由于这个特定原因，该告警默认是被抑制的(这里指通知发送被抑制)。") == []
    # A conditional of its own stands alone; a list item does not point into the item before it.
    alone = "If not set, Prometheus uses the global scrape interval of one minute."
    assert _sentences(f"X > Config\n{alone}") == [alone]
    listed = "X > Diagnosis\n- Check whether the volume is full on the node.\n- If so, expand the volume claim today."
    assert _sentences(listed) == ["Check whether the volume is full on the node."]


def test_table_rows_and_output_dumps_are_no_sentences_and_long_spans_end_on_a_word() -> None:
    """A psql result row or an iotop line is no guidance an engineer reads; a span cut at its length
    limit ends after a whole word and is still a verbatim prefix of the tool output."""
    from harness.evidence_catalog import SPAN_CHARS, _sentences, clip

    chunk = (
        "Runbook > Diagnosis\n"
        "Look at the pg_stat_activity view for sessions waiting on locks held by a long transaction.\n"
        " 19:26:00 UTC | 2020-07-07 19:32:24 UTC |      0 |       0 | gitlab | active | 10.\n"
        "Total DISK READ :       0.00 B/s | Total DISK WRITE :       0.00 B/s\n"
        "| Alert | Meaning |\n"
    )
    assert _sentences(chunk) == [
        "Look at the pg_stat_activity view for sessions waiting on locks held by a long transaction."
    ]
    long = "payment-service waits on its database " + "hikaricp_connections_pending 98x its baseline spread " * 8
    cut = clip(long)
    assert len(cut) <= SPAN_CHARS and long.startswith(cut) and long[len(cut)] in " ,;:"
    assert clip("short enough") == "short enough"


def test_notes_forms_pointers_and_sentences_about_the_page_are_no_guidance() -> None:
    from harness.evidence_catalog import is_guidance

    # Lines the correctness set's answers quoted as guidance (a Redis answer's "TODO https://…", a
    # Docker form's placeholders, a bare address, a page introducing itself) and steps that stay.
    assert not is_guidance("TODO https://github.com/elastic/beats/tree/master/packetbeat")
    assert not is_guidance("See https://kubernetes.io/docs/tasks/debug/ for more")
    assert not is_guidance("`<your-name>` is your Docker username. `<your-pword>` is your Docker password.")
    assert not is_guidance("This page shows how to debug Pods that are stuck in Pending.")
    assert not is_guidance("本文介绍如何排查 TiDB 集群中的慢查询问题。")
    assert is_guidance("Run `kubectl describe pod <pod-name>` and read the Events at the end.")
    assert is_guidance("慢查询通常由缺失索引或统计信息过期导致。")
    assert is_guidance("本节点的磁盘使用率超过 90% 时，kubelet 会开始驱逐 Pod，应先清理镜像。")
    # An alert's message template says what fires and why: its placeholders are the alert's labels.
    assert is_guidance("Node {{ $labels.node }} is evicting Pods due to {{ $labels.eviction_signal }}.")
    assert is_guidance("Check whether the readiness probe's path still exists in the new image.")
