"""The release: a report carries only claims the verifier left standing, whatever its verdict says."""

from __future__ import annotations

from harness.contracts import Claim, EvidenceBinding, ExecutorEvidence, FactChecked, RecommendedAction, VerifierOutput
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


def test_a_conclusion_or_action_that_says_more_than_the_released_claims_is_not_released() -> None:
    """Conclusion, actions and recommendations come from the released claims: the draft's summary and
    advice are kept when their words are mostly those of the claims and their evidence, else the
    conclusion restates the claims and the advice is dropped."""
    grounded = ExecutorEvidence(
        diagnosis_summary="cartservice call latency rose from 0.005 s to 0.257 s: consumers slowed down.",
        claims=[_claim(1, "consumers slowed down")],
        user_facing_answer="",
        recommended_actions=[
            RecommendedAction(action_text="Check why cartservice call latency rose", reason="", evidence_bindings=[]),
            RecommendedAction(
                action_text="Deploy the payment-service service to improve its performance",
                reason="",
                evidence_bindings=[],
            ),
        ],
    )
    kept = report(grounded, {}, "en", None)
    assert kept.conclusion == grounded.diagnosis_summary
    assert kept.payload.report.action_plan == ["Check why cartservice call latency rose"]  # type: ignore[union-attr]
    invented = grounded.model_copy(
        update={"diagnosis_summary": "High CPU usage due to increased traffic and network latency."}
    )
    assert report(invented, {}, "en", None).conclusion == "consumers slowed down."
