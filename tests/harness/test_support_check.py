"""The verifier's rule half: a claim's services, signals, numbers and quotes against its cited excerpts."""

from __future__ import annotations

from harness.contracts import Claim, EvidenceBinding
from harness.stages.support_check import claim_support, key_terms

EXCERPT = (
    "cartservice ranks 1 of 10: call_latency (frontend->cartservice) 0.005447 s -> 0.2569 s, "
    "47x its baseline spread since 2022-08-22T04:28Z"
)
COMPONENTS = ["cartservice", "frontend", "adservice"]


def _claim(text: str, excerpt: str = EXCERPT) -> Claim:
    binding = EvidenceBinding(
        source_type="tool_trace",
        source_id="anomaly:cartservice:2022-08-22T04:27Z",
        tool_name="rank_anomalies",
        source_invocation_ids=["c1"],
        evidence_excerpt=excerpt,
    )
    return Claim(
        claim_id="claim-1",
        claim_type="root_cause",
        claim_text=text,
        support_level="direct",
        evidence_bindings=[binding],
    )


def test_terms_in_the_evidence_support_the_claim() -> None:
    assert claim_support(_claim("cartservice call latency rose 47x since 04:28"), COMPONENTS) is True
    assert claim_support(_claim("Callers of cartservice see 0.2569 s"), COMPONENTS) is True


def test_a_term_the_evidence_lacks_fails_it() -> None:
    assert claim_support(_claim("adservice call_latency rose 47x"), COMPONENTS) is False  # another service
    assert claim_support(_claim("cartservice latency_p99 0.4562 s"), COMPONENTS) is False  # its numbers
    assert claim_support(_claim("cartservice memory is exhausted"), COMPONENTS) is False  # a signal not shown
    assert claim_support(_claim('cartservice logs "Connection is not available"'), COMPONENTS) is False


def test_nothing_to_check_is_left_to_the_model() -> None:
    assert claim_support(_claim("the first ranked service is slow"), COMPONENTS) is None
    assert key_terms("see 1 of 3 items", COMPONENTS) == []  # single digits are too common to check


def test_number_spellings() -> None:
    claim = _claim("frontend error rate 0.50", excerpt="frontend error_rate 0.5 -> 12.5 %")
    assert claim_support(claim, COMPONENTS) is True
