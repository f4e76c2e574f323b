"""A live cluster, read through the ``kubectl`` binary (as HolmesGPT does), never through a shell.

Every call becomes one argument vector whose verb is one of ``get``, ``describe``, ``logs``, ``top`` and
``events``; ``readonly_argv`` refuses anything else before a process starts, and refuses any call that
would print a Secret's data (``-o yaml``/``-o json`` of secrets, however the kind is spelled). Names,
kinds and namespaces must look like Kubernetes names, so no argument can smuggle a flag. Logs are read
from their end and capped; child processes get only the environment they need; outputs are redacted
(cluster/redact.py). The RBAC this needs is a read-only ClusterRole (deployments/k8s/).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from typing import Any

from cluster.backend import Reply
from cluster.catalog import KUBECTL_TOOLS
from cluster.redact import redact
from cluster.settings import ClusterSettings

READ_VERBS = frozenset({"get", "describe", "logs", "top", "events"})
SECRET_KINDS = frozenset({"secret", "secrets"})
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9.\-]{0,62}$")
_NAME = re.compile(r"^[a-z0-9]([a-z0-9.\-]{0,251}[a-z0-9])?$")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
OWNED_KINDS = "deployments,replicasets,statefulsets,daemonsets,jobs,cronjobs,pods"
LOG_TAIL_LINES = 5000  # a log is read from its end, and never more than this many lines or bytes
LOG_LIMIT_BYTES = 4_000_000
# What kubectl needs of the environment (its kubeconfig, or the pod's service account); nothing else of
# the service's environment (API keys) reaches a child process, and jq gets only PATH.
KUBECTL_ENV = ("PATH", "HOME", "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "LANG")
# jq can read the environment and files: an expression that could is refused.
_JQ_UNSAFE = re.compile(r"\$ENV|\benv\b|\binput|\bimport\b|\binclude\b|\$__loc__|\bgetpath\b|^\s*-")


class Refused(ValueError):
    """A call the read-only backend will not make."""


def _kind(value: Any) -> str:
    kind = str(value or "").strip()
    if not _KIND.match(kind):
        raise Refused(f"not a resource kind: {kind!r}")
    return kind.lower()


def is_secret(kind: str) -> bool:
    """``secret``, ``secrets``, ``Secret.v1``, ``secrets.v1.``: a kind is its name before the first dot."""
    return kind.lower().split(".", 1)[0] in SECRET_KINDS


def _name(value: Any, what: str = "name") -> str:
    name = str(value or "").strip()
    if not _NAME.match(name):
        raise Refused(f"not a Kubernetes {what}: {name!r}")
    return name


def _ns(params: dict[str, Any]) -> list[str]:
    return ["-n", _name(params["namespace"], "namespace")] if params.get("namespace") else []


def readonly_argv(tool: str, params: dict[str, Any]) -> list[str]:
    """The kubectl arguments of one tool call (without the binary and the connection flags)."""
    if tool == "kubectl_describe":
        return ["describe", _kind(params.get("kind")), _name(params.get("name")), *_ns(params)]
    if tool == "kubectl_get_by_name":
        return [
            "get",
            _kind(params.get("kind")),
            _name(params.get("name")),
            *_ns(params),
            "-o",
            "wide",
            "--show-labels",
        ]
    if tool == "kubectl_get_by_kind_in_namespace":
        return ["get", _kind(params.get("kind")), *_ns(params), "-o", "wide", "--show-labels"]
    if tool in ("kubectl_get_by_kind_in_cluster", "kubectl_find_resource"):
        return ["get", _kind(params.get("kind")), "-A", "-o", "wide", "--show-labels"]
    if tool == "kubectl_get_yaml":
        kind = _kind(params.get("kind"))
        if is_secret(kind):
            raise Refused("a Secret's manifest holds its values: describe it instead (names and sizes only)")
        return ["get", kind, _name(params.get("name")), *_ns(params), "-o", "yaml"]
    if tool == "kubectl_events":
        target = f"{_kind(params.get('resource_type'))}/{_name(params.get('pod_name'))}"
        return ["events", "--for", target, *_ns(params)]
    if tool in ("kubectl_logs", "kubectl_previous_logs", "kubectl_logs_all_containers",
                "kubectl_previous_logs_all_containers", "fetch_pod_logs"):  # fmt: skip
        argv = ["logs", _name(params.get("pod_name"), "pod name"), *_ns(params)]
        argv += [f"--tail={LOG_TAIL_LINES}", f"--limit-bytes={LOG_LIMIT_BYTES}"]
        if tool == "fetch_pod_logs" and params.get("end_time"):
            argv.append("--timestamps")  # to drop the lines after end_time
        if "all_containers" in tool:
            argv.append("--all-containers")
        if "previous" in tool:
            argv.append("--previous")
        start = str(params.get("start_time") or "")
        if tool == "fetch_pod_logs" and start:
            if not _TIME.match(start):
                raise Refused(f"start_time must be RFC 3339: {start!r}")
            argv.append(f"--since-time={start}")
        return argv
    if tool in ("kubectl_lineage_children", "kubectl_lineage_parents"):
        _kind(params.get("kind"))
        _name(params.get("name"))
        return ["get", OWNED_KINDS, *_ns(params), "-o", "json"]
    if tool == "kubectl_top_pods":
        return ["top", "pods", "-A"]
    if tool == "kubectl_top_nodes":
        return ["top", "nodes"]
    if tool == "kubernetes_count":
        kind = _kind(params.get("kind"))
        if is_secret(kind):
            raise Refused("counting Secrets would read their data")
        if _JQ_UNSAFE.search(str(params.get("jq_expr") or "")):
            raise Refused("the jq expression may read the environment or files")
        return ["get", kind, "-A", "-o", "json"]
    if tool == "kubectl_memory_requests_namespace":
        columns = (
            "NAMESPACE:.metadata.namespace,NAME:.metadata.name,"
            "MEMORY_REQUEST:.spec.containers[*].resources.requests.memory"
        )
        return ["get", "pods", *_ns(params), "-o", f"custom-columns={columns}"]
    raise Refused(f"{tool} is not a tool of the live backend")


def check_readonly(argv: list[str]) -> None:
    """The last line of defence: whatever built ``argv``, only a read verb runs and no Secret data prints."""
    if not argv or argv[0] not in READ_VERBS:
        raise Refused(f"kubectl {argv[:1]} is not a read verb")
    kinds = [k for a in argv[1:2] for k in a.split(",")]
    printed = {a.lower().removeprefix("-o").removeprefix("=").removeprefix("--output=") for a in argv}
    if argv[0] == "get" and any(is_secret(k) for k in kinds) and printed & {"yaml", "json"}:
        raise Refused("a Secret's data is never read")


class KubectlCluster:
    def __init__(self, settings: ClusterSettings) -> None:
        self.settings = settings

    def tools(self) -> list[str]:
        return [t.name for t in KUBECTL_TOOLS]

    def _connection(self) -> list[str]:
        flags = []
        if self.settings.kubeconfig:
            flags.append(f"--kubeconfig={self.settings.kubeconfig}")
        if self.settings.context:
            flags.append(f"--context={self.settings.context}")
        return flags

    async def _run(
        self, argv: list[str], stdin: bytes | None = None, binary: str | None = None
    ) -> tuple[int, str, str]:
        exe = binary or self.settings.kubectl
        full = [exe, *argv] if binary else [exe, *self._connection(), *argv]
        names = ("PATH",) if binary else KUBECTL_ENV
        proc = await asyncio.create_subprocess_exec(
            *full,
            env={k: os.environ[k] for k in names if k in os.environ},
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), self.settings.timeout_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return 124, "", f"timed out after {self.settings.timeout_s:.0f}s"
        return proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    async def call(self, tool: str, params: dict[str, Any]) -> Reply:
        try:
            argv = readonly_argv(tool, params)
            check_readonly(argv)
        except Refused as refused:
            return Reply("error", "", str(refused))
        if shutil.which(self.settings.kubectl) is None:
            return Reply("error", "", f"{self.settings.kubectl} is not installed (docs/kubernetes.md)")
        code, out, err = await self._run(argv)
        if code != 0:
            return Reply("error", redact(out), redact(err.strip() or f"kubectl exited {code}")[:2000])
        posted = await self._post(tool, params, out)
        if isinstance(posted, Reply):
            return posted
        text = redact(posted)
        return Reply("success" if text.strip() else "no_data", text)

    async def _post(self, tool: str, params: dict[str, Any], out: str) -> str | Reply:
        """What kubectl alone does not do: a keyword filter, a log filter and limit, lineage, a count."""
        if tool == "kubectl_find_resource":
            keyword = str(params.get("keyword") or "")
            lines = out.splitlines()
            found = [line for line in lines[1:] if keyword and keyword in line]
            return "\n".join(lines[:1] + found) if found else ""  # a header alone found nothing
        if tool == "fetch_pod_logs":
            lines = out.splitlines()
            end = str(params.get("end_time") or "")
            if end:  # each line starts with its RFC 3339 timestamp (--timestamps); same-zone strings sort
                lines = [line.split(" ", 1)[-1] for line in lines if line.split(" ", 1)[0] <= end]
            if params.get("filter"):
                wanted = str(params["filter"]).lower()  # as the analyzers search: case aside
                lines = [line for line in lines if wanted in line.lower()]
            limit = int(params["limit"]) if str(params.get("limit") or "").isdigit() else 0
            return "\n".join(lines[-limit:] if limit else lines)
        if tool in ("kubectl_lineage_children", "kubectl_lineage_parents"):
            return lineage(
                json.loads(out or "{}"), _kind(params["kind"]), str(params["name"]), tool.endswith("children")
            )
        if tool == "kubernetes_count":
            if shutil.which("jq") is None:
                return Reply("error", "", "jq is not installed (docs/kubernetes.md)")
            code, selected, err = await self._run(["-c", "-r", str(params.get("jq_expr"))], out.encode(), binary="jq")
            if code != 0:
                return Reply("error", "", f"jq: {err.strip()[:500]}")
            rows = [r for r in selected.splitlines() if r.strip()]
            preview = "\n".join(f"{n:6d}\t{r[:200]}" for n, r in enumerate(rows[:10], 1))
            return f"{len(rows)} results\n---\n{preview}"
        return out


def _singular(kind: str) -> str:
    kind = kind.lower()
    return kind[:-1] if kind.endswith("s") else kind


def lineage(items: dict[str, Any], kind: str, name: str, children: bool) -> str:
    """The owner tree around one resource from its namespace's objects' ``ownerReferences``."""
    objects = items.get("items") or []
    key = (_singular(kind), name)
    owners = {
        (_singular(o["kind"]), o["metadata"]["name"]): [
            (_singular(r.get("kind", "")), r.get("name", "")) for r in o["metadata"].get("ownerReferences") or []
        ]
        for o in objects
        if isinstance(o, dict) and o.get("kind") and o.get("metadata", {}).get("name")
    }
    lines: list[str] = []

    def walk(node: tuple[str, str], depth: int) -> None:
        lines.append(f"{'  ' * depth}{node[0]}/{node[1]}")
        nxt = [o for o, refs in owners.items() if node in refs] if children else owners.get(node, [])
        for other in nxt:
            if depth < 6:
                walk(other, depth + 1)

    walk(key, 0)
    return "\n".join(lines)
