"""The selected skill's tool steps, run by the harness before the executor model's turn.

A small model is slow and unreliable at choosing tools and writing their arguments; the steps an SRE
would take first (rank the anomalies, drill into the top suspect, read its logs, look up the runbook)
do not need it. Each step's arguments may name ``$question`` (the question without the clauses that
say what looks fine, ``harness/ruled_out.py``: they are no topic to search for), ``$top_service`` (the first service of
the latest anomaly ranking) and ``$top_category_query`` (runbook words for that service's suspected
fault category, in the question's language); a step whose variable has no value is skipped. The
calls go through the same ToolBoundary, ledger and audit path as the model's, bound to one agent step
named ``playbook``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from harness.contracts import StatusEvent
from harness.ruled_out import without_ruled_out
from harness.stages.base import RunContext, run_tool
from harness.tools.base import LedgerEntry

CATEGORY_QUERIES = {
    "en": {
        "cpu": "high CPU usage saturation throttling slow responses",
        "memory": "memory usage high OOM killed heap",
        "network": "network latency packet delay between services",
        "code": "application errors exceptions failed requests",
        "dependency": "database slow queries lock waits connection pool exhausted",
        "unknown": "service latency errors troubleshooting",
    },
    "zh": {
        "cpu": "CPU 使用率高 饱和 限流 响应变慢",
        "memory": "内存使用率高 OOM 内存溢出",
        "network": "网络延迟 服务间调用延迟 丢包",
        "code": "应用报错 异常 请求失败",
        "dependency": "数据库 慢查询 锁等待 连接池耗尽",
        "unknown": "服务延迟 报错 排查",
    },
}

_CATEGORY_QUERY_SET = {q for queries in CATEGORY_QUERIES.values() for q in queries.values()}


def about_the_question(ledger: dict[str, LedgerEntry], has_telemetry: bool) -> dict[str, LedgerEntry]:
    """The ledger whose runbook lookups concern the question. The playbook's lookup for the top anomaly's
    fault category follows telemetry; when the question is about none of it (the demo's payment-service
    for an etcd question), that lookup's blocks are no guidance for it."""
    if has_telemetry:
        return ledger
    return {
        k: e
        for k, e in ledger.items()
        if not (e.tool_name == "lookup_knowledge" and _category_lookup(e.args.get("query")))
    }


def _category_lookup(query: object) -> bool:
    # A model's own call may carry any JSON as its query (an object, a list): never hash it blindly.
    return isinstance(query, str) and query in _CATEGORY_QUERY_SET


QUESTION_CHARS = 500  # a lookup of the question itself gets this much of it

# Without a skill: what any incident investigation starts with.
DEFAULT_STEPS: list[tuple[str, dict[str, Any]]] = [
    ("rank_anomalies", {}),
    ("query_metrics", {"service": "$top_service"}),
    ("lookup_knowledge", {"query": "$question"}),
]


def _variables(ctx: RunContext) -> dict[str, str]:
    values = {"$question": without_ruled_out(ctx.question)[:QUESTION_CHARS]}
    for entry in reversed(list(ctx.boundary.ledger.values())):
        ranking = entry.result.output.get("ranking") if entry.tool_name == "rank_anomalies" else None
        if ranking:
            top = ranking[0]
            values["$top_service"] = str(top.get("service", ""))
            category = str(top.get("suspected_category") or "unknown")
            queries = CATEGORY_QUERIES[ctx.lang if ctx.lang in CATEGORY_QUERIES else "en"]
            values["$top_category_query"] = queries.get(category, queries["unknown"])
            break
    return values


def _resolve(args: dict[str, Any], values: dict[str, str]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for key, value in args.items():
        if isinstance(value, str) and value.startswith("$"):
            if not values.get(value):
                return None
            out[key] = values[value]
        else:
            out[key] = value
    return out


async def run_playbook(
    ctx: RunContext, skill: str, steps: list[tuple[str, dict[str, Any]]]
) -> AsyncGenerator[StatusEvent, None]:
    step = ctx.recorder.begin_step()
    names = [tool for tool, _ in steps]
    ctx.recorder.agent_step(
        step,
        message_roles=[],
        tool_names=names,
        assistant_text="",
        reasoning_text=None,
        duration_ms=0,
        usage=None,
        agent_name="playbook",
    )
    seen: set[str] = set()
    for n, (tool, args) in enumerate(steps, 1):
        resolved = _resolve(args, _variables(ctx))
        signature = f"{tool}:{json.dumps(resolved, sort_keys=True, ensure_ascii=False)}"
        if resolved is None or signature in seen:
            continue
        seen.add(signature)
        call_id = f"pb_{ctx.recorder.run_id[:8]}_{n}"
        yield StatusEvent(code="DIAGNOSIS_RUNNING", detail=f"tool {tool} started ({skill} playbook)")
        entry = await run_tool(ctx, call_id, tool, resolved)
        yield StatusEvent(code="DIAGNOSIS_RUNNING", detail=f"tool {tool} finished: {entry.result.status}")
