"""The executor's final answer, grounded by construction (DESIGN.md §8).

The model answers a compact JSON whose schema is built for this run, in the three kinds of statement
an SRE needs told apart: *findings* (its own sentences about what the telemetry of the asked
components measured, each citing measured evidence ids from an enum of the run's spans,
``harness/evidence_catalog.py``), *guidance* (ids of runbook sentences, released verbatim and
attributed, never rewritten into findings), *root causes* (a component the findings are about, with a
short ``cause``, resting on numbered findings; none when the findings show none) and *hypotheses*
(what the evidence suggests but does not show, with what would confirm it). Without telemetry about
the question there are no findings and no root causes in the schema at all. Every string and array is
bounded. ``to_evidence`` turns the answer into the seed's ``executor_evidence_v1``: the bindings' tool,
invocation id, evidence key and excerpt are copied from the cited span, never written by the model.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.contracts import (
    ROOT_CAUSE_CATEGORIES,
    Claim,
    ExecutorEvidence,
    Hypothesis,
    RetryContext,
    RootCause,
)
from harness.evidence_catalog import Span
from harness.stages.support_check import complete_statement, completing_spans, content_overlap

ANSWER_VERSION = "executor_answer_v1"
# A small model copies an evidence line with its label ("E3 [lookup_knowledge] ..."), or the alias
# alone ("资源请求过低？E1"), or a label the length cap cut ("… E4 [kubernetes-kubepodnot"): the label is
# the prompt's, not the statement's, and would fail the key-term check as a word no excerpt contains.
_EVIDENCE_LABEL = re.compile(r"\s*\bE\d{1,3}\b(?:\s*\[[^\]\n]{0,80}(?:\]|$))?\s*")
# A statement whose words are mostly one runbook sentence's is that runbook's text, whatever it cites:
# it is guidance (released as such, attributed), never the model's finding or hypothesis.
RUNBOOK_COPY = 0.7
_REASON = re.compile(r"\s*\([^()]*\)\s*$")  # the reason missing_facts() appends
MAX_CLAIMS = 3
MAX_ROOT_CAUSES = 2
MAX_GUIDANCE = 3
MAX_HYPOTHESES = 2
RUNBOOK_TOOL = "lookup_knowledge"


def _is_runbook(span: Span) -> bool:
    return span.tool_name == RUNBOOK_TOOL


def answer_schema(spans: list[Span], components: list[str], decided: bool = False) -> dict[str, Any]:
    """``spans``: the citable evidence of the services the question is about and the runbook sentences;
    ``components``: those services. Without measured evidence there is nothing to find and no component
    to blame: the schema then has no findings and no root causes, only guidance, hypotheses and a summary.
    ``decided``: the cluster analyzers' findings already decide the answer (harness/stages/analyzed.py);
    the model narrates in one finding and a summary, and writes no hypotheses (every token is seconds on
    a CPU, and an unmeasured guess beside a measured cause helps nobody)."""
    measured = [s.alias for s in spans if not _is_runbook(s)]
    runbook = [s.alias for s in spans if _is_runbook(s)]
    properties: dict[str, Any] = {}
    if measured:
        properties["findings"] = {
            "type": "array",
            # Decided: exactly one finding, the model's sentence about the deciding fact (a draft with none
            # fails the evidence guard, and the user would get "no reliable conclusion" beside the fact).
            "minItems": 1 if decided else 0,
            "maxItems": 1 if decided else MAX_CLAIMS,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 8, "maxLength": 160},
                    "evidence": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 2,
                        "items": {"type": "string", "enum": measured},
                    },
                },
                "required": ["text", "evidence"],
                "additionalProperties": False,
            },
        }
    if measured and components:
        properties["root_causes"] = {
            "type": "array",
            # None is an honest answer: a root cause is named only where the findings show one.
            "maxItems": MAX_ROOT_CAUSES,
            "items": {
                "type": "object",
                "properties": {
                    "component": {"type": "string", "enum": components},
                    "cause": {"type": "string", "minLength": 8, "maxLength": 120},
                    "category": {"type": "string", "enum": list(ROOT_CAUSE_CATEGORIES)},
                    "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
                    "findings": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_CLAIMS,
                        "items": {"type": "integer", "minimum": 1, "maximum": MAX_CLAIMS},
                    },
                },
                "required": ["component", "cause", "category", "confidence", "findings"],
                "additionalProperties": False,
            },
        }
    if runbook:
        properties["guidance"] = {
            "type": "array",
            # Without measured evidence the runbooks are the answer: at least one line of them.
            "minItems": 0 if measured else 1,
            "maxItems": MAX_GUIDANCE,
            "items": {"type": "string", "enum": runbook},
        }
    if decided:
        properties["summary"] = {"type": "string", "minLength": 8, "maxLength": 200}
        return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    properties["hypotheses"] = {
        "type": "array",
        # Without findings, the likely causes are what the engineer asked for: name at least one, as such.
        "minItems": 0 if measured else 1,
        "maxItems": MAX_HYPOTHESES,
        "items": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 8, "maxLength": 140},
                "needs": {"type": "string", "minLength": 4, "maxLength": 100},
            },
            "required": ["text", "needs"],
            "additionalProperties": False,
        },
    }
    # Every bound is output a CPU model must decode (about 5 to 10 tokens/s here): short on purpose.
    properties["summary"] = {"type": "string", "minLength": 8, "maxLength": 240}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def evidence_text(spans: list[Span], components: list[str], lang: str, no_telemetry: str | None = None) -> str:
    zh = lang == "zh"
    measured = [s for s in spans if not _is_runbook(s)]
    runbook = [s for s in spans if _is_runbook(s)]
    lines = ["测量到的证据（与问题相关的服务）：" if zh else "Measured (telemetry of what the question is about):"]
    lines += [f"{s.alias} [{s.tool_name}] {s.text}" for s in measured]
    if not measured:
        lines.append(no_telemetry or ("（无）" if zh else "(none)"))
    if runbook:
        lines.append("运维手册（要检查或要做的事）：" if zh else "Runbook guidance (what to check or do):")
        lines += [f"{s.alias} [{s.key.split('#')[0]}] {s.text}" for s in runbook]
    if components and measured:
        lines.append(("相关服务：" if zh else "Services in scope: ") + ", ".join(components[:12]))
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


FINDING_CAP = 160  # the schema's maxLength for a finding


def _whole_items(text: str) -> str:
    """A finding cut by the length cap ends at its last complete item ("…; hikaricp_conne" loses the
    half-written item: a metric name cut in two names nothing)."""
    if len(text) < FINDING_CAP - 5:
        return text
    cut = max(text.rfind(sep) for sep in (";", "; ", ",", "，", "；", ". "))
    return text[:cut].rstrip(" ,;，；") if cut > FINDING_CAP // 3 else text


def _unlabelled(text: str) -> str:
    """The text without the evidence list's labels a small model copies ("E3 [mysql-deadlock-zh] …")."""
    return " ".join(_EVIDENCE_LABEL.sub(" ", text).split())


