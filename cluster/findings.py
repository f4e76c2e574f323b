"""A finding: one fact a cluster tool's output shows, in the form every answer is built from (DESIGN.md §8).

``cause`` is the analyzer's sentence of what is wrong, composed from the output by rule (never a model's
text); ``fact`` is the decisive line quoted from the output; ``weight`` ranks findings as candidate causes:
a fact that says why (an exit code 137, a storage class that does not exist, a host that does not
resolve) outranks one that only says that something is wrong (CrashLoopBackOff, a failed job), and a
healthy pod is a finding too (weight 0, severity ``ok``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Severity = Literal["problem", "info", "ok"]
TEXT_CHARS = 320
FACT_CHARS = 200

# A pod's generated suffixes, in the alphabet Kubernetes generates names from (no vowels, no 0, 1, 3):
# the pod's own five characters, then a ReplicaSet's template hash (with a digit). "redis-cache" and
# "my-nginx" are names, not generated.
_SAFE = "[bcdfghjklmnpqrstvwxz2456789]"
_POD_SUFFIX = re.compile(rf"-{_SAFE}{{5}}$")
_TEMPLATE_HASH = re.compile(rf"-(?={_SAFE}*\d){_SAFE}{{6,10}}$")


def workload_of_pod(pod: str) -> str:
    """``analytics-exporter-fast-76897854c-cw5wh`` -> ``analytics-exporter-fast``; ``java-api-checker-mdr44``
    -> ``java-api-checker``; a bare pod's name stays as it is."""
    name = _POD_SUFFIX.sub("", pod) if _POD_SUFFIX.search(pod) and pod.count("-") >= 1 else pod
    return _TEMPLATE_HASH.sub("", name) if name != pod else name


def workload_of_owner(owner: str) -> str:
    """``ReplicaSet/x-76897854c`` -> ``x``; ``Job/x`` -> ``x``."""
    kind, _, name = owner.partition("/")
    return _TEMPLATE_HASH.sub("", name) if kind.lower() == "replicaset" else name


@dataclass(frozen=True)
class Finding:
    component: str
    resource: str  # "pod default/x", "persistentvolumeclaim app/y"
    kind: str  # oom_killed, image_pull, failed_scheduling, pvc_pending, log_signature, healthy, ...
    category: str  # a root-cause category of the contract (cpu, memory, network, disk, code, config, dependency)
    cause: str
    fact: str
    severity: Severity = "problem"
    weight: int = 5

    @property
    def namespace(self) -> str:
        """The namespace of the resource ("pod app/x" -> "app"), or ""."""
        where = self.resource.split(" ", 1)[-1]
        return where.split("/", 1)[0] if "/" in where else ""

    def text(self) -> str:
        """The evidence line an answer cites: the cause, then the fact quoted from the output."""
        fact = " ".join(self.fact.split())
        fact = fact if len(fact) <= FACT_CHARS else fact[: FACT_CHARS - 1].rstrip() + "…"
        line = f"{self.resource}: {self.cause}"
        if fact and fact.lower() not in self.cause.lower():
            line += f' — "{fact}"'
        return line if len(line) <= TEXT_CHARS else line[: TEXT_CHARS - 1].rstrip() + "…"

    def as_dict(self) -> dict[str, object]:
        return {
            "component": self.component,
            "resource": self.resource,
            "kind": self.kind,
            "category": self.category,
            "cause": self.cause,
            "fact": self.fact,
            "severity": self.severity,
            "weight": self.weight,
        }
