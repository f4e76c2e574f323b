"""Candidate causes from the cluster analyzers' findings (cluster/analyzers) and from what the telemetry
tools measured (harness/telemetry_causes.py), and the conclusion they decide when the model's sentence
does not name them (DESIGN.md §8: evidence decides, the model chooses and narrates).

A problem finding of weight ``MIN_CAUSE_WEIGHT`` or more about a component the question is about is a
candidate cause: its component, its category, its ``cause`` sentence (the analyzer's, composed from the
output) and the released claims that cite it. The heaviest leads. Such a cause outranks the model's and
the anomaly ranking's: it is the fact an engineer would read off ``kubectl describe``. Weights are per kind
of finding (cluster/findings.py), never per case. One reported symptom reads a finding as a cause: CPU
throttling the question reports (an alert such as CPUThrottlingHigh) makes the container's measured CPU
limit its cause, at medium confidence (the kernel throttles a container only at the CPU quota its limit
sets; the throttling itself is what the asker reported, not what a tool measured).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.contracts import ROOT_CAUSE_CATEGORIES, Claim, EvidenceBinding, RootCause
from harness.question_scope import QuestionScope
from harness.stages.support_check import content_overlap
from harness.telemetry_causes import telemetry_findings
from harness.tools.base import LedgerEntry

MIN_CAUSE_WEIGHT = 5
MAX_ANALYZED = 2
# The share of the cause's content words a model's conclusion must hold to count as naming it.
NAMES_CAUSE = 0.5
# The share of an answering finding's words a model's conclusion must hold to stand instead of it.
STATES_ANSWER = 0.8
_THROTTLING = re.compile(r"throttl|节流|限流", re.I)
THROTTLING_WEIGHT = 6
# Findings that answer what was asked rather than name a fault: a count, a searched term's matches, the
# events asked for. The cluster playbook makes the calls that yield them only when the question asks.
ANSWER_KINDS = ("count", "log_match", "log_no_match", "events")


@dataclass(frozen=True)
class Found:
    """One finding of the run with the evidence block and the call that carry it."""

    finding: dict[str, Any]
    key: str
    text: str
    entry: LedgerEntry

    @property
    def weight(self) -> int:
        return int(self.finding.get("weight") or 0)

    def claim(self, claim_id: str) -> Claim:
        """The finding's own line as a finding the system added, cited to its call."""
        binding = EvidenceBinding(
            source_type="tool_trace",
            source_id=self.key,
            tool_name=self.entry.tool_name,
            source_invocation_ids=[self.entry.tool_call_id],
            evidence_excerpt=self.text,
        )
        return Claim(
            claim_id=claim_id,
            claim_type="finding",
            claim_text=self.text,
            support_level="added",
            evidence_bindings=[binding],
        )


def _found(ledger: dict[str, LedgerEntry], scope: QuestionScope | None) -> list[Found]:
    """Every finding of the run about a component in scope that has an evidence block, in call order:
    the cluster analyzers', then the telemetry's (``harness/telemetry_causes.py``)."""
    out: list[Found] = []
    for entry in ledger.values():
        if entry.result.status != "success":
            continue
        blocks = [b for b in entry.result.output.get("evidence") or [] if isinstance(b, dict)]
        for f in entry.result.output.get("findings") or []:
            component = str(f.get("component") or "") if isinstance(f, dict) else ""
            if not component or (scope is not None and not scope.covers(component)):
                continue
            prefix = f"k8s:{component}:{f.get('kind')}:"
            block = next((b for b in blocks if str(b.get("key", "")).startswith(prefix)), None)
            if block is not None:
                out.append(Found(f, str(block["key"]), str(block.get("text") or ""), entry))
    for finding, key, text, entry in telemetry_findings(ledger):
        if scope is None or scope.covers(str(finding["component"])):
            out.append(Found(finding, key, text, entry))
    return out


def _throttled(found: Found) -> Found:
    f = found.finding
    cause = f"{f.get('cause')}: the CPU throttling the question reports comes from that limit (its CFS quota)"
    return Found(
        {**f, "severity": "problem", "category": "cpu", "weight": THROTTLING_WEIGHT, "cause": cause},
        found.key,
        found.text,
        found.entry,
    )


def _problems(ledger: dict[str, LedgerEntry], scope: QuestionScope | None, question: str = "") -> list[Found]:
    """Each in-scope candidate cause, the heaviest first (the call order among equals)."""
    found = _found(ledger, scope)
    out = [x for x in found if x.finding.get("severity") == "problem" and x.weight >= MIN_CAUSE_WEIGHT]
    if _THROTTLING.search(question):
        out += [
            _throttled(x)
            for x in found
            if x.finding.get("kind") == "limits" and "CPU limit" in str(x.finding.get("cause"))
        ]
    return sorted(out, key=lambda x: -x.weight)


def analyzed_causes(
    ledger: dict[str, LedgerEntry], claims: list[Claim], scope: QuestionScope | None, question: str = ""
) -> list[RootCause]:
    """The analyzers' candidate causes, one per component, resting on the released claims that cite them."""
    out: list[RootCause] = []
    for x in _problems(ledger, scope, question):
        component = str(x.finding["component"])
        if any(c.component == component for c in out):
            continue
        category = str(x.finding.get("category") or "unknown")
        ids = [c.claim_id for c in claims if any(b.source_id == x.key for b in c.evidence_bindings)]
        out.append(
            RootCause(
                component=component[:120],
                category=category if category in ROOT_CAUSE_CATEGORIES else "unknown",
                confidence="high" if x.weight >= 8 else "medium",
                claim_ids=ids,
                cause=str(x.finding.get("cause") or "")[:200],
                added_by="analyzer",
            )
        )
        if len(out) >= MAX_ANALYZED:
            break
    return out


