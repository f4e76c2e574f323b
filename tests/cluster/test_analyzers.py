"""The analyzers read kubectl's formats into findings whose cause and fact an SRE can act on."""

from __future__ import annotations

from cluster.analyzers import analyze
from cluster.findings import workload_of_owner, workload_of_pod
from tests.cluster import samples


def _top(tool: str, params: dict[str, str], text: str):  # type: ignore[no-untyped-def]
    return sorted(analyze(tool, params, text), key=lambda f: -f.weight)[0]


def test_oom_killed_names_the_exit_code_and_the_limit() -> None:
    f = _top("kubectl_describe", {"kind": "pod"}, samples.OOM_POD)
    assert (f.component, f.kind, f.category, f.severity) == ("api", "oom_killed", "memory", "problem")
    assert f.cause == "container api was OOMKilled (exit code 137): it exceeded its memory limit of 128Mi"
    assert f.fact == "Last State: Terminated | Reason: OOMKilled | Exit Code: 137"
    assert f.resource == "pod web/api-6f7d8c9b5d-x7k2q"


def test_image_pull_quotes_the_registrys_message() -> None:
    f = _top("kubectl_describe", {"kind": "pod"}, samples.IMAGE_POD)
    assert f.kind == "image_pull" and "example/web:nope" in f.cause
    assert f.fact == 'Failed to pull image "example/web:nope": manifest unknown'


def test_failed_scheduling_names_the_node_selector() -> None:
    f = _top("kubectl_describe", {"kind": "pod"}, samples.PENDING_POD)
    assert f.kind == "failed_scheduling"
    assert f.cause == "no node matches the pod's node selector or affinity (disk=ssd)"


def test_a_claim_whose_storage_class_does_not_exist() -> None:
    f = _top("kubectl_describe", {"kind": "persistentvolumeclaim"}, samples.PENDING_CLAIM)
    # The component is the pod that uses the claim (a StatefulSet's ordinal is not told from a name's digits).
    assert (f.component, f.kind) == ("postgres-0", "pvc_pending")
    assert 'storage class "fast-ssd" does not exist' in f.cause


def test_a_service_whose_selector_matches_no_pod() -> None:
    f = _top("kubectl_describe", {"kind": "service"}, samples.SERVICE_WITHOUT_ENDPOINTS)
    assert f.kind == "no_endpoints" and "app=backnd" in f.cause


def test_a_healthy_pod_is_a_finding_too() -> None:
    [f] = analyze("kubectl_describe", {"kind": "pod"}, samples.HEALTHY_POD)
    assert (f.kind, f.severity, f.weight) == ("healthy", "ok", 0)


def test_the_describe_kind_is_read_from_the_output_when_the_call_did_not_say() -> None:
    assert _top("kubectl_describe", {}, samples.OOM_POD).kind == "oom_killed"


def test_logs_name_the_host_that_does_not_resolve() -> None:
    text = "\n".join(["GET / 500", "socket.gaierror: Name or service not known host='ledger-db'"] * 3)
    f = _top("fetch_pod_logs", {"pod_name": "api-6f7d8c9b5d-x7k2q", "namespace": "web"}, text)
    assert (f.kind, f.category, f.component) == ("dns_failure", "network", "api")
    assert "ledger-db" in f.cause


def test_one_error_line_in_a_long_log_is_no_cause() -> None:
    text = "\n".join(["INFO served"] * 500 + ["curl: (7) Failed to connect to localhost port 3003"])
    found = analyze("fetch_pod_logs", {"pod_name": "x", "namespace": "y"}, text)
    assert [(f.kind, f.severity) for f in found] == [("cannot_connect", "info")]
    assert found[0].cause.startswith("once in 501 log lines")


def test_a_clean_log_says_so_and_a_searched_term_is_counted() -> None:
    [clean] = analyze("fetch_pod_logs", {"pod_name": "x", "namespace": "y"}, "INFO a\nINFO b")
    assert (clean.kind, clean.severity) == ("log_clean", "ok")
    found = analyze("fetch_pod_logs", {"pod_name": "x", "namespace": "y", "filter": "Peer down"}, "t1 Peer down\nINFO")
    assert found[0].cause == "'Peer down' appears in the logs: 1 matching line(s)"


def test_a_get_table_without_its_header_marks_the_pods_in_trouble() -> None:
    [f] = analyze("kubectl_find_resource", {"kind": "pod", "keyword": "api"}, samples.FIND_PODS)
    assert (f.resource, f.kind) == ("pod web/api-6f7d8c9b5d-x7k2q", "crash_loop")


def test_workload_names() -> None:
    assert workload_of_pod("checkout-7d9f8b6c5d-x2k4p") == "checkout"
    assert workload_of_pod("java-api-checker-mdr44") == "java-api-checker"
    assert workload_of_pod("client") == "client"
    assert workload_of_owner("ReplicaSet/analytics-exporter-fast-76897854c") == "analytics-exporter-fast"
    assert workload_of_owner("Job/nightly-report") == "nightly-report"


def test_names_that_only_look_generated_stay_names() -> None:
    assert workload_of_pod("redis-cache") == "redis-cache"
    assert workload_of_pod("my-nginx") == "my-nginx"
