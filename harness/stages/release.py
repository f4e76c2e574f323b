"""Release: the verdict decides what the user sees (DESIGN.md §2, seed 000 §8, seed e2e §7).

Only verified content leaves: a DIAGNOSIS_REPORT is built from the claims that passed the evidence
guard, with references to the tool outputs they cite; otherwise the seed's templates.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.contracts import (
    AnalysisItem,
    Conclusion,
    DiagnosisReportPayload,
    ExecutorEvidence,
    FallbackType,
    Limitations,
    Reference,
    Report,
    SafeFallbackPayload,
    VerifierOutput,
)
from harness.instruction_guard import withhold
from harness.tools.base import LedgerEntry

SOURCE_TYPES = {
    "lookup_knowledge": "RAG",
    "query_logs": "LOGS",
    "query_metrics": "METRICS",
    "rank_anomalies": "METRICS",
    "service_dependencies": "TOOL",
    "read_skill": "SKILL",
}

TEMPLATES = {
    ("LOW_CONFIDENCE", "zh"): (
        "以下结论基于当前已获取证据，仍存在部分证据缺口，请谨慎参考。",
        "已确认信息：",
        "当前缺口：",
        "建议下一步：",
    ),
    ("LOW_CONFIDENCE", "en"): (
        "The conclusions below rest on the evidence gathered so far; some gaps remain, use them with care.",
        "Confirmed:",
        "Current gaps:",
        "Suggested next steps:",
    ),
    ("INSUFFICIENT_EVIDENCE", "zh"): (
        "当前无法基于已获取证据生成可靠结论。",
        "已确认信息：",
        "证据缺口：",
        "建议下一步：",
    ),
    ("INSUFFICIENT_EVIDENCE", "en"): (
        "A reliable conclusion cannot be drawn from the evidence gathered.",
        "Confirmed:",
        "Evidence gaps:",
        "Suggested next steps:",
    ),
}
NONE = {"zh": "（无）", "en": "(none)"}


@dataclass
class Release:
    content_type: str
    payload: DiagnosisReportPayload | SafeFallbackPayload
    outcome: str  # SUCCESS | FALLBACK
    answer: str
    conclusion: str


def _references(evidence: ExecutorEvidence, ledger: dict[str, LedgerEntry]) -> list[Reference]:
    refs: dict[tuple[str, str], Reference] = {}
    for claim in evidence.claims:
        for b in claim.evidence_bindings:
            for cid in [str(i) for i in b.source_invocation_ids] or [b.source_id]:
                entry = ledger.get(cid)
                if entry is None or (cid, b.source_id) in refs:
                    continue
                scope = ", ".join(f"{k}={v}" for k, v in entry.args.items() if isinstance(v, str | int | float))
                refs[(cid, b.source_id)] = Reference(
                    source_type=SOURCE_TYPES.get(entry.tool_name, "TOOL"),
                    source=b.source_id.split("#")[0] if "#" in b.source_id else f"{entry.tool_name}:{cid}",
                    scope=scope[:200],
                    tool_call_id=cid,
                    excerpt=b.evidence_excerpt[:300],
                )
    return list(refs.values())


def report(evidence: ExecutorEvidence, ledger: dict[str, LedgerEntry], lang: str) -> Release:
    analysis = [
        AnalysisItem(
            id=f"A-{n:03d}",
            text=c.claim_text,
            status="CRITICAL" if c.claim_type == "root_cause" else "NORMAL",
            evidence_keys=sorted({b.source_id for b in c.evidence_bindings}),
        )
        for n, c in enumerate(evidence.claims, 1)
    ]
    used = sorted({e.tool_name for e in ledger.values() if e.result.status == "success"})
    scope = ("证据来源：" if lang == "zh" else "Evidence from: ") + (", ".join(used) or NONE[lang])
    payload = DiagnosisReportPayload(
        report=Report(
            conclusion=Conclusion(text=evidence.diagnosis_summary, based_on_analysis_ids=[a.id for a in analysis]),
            analysis=analysis,
            action_plan=[a.action_text for a in evidence.recommended_actions],
            recommendations=[h.hypothesis_text for h in evidence.hypotheses],
            limitations=Limitations(scope=scope, missing_info=evidence.missing_info),
        ),
        references=_references(evidence, ledger),
    )
    return Release("DIAGNOSIS_REPORT", payload, "SUCCESS", evidence.user_facing_answer, evidence.diagnosis_summary)


def fallback(
    kind: FallbackType,
    lang: str,
    evidence: ExecutorEvidence | None,
    verdict: VerifierOutput | None,
    gaps: list[str],
    ledger: dict[str, LedgerEntry],
) -> Release:
    confirmed: list[str] = []
    if verdict is not None:
        confirmed = [f.fact for f in verdict.facts_checked if f.verification == "direct_evidence"]
    elif evidence is not None:
        confirmed = [c.claim_text for c in evidence.claims]
    all_gaps = list(dict.fromkeys(gaps + (evidence.missing_info if evidence else [])))
    steps = [a.action_text for a in evidence.recommended_actions] if evidence else []
    template = "LOW_CONFIDENCE" if kind == "LOW_CONFIDENCE" else "INSUFFICIENT_EVIDENCE"
    head, c_title, g_title, s_title = TEMPLATES[(template, lang)]

    def block(title: str, items: list[str]) -> str:
        return "\n".join([title, *[f"- {i}" for i in (items or [NONE[lang]])]])

    text = "\n".join([head, block(c_title, confirmed), block(g_title, all_gaps), block(s_title, steps)])
    refs = _references(evidence, ledger) if evidence and kind == "LOW_CONFIDENCE" else []
    payload = SafeFallbackPayload(
        fallback_type=kind, text=text, confirmed=confirmed, gaps=all_gaps, next_steps=steps, references=refs
    )
    return Release("SAFE_FALLBACK", payload, "FALLBACK", text, head)


def withhold_instructions(release: Release) -> tuple[Release, int]:
    """The release with any text that repeats the stage prompts withheld (harness/instruction_guard.py)."""
    payload, n_payload = withhold(release.payload.model_dump())
    answer, n_answer = withhold(release.answer)
    conclusion, n_conclusion = withhold(release.conclusion)
    total = n_payload + n_answer + n_conclusion
    if not total:
        return release, 0
    model = type(release.payload).model_validate(payload)
    return Release(release.content_type, model, release.outcome, answer, conclusion), total
