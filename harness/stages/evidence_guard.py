"""Evidence guard: rules (no model) that every claim cites real evidence (seed e2e stage 5).

For each claim: at least one binding; every binding names invocation ids that exist in this run's
tool ledger and belong to the named tool; its source_id is one of those ids, an evidence key present
in that tool's output, or a trace ref; its excerpt occurs in that tool's output (whitespace
normalised); a root_cause claim has direct support. Violating claims are dropped or fail the guard.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.contracts import Claim, EvidenceBinding, ExecutorEvidence
from harness.tools.base import LedgerEntry

Policy = Literal["drop", "fail"]
_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [] if value is None else [str(value)]


def evidence_text(entry: LedgerEntry) -> str:
    """Everything the agent was shown by one invocation, as plain text for excerpt matching."""
    return _norm("\n".join(_leaves(entry.result.output)))


def evidence_keys(entry: LedgerEntry) -> set[str]:
    blocks = entry.result.output.get("evidence", [])
    return {str(b.get("key")) for b in blocks if isinstance(b, dict) and b.get("key")}


@dataclass
class GuardResult:
    passed: bool
    violations: list[dict[str, str]] = field(default_factory=list)
    referenced_tool_call_ids: list[str] = field(default_factory=list)
    verified_analysis_count: int = 0
    verified_source_count: int = 0
    invalid_tool_reference_count: int = 0
    kept: ExecutorEvidence | None = None

    def details(self) -> dict[str, Any]:
        return {
            "violation_count": len(self.violations),
            "violations": self.violations,
            "referenced_tool_call_ids": self.referenced_tool_call_ids,
            "verified_analysis_count": self.verified_analysis_count,
            "verified_source_count": self.verified_source_count,
            "invalid_tool_reference_count": self.invalid_tool_reference_count,
        }


def _check_binding(b: EvidenceBinding, ledger: dict[str, LedgerEntry]) -> tuple[list[str], int]:
    """Problems with one binding, and how many of them are references to calls that do not exist."""
    problems: list[str] = []
    invalid = 0
    ids = [str(i) for i in b.source_invocation_ids]
    if not ids and b.source_id in ledger:
        ids = [b.source_id]
    if not ids:
        return ["binding names no tool invocation"], 1
    entries = []
    for cid in ids:
        entry = ledger.get(cid)
        if entry is None:
            problems.append(f"invocation {cid} does not exist in this run")
            invalid += 1
        elif entry.tool_name != b.tool_name:
            problems.append(f"invocation {cid} is {entry.tool_name}, not {b.tool_name}")
            invalid += 1
        else:
            entries.append(entry)
    if problems:
        return problems, invalid
    keys = set().union(*(evidence_keys(e) for e in entries))
    if b.source_id not in ids and b.source_id not in keys and not re.fullmatch(r"trace-\d+", b.source_id):
        problems.append(f"source_id {b.source_id} is not in the cited output")
    excerpt = _norm(b.evidence_excerpt)
    if not excerpt or not any(excerpt in evidence_text(e) for e in entries):
        problems.append("evidence_excerpt does not occur in the cited tool output")
    return problems, invalid


def check(evidence: ExecutorEvidence, ledger: dict[str, LedgerEntry], policy: Policy = "drop") -> GuardResult:
    result = GuardResult(passed=True)
    kept: list[Claim] = []
    referenced: set[str] = set()
    sources: set[tuple[str, str]] = set()
    for claim in evidence.claims:
        problems: list[str] = []
        if not claim.evidence_bindings:
            problems.append("claim has no evidence binding")
        if claim.claim_type == "root_cause" and claim.support_level != "direct":
            problems.append("a root_cause claim needs direct support")
        for b in claim.evidence_bindings:
            referenced.update(str(i) for i in b.source_invocation_ids)
            bad, invalid = _check_binding(b, ledger)
            result.invalid_tool_reference_count += invalid
            problems += bad
        if problems:
            result.violations += [{"claim_id": claim.claim_id, "problem": p} for p in problems]
            continue
        kept.append(claim)
        sources.update((b.tool_name, b.source_id) for b in claim.evidence_bindings)
    result.referenced_tool_call_ids = sorted(referenced)
    result.verified_analysis_count = len(kept)
    result.verified_source_count = len(sources)
    if (result.violations and policy == "fail") or not kept:
        result.passed = False
        return result
    result.kept = evidence.model_copy(update={"claims": kept})
    return result
