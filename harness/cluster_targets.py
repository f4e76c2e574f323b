"""What a question asks the cluster about, read once: the resources it names (a HolmesGPT
``<< {"type": "pod", "name": …} >>`` reference, an alert's ``Subject: {…}``, "job X", "the X pod", a
hyphenated name, a well-known system), the namespace it names, a quoted term to search the logs for,
and whether it asks for a count. No cluster is consulted here."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

from cluster.findings import workload_of_pod
from harness.question_scope import GENERIC, PHRASE_WORDS, TECHNOLOGIES

KINDS = {
    "pod": "pod",
    "pods": "pod",
    "job": "job",
    "jobs": "job",
    "cronjob": "cronjob",
    "deployment": "deployment",
    "deployments": "deployment",
    "deploy": "deployment",
    "statefulset": "statefulset",
    "daemonset": "daemonset",
    "replicaset": "replicaset",
    "service": "service",
    "svc": "service",
    "pvc": "persistentvolumeclaim",
    "persistentvolumeclaim": "persistentvolumeclaim",
    "node": "node",
    "ingress": "ingress",
}
_NAME = r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?"
_KIND_WORDS = "|".join(sorted(KINDS, key=len, reverse=True))
_KIND_THEN_NAME = re.compile(rf"\b({_KIND_WORDS})\s+[`'\"]?({_NAME})[`'\"]?", re.I)
# A name is matched from its start only (a lookbehind), or a long run of name characters is tried at
# every position of it: quadratic on an 8,000-character question.
_NAME_THEN_KIND = re.compile(rf"(?<![a-z0-9.-])({_NAME})[`'\"]?\s+({_KIND_WORDS})\b", re.I)
_NAMESPACES = (
    re.compile(rf"\bnamespace\s+[`'\"]?({_NAME})", re.I),
    re.compile(rf"\b({_NAME})\s+namespace\b", re.I),
    re.compile(rf"\s-n\s+({_NAME})\b"),
)
_HYPHENATED = re.compile(r"(?<![\w/.-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w-])")
_REFERENCE = re.compile(r"<<\s*(\{.*?\})\s*>>", re.S)
_QUOTED = re.compile(r"'([^'\n]{3,60})'|\"([^\"\n]{3,60})\"")
# "checkout 服务", "java-api-checker 任务": a name before the Chinese word for what it is.
_ZH_KINDS = {"服务": None, "应用": None, "容器": "pod", "任务": "job", "作业": "job", "节点": "node"}
_NAME_THEN_ZH = re.compile(rf"(?<![a-z0-9.-])({_NAME})\s*({'|'.join(_ZH_KINDS)})", re.I)
_COUNT = re.compile(rf"\bhow many\s+({_KIND_WORDS})\b", re.I)
_LABEL = re.compile(r"\blabel\s+[`'\"]?([\w./-]+)=([\w.-]+)", re.I)
# Words that stand beside "pod" or "job" in a sentence without being its name ("the pod is crash looping").
ENGLISH = set(
    """
    the this that my our a an its any every all in of is are was were be been being has have had do does did
    not no yes can could should would will may might must which what why how when where who whose there here
    crashing crash failing failed running pending stuck slow down up keeps keep kept looping restarting healthy
    unhealthy broken working many much some each other named called new old same first last with without on for
    to from by at as into about over under between
    """.split()
)
NOT_NAMES = GENERIC | PHRASE_WORDS | ENGLISH
MAX_TARGETS = 3
QUESTION_CHARS = 2000  # what names a resource is in a question's first lines, not in a pasted log


@dataclass(frozen=True)
class Target:
    name: str
    kind: str | None = None
    namespace: str | None = None


@dataclass(frozen=True)
class ClusterQuestion:
    targets: tuple[Target, ...] = ()
    namespace: str | None = None
    search: str | None = None
    count_kind: str | None = None
    label: tuple[str, str] | None = None
    names: tuple[str, ...] = field(default_factory=tuple)


def _json_after(text: str, marker: str) -> dict[str, object] | None:
    at = text.find(marker)
    if at < 0:
        return None
    start = text.find("{", at)
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _from_object(obj: dict[str, object]) -> Target | None:
    name = str(obj.get("name") or "").strip()
    if not name or not re.fullmatch(_NAME, name):
        return None
    kind = str(obj.get("kind") or obj.get("type") or obj.get("subject_type") or "").lower() or None
    kind = KINDS.get(kind or "", kind)
    if workload_of_pod(name) != name and kind in (None, "deployment", "replicaset"):
        kind = "pod"  # a generated pod name, whatever workload the alert was raised for
    namespace = str(obj.get("namespace") or "").strip() or None
    return Target(name, kind, namespace)


@lru_cache(maxsize=256)
def read_cluster_question(question: str) -> ClusterQuestion:
    """Read once per question text (the router, the playbook and the planner each ask)."""
    question = question[:QUESTION_CHARS]
    targets: list[Target] = []
    for m in _REFERENCE.finditer(question):
        try:
            obj = json.loads(m.group(1))
        except ValueError:
            continue
        t = _from_object(obj) if isinstance(obj, dict) else None
        if t:
            targets.append(t)
    subject = _json_after(question, "Subject:")
    if subject:
        t = _from_object(subject)
        if t:
            targets.append(t)
    # The structured parts are read; the prose is what is left for the rest.
    prose = _REFERENCE.sub(" ", question)
    prose = prose[: prose.find("Subject:")] if "Subject:" in prose else prose
    namespaces = [m.group(1) for pattern in _NAMESPACES for m in pattern.finditer(prose)]
    namespaces = [n for n in namespaces if n.lower() not in NOT_NAMES]
    namespace = namespaces[0] if namespaces else None
    question = prose
    readings: list[tuple[str, str | None]] = [
        (m.group(2), KINDS[m.group(1).lower()]) for m in _KIND_THEN_NAME.finditer(question)
    ]
    readings += [(m.group(1), KINDS[m.group(2).lower()]) for m in _NAME_THEN_KIND.finditer(question)]
    readings += [(m.group(1), _ZH_KINDS[m.group(2)]) for m in _NAME_THEN_ZH.finditer(question)]
    for raw, kind in readings:
        name = raw.lower()
        if name not in NOT_NAMES and name != namespace and name not in KINDS:
            targets.append(Target(name, kind, namespace))
    quoted = [a or b for a, b in _QUOTED.findall(question)]
    for name in _HYPHENATED.findall(question.lower()):
        parts = set(name.split("-"))
        if name != namespace and not parts <= PHRASE_WORDS | GENERIC and not any(name in q.lower() for q in quoted):
            targets.append(Target(name, None, namespace))
    words = set(re.findall(r"[a-z][a-z0-9]+", question.lower()))
    targets += [Target(w, None, namespace) for w in sorted(words & TECHNOLOGIES)]
    # One target per name; the most specific reading of it (a kind, a namespace) wins.
    merged: dict[str, Target] = {}
    for t in targets:
        old = merged.get(t.name)
        merged[t.name] = Target(
            t.name, (old.kind if old else None) or t.kind, (old.namespace if old else None) or t.namespace
        )
    names = tuple(merged)
    # A name that is part of a longer one found too ("analytics-exporter" in "analytics-exporter-fast") is that one.
    kept = [t for t in merged.values() if not any(t.name != o and t.name in o for o in names)]
    count = _COUNT.search(question)
    label = _LABEL.search(question)
    search = next((q for q in quoted if not re.fullmatch(_NAME, q)), None)
    return ClusterQuestion(
        targets=tuple(kept[:MAX_TARGETS]),
        namespace=namespace,
        search=search,
        count_kind=KINDS[count.group(1).lower()] if count else None,
        label=(label.group(1), label.group(2)) if label else None,
        names=names,
    )
