"""One protocol for every cluster backend: a tool name and its parameters in, text out.

The text is what the tool would print (kubectl's own output), so the analyzers read one format whether
the call went to a live cluster or was answered from a recording.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

ReplyStatus = Literal["success", "error", "no_data"]


@dataclass(frozen=True)
class Reply:
    status: ReplyStatus
    text: str
    error: str | None = None


class ClusterBackend(Protocol):
    def tools(self) -> list[str]:
        """The tool names this backend answers."""
        ...

    async def call(self, tool: str, params: dict[str, Any]) -> Reply: ...
