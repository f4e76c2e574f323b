"""The release: a report carries only claims the verifier left standing, whatever its verdict says."""

from __future__ import annotations

from harness.contracts import Claim, EvidenceBinding, ExecutorEvidence, FactChecked, VerifierOutput
from harness.stages.release import UNSUPPORTED, report


def _claim(n: int, text: str) -> Claim:
    binding = EvidenceBinding(
        source_type="tool_trace",
        source_id="anomaly:cartservice:2022-08-22T04:27Z",
        tool_name="rank_anomalies",
        source_invocation_ids=["c1"],
        evidence_excerpt="cartservice ranks 1 of 10: call_latency 0.005 s -> 0.257 s",
    )
    return Claim(
        claim_id=f"claim-{n}",
        claim_type="root_cause",
        claim_text=text,
        support_level="direct",
        evidence_bindings=[binding],
    )


DRAFT = ExecutorEvidence(
    diagnosis_summary="The consumers slowed down.",
    claims=[_claim(1, "consumers slowed down"), _claim(2, "downstream data is late")],
    user_facing_answer="The consumers slowed down.",
)


def _verdict(*verifications: str) -> VerifierOutput:
    facts = [
        FactChecked(fact=c.claim_text, is_critical=True, verification=v)  # type: ignore[arg-type]
        for c, v in zip(DRAFT.claims, verifications, strict=True)
    ]
    return VerifierOutput(
        verdict="PASS", groundedness_score=0.5, critical_fact_count=2, facts_checked=facts, rationale=""
    )


def test_a_pass_whose_every_fact_is_unsupported_is_no_report() -> None:
    """The 0.5B verifier said PASS beside the rules' failures on the diagnosis set: none stands, so the
    restated symptoms are not released (before: all of them were)."""
    release = report(DRAFT, {}, "en", _verdict("no_evidence", "no_evidence"))
    assert release.content_type == "SAFE_FALLBACK"
    assert release.payload.confirmed == []  # type: ignore[union-attr]
    # It says why; no instruction was quoted, so the instruction guard's sentence would be untrue.
    assert release.payload.gaps == [UNSUPPORTED["en"]]  # type: ignore[union-attr]


def test_a_pass_releases_just_the_claims_left_standing() -> None:
    release = report(DRAFT, {}, "en", _verdict("direct_evidence", "contradicted"))
    assert release.content_type == "DIAGNOSIS_REPORT"
    texts = [a.text for a in release.payload.report.analysis]  # type: ignore[union-attr]
    assert texts == ["consumers slowed down"]
