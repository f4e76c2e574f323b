"""Deterministic checks over what the cluster tools return (k8sgpt's catalog of kinds as the reference
list): each turns one output into findings (cluster/findings.py). ``analyze`` picks the analyzers for
a tool; none reads the question."""

from __future__ import annotations

from typing import Any

from cluster.analyzers.describe import describe
from cluster.analyzers.logs import logs
from cluster.analyzers.other import alert, count, rabbitmq
from cluster.analyzers.tables import events_table, table
from cluster.findings import Finding

LOG_TOOLS = {
    "kubectl_logs",
    "kubectl_previous_logs",
    "kubectl_logs_all_containers",
    "kubectl_previous_logs_all_containers",
    "fetch_pod_logs",
    "fetch_loki_logs_for_resource",
}
TABLE_TOOLS = {
    "kubectl_get_by_name",
    "kubectl_get_by_kind_in_namespace",
    "kubectl_get_by_kind_in_cluster",
    "kubectl_find_resource",
}


def kind_of(text: str) -> str:
    """The kind a describe output is about, when the call did not say (a recording answering any call)."""
    if "Pods Statuses:" in text:
        return "job"
    if "StorageClass:" in text and "Access Modes:" in text:
        return "persistentvolumeclaim"
    if "Containers:" in text and ("Controlled By:" in text or "QoS Class:" in text):
        return "pod"
    if "Replicas:" in text and "StrategyType:" in text:
        return "deployment"
    if "Endpoints:" in text and "Selector:" in text:
        return "service"
    return ""


def analyze(tool: str, params: dict[str, Any], text: str) -> list[Finding]:
    if tool == "kubectl_describe":
        return describe(str(params.get("kind") or "") or kind_of(text), text)
    if tool in LOG_TOOLS:
        pod = str(params.get("pod_name") or params.get("resource_name") or "")
        return logs(
            pod, str(params.get("namespace") or ""), text, str(params.get("filter") or params.get("logs_filter") or "")
        )
    if tool in TABLE_TOOLS:
        return table(str(params.get("kind") or ""), text, str(params.get("namespace") or ""))
    if tool == "kubectl_events":
        kind, name = str(params.get("resource_type") or "pod"), str(params.get("pod_name") or "")
        return events_table(text, str(params.get("namespace") or ""), kind, name)
    if tool == "kubernetes_count":
        return count(str(params.get("kind") or ""), str(params.get("jq_expr") or ""), text)
    if tool == "get_rabbitmq_cluster_status":
        return rabbitmq(text)
    if tool == "fetch_finding_by_id":
        return alert(text)
    return []
