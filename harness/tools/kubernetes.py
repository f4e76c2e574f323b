"""The Kubernetes tools as the executor and the playbook see them (cluster/catalog.py): each call goes to
the run's cluster backend, and its output is read by the analyzers (cluster/analyzers) into findings.
The output the model sees is the raw text (cut to its head and tail) and the findings; the ``evidence``
blocks an answer may cite are the findings' lines, keyed ``k8s:<component>:<kind>:<resource>``, so a
citation names the component the fact is about."""

from __future__ import annotations

from typing import Any

from cluster.analyzers import analyze
from cluster.backend import ClusterBackend
from cluster.catalog import BY_NAME, KUBECTL_TOOLS, RECORDED_ONLY_TOOLS, ToolSpec
from cluster.findings import Finding
from harness.tools.base import ToolResult

EVIDENCE_PER_CALL = 6
K8S_KEY_PREFIX = "k8s:"


def evidence_key(finding: Finding) -> str:
    return f"{K8S_KEY_PREFIX}{finding.component}:{finding.kind}:{finding.resource.rsplit('/', 1)[-1].split(' ')[-1]}"


def cut(text: str, limit: int) -> str:
    """The head and the tail of a long output: a log's last lines are where it crashed."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… ({len(text) - limit} characters left out) …\n{text[-half:]}"


def findings_of(result_output: dict[str, Any]) -> list[dict[str, Any]]:
    found = result_output.get("findings")
    return [f for f in found if isinstance(f, dict)] if isinstance(found, list) else []


class KubernetesTool:
    def __init__(self, spec: ToolSpec, backend: ClusterBackend, max_chars: int = 20000) -> None:
        self.spec = spec
        self.name = spec.name
        self.description = spec.description
        self.parameters = spec.schema()
        self.backend = backend
        self.max_chars = max_chars

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        params = {k: v for k, v in args.items() if k in self.spec.params and v not in (None, "")}
        missing = [p for p in self.spec.required if p not in params]
        if missing:
            return ToolResult(
                "error", {"error": f"missing {', '.join(missing)}"}, error=f"missing {', '.join(missing)}"
            )
        reply = await self.backend.call(self.name, params)
        if reply.status == "error":
            return ToolResult("error", {"error": reply.error, "output": cut(reply.text, 2000)}, error=reply.error)
        findings = sorted(analyze(self.name, params, reply.text), key=lambda f: -f.weight)
        evidence = [
            {
                "key": evidence_key(f),
                "text": f.text(),
                "component": f.component,
                "namespace": f.namespace,
                "weight": f.weight,
            }
            for f in findings[:EVIDENCE_PER_CALL]
        ]
        output = {
            "output": cut(reply.text, self.max_chars),
            "findings": [f.as_dict() for f in findings],
            "evidence": evidence,
        }
        preview = findings[0].text()[:200] if findings else reply.text[:200]
        return ToolResult(reply.status, output, preview=preview)


def kubernetes_tools(backend: ClusterBackend, max_chars: int = 20000) -> list[KubernetesTool]:
    """The kubectl tools, and the recorded-only toolsets the backend actually answers."""
    offered = set(backend.tools())
    specs = list(KUBECTL_TOOLS) + [s for s in RECORDED_ONLY_TOOLS if s.name in offered]
    return [KubernetesTool(s, backend, max_chars) for s in specs]


KUBERNETES_TOOL_NAMES = frozenset(BY_NAME)
