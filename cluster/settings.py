"""Where the Kubernetes tools read: nothing, recorded calls, or a live cluster (docs/kubernetes.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ClusterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["none", "recorded", "live"] = Field(
        default="none",
        description="none: no Kubernetes tools; recorded: answer from recorded calls (tests, demos, the "
        "evaluation); live: the cluster of the kubeconfig or the pod's service account, read-only through kubectl.",
    )
    recordings: str | None = Field(
        default=None,
        description="recorded: a JSON file of recorded calls ({'tools': [{tool, params, output, status, error}]}), "
        "or a file of cases ({'cases': [...]}) with `case` naming one.",
    )
    case: str | None = Field(default=None, description="recorded: the case id within a file of cases.")
    kubectl: str = Field(default="kubectl", description="live: the kubectl binary.")
    kubeconfig: str | None = Field(default=None, description="live: a kubeconfig file (default: kubectl's own).")
    context: str | None = Field(default=None, description="live: the kubeconfig context (default: its current one).")
    timeout_s: float = Field(default=20.0, gt=0, description="live: the longest one kubectl call may take.")
    max_output_chars: int = Field(
        default=20000, ge=1000, description="Each tool output is cut to this many characters (its head and tail)."
    )

    def describe(self) -> str:
        """Where the cluster comes from, for the answer's limitations."""
        if self.backend == "recorded":
            what = self.case or (self.recordings or "").rsplit("/", 1)[-1]
            return f"Kubernetes: recorded calls ({what})"
        if self.backend == "live":
            return f"Kubernetes: live cluster (context {self.context or 'current'})"
        return ""
