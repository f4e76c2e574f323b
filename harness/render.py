"""Plain-text rendering of a released answer, for the terminal (``raydiag ask``)."""

from __future__ import annotations

from typing import Any


def _list(title: str, items: list[str]) -> list[str]:
    return [title, *[f"  - {i}" for i in items]] if items else []


KINDS = {
    "finding": "Findings (measured):",
    "guidance": "Guidance (quoted from runbooks):",
    "hypothesis": "Hypotheses (not shown by the evidence):",
}


def _cause(cause: dict[str, Any]) -> str:
    text = f"{cause['component']}" + (f" — {cause['cause']}" if cause.get("cause") else "")
    source = {"ranking": "the anomaly ranking"}.get(cause.get("added_by") or "", cause.get("added_by"))
    added = f", added from {source}" if source else ""
    return f"{text} ({cause.get('category', 'unknown')}, {cause.get('confidence', 'medium')} confidence{added})"


def render_content(content_type: str, payload: dict[str, Any]) -> str:
    if content_type == "CHAT_ANSWER":
        return str(payload["text"])
    if content_type == "SAFE_FALLBACK":
        kind = payload.get("fallback_type", "")
        return f"[SAFE_FALLBACK · {kind}]\n{payload['text']}"
    report = payload["report"]
    lines = ["[DIAGNOSIS_REPORT]", f"Conclusion: {report['conclusion']['text']}", ""]
    causes = payload.get("root_causes") or []
    lines.append("Root cause: " + ("; ".join(_cause(c) for c in causes) if causes else "none named"))
    for kind, title in KINDS.items():
        items = [i for i in report["analysis"] if i.get("kind", "finding") == kind]
        if items:
            lines.append(title)
        for item in items:
            keys = f"  [{', '.join(item['evidence_keys'])}]" if item.get("evidence_keys") else ""
            added = " (added by raydiag)" if item.get("added") else ""
            needs = f"  (would need: {item['needs']})" if item.get("needs") else ""
            lines.append(f"  {item['id']} ({item['status']}) {item['text']}{keys}{added}{needs}")
    lines += _list("Action plan:", report.get("action_plan", []))
    lines += _list("Recommendations:", report.get("recommendations", []))
    lim = report["limitations"]
    lines += ["", f"Scope: {lim['scope']}"]
    lines += _list("Missing information:", lim.get("missing_info", []))
    refs = payload.get("references", [])
    if refs:
        lines += ["", "References:"]
        for r in refs:
            excerpt = f' — "{r["excerpt"]}"' if r.get("excerpt") else ""
            page = f" {r['url']}" if r.get("url") else ""
            lines.append(f"  [{r['source_type']}] {r['source']}{page} ({r.get('tool_call_id') or ''}){excerpt}")
    return "\n".join(lines)
