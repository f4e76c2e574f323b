"""The Kubernetes tools, under HolmesGPT's names and parameter names, so recorded HolmesGPT calls
replay and its users recognise them. Every one reads; none writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: tuple[str, ...]
    required: tuple[str, ...]

    def schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {p: {"type": "string", "description": PARAMS.get(p, p)} for p in self.params}
        return {"type": "object", "properties": props, "required": list(self.required)}


PARAMS = {
    "kind": "resource kind (pod, deployment, job, service, node, persistentvolumeclaim, ...)",
    "name": "resource name",
    "namespace": "namespace",
    "keyword": "part of the resource's name or labels",
    "pod_name": "pod name",
    "resource_type": "resource kind the events are for (pod, deployment, ...)",
    "filter": "only lines containing this text",
    "start_time": "RFC 3339 time the logs start at",
    "end_time": "RFC 3339 time the logs end at",
    "limit": "at most this many lines (the last ones)",
    "jq_expr": "a jq expression over `kubectl get KIND -A -o json` selecting the items to count",
    "resource_name": "pod or workload name",
    "logs_filter": "only lines containing this text",
}

KUBECTL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "kubectl_describe",
        "kubectl describe: a resource's state, containers, conditions and recent events",
        ("kind", "name", "namespace"),
        ("kind", "name"),
    ),
    ToolSpec(
        "kubectl_get_by_name", "kubectl get -o wide of one resource", ("kind", "name", "namespace"), ("kind", "name")
    ),
    ToolSpec(
        "kubectl_get_by_kind_in_namespace",
        "kubectl get -o wide of every resource of a kind in a namespace",
        ("kind", "namespace"),
        ("kind", "namespace"),
    ),
    ToolSpec(
        "kubectl_get_by_kind_in_cluster", "kubectl get -A -o wide of every resource of a kind", ("kind",), ("kind",)
    ),
    ToolSpec(
        "kubectl_find_resource",
        "resources of a kind in every namespace whose name or labels contain a keyword",
        ("kind", "keyword"),
        ("kind", "keyword"),
    ),
    ToolSpec(
        "kubectl_get_yaml",
        "a resource's manifest as YAML (never a Secret's)",
        ("kind", "name", "namespace"),
        ("kind", "name"),
    ),
    ToolSpec(
        "kubectl_events",
        "the events about one resource",
        ("resource_type", "pod_name", "namespace"),
        ("resource_type", "pod_name", "namespace"),
    ),
    ToolSpec("kubectl_logs", "a pod's logs", ("pod_name", "namespace"), ("pod_name", "namespace")),
    ToolSpec(
        "kubectl_previous_logs",
        "the logs of a pod's previous (crashed) container",
        ("pod_name", "namespace"),
        ("pod_name", "namespace"),
    ),
    ToolSpec(
        "kubectl_logs_all_containers",
        "the logs of every container of a pod",
        ("pod_name", "namespace"),
        ("pod_name", "namespace"),
    ),
    ToolSpec(
        "kubectl_previous_logs_all_containers",
        "the previous logs of every container of a pod",
        ("pod_name", "namespace"),
        ("pod_name", "namespace"),
    ),
    ToolSpec(
        "fetch_pod_logs",
        "a pod's logs in a time window, optionally only lines containing a text, at most `limit` lines",
        ("pod_name", "namespace", "start_time", "end_time", "filter", "limit"),
        ("pod_name", "namespace"),
    ),
    ToolSpec(
        "kubectl_lineage_children",
        "the resources a resource owns (deployment -> replicasets -> pods; job -> pods)",
        ("kind", "name", "namespace"),
        ("kind", "name", "namespace"),
    ),
    ToolSpec(
        "kubectl_lineage_parents",
        "the resources that own a resource (pod -> replicaset -> deployment)",
        ("kind", "name", "namespace"),
        ("kind", "name", "namespace"),
    ),
    ToolSpec("kubectl_top_pods", "CPU and memory use of every pod", (), ()),
    ToolSpec("kubectl_top_nodes", "CPU and memory use of every node", (), ()),
    ToolSpec(
        "kubernetes_count",
        "how many resources of a kind a jq expression selects, with a preview",
        ("kind", "jq_expr"),
        ("kind", "jq_expr"),
    ),
    ToolSpec(
        "kubectl_memory_requests_namespace",
        "the memory requests of every pod in a namespace",
        ("namespace",),
        ("namespace",),
    ),
)

# Toolsets a recording may hold beside kubectl (HolmesGPT's names). The live backend has none of them:
# they are offered only when the recorded cluster holds calls to them (docs/kubernetes.md).
RECORDED_ONLY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "fetch_loki_logs_for_resource",
        "a pod's or workload's logs from Loki",
        ("resource_name", "namespace", "logs_filter", "start_time", "end_time", "limit"),
        ("resource_name", "namespace"),
    ),
    ToolSpec("get_rabbitmq_cluster_status", "a RabbitMQ cluster's nodes and partitions", (), ()),
    ToolSpec("fetch_finding_by_id", "an alert or finding by its id", ("id",), ("id",)),
)

BY_NAME = {t.name: t for t in KUBECTL_TOOLS + RECORDED_ONLY_TOOLS}
