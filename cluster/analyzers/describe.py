"""``kubectl describe`` read per kind: pods (container states, exit codes, limits, events), claims,
jobs, deployments, services and nodes; any other kind by its Warning events."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cluster.analyzers.events import Event, event_rows, reading
from cluster.findings import Finding, workload_of_owner, workload_of_pod

SINGULAR = {
    "deployments": "deployment",
    "deploy": "deployment",
    "statefulsets": "statefulset",
    "daemonsets": "daemonset",
    "replicasets": "replicaset",
}
_FIELD = re.compile(r"^([A-Z][\w .-]*?):\s*(.*)$")


def _top(lines: list[str]) -> dict[str, str]:
    """The unindented ``Key: value`` fields."""
    out: dict[str, str] = {}
    for line in lines:
        m = _FIELD.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = m.group(2).strip()
    return out


def _events(lines: list[str]) -> list[Event]:
    for n, line in enumerate(lines):
        if line.startswith("Events:"):
            return event_rows(lines[n + 1 :])
    return []


def describe(kind: str, text: str) -> list[Finding]:
    kind = kind.lower()
    lines = text.replace("\r", "").split("\n")
    fields = _top(lines)
    name, ns = fields.get("Name", ""), fields.get("Namespace", "")
    if not name:
        return []
    if kind in ("pod", "pods", "po"):
        return pod(name, ns, lines, fields)
    if kind in ("persistentvolumeclaim", "persistentvolumeclaims", "pvc"):
        return claim(name, ns, lines, fields)
    if kind in ("service", "services", "svc"):
        return service(name, ns, fields)
    if kind in ("node", "nodes", "no"):
        return node(name, lines)
    findings = by_events(kind, name, ns, name, lines)
    if kind in ("deployment", "deployments", "deploy", "statefulset", "daemonset", "replicaset"):
        findings += rollout(kind, name, ns, lines, fields)
    if kind in ("job", "jobs"):
        findings += job(name, ns, fields)
    return findings


def _resource(kind: str, ns: str, name: str) -> str:
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def by_events(kind: str, name: str, ns: str, component: str, lines: list[str]) -> list[Finding]:
    out = []
    for event in _events(lines):
        r = reading(event)
        if r is not None:
            out.append(
                Finding(
                    component, _resource(kind, ns, name), r.kind, r.category, r.cause, event.message, weight=r.weight
                )
            )
    return _unique(out)


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: dict[tuple[str, str, str], Finding] = {}
    for f in findings:
        seen.setdefault((f.resource, f.kind, f.cause), f)
    return list(seen.values())


@dataclass
class Container:
    name: str
    image: str = ""
    state: str = ""
    state_reason: str = ""
    last_state: str = ""
    last_reason: str = ""
    exit_code: str = ""
    last_exit_code: str = ""
    ready: str = ""
    restarts: int = 0
    limits: dict[str, str] = field(default_factory=dict)
    # The output's own lines of each block (State, Last State, Limits), whitespace folded: the facts quoted.
    lines: dict[str, list[str]] = field(default_factory=dict)

    def quoted(self, *blocks: str) -> str:
        return " | ".join(line for b in blocks for line in self.lines.get(b, []))


def _containers(lines: list[str]) -> list[Container]:
    out: list[Container] = []
    inside = False
    current: Container | None = None
    block = ""  # which sub-block of a container the lines are in: State, Last State, Limits
    for line in lines:
        if re.match(r"^(Init )?Containers:\s*$", line):
            inside = True
            continue
        if inside and line and not line.startswith(" "):
            inside = False
        if not inside:
            continue
        m = re.match(r"^  ([\w.-]+):\s*$", line)
        if m:
            current = Container(m.group(1))
            out.append(current)
            continue
        if current is None:
            continue
        f = re.match(r"^    ([A-Z][\w ]*?):\s*(.*)$", line)
        sub = re.match(r"^      ([\w ]+?):\s*(.*)$", line)
        if f:
            key, value = f.group(1), f.group(2).strip()
            block = key
            current.lines.setdefault(block, []).append(" ".join(line.split()))
            if key == "Image":
                current.image = value
            elif key == "State":
                current.state = value
            elif key == "Last State":
                current.last_state = value
            elif key == "Ready":
                current.ready = value
            elif key == "Restart Count" and value.isdigit():
                current.restarts = int(value)
        elif sub:
            key, value = sub.group(1), sub.group(2).strip()
            current.lines.setdefault(block, []).append(" ".join(line.split()))
            if block == "State":
                if key == "Reason":
                    current.state_reason = value
                elif key == "Exit Code":
                    current.exit_code = value
            elif block == "Last State":
                if key == "Reason":
                    current.last_reason = value
                elif key == "Exit Code":
                    current.last_exit_code = value
            elif block == "Limits":
                current.limits[key] = value
    return out


def _claims(lines: list[str]) -> tuple[str, ...]:
    return tuple(m.group(1) for line in lines if (m := re.match(r"^\s+ClaimName:\s+(\S+)", line)))


def pod(name: str, ns: str, lines: list[str], fields: dict[str, str]) -> list[Finding]:
    owner = fields.get("Controlled By", "")
    component = workload_of_owner(owner) if owner else workload_of_pod(name)
    resource = _resource("pod", ns, name)
    containers = _containers(lines)
    events = _events(lines)
    out: list[Finding] = []
    for c in containers:
        memory = c.limits.get("memory")
        if "OOMKilled" in (c.last_reason, c.state_reason):
            last = c.last_reason == "OOMKilled"
            code = c.last_exit_code if last else c.exit_code
            fact = c.quoted("Last State" if last else "State")
            limit = f" of {memory}" if memory else ""
            exit_code = f" (exit code {code})" if code else ""
            cause = f"container {c.name} was OOMKilled{exit_code}: it exceeded its memory limit{limit}"
            out.append(Finding(component, resource, "oom_killed", "memory", cause, fact, weight=10))
        elif c.state_reason in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"):
            failed = next((e.message for e in events if e.reason == "Failed" and "pull" in e.message.lower()), "")
            cause = f"container {c.name} cannot pull its image {c.image} ({c.state_reason})"
            out.append(
                Finding(component, resource, "image_pull", "config", cause, failed or c.quoted("State"), weight=10)
            )
        elif c.state_reason in ("CreateContainerConfigError", "CreateContainerError"):
            failed = next(
                (e.message for e in events if e.reason == "Failed" and e.message != f"Error: {c.state_reason}"), ""
            )
            cause = f"container {c.name} cannot start ({c.state_reason})" + (f": {failed}" if failed else "")
            out.append(
                Finding(component, resource, "config_missing", "config", cause, failed or c.quoted("State"), weight=10)
            )
        elif c.state_reason == "CrashLoopBackOff":
            code = f", last exit code {c.last_exit_code}" if c.last_exit_code else ""
            cause = f"container {c.name} keeps crashing (CrashLoopBackOff, {c.restarts} restarts{code})"
            out.append(
                Finding(component, resource, "crash_loop", "code", cause, c.quoted("State", "Last State"), weight=5)
            )
        elif c.state.startswith("Terminated") and c.state_reason not in ("Completed",) and c.exit_code not in ("", "0"):
            cause = f"container {c.name} exited with code {c.exit_code} ({c.state_reason})"
            out.append(Finding(component, resource, "exit_error", "code", cause, c.quoted("State"), weight=5))
        if c.limits:
            cause = f"container {c.name} has a " + " and a ".join(
                f"{k.upper() if k == 'cpu' else k} limit of {v}" for k, v in c.limits.items()
            )
            out.append(
                Finding(
                    component,
                    resource,
                    "limits",
                    "cpu" if "cpu" in c.limits else "memory",
                    cause,
                    c.quoted("Limits"),
                    "info",
                    1,
                )
            )
    for event in events:
        r = reading(event, fields.get("Node-Selectors", ""), _claims(lines))
        if r is not None and r.kind not in {f.kind for f in out}:
            out.append(Finding(component, resource, r.kind, r.category, r.cause, event.message, weight=r.weight))
    if fields.get("Status") == "Failed" and fields.get("Reason") == "Evicted":
        msg = fields.get("Message", "")
        out.append(
            Finding(
                component,
                resource,
                "evicted",
                "memory" if "memory" in msg.lower() else "disk",
                "it was evicted from its node",
                msg,
                weight=8,
            )
        )
    problems = [f for f in out if f.severity == "problem"]
    ready = containers and all(c.ready == "True" for c in containers)
    if (
        not problems
        and fields.get("Status") in ("Running", "Succeeded")
        and (ready or fields.get("Status") == "Succeeded")
    ):
        restarts = sum(c.restarts for c in containers)
        cause = f"the pod is {fields['Status']} and healthy: every container ready, {restarts} restarts"
        out.append(Finding(component, resource, "healthy", "unknown", cause, f"Status: {fields['Status']}", "ok", 0))
    return _unique(out)


def claim(name: str, ns: str, lines: list[str], fields: dict[str, str]) -> list[Finding]:
    used_by = fields.get("Used By", "")
    component = workload_of_pod(used_by.split(",")[0].strip()) if used_by and used_by != "<none>" else name
    resource = _resource("persistentvolumeclaim", ns, name)
    out = by_events("persistentvolumeclaim", name, ns, component, lines)
    status = fields.get("Status", "")
    if status == "Pending" and not out:
        sc = fields.get("StorageClass", "") or "(none)"
        out.append(
            Finding(
                component,
                resource,
                "pvc_pending",
                "disk",
                f"the claim is Pending (storage class {sc})",
                f"Status: {status}",
                weight=7,
            )
        )
    return [
        Finding(
            f.component,
            f.resource,
            f.kind,
            f.category,
            f"the claim {name} is {status or 'not bound'}: {f.cause}",
            f.fact,
            f.severity,
            f.weight,
        )
        if f.kind == "pvc_pending" and status and status.lower() not in f.cause.lower()
        else f
        for f in out
    ]


def service(name: str, ns: str, fields: dict[str, str]) -> list[Finding]:
    endpoints = fields.get("Endpoints", None)
    resource = _resource("service", ns, name)
    if endpoints is not None and endpoints in ("", "<none>"):
        selector = fields.get("Selector", "<none>")
        cause = f"the service has no endpoints: no ready pod matches its selector {selector}"
        return [
            Finding(name, resource, "no_endpoints", "network", cause, f"Endpoints: {endpoints or '<none>'}", weight=8)
        ]
    return []


def node(name: str, lines: list[str]) -> list[Finding]:
    out = []
    resource = _resource("node", "", name)
    for line in lines:
        m = re.match(
            r"^\s+(Ready|MemoryPressure|DiskPressure|PIDPressure|NetworkUnavailable)\s+(True|False|Unknown)\b(.*)$",
            line,
        )
        if not m:
            continue
        cond, status = m.group(1), m.group(2)
        if cond == "Ready" and status != "True":
            out.append(
                Finding(
                    name,
                    resource,
                    "node_not_ready",
                    "unknown",
                    f"the node is NotReady (Ready {status})",
                    line.strip(),
                    weight=8,
                )
            )
        elif cond != "Ready" and status == "True":
            category = {"MemoryPressure": "memory", "DiskPressure": "disk", "PIDPressure": "cpu"}.get(cond, "network")
            out.append(
                Finding(name, resource, "node_pressure", category, f"the node reports {cond}", line.strip(), weight=8)
            )
    return out


def rollout(kind: str, name: str, ns: str, lines: list[str], fields: dict[str, str]) -> list[Finding]:
    out = []
    resource = _resource(SINGULAR.get(kind, kind), ns, name)
    replicas = fields.get("Replicas", "")
    m = re.search(r"(\d+) unavailable", replicas)
    if m and int(m.group(1)) > 0:
        out.append(
            Finding(
                name,
                resource,
                "unavailable",
                "unknown",
                f"{m.group(1)} replicas are unavailable",
                f"Replicas: {replicas}",
                weight=3,
            )
        )
    for line in lines:
        if "ProgressDeadlineExceeded" in line:
            out.append(
                Finding(
                    name,
                    resource,
                    "rollout_stuck",
                    "config",
                    "its rollout is stuck (ProgressDeadlineExceeded)",
                    line.strip(),
                    weight=6,
                )
            )
            break
    return out


def job(name: str, ns: str, fields: dict[str, str]) -> list[Finding]:
    statuses = fields.get("Pods Statuses", "")
    m = re.search(r"(\d+) Failed", statuses)
    if m and int(m.group(1)) > 0:
        cause = f"the job has {m.group(1)} failed pod(s); their logs say why"
        return [
            Finding(
                name, _resource("job", ns, name), "job_failed", "code", cause, f"Pods Statuses: {statuses}", weight=4
            )
        ]
    return []
