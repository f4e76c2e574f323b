"""Verifier: a second model checks the draft against an evidence index built from real tool calls
(seed 000 §4), and the retry context for one more round of evidence gathering (§6)."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from pydantic import ValidationError

from harness.contracts import (
    Claim,
    EvidenceRef,
    ExecutorEvidence,
    FactChecked,
    RetryContext,
    ToolTraceSummaryItem,
    VerifierInput,
    VerifierOutput,
)
from harness.evidence_catalog import candidate_components
from harness.model import Message
from harness.prompts import prompt
from harness.stages.base import RunContext, call_model, extract_json
from harness.stages.evidence_guard import evidence_text
from harness.stages.executor import ExecutorOutcome
from harness.stages.support_check import echoes, rule_verdicts, similarity_verdicts
from harness.tools.base import EVIDENCE_TOOLS, LedgerEntry

VERIFIER_SCHEMA = VerifierOutput.model_json_schema()


def tool_trace_summary(ledger: dict[str, LedgerEntry], output_chars: int = 400) -> list[ToolTraceSummaryItem]:
    """One entry per evidence tool, aggregating its invocations (seed 000 §4.2)."""
    groups: OrderedDict[str, list[LedgerEntry]] = OrderedDict()
    for entry in ledger.values():
        if entry.tool_name in EVIDENCE_TOOLS:
            groups.setdefault(entry.tool_name, []).append(entry)
    items = []
    for n, (tool, entries) in enumerate(groups.items(), 1):
        ok = [e for e in entries if e.result.status == "success"]
        details = [e.result.retrieval.get("retrieval_details") or {} for e in entries]
        # Seed 000 §4.2: the topic domain comes from what was retrieved first, the L0 hints second.
        domains = [d for det in details for d in det.get("retrieved_domains") or []]
        domains += [d for det in details for d in (det.get("l0_hints") or {}).get("domains", [])]
        queries = [str(e.args.get("query") or e.args.get("metric") or e.args.get("name") or "") for e in entries]
        items.append(
            ToolTraceSummaryItem(
                trace_ref=f"trace-{n}",
                tool_name=tool,
                success=bool(ok),
                input_summary="; ".join(
                    ", ".join(f"{k}={v}" for k, v in e.args.items() if isinstance(v, str | int | float))
                    for e in entries
                )[:300],
                output_summary=" | ".join(evidence_text(e)[: output_chars // max(1, len(ok))] for e in ok)[
                    :output_chars
                ],
                evidence_level="direct" if ok else "none",
                topic_domain=domains[0] if domains else "general",
                source_invocation_ids=[e.tool_call_id for e in entries],
                invocation_count=len(entries),
                failed_invocation_count=sum(e.result.status == "error" for e in entries),
                no_hit_invocation_count=sum(e.result.status == "no_data" for e in entries),
                query_samples=[q for q in queries if q][:3],
                retrieval_layers=sorted(
                    {
                        str(e.result.retrieval["retrieval_layer"])
                        for e in entries
                        if e.result.retrieval.get("retrieval_layer")
                    }
                ),
                relevance_levels=sorted(
                    {
                        str(e.result.retrieval["relevance_level"])
                        for e in entries
                        if e.result.retrieval.get("relevance_level")
                    }
                ),
                source_documents=sorted({s for det in details for s in det.get("sources", [])})[:10],
            )
        )
    return items


def verifier_input(ctx: RunContext, outcome: ExecutorOutcome, retry: RetryContext | None) -> VerifierInput:
    return VerifierInput(
        original_query=ctx.question,
        executor_final_answer=outcome.raw_text,
        executor_structured_output=outcome.evidence.model_dump() if outcome.evidence else None,
        executor_output_parse_status=outcome.parse_status,
        tool_trace_summary=tool_trace_summary(ctx.boundary.ledger),
        retry_context=retry,
    )


VERIFICATIONS = ["direct_evidence", "indirect_support", "no_evidence", "contradicted"]


def compact_schema(evidence: ExecutorEvidence) -> dict[str, Any]:
    """The verifier's answer for a constructed draft: one check per claim (ids from an enum), then the
    verdict; bounded, and expanded into the seed's verifier_output by ``expand``."""
    ids = [c.claim_id for c in evidence.claims]
    return {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "minItems": 1,
                "maxItems": len(ids),
                "items": {
                    "type": "object",
                    "properties": {
                        "claim": {"type": "string", "enum": ids},
                        "verification": {"type": "string", "enum": VERIFICATIONS},
                        "critical": {"type": "boolean"},
                    },
                    "required": ["claim", "verification", "critical"],
                    "additionalProperties": False,
                },
            },
            "verdict": {"type": "string", "enum": ["PASS", "LOW_CONFID", "REJECT"]},
            "groundedness_score": {"type": "number", "minimum": 0, "maximum": 1},
            "rationale": {"type": "string", "maxLength": 200},
        },
        "required": ["facts", "verdict", "groundedness_score", "rationale"],
        "additionalProperties": False,
    }


