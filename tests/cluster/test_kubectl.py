"""The live backend is read-only by construction: every tool's arguments start with a read verb, no
argument can carry a flag or a write verb, a Secret's data is never asked for, and outputs are redacted.
No API server installs here: a stand-in ``kubectl`` (a script that records its arguments and prints
output in kubectl's own format) takes the place of the binary."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

import pytest

from cluster.catalog import KUBECTL_TOOLS
from cluster.kubectl import READ_VERBS, KubectlCluster, Refused, check_readonly, readonly_argv
from cluster.settings import ClusterSettings
from tests.cluster import samples

PARAMS = {
    "kind": "pod",
    "name": "api-1",
    "namespace": "web",
    "keyword": "api",
    "pod_name": "api-1",
    "resource_type": "pod",
    "jq_expr": ".items[] | .metadata.name",
}
WRITE_VERBS = ("apply", "create", "delete", "edit", "patch", "replace", "scale", "exec", "cp", "drain", "cordon",
               "label", "annotate", "rollout", "set", "run", "expose", "port-forward", "proxy", "debug")  # fmt: skip


@pytest.mark.parametrize("spec", KUBECTL_TOOLS, ids=lambda s: s.name)
def test_every_tool_runs_a_read_verb(spec: Any) -> None:
    argv = readonly_argv(spec.name, {p: PARAMS.get(p, "") for p in spec.params if p in PARAMS})
    assert argv[0] in READ_VERBS
    check_readonly(argv)


@pytest.mark.parametrize("verb", WRITE_VERBS)
def test_a_write_verb_is_refused_whatever_built_the_arguments(verb: str) -> None:
    with pytest.raises(Refused):
        check_readonly([verb, "pod", "api-1"])


@pytest.mark.parametrize(
    "params",
    [
        {"kind": "pod", "name": "--all", "namespace": "web"},
        {"kind": "pod", "name": "api-1", "namespace": "web --all-namespaces"},
        {"kind": "pod -o=yaml", "name": "api-1"},
        {"kind": "pod", "name": "a;delete"},
        {"kind": "pod", "name": "API"},
    ],
)
def test_no_argument_smuggles_a_flag(params: dict[str, str]) -> None:
    with pytest.raises(Refused):
        readonly_argv("kubectl_describe", params)


@pytest.mark.parametrize("kind", ["secret", "Secrets"])
def test_a_secrets_data_is_never_read(kind: str) -> None:
    with pytest.raises(Refused):
        readonly_argv("kubectl_get_yaml", {"kind": kind, "name": "db", "namespace": "web"})
    with pytest.raises(Refused):
        readonly_argv("kubernetes_count", {"kind": kind, "jq_expr": ".items[]"})
    with pytest.raises(Refused):
        check_readonly(["get", f"pods,{kind}", "-A", "-o", "json"])


def _fake_kubectl(folder: Path, stdout: str) -> Path:
    """A kubectl stand-in: appends its arguments to calls.jsonl and prints ``stdout``."""
    (folder / "out.txt").write_text(stdout)
    script = folder / "kubectl"
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import json, sys, pathlib\n"
        f"here = pathlib.Path({str(folder)!r})\n"
        "with open(here / 'calls.jsonl', 'a') as f: f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "sys.stdout.write((here / 'out.txt').read_text())\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_a_call_reaches_kubectl_with_the_connection_flags_and_comes_back_redacted(tmp_path: Path) -> None:
    kubectl = _fake_kubectl(tmp_path, samples.OOM_POD)
    settings = ClusterSettings(backend="live", kubectl=str(kubectl), kubeconfig="/k/config", context="prod")
    reply = asyncio.run(
        KubectlCluster(settings).call("kubectl_describe", {"kind": "pod", "name": "api-1", "namespace": "web"})
    )
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert calls == [["--kubeconfig=/k/config", "--context=prod", "describe", "pod", "api-1", "-n", "web"]]
    assert reply.status == "success"
    assert "API_TOKEN:    [redacted]" in reply.text and "s3cr3t" not in reply.text
    assert "LOG_LEVEL:    info" in reply.text


def test_a_refused_call_starts_no_process(tmp_path: Path) -> None:
    kubectl = _fake_kubectl(tmp_path, "")
    cluster = KubectlCluster(ClusterSettings(backend="live", kubectl=str(kubectl)))
    reply = asyncio.run(cluster.call("kubectl_get_yaml", {"kind": "secret", "name": "db", "namespace": "web"}))
    assert reply.status == "error" and not (tmp_path / "calls.jsonl").exists()


def test_find_resource_keeps_the_rows_with_the_keyword(tmp_path: Path) -> None:
    table = "NAMESPACE   NAME    READY\nweb   api-1   1/1\nweb   cart-1   1/1"
    cluster = KubectlCluster(ClusterSettings(backend="live", kubectl=str(_fake_kubectl(tmp_path, table))))
    reply = asyncio.run(cluster.call("kubectl_find_resource", {"kind": "pod", "keyword": "api"}))
    assert reply.text == "NAMESPACE   NAME    READY\nweb   api-1   1/1"


def test_lineage_walks_owner_references(tmp_path: Path) -> None:
    def item(kind: str, name: str, owner: tuple[str, str] | None = None) -> dict[str, Any]:
        refs = [{"kind": owner[0], "name": owner[1]}] if owner else []
        return {"kind": kind, "metadata": {"name": name, "ownerReferences": refs}}

    objects = {
        "items": [
            item("Deployment", "api"),
            item("ReplicaSet", "api-6f7d", ("Deployment", "api")),
            item("Pod", "api-6f7d-abcde", ("ReplicaSet", "api-6f7d")),
        ]
    }
    cluster = KubectlCluster(ClusterSettings(backend="live", kubectl=str(_fake_kubectl(tmp_path, json.dumps(objects)))))
    reply = asyncio.run(
        cluster.call("kubectl_lineage_children", {"kind": "deployment", "name": "api", "namespace": "web"})
    )
    assert reply.text == "deployment/api\n  replicaset/api-6f7d\n    pod/api-6f7d-abcde"


@pytest.mark.parametrize("kind", ["Secret.v1", "secrets.v1.", "SECRETS"])
def test_a_secret_spelled_any_way_is_refused(kind: str) -> None:
    with pytest.raises(Refused):
        readonly_argv("kubectl_get_yaml", {"kind": kind, "name": "db", "namespace": "web"})


@pytest.mark.parametrize("expr", ["$ENV.RAYDIAG_LLM_API_KEY", "env | keys", "input", '-n "x"', 'import "a" as a; .'])
def test_a_jq_expression_that_reads_the_environment_or_files_is_refused(expr: str) -> None:
    with pytest.raises(Refused):
        readonly_argv("kubernetes_count", {"kind": "pod", "jq_expr": expr})


def test_kubectl_gets_no_secret_of_the_services_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYDIAG_LLM_API_KEY", "sk-should-not-leak")
    script = tmp_path / "kubectl"
    script.write_text(
        "#!/usr/bin/env python3\nimport os, sys\nsys.stdout.write(os.environ.get('RAYDIAG_LLM_API_KEY', 'absent'))\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    reply = asyncio.run(
        KubectlCluster(ClusterSettings(backend="live", kubectl=str(script))).call("kubectl_top_nodes", {})
    )
    assert reply.text == "absent"


def test_a_keyword_search_that_finds_no_row_found_nothing(tmp_path: Path) -> None:
    table = "NAMESPACE   NAME    READY\nweb   cart-1   1/1"
    cluster = KubectlCluster(ClusterSettings(backend="live", kubectl=str(_fake_kubectl(tmp_path, table))))
    reply = asyncio.run(cluster.call("kubectl_find_resource", {"kind": "pod", "keyword": "api"}))
    assert (reply.status, reply.text) == ("no_data", "")


def test_logs_are_read_from_their_end_and_capped() -> None:
    argv = readonly_argv("fetch_pod_logs", {"pod_name": "api-1", "namespace": "web", "limit": "50"})
    assert argv == ["logs", "api-1", "-n", "web", "--tail=5000", "--limit-bytes=4000000"]
