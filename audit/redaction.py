"""Rules that keep secrets and bulky payloads out of the audit trail (seed e2e §3.4.1).

``safe_input_params`` is the only way a tool request reaches ``tool_invocation.input_params``:
top-level scalars and string arrays only, text cut at 160 characters, secret-named keys dropped.
``redact_text`` masks secrets inside free text (questions, error messages, log lines).
"""

from __future__ import annotations

import json
import re
from typing import Any

TEXT_LIMIT = 160
_SECRET_KEY = re.compile(r"pass(word|wd)?|token|secret|api[\W_]*key|authori[sz]ation|credential|cookie", re.I)
_SECRET_VALUE_PATTERNS = [
    # "Authorization: Bearer xyz", "bearer xyz"
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}"),
    # key=value / key: value where the key names a secret
    re.compile(
        r"(?i)\b([\w.\-]*(?:password|passwd|pwd|token|secret|api[_\-]?key|apikey|authorization)[\w.\-]*)"
        r"(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&\"']+)"
    ),
    # user:password@host in URLs
    re.compile(r"(?i)([a-z][a-z0-9+.\-]*://[^/\s:@]+:)([^@\s/]+)(@)"),
    # well-known token shapes
    re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-]{16,}\b"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),
]
MASK = "[REDACTED]"


# Token *counts* are accounting, not credentials; only the strict rule (tool inputs) drops them too.
_TOKEN_COUNT_KEY = re.compile(r"(?i)(tokens|token_count|tokens_reconciled)$")


def is_secret_key(key: str, strict: bool = True) -> bool:
    """True for keys that name a secret; ``strict`` (tool inputs) treats any 'token' key as one."""
    if not strict and _TOKEN_COUNT_KEY.search(key):
        return False
    return bool(_SECRET_KEY.search(key))


def redact_text(text: str) -> str:
    """Mask secret-looking substrings; the rest of the text stays readable."""
    out = text
    for i, pattern in enumerate(_SECRET_VALUE_PATTERNS):
        if i == 1:
            out = pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", out)
        elif i == 2:
            out = pattern.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", out)
        else:
            out = pattern.sub(MASK, out)
    return out


def _cut(key: str, text: str, out: dict[str, Any]) -> None:
    text = redact_text(text)
    if len(text) > TEXT_LIMIT:
        out[key] = text[:TEXT_LIMIT]
        out[f"{key}_truncated"] = True
        out[f"{key}_chars"] = len(text)
    else:
        out[key] = text


def safe_input_params(request: dict[str, Any] | None, tool_call_id: str, step_id: int | None = None) -> dict[str, Any]:
    """Build ``input_params`` from a tool request following the seed's safety rules."""
    request = request or {}
    request_bytes = len(json.dumps(request, ensure_ascii=False, separators=(",", ":"), default=str).encode())
    out: dict[str, Any] = {}
    for key, value in request.items():
        if not isinstance(key, str) or is_secret_key(key):
            continue
        if isinstance(value, bool) or (isinstance(value, int | float) and value == value):
            out[key] = value
        elif isinstance(value, str):
            _cut(key, value, out)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = [redact_text(v)[:TEXT_LIMIT] for v in value[:20]]
        # nested objects and mixed arrays are never stored whole (seed e2e §3.4.1)
    out["tool_call_id"] = tool_call_id
    out["request_bytes"] = request_bytes
    if step_id is not None:
        out["step_id"] = step_id
    return out


def redact_tree(value: Any, depth: int = 0) -> Any:
    """Drop secret-named keys and mask secret-looking strings anywhere in a JSON-like value."""
    if depth > 20:
        return None
    if isinstance(value, dict):
        return {
            k: redact_tree(v, depth + 1)
            for k, v in value.items()
            if not (isinstance(k, str) and is_secret_key(k, strict=False))
        }
    if isinstance(value, list):
        return [redact_tree(v, depth + 1) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