def compact_message(question: str, evidence: ExecutorEvidence) -> str:
    lines = [f"Question: {question}", "Claims:"]
    for c in evidence.claims:
        lines.append(f"{c.claim_id} ({c.claim_type}): {c.claim_text}")
        lines += [f'  cites [{b.tool_name}] "{b.evidence_excerpt}"' for b in c.evidence_bindings]
    return "\n".join(lines)


def expand(data: dict[str, Any], evidence: ExecutorEvidence, summary: list[ToolTraceSummaryItem]) -> VerifierOutput:
    """The seed's verifier_output from a compact answer: each fact is the claim's text, its evidence refs
    the trace entries of the calls the claim cites."""
    trace_of = {str(i): t for t in summary for i in t.source_invocation_ids}
    claims = {c.claim_id: c for c in evidence.claims}
    facts = []
    for raw in data.get("facts") or []:
        claim = claims.get(str(raw.get("claim")))
        if claim is None:
            continue
        refs = [
            EvidenceRef(
                trace_ref=trace_of[str(cid)].trace_ref,
                tool_name=b.tool_name,
                topic_domain=trace_of[str(cid)].topic_domain,
                source_invocation_ids=[cid],
            )
            for b in claim.evidence_bindings
            for cid in b.source_invocation_ids
            if str(cid) in trace_of
        ]
        facts.append(
            FactChecked(
                fact=claim.claim_text,
                is_critical=bool(raw.get("critical", True)),
                verification=raw.get("verification", "no_evidence"),
                detail="",
                evidence_refs=refs,
            )
        )
    return VerifierOutput(
        verdict=data.get("verdict", "REJECT"),
        groundedness_score=float(data.get("groundedness_score", 0.0)),
        critical_fact_count=0,
        facts_checked=facts,
        rationale=str(data.get("rationale", "")),
    )


async def verify(
    ctx: RunContext, payload: VerifierInput, round_no: int, draft: ExecutorEvidence | None = None
) -> VerifierOutput:
    """``draft``: a constructed answer's kept claims, checked in the compact form; without it the model
    reads the seed's verifier_input and answers the seed's verifier_output. With ``verifier_rules`` a
    constructed draft's claims are first checked by rule (harness/stages/support_check.py); the model
    is asked only about the claims with nothing the rule can check, and the rule's findings stand."""
    decided: dict[str, bool | None] = {}
    if draft is not None and ctx.settings.verifier_rules:
        decided = await _rule_checks(ctx, draft)
        if all(v is not None for v in decided.values()):
            ctx.recorder.timeline(
                "SEMANTIC", "SEMANTIC_GUARD_ATTEMPT", None, round=round_no, checker="rules", **_tally(decided)
            )
            return _decided(ctx, round_no, expand(_rule_answer(draft, decided), draft, payload.tool_trace_summary))
    if draft is not None:
        pending = draft.model_copy(update={"claims": [c for c in draft.claims if decided.get(c.claim_id) is None]})
        schema = compact_schema(pending)
        messages = [
            Message("system", prompt("verifier", ctx.lang)),
            Message("user", compact_message(ctx.question, pending)),
        ]
    else:
        # The raw answer duplicates the parsed one when parsing succeeded; send it only when it did not.
        body = payload.model_dump(exclude={"executor_final_answer"} if payload.executor_structured_output else set())
        schema = VERIFIER_SCHEMA
        messages = [
            Message("system", prompt("verifier_contract", ctx.lang)),
            Message("user", json.dumps(body, ensure_ascii=False)),
        ]
    response, _ = await call_model(
        ctx,
        phase="SEMANTIC",
        component="SEMANTIC_GUARD",
        stage="verifier",
        messages=messages,
        json_schema=schema,
        budget="verifier",
    )
    ctx.recorder.timeline(
        "SEMANTIC", "SEMANTIC_GUARD_ATTEMPT", None, round=round_no, checker="model", **_tally(decided)
    )
    try:
        data = extract_json(response.text)
        if draft is not None and "facts" in data:
            output = expand(_with_rules(data, draft, decided), draft, payload.tool_trace_summary)
        else:
            output = VerifierOutput.model_validate(data)
    except (ValueError, ValidationError) as err:
        output = VerifierOutput(
            verdict="REJECT",
            groundedness_score=0.0,
            critical_fact_count=0,
            facts_checked=[],
            rationale=f"the verifier's answer was unusable: {str(err)[:200]}",
        )
    return _decided(ctx, round_no, output)


async def _rule_checks(ctx: RunContext, draft: ExecutorEvidence) -> dict[str, bool | None]:
    """Key terms first; then every claim the key terms did not fail is held to its cited excerpts by
    meaning when the run has the embedder. A False stands; None goes to the model.

    The meaning check covers claims the key terms passed too: a restated question can carry a term its
    citation happens to hold ("The orders consumer group lag keeps growing for 20 minutes", citing a
    payment-service series whose text has a 20) and still say nothing the evidence says (the 0.5B
    released that claim in benchmarks/results/diagnosis_quality.json at 5bd64ca)."""
    decided = rule_verdicts(draft, candidate_components(ctx.boundary.ledger))
    held = [c for c in draft.claims if decided.get(c.claim_id) is not False]
    if held and ctx.embed is not None and ctx.settings.verifier_min_similarity > 0:
        far = await similarity_verdicts(held, ctx.embed, ctx.settings.verifier_min_similarity)
        decided.update({cid: False for cid, verdict in far.items() if verdict is False})
    return decided


