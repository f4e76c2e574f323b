"""deployments/k8s/cluster-reader.yaml grants reads only, never Secrets, to the service account the
RayService's pods run as."""

from __future__ import annotations

from typing import Any

import yaml

from tests.conftest import REPO

K8S = REPO / "deployments" / "k8s"


def _docs() -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all((K8S / "cluster-reader.yaml").read_text()) if d}


def test_the_role_reads_and_never_reads_secrets() -> None:
    rules = _docs()["ClusterRole"]["rules"]
    assert {v for r in rules for v in r["verbs"]} <= {"get", "list", "watch"}
    resources = {res for r in rules for res in r["resources"]}
    assert not {res for res in resources if res.split("/")[0] in ("secrets", "*")}
    assert {"pods", "pods/log", "events", "persistentvolumeclaims", "nodes", "deployments", "jobs"} <= resources


def test_the_rayservice_pods_run_as_the_bound_service_account() -> None:
    docs = _docs()
    [subject] = docs["ClusterRoleBinding"]["subjects"]
    assert docs["ClusterRoleBinding"]["roleRef"]["name"] == docs["ClusterRole"]["metadata"]["name"]
    assert subject["name"] == docs["ServiceAccount"]["metadata"]["name"]
    service = yaml.safe_load((K8S / "rayservice.yaml").read_text())
    groups = [
        service["spec"]["rayClusterConfig"]["headGroupSpec"],
        *service["spec"]["rayClusterConfig"]["workerGroupSpecs"],
    ]
    assert {g["template"]["spec"]["serviceAccountName"] for g in groups} == {subject["name"]}
