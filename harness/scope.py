"""The internal run context: when a run stands (its clock) and which telemetry it reads.

``RunOptions`` is set by the service itself — the RCA evaluation, the alert webhook — through an
in-process call or a Ray handle, never from a field of ``POST /api/chat``. ``RunScope`` is what a run's
tools are built from: the clock ``as_of`` (nothing after it is visible), the incident start the
question named (the tools' default window start), and the telemetry settings to read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cluster.settings import ClusterSettings
from telemetry.settings import TelemetrySettings


class RunOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    as_of: float | None = Field(default=None, description="The run's clock (epoch s); None: the service's clock.")
    incident_start: float | None = Field(
        default=None, description="When the incident began (epoch s); None: read from the question if it names a time."
    )
    telemetry: TelemetrySettings | None = Field(default=None, description="Telemetry to read instead of the service's.")
    cluster: ClusterSettings | None = Field(
        default=None,
        description="The Kubernetes cluster to read instead of the service's (the evaluation's recordings).",
    )
    origin: Literal["chat", "eval", "alert"] = "chat"


@dataclass(frozen=True)
class RunScope:
    as_of: float
    incident_start: float | None
    telemetry: TelemetrySettings | None
    origin: str = "chat"
    cluster: ClusterSettings | None = None
