"""The recorded toolsets beside kubectl: a count, a RabbitMQ cluster's status, an alert."""

from __future__ import annotations

import json
import re
from typing import Any

from cluster.findings import Finding

_RESULTS = re.compile(r"^\s*(\d+) results?\s*$", re.M)
_NAMESPACE = re.compile(r'\.metadata\.namespace\s*==\s*"([^"]+)"')


def count(kind: str, jq_expr: str, text: str) -> list[Finding]:
    m = _RESULTS.search(text)
    if not m:
        return []
    n = int(m.group(1))
    ns = _NAMESPACE.search(jq_expr)
    where = f"namespace {ns.group(1)}" if ns else "the cluster"
    singular = kind.lower()[:-1] if kind.lower().endswith("s") and not kind.lower().endswith("ss") else kind.lower()
    noun = singular if n == 1 else singular + ("es" if singular.endswith(("s", "x")) else "s")
    cause = f"{n} {noun} match in {where}"  # the jq expression is the call's own argument, in the trace
    return [
        Finding(
            ns.group(1) if ns else kind, f"{kind} in {where}", "count", "unknown", cause, m.group(0).strip(), "info", 2
        )
    ]


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def rabbitmq(text: str) -> list[Finding]:
    data = _json(text)
    data = data.get("data", data) if isinstance(data, dict) else None
    if not isinstance(data, dict):
        return []
    out = []
    down = [n.get("node", "") for n in data.get("nodes") or [] if isinstance(n, dict) and n.get("running") is False]
    if data.get("network_partitions_detected"):
        parts = [
            f"{p.get('node')} cannot reach {', '.join(p.get('unreachable_nodes') or [])}"
            for p in data.get("partition_details") or []
            if isinstance(p, dict)
        ]
        cause = "the RabbitMQ cluster has a network partition (split brain)" + (
            f": {'; '.join(parts)}" if parts else ""
        )
        out.append(
            Finding(
                "rabbitmq",
                "rabbitmq cluster",
                "partition",
                "network",
                cause,
                '"network_partitions_detected": true',
                weight=10,
            )
        )
    for node in down:
        out.append(
            Finding(
                "rabbitmq",
                f"rabbitmq node {node}",
                "node_down",
                "unknown",
                f"node {node} is not running",
                '"running": false',
                weight=6,
            )
        )
    if not out:
        out.append(
            Finding(
                "rabbitmq",
                "rabbitmq cluster",
                "healthy",
                "unknown",
                "every RabbitMQ node runs and no partition is detected",
                '"network_partitions_detected": false',
                "ok",
                0,
            )
        )
    return out


def alert(text: str) -> list[Finding]:
    data = _json(text)
    if not isinstance(data, dict):
        return []
    title = str(data.get("title") or data.get("aggregation_key") or "alert")
    description = str(data.get("description") or "").replace('\\"', '"')
    subject = str(data.get("subject_name") or "")
    if not description:
        return []
    return [
        Finding(
            subject or title,
            f"alert {title}",
            "alert",
            "unknown",
            f"the alert says: {description[:200]}",
            description,
            "info",
            2,
        )
    ]