def _tally(decided: dict[str, bool | None]) -> dict[str, int]:
    """How many claims the rules passed, failed and left to the model (the attempt's audit details)."""
    values = list(decided.values())
    return {
        "rule_supported": values.count(True),
        "rule_unsupported": values.count(False),
        "to_model": values.count(None),
    }


def _rule_fact(claim: Claim, supported: bool) -> dict[str, Any]:
    verification = "direct_evidence" if supported else "no_evidence"
    return {"claim": claim.claim_id, "verification": verification, "critical": claim.claim_type == "root_cause"}


def _rule_answer(draft: ExecutorEvidence, decided: dict[str, bool | None]) -> dict[str, Any]:
    """Every claim decided by rule. None supported is LOW_CONFID, not REJECT: the rules found claims
    their evidence does not carry (seed 000 §4: "证据不足"), nothing the evidence contradicts, so the
    one retry round rewrites them from the same ledger."""
    facts = [_rule_fact(c, bool(decided[c.claim_id])) for c in draft.claims]
    supported = sum(bool(decided[c.claim_id]) for c in draft.claims)
    return {
        "facts": facts,
        "verdict": "PASS" if supported else "LOW_CONFID",
        "groundedness_score": round(supported / len(draft.claims), 3),
        "rationale": f"{supported} of {len(draft.claims)} claims supported by rule (their key terms in their "
        "cited evidence; claims naming none were checked for meaning)",
    }


def _with_rules(data: dict[str, Any], draft: ExecutorEvidence, decided: dict[str, bool | None]) -> dict[str, Any]:
    """The model's compact answer with the rule's findings in place of its own for the claims the rule decided."""
    by_claim = {c.claim_id: c for c in draft.claims}
    facts = [f for f in data.get("facts") or [] if decided.get(str(f.get("claim"))) is None]
    facts += [_rule_fact(by_claim[cid], ok) for cid, ok in decided.items() if ok is not None]
    if any(decided.values()):
        judged = {str(f.get("claim")) for f in facts}
        facts += [_rule_fact(c, False) for c in draft.claims if c.claim_id not in judged]  # unjudged: unverified
        # The model judged only the claims the rule could not; what the rule verified stands, and the
        # model's no_evidence on the others drops just those from the report. Its REJECT stands too: a
        # verifier model's REJECT is never overruled (DESIGN.md §8).
        return {**data, "facts": facts, "verdict": "REJECT" if data.get("verdict") == "REJECT" else "PASS"}
    return {**data, "facts": facts}


def _decided(ctx: RunContext, round_no: int, output: VerifierOutput) -> VerifierOutput:
    # critical_fact_count is defined by facts_checked (seed 000 §4.3), not by what the model says.
    output.critical_fact_count = sum(f.is_critical for f in output.facts_checked)
    ctx.recorder.timeline(
        "SEMANTIC",
        "SEMANTIC_GUARD_DECISION",
        output.verdict,
        verdict=output.verdict,
        round=round_no,
        groundedness_score=output.groundedness_score,
        critical_fact_count=output.critical_fact_count,
    )
    return output


WHY = {"no_evidence": "no evidence found", "indirect_support": "only indirect support"}


def missing_facts(facts: list[FactChecked]) -> list[str]:
    return [
        f"{f.fact} ({f.detail or WHY[f.verification]})"
        for f in facts
        if f.is_critical and f.verification in ("no_evidence", "indirect_support")
    ]


def unsupported_facts(facts: list[FactChecked]) -> list[str]:
    """The non-critical claims without evidence: what a retry rewrites when no critical fact is missing."""
    return [f"{f.fact} ({f.detail or WHY['no_evidence']})" for f in facts if f.verification == "no_evidence"]


def evidence_gaps(output: VerifierOutput, question: str = "") -> list[str]:
    """What a retry asks for and a fallback names: the critical facts without direct evidence, else any
    claim without evidence, else the verifier's rationale. With ``question`` (a fallback's gaps), a fact
    that restates the question is left out: it is what the asker reported, not what the evidence lacks
    (the 0.5B writes the symptom back as a claim, and "p99 jumped to 30 s (no evidence found)" under the
    measured "p99 133 -> 3e+04" told the asker nothing)."""
    facts = [f for f in output.facts_checked if not echoes(f.fact, question)]
    if output.facts_checked and not facts:
        return []
    return missing_facts(facts) or unsupported_facts(facts) or [output.rationale]


def retry_context(output: VerifierOutput, round_no: int, lang: str) -> RetryContext:
    instruction = (
        "仅补充以上断言相关证据，不要重复已完成检索"
        if lang == "zh"
        else "Gather evidence for the facts above only; do not repeat lookups already done."
    )
    return RetryContext(round=round_no, missing_evidence_facts=evidence_gaps(output), instruction=instruction)
