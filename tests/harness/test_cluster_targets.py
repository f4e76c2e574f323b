"""What a question asks the cluster about, read from its prose, an alert's subject or a reference."""

from __future__ import annotations

from harness.cluster_targets import Target, read_cluster_question


def test_an_alert_subject_names_the_pod_even_when_raised_for_its_deployment() -> None:
    q = read_cluster_question(
        'Investigate this alert. Title: Pod is crash looping.\nSubject: {"name": "api-6f7d8c9b5d-x7k2q", '
        '"subject_type": "deployment", "namespace": "web", "node": "n-1"}'
    )
    assert q.targets == (Target("api-6f7d8c9b5d-x7k2q", "pod", "web"),)
    assert q.search is None  # the subject's quoted keys are no search term


def test_a_reference_a_kind_a_namespace_and_a_search_term() -> None:
    q = read_cluster_question('What events are related to << {"type": "pod", "name": "web-1", "namespace": "a"} >>')
    assert q.targets == (Target("web-1", "pod", "a"),)
    q = read_cluster_question("Was there any 'Peer down' problem reported for the edge-router pod in namespace net-3?")
    assert (q.targets, q.namespace, q.search) == ((Target("edge-router", "pod", "net-3"),), "net-3", "Peer down")


def test_words_beside_a_kind_are_not_names_and_systems_are() -> None:
    assert read_cluster_question("The pod is crash looping").targets == ()
    assert read_cluster_question("is kafka healthy?").targets == (Target("kafka"),)
    assert read_cluster_question("nightly-export 任务失败了").targets == (Target("nightly-export", "job"),)


def test_a_count_with_a_label() -> None:
    q = read_cluster_question("How many pods have the label tier=web in namespace shop?")
    assert (q.count_kind, q.label, q.namespace, q.targets) == ("pod", ("tier", "web"), "shop", ())
