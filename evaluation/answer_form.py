"""Is the released answer in a form an SRE can act on (issue 52's checks, DESIGN.md §8)? Read from the
payload alone, never from the code that wrote it, so each check can fail:

- **conclusion finished**: the conclusion (a fallback's first line) ends as a finished sentence, not a
  log template, a cut quote or an unfinished clause;
- **first sentence acts**: its first sentence names the component of the first root cause, or plainly
  says the cause is unconfirmed or that nothing names one (never a disclaimer about the backends);
- **model text among findings**: a finding that is not, verbatim, a line some tool returned (the
  references' excerpts, a fallback's measured lines): the model's sentence shown as what was found;
- **poor guidance**: a guidance line that is a bare link, a note to the runbook's authors (TODO) or a
  fragment of under five words.

Used by ``benchmarks/diagnosis_correctness.py`` (``form`` per case, ``form`` figures per run).
"""

from __future__ import annotations

import re
from typing import Any

_URL = re.compile(r"https?://\S+|www\.\S+")
_CJK = re.compile(r"[\u4e00-\u9fff]")
# A finished sentence ends with its full stop, or a closing mark after one.
_ENDED = re.compile(r"[.!?。！？][)\]）」\"'`]*$")
_TODO = re.compile(r"^\W*(?:TODO|FIXME|TBD)\b", re.IGNORECASE)
# How an answer says plainly that its cause is unconfirmed or that nothing names one, in both languages.
_SAYS_NONE = re.compile(
    r"not confirmed|no (?:tool )?finding|names no|no cause|confirms no|cannot be drawn|inconclusive|"
    r"未经证实|未经确认|未能确认|没有找到|没有发现|无法|不足以",
    re.IGNORECASE,
)
MIN_WORDS = 5


def words(text: str) -> float:
    """Words, two Chinese characters counting as one."""
    return len(_CJK.sub(" ", text).split()) + len(_CJK.findall(text)) / 2


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")


def conclusion(content_type: str | None, payload: dict[str, Any]) -> str:
    """What the user reads first: a report's conclusion, a fallback's first line."""
    if content_type == "DIAGNOSIS_REPORT":
        return str(((payload.get("report") or {}).get("conclusion") or {}).get("text") or "").strip()
    if content_type == "SAFE_FALLBACK":
        return str(payload.get("text") or "").strip().split("\n")[0]
    return ""


def first_sentence(text: str) -> str:
    return next((p for p in _SENTENCE_END.split(text) if p.strip()), "").strip()


def finished(sentence: str) -> bool:
    """One or more whole sentences, the last ended, and long enough to say something."""
    return bool(_ENDED.search(sentence)) and words(sentence) >= MIN_WORDS


def names_cause_or_none(content_type: str | None, payload: dict[str, Any], sentence: str) -> bool:
    causes = [str(c.get("component") or "") for c in payload.get("root_causes") or []]
    if causes and causes[0] and causes[0].lower() in sentence.lower():
        return True
    return bool(_SAYS_NONE.search(sentence))


def _tool_lines(payload: dict[str, Any]) -> list[str]:
    lines = [str(r.get("excerpt") or "") for r in payload.get("references") or [] if r.get("source_type") != "RAG"]
    lines += [re.sub(r"\s*\[[^\]]+\]$", "", str(m)) for m in payload.get("measured") or []]
    return [line for line in lines if line]


def model_findings(content_type: str | None, payload: dict[str, Any]) -> list[str]:
    """Findings (a fallback's confirmed facts) that are no tool's line."""
    if content_type == "DIAGNOSIS_REPORT":
        items = [a for a in (payload.get("report") or {}).get("analysis") or [] if a.get("kind") == "finding"]
        texts = [str(a.get("text") or "") for a in items]
    elif content_type == "SAFE_FALLBACK":
        texts = [str(t) for t in payload.get("confirmed") or []]
    else:
        return []
    lines = _tool_lines(payload)
    # A reference keeps 300 characters of its excerpt; a line is the tool's when it starts with one of them.
    return [t for t in texts if not any(line and t.startswith(line[:300]) for line in lines)]


def guidance_lines(content_type: str | None, payload: dict[str, Any]) -> list[str]:
    if content_type == "DIAGNOSIS_REPORT":
        analysis = (payload.get("report") or {}).get("analysis") or []
        return [str(a.get("text") or "") for a in analysis if a.get("kind") == "guidance"]
    if content_type == "SAFE_FALLBACK":
        return [re.sub(r"\s*\([^()]+\)$", "", str(s)) for s in payload.get("next_steps") or []]
    return []


def poor_guidance(content_type: str | None, payload: dict[str, Any]) -> list[str]:
    """Guidance lines that are a bare link, a TODO or a fragment of under five words."""
    return [g for g in guidance_lines(content_type, payload) if _TODO.search(g) or words(_URL.sub(" ", g)) < MIN_WORDS]


def answer_form(content_type: str | None, payload: dict[str, Any]) -> dict[str, Any]:
    """The checks for one released answer (none apply to a chat answer or an error)."""
    if content_type not in ("DIAGNOSIS_REPORT", "SAFE_FALLBACK"):
        return {}
    text = conclusion(content_type, payload)
    ended = finished(text)
    return {
        "conclusion_finished": ended,
        "first_sentence_acts": ended and names_cause_or_none(content_type, payload, first_sentence(text)),
        "model_findings": len(model_findings(content_type, payload)),
        "poor_guidance": len(poor_guidance(content_type, payload)),
    }


def form_figures(forms: list[dict[str, Any]]) -> dict[str, Any]:
    """The shares over the answers the checks apply to."""
    checked = [f for f in forms if f]
    n = len(checked)

    def share(key: str) -> float | None:
        return round(sum(bool(f[key]) for f in checked) / n, 3) if n else None

    return {
        "answers": n,
        "conclusion_finished_rate": share("conclusion_finished"),
        "first_sentence_acts_rate": share("first_sentence_acts"),
        "answers_with_model_findings": sum(f["model_findings"] > 0 for f in checked),
        "poor_guidance_lines": sum(f["poor_guidance"] for f in checked),
    }


def main() -> None:
    """The form figures of every run in a correctness results file (one written before the checks too)."""
    import json
    import sys

    for path in sys.argv[1:]:
        runs = json.loads(open(path, encoding="utf-8").read()).get("runs") or {}
        for name, run in runs.items():
            forms = [answer_form(r.get("content_type"), r.get("payload") or {}) for r in run.get("cases") or []]
            print(path, name, run.get("commit"), json.dumps(form_figures(forms)))


if __name__ == "__main__":
    main()