def _needs(text: str) -> str:
    """What would confirm a hypothesis, in words: "E1, E2, E3" (the evidence list's labels) says nothing."""
    text = re.sub(r"\(\s*\)|（\s*）", "", _unlabelled(text)).strip(" ,;，；、.。")
    return text[:160] if re.search(r"[A-Za-z\u4e00-\u9fff]{2}", text) else ""


def copies_runbook(text: str, spans: list[Span], cited: list[Span]) -> bool:
    """The text is mostly one runbook sentence of this run's evidence, and more that sentence than the
    measured lines it cites (a faithful reading of a metric line shares its words with the line)."""
    runbook = max((content_overlap(text, s.text) for s in spans if _is_runbook(s)), default=0.0)
    measured = max((content_overlap(text, s.text) for s in cited if not _is_runbook(s)), default=0.0)
    return runbook >= RUNBOOK_COPY and runbook > measured


def guidance(span: Span, claim_id: str, added: bool = False) -> Claim:
    """A runbook sentence as guidance: its own text, cited to its block; ``added`` when the system, not
    the model, chose it."""
    return Claim(
        claim_id=claim_id,
        claim_type="guidance",
        claim_text=span.text,
        support_level="added" if added else "direct",
        evidence_bindings=[span.binding()],
    )


def to_evidence(data: dict[str, Any], spans: list[Span], components: list[str] | None = None) -> ExecutorEvidence:
    """The seed's executor_evidence_v1 from a grounded answer. Findings keep the model's text and cite the
    spans it chose (plus the spans that carry what a finding names and its citations miss,
    ``completing_spans``); guidance is the chosen runbook sentences themselves, verbatim; root causes
    rest on the findings they number; hypotheses stay hypotheses."""
    by_alias = {s.alias: s for s in spans}
    claims: list[Claim] = []
    numbers: dict[int, str] = {}  # the answer's finding number -> the claim id it became
    for n, raw in enumerate(data.get("findings") or [], 1):
        if not isinstance(raw, dict):
            continue
        cited = [by_alias[a] for a in dict.fromkeys(raw.get("evidence") or []) if a in by_alias]
        cited = [s for s in cited if not _is_runbook(s)]
        if not cited:
            continue  # cites nothing measured in this run (an engine that ignored the schema): not a finding
        text = _whole_items(_unlabelled(str(raw.get("text", "")))[:200])
        if copies_runbook(text, spans, cited):
            continue
        if components is not None:
            cited += [s for s in completing_spans(text, cited, spans, components) if not _is_runbook(s)]
        numbers[n] = f"claim-{len(claims) + 1}"
        claims.append(
            Claim(
                claim_id=numbers[n],
                claim_type="finding",
                claim_text=text,
                support_level="direct",
                evidence_bindings=[s.binding() for s in cited],
            )
        )
    for alias in dict.fromkeys(a for a in data.get("guidance") or [] if isinstance(a, str)):
        span = by_alias.get(alias)
        if span is None or not _is_runbook(span):
            continue
        claims.append(guidance(span, f"claim-{len(claims) + 1}"))
    causes = []
    for raw in (data.get("root_causes") or [])[:MAX_ROOT_CAUSES]:
        if not isinstance(raw, dict):
            continue
        ids = [numbers[i] for i in raw.get("findings") or [] if isinstance(i, int) and i in numbers]
        category = str(raw.get("category", "unknown"))
        component = str(raw.get("component", "")).strip()[:120]
        if not ids or (components is not None and component not in components):
            continue  # a root cause names a component the findings are about, and rests on them
        causes.append(
            RootCause(
                component=component,
                category=category if category in ROOT_CAUSE_CATEGORIES else "unknown",
                confidence=raw.get("confidence") if raw.get("confidence") in ("high", "medium", "low") else "medium",
                claim_ids=list(dict.fromkeys(ids)),
                cause=str(raw.get("cause", "")).strip()[:200],
            )
        )
    hypotheses = [
        Hypothesis(
            hypothesis_text=_unlabelled(str(h.get("text", "")))[:200],
            basis="",
            needed_evidence=[_needs(str(h.get("needs", "")))],
        )
        for h in data.get("hypotheses") or []
        if isinstance(h, dict) and _unlabelled(str(h.get("text", "")))
    ]
    hypotheses = [h for h in hypotheses if not copies_runbook(h.hypothesis_text, spans, [])]
    summary = whole_sentences(_unlabelled(str(data.get("summary", ""))))
    if not isinstance(data.get("summary"), str) and not claims:
        raise AnswerError("the answer has no summary and no finding: not this run's schema")
    evidence = ExecutorEvidence(
        diagnosis_summary=summary,
        claims=claims,
        hypotheses=hypotheses,
        user_facing_answer=summary,
        root_causes=causes,
    )
    return merge_repeats(evidence)


# A Latin full stop ends a sentence only before a space ("1.2 s" is one number); a Chinese one always does.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")


def whole_sentences(text: str, limit: int = 300) -> str:
    """The text's complete sentences, each once: a small model repeats itself until the length cap cuts
    it mid-word ("… indicating that there are more connections available compared to the maximum. We")."""
    text = " ".join(text.split())[:limit]
    parts: list[str] = []
    for piece in (p.strip() for p in _SENTENCE_END.split(text) if p.strip()):
        if parts and parts[-1].count("`") % 2:  # a full stop inside inline code ends no sentence
            parts[-1] += " " + piece
        else:
            parts.append(piece)
    if parts and not re.search(r"[.!?。！？]$", parts[-1]):
        # Cut off by the cap, left unfinished, or the one sentence without a full stop after others that
        # have theirs ("… over the network. This phase typically occurs due to an error with thenode"):
        # not ended by the model, so not released.
        if len(text) >= limit - 80 or len(parts) > 1 or not complete_statement(parts[-1]):
            parts = parts[:-1]
    return " ".join(dict.fromkeys(parts))


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
