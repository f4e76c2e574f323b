"""The executor's final answer, grounded by construction (DESIGN.md §8).

The model answers a compact JSON whose schema is built for this run: each claim cites evidence ids
from an enum of the run's spans (``harness/evidence_catalog.py``), each root cause names a component
from the services the tools saw and a category from a fixed list, and every string and array is
bounded. ``to_evidence`` turns that answer into the seed's ``executor_evidence_v1``: the bindings'
tool, invocation id, evidence key and excerpt are copied from the cited span, never written by the
model. The rule guard still checks the result (the second line).
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.contracts import (
    ROOT_CAUSE_CATEGORIES,
    Claim,
    EvidenceBinding,
    ExecutorEvidence,
    RecommendedAction,
    RetryContext,
    RootCause,
)
from harness.evidence_catalog import Span
from harness.stages.support_check import completing_spans

ANSWER_VERSION = "executor_answer_v1"
# A small model copies an evidence line with its label ("E3 [lookup_knowledge] ..."): the label is
# the prompt's, not the finding's, and would fail the key-term check as a word no excerpt contains.
_EVIDENCE_LABEL = re.compile(r"^\s*E\d+\s*\[[a-z_]+\]\s*")
_REASON = re.compile(r"\s*\([^()]*\)\s*$")  # the reason missing_facts() appends
MAX_CLAIMS = 3
MAX_ROOT_CAUSES = 3
CLAIM_TYPES = ("root_cause", "symptom", "contributing_factor", "observation")


def answer_schema(spans: list[Span], components: list[str]) -> dict[str, Any]:
    aliases = [s.alias for s in spans]
    component: dict[str, Any] = (
        {"type": "string", "enum": components} if components else {"type": "string", "minLength": 1, "maxLength": 60}
    )
    return {
        "type": "object",
        "properties": {
            "claims": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_CLAIMS,
                "items": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string", "enum": list(CLAIM_TYPES)},
                        "text": {"type": "string", "minLength": 8, "maxLength": 160},
                        "evidence": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": 2,
                            "items": {"type": "string", "enum": aliases},
                        },
                    },
                    "required": ["type", "text", "evidence"],
                    "additionalProperties": False,
                },
            },
            "root_causes": {
                "type": "array",
                # A ranked list, not one guess: when the tools saw several services the answer names at
                # least two (the RCA evaluation scores the top 3); none at all only when no service was seen.
                "minItems": min(2, len(components)),
                "maxItems": MAX_ROOT_CAUSES,
                "items": {
                    "type": "object",
                    "properties": {
                        "component": component,
                        "category": {"type": "string", "enum": list(ROOT_CAUSE_CATEGORIES)},
                        "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
                        "claims": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": MAX_CLAIMS,
                            "items": {"type": "integer", "minimum": 1, "maximum": MAX_CLAIMS},
                        },
                    },
                    "required": ["component", "category", "confidence", "claims"],
                    "additionalProperties": False,
                },
            },
            # Every bound is output a CPU model must decode (about 5 tokens/s here): short on purpose.
            "summary": {"type": "string", "minLength": 8, "maxLength": 240},
            "actions": {"type": "array", "maxItems": 2, "items": {"type": "string", "minLength": 4, "maxLength": 120}},
            "missing_info": {
                "type": "array",
                "maxItems": 2,
                "items": {"type": "string", "minLength": 4, "maxLength": 120},
            },
        },
        "required": ["claims", "root_causes", "summary", "actions", "missing_info"],
        "additionalProperties": False,
    }


def evidence_text(spans: list[Span], components: list[str], lang: str) -> str:
    lines = ["证据：" if lang == "zh" else "Evidence:"]
    lines += [f"{s.alias} [{s.tool_name}] {s.text}" for s in spans]
    if components:
        lines.append(("候选组件：" if lang == "zh" else "Components seen: ") + ", ".join(components[:12]))
    return "\n".join(lines)


def retry_text(retry: RetryContext | None, lang: str) -> str:
    if retry is None:
        return ""
    head = (
        "上一轮核验认为以下断言证据不足："
        if lang == "zh"
        else "A check of the previous answer found these facts unsupported:"
    )
    # The facts without the verifier's reason ("… (no evidence found)"): a small model copied the
    # reason into the claims it rewrote (seen on the retry of benchmark question q08).
    facts = [_REASON.sub("", f) for f in retry.missing_evidence_facts]
    return "\n".join([head, *[f"- {f}" for f in facts], retry.instruction])


class AnswerError(ValueError):
    """An answer that does not fit the run's schema (an engine that ignored the schema)."""


