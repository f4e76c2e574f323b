"""The cluster playbook: what an SRE runs first when a question names something on Kubernetes, run by
the harness before the model's turn (like the skill playbook, harness/playbook.py).

For each resource the question names (harness/cluster_targets.py): find it in every namespace
(``kubectl_find_resource``), describe it, and for its pods (a workload's through its lineage) describe
them and read their logs — the previous container's too when one crashed — and describe the claim of a
pod that waits on one. A question that names only a namespace gets the namespace's pods; one that asks
how many gets ``kubernetes_count``; a quoted term is searched in the logs. Every call goes through the
run's ToolBoundary and ledger, bound to one agent step named ``cluster playbook``; the number of calls is
capped. The analyzers' findings ride on each call's output.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator
from typing import Any

from cluster.analyzers.tables import rows
from cluster.findings import workload_of_pod
from harness.cluster_targets import ClusterQuestion, Target, read_cluster_question
from harness.contracts import StatusEvent
from harness.stages.base import RunContext, run_tool
from harness.tools.base import LedgerEntry
from harness.tools.kubernetes import findings_of

MAX_CALLS = 16
PODS_PER_TARGET = 3
WORKLOADS = ("deployment", "job", "statefulset", "daemonset", "cronjob")
CRASHED = {"oom_killed", "crash_loop", "exit_error"}
_CLAIM = re.compile(r"^\s+ClaimName:\s+(\S+)", re.M)
_LINEAGE_POD = re.compile(r"\bPod/([a-z0-9][a-z0-9.-]*)", re.I)
_EVENTS = re.compile(r"\bevents?\b|事件", re.I)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Investigation:
    def __init__(self, ctx: RunContext, question: ClusterQuestion) -> None:
        self.ctx = ctx
        self.q = question
        self.calls = 0
        self.seen: set[str] = set()
        self.events: list[StatusEvent] = []

    async def call(self, tool: str, args: dict[str, Any]) -> LedgerEntry | None:
        args = {k: v for k, v in args.items() if v}
        signature = f"{tool}:{sorted(args.items())}"
        if tool not in self.ctx.boundary.tools or signature in self.seen or self.calls >= MAX_CALLS:
            return None
        self.seen.add(signature)
        self.calls += 1
        call_id = f"k8s_{self.ctx.recorder.run_id[:8]}_{self.calls}"
        self.events.append(StatusEvent(code="DIAGNOSIS_RUNNING", detail=f"tool {tool} started (cluster playbook)"))
        entry = await run_tool(self.ctx, call_id, tool, args)
        self.events.append(StatusEvent(code="DIAGNOSIS_RUNNING", detail=f"tool {tool} finished: {entry.result.status}"))
        return entry if entry.result.status == "success" else None

    def _text(self, entry: LedgerEntry | None) -> str:
        return str(entry.result.output.get("output") or "") if entry else ""

    async def find(self, kind: str, name: str) -> list[tuple[str, str]]:
        """(namespace, name) of the resources of ``kind`` whose name holds ``name``, in every namespace."""
        entry = await self.call("kubectl_find_resource", {"kind": kind, "keyword": name})
        found = [(r.namespace, r.name) for r in rows(self._text(entry), kind) if name in r.name]
        if self.q.namespace and any(ns == self.q.namespace for ns, _ in found):
            found = [f for f in found if f[0] == self.q.namespace]
        return found

    async def pod(self, namespace: str, name: str) -> None:
        described = await self.call("kubectl_describe", {"kind": "pod", "name": name, "namespace": namespace})
        kinds = {str(f.get("kind")) for f in findings_of(described.result.output)} if described else set()
        await self.call("fetch_pod_logs", {"pod_name": name, "namespace": namespace, "filter": self.q.search})
        # Where the cluster's logs live in Loki too (offered only where a backend answers it).
        await self.call(
            "fetch_loki_logs_for_resource",
            {"resource_name": name, "namespace": namespace, "logs_filter": self.q.search},
        )
        if kinds & CRASHED:
            await self.call("kubectl_previous_logs", {"pod_name": name, "namespace": namespace})
        for claim in _CLAIM.findall(self._text(described)):
            if "failed_scheduling" in kinds or "pvc_pending" in kinds:
                await self.call(
                    "kubectl_describe", {"kind": "persistentvolumeclaim", "name": claim, "namespace": namespace}
                )
        if _EVENTS.search(self.ctx.question):
            await self.call("kubectl_events", {"resource_type": "pod", "pod_name": name, "namespace": namespace})

    async def workload(self, kind: str, namespace: str | None, name: str) -> list[tuple[str, str]]:
        """Describe a workload; its pods from its lineage, else by name."""
        if namespace is None:
            found = await self.find(kind, name)
            if not found:  # no such workload found: its pods may still be (a bare name, a recording of pods)
                return await self.find("pod", name)
            namespace = found[0][0]
        await self.call("kubectl_describe", {"kind": kind, "name": name, "namespace": namespace})
        lineage = await self.call("kubectl_lineage_children", {"kind": kind, "name": name, "namespace": namespace})
        pods = [(namespace, p) for p in dict.fromkeys(_LINEAGE_POD.findall(self._text(lineage)))]
        pods = pods or [(ns, p) for ns, p in await self.find("pod", name)]
        if not pods:  # the namespace's pods whose names start with the workload's
            listed = await self.call("kubectl_get_by_kind_in_namespace", {"kind": "pod", "namespace": namespace})
            pods = [
                (r.namespace, r.name)
                for r in rows(self._text(listed), "pod", namespace)
                if r.name.startswith(f"{name}-")
            ]
        return pods

    async def target(self, t: Target) -> None:
        pods: list[tuple[str, str]] = []
        if t.kind == "pod" and t.namespace and workload_of_pod(t.name) != t.name:
            pods = [(t.namespace, t.name)]
        elif t.kind in WORKLOADS:
            pods = await self.workload(t.kind, t.namespace, t.name)
        elif t.kind in ("service", "persistentvolumeclaim", "node", "ingress"):
            found = await self.find(t.kind, t.name) if not t.namespace and t.kind != "node" else []
            namespace = found[0][0] if found else t.namespace
            await self.call("kubectl_describe", {"kind": t.kind, "name": t.name, "namespace": namespace})
        else:
            pods = await self.find("pod", t.name)
            for kind in WORKLOADS[:2] if not pods and t.kind is None else ():
                found = await self.find(kind, t.name)
                if found:
                    pods = await self.workload(kind, found[0][0], found[0][1])
                    break
            if not pods and t.namespace:
                pods = [(t.namespace, t.name)]  # the name as the question wrote it: the cluster may know it
        for namespace, name in pods[:PODS_PER_TARGET]:
            await self.pod(namespace, name)
        if self.q.search and not self._matched():
            namespace = t.namespace or self.q.namespace
            await self.call("fetch_pod_logs", {"pod_name": t.name, "namespace": namespace, "filter": self.q.search})
            await self.call(
                "fetch_loki_logs_for_resource",
                {"resource_name": t.name, "namespace": namespace, "logs_filter": self.q.search},
            )

    def _matched(self) -> bool:
        return any(
            f.get("kind") == "log_match"
            for e in self.ctx.boundary.ledger.values()
            for f in findings_of(e.result.output)
        )

    async def namespace_pods(self, namespace: str) -> None:
        listed = await self.call("kubectl_get_by_kind_in_namespace", {"kind": "pod", "namespace": namespace})
        listed_rows = rows(self._text(listed), "pod", namespace)
        troubled = sorted(listed_rows, key=lambda r: r.status in ("Running", "Completed", "Succeeded"))
        for row in troubled[:PODS_PER_TARGET]:
            await self.pod(row.namespace, row.name)

    async def count(self, kind: str, namespace: str | None) -> None:
        conditions = [f".metadata.namespace == {json.dumps(namespace)}"] if namespace else []
        if self.q.label:
            key, value = self.q.label
            # A key jq reads as a path (env) or, with dots, slashes or dashes (app.kubernetes.io/name), quoted.
            path = f".metadata.labels.{key}" if _IDENT.match(key) else f".metadata.labels[{json.dumps(key)}]"
            conditions.append(f"{path} == {json.dumps(value)}")
        selector = f"select({' and '.join(conditions)}) | " if conditions else ""
        await self.call("kubernetes_count", {"kind": kind, "jq_expr": f".items[] | {selector}.metadata.name"})

    async def run(self) -> AsyncGenerator[StatusEvent, None]:
        steps: list[Any] = []
        if self.q.count_kind:
            steps.append(self.count(self.q.count_kind, self.q.namespace))
        steps += [self.target(t) for t in self.q.targets]
        if not self.q.targets and self.q.namespace and not self.q.count_kind:
            steps.append(self.namespace_pods(self.q.namespace))
        if "rabbitmq" in self.q.names:
            steps.append(self.call("get_rabbitmq_cluster_status", {}))
        for step in steps:
            await step
            for event in self.events:
                yield event
            self.events.clear()


def asks_the_cluster(ctx: RunContext) -> bool:
    return "kubectl_describe" in ctx.boundary.tools


async def investigate_cluster(ctx: RunContext) -> AsyncGenerator[StatusEvent, None]:
    if not asks_the_cluster(ctx):
        return
    question = read_cluster_question(ctx.question)
    if not (question.targets or question.namespace or question.count_kind):
        return
    step = ctx.recorder.begin_step()
    ctx.recorder.agent_step(
        step,
        message_roles=[],
        tool_names=[],
        assistant_text="",
        reasoning_text=None,
        duration_ms=0,
        usage=None,
        agent_name="cluster playbook",
    )
    async for event in _Investigation(ctx, question).run():
        yield event
