"""The verifier's rule half: does a claim's text say only what its cited evidence says?

With grounding by construction the excerpts are real by construction; what a model can still get
wrong is the claim's *text* (another service's numbers, a signal the evidence does not mention). The
check is on key terms: the services, signals and numbers the claim names, and anything it quotes.
A claim all of whose key terms occur in its cited excerpts is supported; one naming a term that none
of them contains is not; a claim with no checkable term is left to the verifier model. A small model
on a CPU judged every claim of a correct draft "no_evidence" (0.5B, measured), and the check costs
no model time, so the model is asked only about what the rule cannot decide.
"""

from __future__ import annotations

import re

from harness.contracts import Claim, ExecutorEvidence
from telemetry.signals import SIGNALS

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_QUOTED = re.compile(r"[\"'“‘]([^\"'”’]{4,80})[\"'”’]")
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text.lower()).strip()


def _number_forms(token: str) -> list[str]:
    """'0.50' also matches '0.5'; '4' alone is too common to check and is skipped by the caller."""
    forms = [token]
    if "." in token:
        forms.append(token.rstrip("0").rstrip("."))
    return forms


def key_terms(text: str, components: list[str]) -> list[list[str]]:
    """Each key term as its accepted spellings (any one must occur in the evidence)."""
    low = _norm(text)
    terms: list[list[str]] = []
    for name in sorted(set(components), key=len, reverse=True):
        if name and name.lower() in low:
            terms.append([name.lower()])
    for signal in SIGNALS:
        spellings = {signal, signal.replace("_", " ")}
        if any(re.search(rf"(?<![a-z_]){re.escape(s)}(?![a-z_])", low) for s in spellings):
            terms.append(sorted(spellings))
    for token in _NUMBER.findall(low):
        if len(token.replace(".", "")) >= 2:  # single digits ("1 of 10", "p9") say too little to check
            terms.append(_number_forms(token))
    terms += [[_norm(q)] for q in _QUOTED.findall(text)]
    return terms


def claim_support(claim: Claim, components: list[str]) -> bool | None:
    """True: every key term is in the cited excerpts; False: some term is in none; None: nothing to check."""
    terms = key_terms(claim.claim_text, components)
    if not terms:
        return None
    cited = _norm(" ".join(b.evidence_excerpt for b in claim.evidence_bindings))
    return all(any(form in cited for form in forms) for forms in terms)


def rule_verdicts(draft: ExecutorEvidence, components: list[str]) -> dict[str, bool | None]:
    return {c.claim_id: claim_support(c, components) for c in draft.claims}
