"""Plain-text rendering of a released answer, for the terminal (``raydiag ask``)."""

from __future__ import annotations

from typing import Any


def _list(title: str, items: list[str]) -> list[str]:
    return [title, *[f"  - {i}" for i in items]] if items else []


def render_content(content_type: str, payload: dict[str, Any]) -> str:
    if content_type == "CHAT_ANSWER":
        return str(payload["text"])
    if content_type == "SAFE_FALLBACK":
        kind = payload.get("fallback_type", "")
        return f"[SAFE_FALLBACK · {kind}]\n{payload['text']}"
    report = payload["report"]
    lines = ["[DIAGNOSIS_REPORT]", f"Conclusion: {report['conclusion']['text']}", ""]
    lines.append("Analysis:")
    for item in report["analysis"]:
        keys = f"  [{', '.join(item['evidence_keys'])}]" if item.get("evidence_keys") else ""
        lines.append(f"  {item['id']} ({item['status']}) {item['text']}{keys}")
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
            lines.append(f"  [{r['source_type']}] {r['source']} ({r.get('tool_call_id') or ''}){excerpt}")
    return "\n".join(lines)