def to_evidence(data: dict[str, Any], spans: list[Span], components: list[str] | None = None) -> ExecutorEvidence:
    """The seed's executor_evidence_v1 from a grounded answer; bindings are copied from the cited spans,
    plus the spans that carry what a claim names and its citations miss (``completing_spans``)."""
    by_alias = {s.alias: s for s in spans}
    claims: list[Claim] = []
    numbers: dict[int, str] = {}  # the answer's claim number -> the claim id it became
    for n, raw in enumerate(data.get("claims") or [], 1):
        if not isinstance(raw, dict):
            continue
        cited = [by_alias[a] for a in dict.fromkeys(raw.get("evidence") or []) if a in by_alias]
        if not cited:
            continue  # cites nothing of this run (an engine that ignored the schema): not a finding
        text = _EVIDENCE_LABEL.sub("", str(raw.get("text", ""))).strip()[:200]
        if components is not None:
            cited += completing_spans(text, cited, spans, components)
        ctype = str(raw.get("type", "observation"))
        numbers[n] = f"claim-{len(claims) + 1}"
        claims.append(
            Claim(
                claim_id=numbers[n],
                claim_type=ctype if ctype in CLAIM_TYPES else "observation",
                claim_text=text,
                support_level="direct",
                evidence_bindings=[
                    EvidenceBinding(
                        source_type="tool_trace",
                        source_id=s.key,
                        tool_name=s.tool_name,
                        source_invocation_ids=[s.call_id],
                        evidence_excerpt=s.text,
                    )
                    for s in cited
                ],
            )
        )
    if not claims:
        raise AnswerError("the answer has no claim that cites this run's evidence")
    causes = []
    for raw in (data.get("root_causes") or [])[:MAX_ROOT_CAUSES]:
        if not isinstance(raw, dict):
            continue
        ids = [numbers[i] for i in raw.get("claims") or [] if isinstance(i, int) and i in numbers]
        category = str(raw.get("category", "unknown"))
        causes.append(
            RootCause(
                component=str(raw.get("component", "")).strip()[:120] or "unknown",
                category=category if category in ROOT_CAUSE_CATEGORIES else "unknown",
                confidence=raw.get("confidence") if raw.get("confidence") in ("high", "medium", "low") else "medium",
                claim_ids=list(dict.fromkeys(ids)),
            )
        )
    summary = str(data.get("summary", "")).strip()[:300]
    evidence = ExecutorEvidence(
        diagnosis_summary=summary,
        claims=claims,
        recommended_actions=[
            RecommendedAction(action_text=str(a)[:160], reason="", evidence_bindings=[])
            for a in data.get("actions") or []
            if str(a).strip()
        ],
        missing_info=[str(m)[:160] for m in data.get("missing_info") or [] if str(m).strip()],
        user_facing_answer=summary,
        root_causes=causes,
    )
    return merge_repeats(evidence)


def _same_words(text: str) -> str:
    return " ".join(text.lower().split())


def merge_repeats(evidence: ExecutorEvidence) -> ExecutorEvidence:
    """One claim per finding: a small model writes the same claim two or three times (citing other
    spans); the first stands for all, and root causes that cited a repeat cite it instead."""
    kept: dict[str, Claim] = {}
    alias: dict[str, str] = {}
    for claim in evidence.claims:
        alias[claim.claim_id] = kept.setdefault(_same_words(claim.claim_text), claim).claim_id
    if len(kept) == len(evidence.claims):
        return evidence
    causes = [
        rc.model_copy(update={"claim_ids": list(dict.fromkeys(alias.get(i, i) for i in rc.claim_ids))})
        for rc in evidence.root_causes
    ]
    return evidence.model_copy(update={"claims": list(kept.values()), "root_causes": causes})


def raw_answer(data: dict[str, Any]) -> str:
    return json.dumps({"answer_version": ANSWER_VERSION, **data}, ensure_ascii=False)