def healthy_components(ledger: dict[str, LedgerEntry]) -> set[str]:
    """Components the cluster analyzers looked at and found healthy: a finding that says so (a Running,
    ready pod; a clean log) and no problem finding at all (a failed job, a CrashLoopBackOff row or a
    repeated error line is trouble even where it names no cause)."""
    ok: set[str] = set()
    troubled: set[str] = set()
    for x in _found(ledger, None):
        name = str(x.finding["component"])
        if x.finding.get("severity") == "problem":
            troubled.add(name)
        elif x.finding.get("severity") == "ok":
            ok.add(name)
    return ok - troubled


def rests_on_trouble(cause: RootCause, claims: list[Claim], ledger: dict[str, LedgerEntry]) -> bool:
    """A root cause about a component the cluster analyzers looked at rests on a finding of trouble
    there (a problem finding the claims under it cite); one that rests only on a limit, an event list or
    a healthy pod's line names a healthy component. Components the cluster never saw are not judged here."""
    found = [x for x in _found(ledger, None) if x.finding["component"] == cause.component]
    if not found:
        return True
    trouble = {x.key for x in found if x.finding.get("severity") == "problem"}
    cited = {b.source_id for c in claims if c.claim_id in cause.claim_ids for b in c.evidence_bindings}
    return bool(trouble & cited)


def _answering(ledger: dict[str, LedgerEntry], scope: QuestionScope | None, question: str = "") -> Found | None:
    """The first finding that answers the question itself; else, when the analyzers found nothing wrong
    with the asked components, the finding that says one of them is healthy (a healthy pod is an answer)."""
    found = _found(ledger, scope)
    for kind in ANSWER_KINDS:
        hit = next((x for x in found if x.finding.get("kind") == kind), None)
        if hit is not None:
            return hit
    if _problems(ledger, scope, question) or any(x.finding.get("severity") == "problem" for x in found):
        return None
    healthy = healthy_components(ledger)
    return next(
        (x for x in found if x.finding.get("kind") in ("healthy", "log_clean") and x.finding["component"] in healthy),
        None,
    )


def answering_finding(ledger: dict[str, LedgerEntry], scope: QuestionScope | None, question: str = "") -> str | None:
    """The line of the answering finding, if any."""
    hit = _answering(ledger, scope, question)
    return f"{hit.finding.get('resource')}: {hit.finding.get('cause')}" if hit else None


def decisive_claim(ledger: dict[str, LedgerEntry], scope: QuestionScope | None, question: str = "") -> Claim | None:
    """The finding that decides the answer (the leading candidate cause, else the answering finding), as
    a finding the system adds: the fact comes first, whatever the model wrote beside it."""
    problems = _problems(ledger, scope, question)
    hit = problems[0] if problems else _answering(ledger, scope, question)
    return hit.claim("analyzer-1") if hit is not None else None


def decided_by_the_cluster(ledger: dict[str, LedgerEntry], scope: QuestionScope | None, question: str = "") -> bool:
    """The cluster analyzers found a candidate cause or the answer itself: the model only narrates, in the
    one-finding answer (a telemetry cause keeps the model's findings: the measured lines beside it, the
    lock-waiting query and the latency it caused, are what the report explains; with the one-finding
    answer the embedded model's demo answer fell back, tests/serve/test_real_diagnosis.py)."""
    return is_cluster_fact(decisive_claim(ledger, scope, question))


def is_cluster_fact(claim: Claim | None) -> bool:
    """A decisive claim that cites a cluster analyzer's finding (its key ``k8s:…``), not the telemetry's."""
    return claim is not None and any(b.source_id.startswith("k8s:") for b in claim.evidence_bindings)


def names_cause(text: str, cause: RootCause) -> bool:
    """The text names the candidate's component and most of its cause."""
    return cause.component.lower() in text.lower() and content_overlap(cause.cause, text) >= NAMES_CAUSE


def states_answer(text: str, answer: str) -> bool:
    return content_overlap(answer, text) >= STATES_ANSWER


# The kind of cause in the question's language: the analyzers' cause sentences quote tool output (English
# metric names, log templates, kubectl reasons), so a Chinese answer names the kind in Chinese before them.
CATEGORY_ZH = {
    "cpu": "CPU",
    "memory": "内存",
    "network": "网络",
    "disk": "磁盘",
    "code": "代码或程序错误",
    "config": "配置",
    "dependency": "依赖（数据库等下游）",
    "unknown": "未归类",
}


def composed_conclusion(cause: RootCause, lang: str) -> str:
    """The conclusion from the leading candidate, when the model's did not name it."""
    if lang == "zh":
        kind = CATEGORY_ZH.get(cause.category, cause.category)
        return f"{cause.component} 的根因属于{kind}问题（由工具分析得出）：{cause.cause}。"
    return f"{cause.component}: {cause.cause}."
