"""The diagnosis benchmark's own support rule (independent of the harness): a released claim counts as
supported when its cited excerpts carry its key terms, and a claim that is only names is no finding."""

from __future__ import annotations

from benchmarks.diagnosis_quality import claim_supported

EXCERPT = "payment-service hikaricp_connections_pending 0 -> 55, 98x its baseline spread since 2026-11-30T10:00Z"


def test_key_terms_in_the_excerpt_support_the_claim() -> None:
    assert claim_supported("payment-service hikaricp_connections_pending rose from 0 to 55", [EXCERPT])
    assert not claim_supported("order-service hikaricp_connections_pending rose", [EXCERPT])  # another service
    assert not claim_supported("payment-service pending rose to 80", [EXCERPT])  # a number from nowhere


def test_names_alone_are_not_a_supported_finding() -> None:
    """What the 0.5B released as claims (benchmarks/results/diagnosis_quality.json, q07, q14, q05)."""
    for bare in ("payment-service", "hikaricp_connections_pending", "payment-service hikaricp_connections_pending"):
        assert not claim_supported(bare, [EXCERPT]), bare
    assert not claim_supported("NodeFilesystemAlmostOutOfSpace", ["NodeFilesystemAlmostOutOfSpace fired"])
    assert claim_supported("payment-service 的 hikaricp_connections_pending 持续升高", [EXCERPT + " 持续升高"])
