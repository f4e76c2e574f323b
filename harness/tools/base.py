"""Tools return values, never raise into the loop (DESIGN.md §1)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from cluster.catalog import KUBECTL_TOOLS, RECORDED_ONLY_TOOLS

ToolStatus = Literal["success", "error", "no_data"]


@dataclass
class ToolResult:
    status: ToolStatus
    output: dict[str, Any]  # what the agent sees (JSON)
    preview: str = ""  # a short summary for audit and progress
    error: str | None = None
    retrieval: dict[str, Any] = field(default_factory=dict)  # audit-only extras (retrieval_details, ...)

    def output_text(self) -> str:
        return json.dumps(self.output, ensure_ascii=False, sort_keys=True)


class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult: ...


def tool_schema(tool: Tool) -> dict[str, Any]:
    """The OpenAI-style function description the executor model sees."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


# Tools whose outputs are evidence (the rest plan or read the playbook index).
EVIDENCE_TOOLS = (
    "lookup_knowledge",
    "rank_anomalies",
    "query_metrics",
    "query_logs",
    "service_dependencies",
    "query_traces",
    "read_skill",
    # The cluster's (cluster/catalog.py): their outputs are evidence as well.
    *(t.name for t in KUBECTL_TOOLS + RECORDED_ONLY_TOOLS),
)


@dataclass
class LedgerEntry:
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    result: ToolResult
    duration_ms: int


class ToolBoundary:
    """Runs the agent's tool calls: allow-list, argument checks, timeout, and the run's ledger."""

    def __init__(self, tools: list[Tool], timeout_s: float = 30.0) -> None:
        self.tools = {t.name: t for t in tools}
        self.timeout_s = timeout_s
        self.ledger: dict[str, LedgerEntry] = {}

    def schemas(self) -> list[dict[str, Any]]:
        return [tool_schema(t) for t in self.tools.values()]

    async def call(self, tool_call_id: str, name: str, args: Any) -> LedgerEntry:
        start = time.perf_counter()
        tool = self.tools.get(name)
        if tool is None:
            result = ToolResult("error", {"error": f"unknown tool {name!r}"}, error=f"tool {name!r} is not allowed")
        elif not isinstance(args, dict):
            result = ToolResult("error", {"error": "arguments must be a JSON object"}, error="bad arguments")
        else:
            try:
                async with asyncio.timeout(self.timeout_s):
                    result = await tool.run(args, tool_call_id)
            except TimeoutError:
                result = ToolResult("error", {"error": f"{name} timed out"}, error=f"timed out after {self.timeout_s}s")
            except Exception as err:  # a tool bug becomes a tool result, never a crash of the run
                result = ToolResult("error", {"error": f"{name} failed"}, error=f"{type(err).__name__}: {err}")
        entry = LedgerEntry(
            tool_call_id,
            name,
            args if isinstance(args, dict) else {},
            result,
            int((time.perf_counter() - start) * 1000),
        )
        self.ledger[tool_call_id] = entry
        return entry
