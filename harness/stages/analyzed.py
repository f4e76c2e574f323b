"""Candidate causes from the cluster analyzers' findings (cluster/analyzers), and the conclusion they
decide when the model's sentence does not name them (DESIGN.md §8: evidence decides, the model chooses
and narrates).

A problem finding of weight ``MIN_CAUSE_WEIGHT`` or more about a component the question is about is a
candidate cause: its component, its category, its ``cause`` sentence (the analyzer's, composed from the
output) and the released claims that cite it. The heaviest leads. Such a cause outranks the model's and
the anomaly ranking's: it is the fact an engineer would read off ``kubectl describe``. Weights are per kind
of finding (cluster/findings.py), never per case.
"""

from __future__ import annotations

from typing import Any

from harness.contracts import ROOT_CAUSE_CATEGORIES, Claim, RootCause
from harness.question_scope import QuestionScope
from harness.stages.support_check import content_overlap
from harness.tools.base import LedgerEntry

MIN_CAUSE_WEIGHT = 5
MAX_ANALYZED = 2
# The share of the cause's content words a model's conclusion must hold to count as naming it.
NAMES_CAUSE = 0.5


def _problems(ledger: dict[str, LedgerEntry], scope: QuestionScope | None) -> list[tuple[dict[str, Any], str]]:
    """Each in-scope problem finding of the run with its evidence key, the heaviest first."""
    found: list[tuple[dict[str, Any], str]] = []
    for entry in ledger.values():
        if entry.result.status != "success":
            continue
        keys = [str(b.get("key")) for b in entry.result.output.get("evidence") or [] if isinstance(b, dict)]
        for f in entry.result.output.get("findings") or []:
            if (
                not isinstance(f, dict)
                or f.get("severity") != "problem"
                or int(f.get("weight") or 0) < MIN_CAUSE_WEIGHT
            ):
                continue
            component = str(f.get("component") or "")
            if not component or (scope is not None and not scope.covers(component)):
                continue
            key = next((k for k in keys if k.startswith(f"k8s:{component}:{f.get('kind')}:")), "")
            found.append((f, key))
    found.sort(key=lambda pair: -int(pair[0].get("weight") or 0))  # stable: the call order among equals
    return found


def analyzed_causes(
    ledger: dict[str, LedgerEntry], claims: list[Claim], scope: QuestionScope | None
) -> list[RootCause]:
    """The analyzers' candidate causes, one per component, resting on the released claims that cite them."""
    out: list[RootCause] = []
    for finding, key in _problems(ledger, scope):
        component = str(finding["component"])
        if any(c.component == component for c in out):
            continue
        category = str(finding.get("category") or "unknown")
        ids = [c.claim_id for c in claims if any(b.source_id == key for b in c.evidence_bindings)] if key else []
        out.append(
            RootCause(
                component=component[:120],
                category=category if category in ROOT_CAUSE_CATEGORIES else "unknown",
                confidence="high" if int(finding.get("weight") or 0) >= 8 else "medium",
                claim_ids=ids,
                cause=str(finding.get("cause") or "")[:200],
                added_by="analyzer",
            )
        )
        if len(out) >= MAX_ANALYZED:
            break
    return out


# Findings that answer what was asked rather than name a fault: a count, a searched term's matches, the
# events asked for. The cluster playbook makes the calls that yield them only when the question asks.
ANSWER_KINDS = ("count", "log_match", "log_no_match", "events")


def answering_finding(ledger: dict[str, LedgerEntry], scope: QuestionScope | None) -> str | None:
    """The line of the first finding that answers the question itself, if any; else, when the analyzers
    looked at the asked components and found them healthy, the line that says so (a healthy pod is an
    answer)."""
    healthy = healthy_components(ledger)
    asked = [c for c in healthy if scope is None or scope.covers(c)]
    troubled = [f for f, _ in _problems(ledger, scope)]
    kinds = ANSWER_KINDS + (("healthy", "log_clean") if asked and not troubled else ())
    for kind in kinds:
        for entry in ledger.values():
            if entry.result.status != "success":
                continue
            for f in entry.result.output.get("findings") or []:
                component = str(f.get("component") or "") if isinstance(f, dict) else ""
                if isinstance(f, dict) and f.get("kind") == kind and (scope is None or scope.covers(component)):
                    return f"{f.get('resource')}: {f.get('cause')}"
    return None


def healthy_components(ledger: dict[str, LedgerEntry]) -> set[str]:
    """Components the cluster analyzers looked at and found nothing wrong with: no problem finding heavy
    enough to be a cause (a repeated error line in a healthy pod's log is not one)."""
    seen: dict[str, bool] = {}
    for entry in ledger.values():
        if entry.result.status != "success":
            continue
        for f in entry.result.output.get("findings") or []:
            if isinstance(f, dict) and f.get("component"):
                name = str(f["component"])
                cause = f.get("severity") == "problem" and int(f.get("weight") or 0) >= MIN_CAUSE_WEIGHT
                seen[name] = seen.get(name, False) or cause
    return {name for name, troubled in seen.items() if not troubled}


def decided_by_the_cluster(ledger: dict[str, LedgerEntry], scope: QuestionScope | None) -> bool:
    """The analyzers found a candidate cause or the answer itself: the model only narrates."""
    return bool(_problems(ledger, scope)) or answering_finding(ledger, scope) is not None


def names_cause(text: str, cause: RootCause) -> bool:
    """The text names the candidate's component and most of its cause."""
    return cause.component.lower() in text.lower() and content_overlap(cause.cause, text) >= NAMES_CAUSE


def composed_conclusion(cause: RootCause, lang: str) -> str:
    """The conclusion from the leading candidate, when the model's did not name it."""
    if lang == "zh":
        return f"{cause.component} 的根因（由工具分析得出）：{cause.cause}。"
    return f"{cause.component}: {cause.cause}."
