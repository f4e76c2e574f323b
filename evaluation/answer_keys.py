"""The answer-key rule every correctness evaluation scores by (DESIGN.md §8): a released answer is
**correct** when its text names a term of ``about``, a term of one ``causes`` group and no ``root_causes``
component contains a ``wrong`` term; **misattributed** when a ``root_causes`` component does. Terms
match case-insensitively as substrings. Used by ``benchmarks/diagnosis_correctness.py`` and
``raydiag eval k8s``."""

from __future__ import annotations

from typing import Any


def released_text(content_type: str | None, payload: dict[str, Any]) -> str:
    """Everything the answer released as text, the parts the answer keys are scored on."""
    if content_type == "DIAGNOSIS_REPORT":
        report = payload.get("report") or {}
        parts = [(report.get("conclusion") or {}).get("text", "")]
        parts += [a.get("text", "") for a in report.get("analysis") or []]
        parts += list(report.get("action_plan") or []) + list(report.get("recommendations") or [])
        for cause in payload.get("root_causes") or []:
            parts += [str(cause.get("component", "")), str(cause.get("cause", ""))]
        return "\n".join(p for p in parts if p)
    if content_type == "SAFE_FALLBACK":
        return "\n".join([payload.get("text", ""), *(payload.get("next_steps") or [])])
    return ""


def _names(text: str, terms: list[str]) -> bool:
    low = text.lower()
    return any(t.strip() and t.lower() in low for t in terms)


def names_cause(case: dict[str, Any], text: str) -> bool:
    """The text names a term of one accepted cause."""
    return any(_names(text, group) for group in case["causes"])


def names_answer(case: dict[str, Any], text: str) -> bool:
    """The text names the asked component and an accepted cause."""
    return _names(text, case["about"]) and names_cause(case, text)


def score(case: dict[str, Any], content_type: str | None, payload: dict[str, Any]) -> dict[str, bool]:
    text = released_text(content_type, payload)
    components = [str(c.get("component", "")) for c in payload.get("root_causes") or []]
    misattributed = any(_names(c, case.get("wrong") or []) for c in components)
    return {"correct": names_answer(case, text) and not misattributed, "misattributed": misattributed}
