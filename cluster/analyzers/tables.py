"""``kubectl get`` tables (with or without their header, as HolmesGPT's keyword search prints them)
and ``kubectl events`` tables: the rows, and a finding for each pod whose STATUS says it is in trouble."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cluster.analyzers.events import Event, event_rows, reading
from cluster.findings import Finding, workload_of_pod

_COLUMNS = re.compile(r"\s{2,}|\t")
TROUBLE = {
    "CrashLoopBackOff": ("crash_loop", "code", 3),
    "Error": ("exit_error", "code", 3),
    "OOMKilled": ("oom_killed", "memory", 6),
    "ErrImagePull": ("image_pull", "config", 6),
    "ImagePullBackOff": ("image_pull", "config", 6),
    "InvalidImageName": ("image_pull", "config", 6),
    "CreateContainerConfigError": ("config_missing", "config", 6),
    "Pending": ("pending", "unknown", 2),
    "Evicted": ("evicted", "memory", 4),
    "ContainerStatusUnknown": ("unknown_state", "unknown", 2),
}


@dataclass(frozen=True)
class Row:
    namespace: str
    name: str
    status: str = ""
    restarts: str = ""
    line: str = ""  # the row as printed, whitespace folded


def _split(line: str) -> list[str]:
    return [c.strip() for c in _COLUMNS.split(line.strip()) if c.strip()]


def rows(text: str, kind: str = "", namespace: str = "") -> list[Row]:
    """The resources of a ``get`` table. With -A the first column is the namespace; a table without its
    header (a keyword search's) is read by position: NAMESPACE NAME [READY STATUS RESTARTS] for pods."""
    lines = [line for line in text.replace("\r", "").split("\n") if line.strip()]
    if not lines:
        return []
    header = _split(lines[0]) if lines[0].lstrip().startswith(("NAMESPACE", "NAME")) else None
    body = lines[1:] if header else lines
    out = []
    for line in body:
        cells = _split(line)
        if not cells or line.startswith(("Error", "No resources")):
            continue
        if header:
            cols = {h: cells[i] for i, h in enumerate(header) if i < len(cells)}
            ns = cols.get("NAMESPACE", namespace)
            out.append(
                Row(ns, cols.get("NAME", ""), cols.get("STATUS", ""), cols.get("RESTARTS", ""), " ".join(line.split()))
            )
        elif len(cells) >= 2:
            pods = kind.lower() in ("pod", "pods", "po")
            status = cells[3] if pods and len(cells) > 3 else ""
            restarts = cells[4] if pods and len(cells) > 4 else ""
            out.append(Row(cells[0], cells[1], status, restarts, " ".join(line.split())))
    return [r for r in out if r.name]


def table(kind: str, text: str, namespace: str = "") -> list[Finding]:
    if kind.lower() not in ("pod", "pods", "po"):
        return []
    out = []
    for row in rows(text, kind, namespace):
        trouble = TROUBLE.get(row.status)
        if trouble is None:
            continue
        what, category, weight = trouble
        restarts = f", {row.restarts.split(' ')[0]} restarts" if row.restarts else ""
        cause = f"the pod is {row.status}{restarts}"
        resource = f"pod {row.namespace}/{row.name}"
        out.append(
            Finding(workload_of_pod(row.name), resource, what, category, cause, f"STATUS {row.status}", weight=weight)
        )
    return out


def events_table(text: str, namespace: str = "", kind: str = "pod", name: str = "") -> list[Finding]:
    """``kubectl events`` rows: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE. Each Warning that says what is
    wrong is a finding, and the events together are one (what was asked, when the question asks for them)."""
    out = []
    listed: list[tuple[str, Event]] = []
    subject = f"{kind.lower()}/{name}" if name else kind.lower()
    if not any(len(_split(line)) >= 5 and _split(line)[1] in ("Normal", "Warning") for line in text.split("\n")):
        # The describe form (Type, Reason, Age, From, Message), as a recording of the tool may hold it.
        listed = [(subject, e) for e in event_rows(text.replace("\r", "").split("\n"))]
    for line in text.replace("\r", "").split("\n"):
        cells = _split(line)
        if len(cells) < 5 or cells[1] not in ("Normal", "Warning"):
            continue
        event = Event(cells[1], cells[2], " ".join(cells[4:]))
        listed.append((cells[3], event))
    for obj, event in listed:
        r = reading(event)
        if r is None:
            continue
        name = obj.split("/", 1)[-1]
        kind = obj.split("/", 1)[0].lower() if "/" in obj else "pod"
        resource = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
        component = workload_of_pod(name) if kind == "pod" else name
        out.append(Finding(component, resource, r.kind, r.category, r.cause, event.message, weight=r.weight))
    if listed:
        obj = listed[0][0]
        name, kind = obj.split("/", 1)[-1], (obj.split("/", 1)[0].lower() if "/" in obj else "pod")
        summary = "; ".join(f"{e.type} {e.reason}: {e.message[:80]}" for _, e in listed[:6])
        cause = f"{len(listed)} events: {summary}"
        resource = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
        component = workload_of_pod(name) if kind == "pod" else name
        out.append(Finding(component, resource, "events", "unknown", cause, listed[0][1].message, "info", 2))
    return list({(f.resource, f.kind): f for f in out}.values())
