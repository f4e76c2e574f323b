"""Server-Sent Events framing (https://html.spec.whatwg.org/multipage/server-sent-events.html)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from harness.contracts import event_data


def frame(name: str, data: dict[str, Any], event_id: int | None = None) -> bytes:
    """One SSE event. JSON never contains a raw newline, so ``data`` is always a single line."""
    if not name or any(c in name for c in "\r\n:"):
        raise ValueError(f"invalid SSE event name: {name!r}")
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append(f"event: {name}")
    lines.append("data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def frame_event(event: BaseModel, event_id: int | None = None) -> bytes:
    return frame(str(event.event), event_data(event), event_id)  # type: ignore[attr-defined]


def comment(text: str = "") -> bytes:
    """A comment line: keeps proxies from closing an idle stream; clients ignore it."""
    return f": {text}\n\n".encode()


def parse(stream_text: str) -> list[tuple[str, dict[str, Any]]]:
    """Parse SSE text back into (event, data) pairs (used by the CLI and tests)."""
    out: list[tuple[str, dict[str, Any]]] = []
    for block in stream_text.replace("\r\n", "\n").split("\n\n"):
        name, data_lines = "message", []
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data_lines.append(value)
        if data_lines:
            out.append((name, json.loads("\n".join(data_lines))))
    return out
