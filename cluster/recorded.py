"""A cluster answered from recorded calls (HolmesGPT's fixture form: tool, params, output, status).

A call is answered by the recording of the same tool whose recorded parameters all match the call's
(a recording without parameters answers any call of its tool; ``*`` matches any value); of several, the
one with the most matching parameters. Anything else is a clear "not recorded" error: a replay never
invents an answer. Kinds match case-insensitively (``PersistentVolumeClaim`` = ``persistentvolumeclaim``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cluster.backend import Reply
from cluster.redact import redact

_CASELESS = {"kind", "resource_type"}


def _same(key: str, recorded: Any, called: Any) -> bool:
    if recorded == "*":
        return called is not None
    a, b = str(recorded).strip(), str(called).strip() if called is not None else None
    if b is None:
        return False
    return a.lower() == b.lower() if key in _CASELESS else a == b


def unwrap(text: str) -> str:
    """HolmesGPT's mock files wrap kubectl's output as ``stdout:\\n…\\n\\nstderr:\\n…``: the output itself."""
    body = text.strip("\n")
    if body.startswith("stdout:\n"):
        body = body[len("stdout:\n") :]
        out, _, err = body.rpartition("\nstderr:")
        body = out if out or not err else body
    return body.strip("\n")


class RecordedCluster:
    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self.calls = [c for c in calls if isinstance(c, dict) and c.get("tool")]

    @classmethod
    def from_file(cls, path: str | Path, case: str | None = None) -> RecordedCluster:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(data, dict) and "cases" in data:
            found = [c for c in data["cases"] if c.get("id") == case]
            if not found:
                raise ValueError(f"{path} has no case {case!r}")
            return cls(found[0].get("tools") or [])
        calls = data.get("tools") if isinstance(data, dict) else data
        return cls(calls if isinstance(calls, list) else [])

    def tools(self) -> list[str]:
        return list(dict.fromkeys(str(c["tool"]) for c in self.calls))

    def _match(self, tool: str, params: dict[str, Any]) -> dict[str, Any] | None:
        best: tuple[int, dict[str, Any]] | None = None
        for call in self.calls:
            if call["tool"] != tool:
                continue
            recorded = call.get("params") or {}
            if all(_same(k, v, params.get(k)) for k, v in recorded.items()):
                if best is None or len(recorded) > best[0]:
                    best = (len(recorded), call)
        return best[1] if best else None

    async def call(self, tool: str, params: dict[str, Any]) -> Reply:
        call = self._match(tool, params)
        if call is None:
            shown = ", ".join(f"{k}={v}" for k, v in params.items())
            return Reply("error", "", f"not recorded: {tool}({shown}) is not in this recorded cluster")
        output = redact(unwrap(str(call.get("output") or "")))
        status = call.get("status") or ("success" if output.strip() else "no_data")
        if status == "error":
            return Reply("error", output, redact(str(call.get("error") or output or "the call failed"))[:2000])
        return Reply("no_data" if status == "no_data" or not output.strip() else "success", output)
