"""The backend a ClusterSettings names."""

from __future__ import annotations

from cluster.backend import ClusterBackend
from cluster.kubectl import KubectlCluster
from cluster.recorded import RecordedCluster
from cluster.settings import ClusterSettings


def make_backend(settings: ClusterSettings) -> ClusterBackend | None:
    if settings.backend == "recorded":
        if not settings.recordings:
            raise ValueError("kubernetes.backend recorded needs kubernetes.recordings (a file of recorded calls)")
        return RecordedCluster.from_file(settings.recordings, settings.case)
    if settings.backend == "live":
        return KubectlCluster(settings)
    return None
