"""What one Kubernetes event says is wrong (a Warning's reason and message), shared by the describe
output's Events table and ``kubectl events``."""

from __future__ import annotations

import re
from dataclasses import dataclass

_EVENT_ROW = re.compile(r"^\s*(Normal|Warning)\s+(\S+)\s+(.+?)\s{2,}(\S+(?:, \S+)?)\s{2,}(.*)$")


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    message: str


def event_rows(lines: list[str]) -> list[Event]:
    """The rows of a describe output's Events table."""
    out = []
    for line in lines:
        m = _EVENT_ROW.match(line)
        if m:
            out.append(Event(m.group(1), m.group(2), m.group(5).replace('\\"', '"').strip()))
    return out


@dataclass(frozen=True)
class Reading:
    kind: str
    category: str
    cause: str
    weight: int


_STORAGE_CLASS = re.compile(r'storageclass[\w.]*\s+"([^"]+)"\s+not found', re.I)
_NOT_FOUND = re.compile(r'(configmap|secret)s?\s+"([^"]+)"\s+not found', re.I)
_MISSING_KEY = re.compile(r"couldn't find key (\S+) in (ConfigMap|Secret) ([\w./-]+)", re.I)


def scheduling(message: str, node_selector: str = "", claims: tuple[str, ...] = ()) -> Reading:
    low = message.lower()
    if "node affinity/selector" in low or "didn't match pod's node" in low or "node selector" in low:
        where = f" ({node_selector})" if node_selector and node_selector != "<none>" else ""
        return Reading("failed_scheduling", "config", f"no node matches the pod's node selector or affinity{where}", 9)
    if "unbound immediate persistentvolumeclaims" in low or "persistentvolumeclaim" in low:
        claim = f" {claims[0]}" if claims else ""
        return Reading("failed_scheduling", "disk", f"its PersistentVolumeClaim{claim} is not bound", 8)
    for resource in ("cpu", "memory", "ephemeral-storage", "pods"):
        if f"insufficient {resource}" in low:
            category = resource if resource in ("cpu", "memory") else "disk"
            return Reading("failed_scheduling", category, f"no node has enough free {resource} for its requests", 9)
    if "taint" in low:
        return Reading("failed_scheduling", "config", "every node has a taint the pod does not tolerate", 9)
    return Reading("failed_scheduling", "config", "the scheduler cannot place the pod", 6)


def reading(event: Event, node_selector: str = "", claims: tuple[str, ...] = ()) -> Reading | None:
    """What a Warning event says, or None for one that says nothing about a cause."""
    if event.type != "Warning":
        return None
    reason, msg, low = event.reason, event.message, event.message.lower()
    if reason == "FailedScheduling":
        return scheduling(msg, node_selector, claims)
    if reason == "ProvisioningFailed":
        sc = _STORAGE_CLASS.search(msg)
        if sc:
            return Reading("pvc_pending", "disk", f'its storage class "{sc.group(1)}" does not exist', 10)
        return Reading("pvc_pending", "disk", "no volume could be provisioned for the claim", 8)
    if reason == "Failed" and ("pull image" in low or "errimagepull" in low or "imagepullbackoff" in low):
        return Reading("image_pull", "config", "its image cannot be pulled", 9)
    missing = _NOT_FOUND.search(msg) or _MISSING_KEY.search(msg)
    if reason in ("Failed", "FailedMount") and missing:
        return Reading("config_missing", "config", f"it refers to something that does not exist: {msg}", 10)
    if reason == "Unhealthy" and "probe failed" in low:
        probe = low.split(" probe", 1)[0].strip() or "a"
        return Reading("probe_failed", "config", f"its {probe} probe fails", 7)
    if reason in ("FailedMount", "FailedAttachVolume"):
        return Reading("mount_failed", "disk", "a volume cannot be mounted", 8)
    if reason in ("Evicted",):
        return Reading("evicted", "memory" if "memory" in low else "disk", "it was evicted from its node", 8)
    if reason == "BackoffLimitExceeded":
        return Reading("job_failed", "code", "the job reached its backoff limit: its pods keep failing", 4)
    if reason in ("OOMKilling", "OOMKilled"):
        return Reading("oom_killed", "memory", "a container was killed for running out of memory", 10)
    if reason == "FailedCreate":
        return Reading("create_failed", "config", "its controller cannot create pods", 7)
    if reason == "NetworkNotReady" or "network plugin" in low:
        return Reading("network_not_ready", "network", "the node's network is not ready", 6)
    return None
