"""Which telemetry a question is about: the demo incident's payment-service series are evidence for a
question about its connection pool, never for one about Redis or another service's memory kills."""

from __future__ import annotations

from harness.question_scope import limitation, question_scope
from harness.tools.base import LedgerEntry, ToolResult


def _demo_ledger() -> dict[str, LedgerEntry]:
    ranking = {
        "ranking": [{"service": "payment-service"}, {"service": "order-service"}],
        "evidence": [
            {
                "key": "anomaly:payment-service:10:00",
                "text": "1/2 payment-service: hikaricp_connections_pending 0 -> 55, mysql_slow_queries 0 -> 31",
            },
            {"key": "anomaly:order-service:10:00", "text": "2/2 order-service: http_server_requests_p99_ms 100 -> 110"},
        ],
    }
    logs = {
        "service": "payment-service",
        "evidence": [
            {"key": "logtpl:payment-service:3", "text": "HikariPool-1 - Connection is not available, request timed out"}
        ],
    }
    return {
        "c1": LedgerEntry("c1", "rank_anomalies", {}, ToolResult("success", ranking), 1),
        "c2": LedgerEntry("c2", "query_logs", {"service": "payment-service"}, ToolResult("success", logs), 1),
    }


def test_a_question_naming_a_service_is_about_that_service_only() -> None:
    scope = question_scope("order-service p99 latency is up, why?", _demo_ledger())
    assert scope.services == frozenset({"order-service"})
    assert scope.covers("order-service") and not scope.covers("payment-service")


def test_a_signal_only_one_service_holds_ties_the_question_to_it() -> None:
    scope = question_scope("MySQL connection pool exhausted HikariCP diagnosis", _demo_ledger())
    assert scope.services == frozenset({"payment-service"})


def test_a_chinese_question_is_matched_through_its_gloss() -> None:
    scope = question_scope("支付服务连接池耗尽，请求超时，根因是什么？", _demo_ledger())
    assert scope.covers("payment-service") and not scope.covers("order-service")


def test_a_component_no_telemetry_holds_gets_no_telemetry_and_a_plain_sentence() -> None:
    scope = question_scope("Redis latency spiked to 200 ms on the cache cluster; what is wrong?", _demo_ledger())
    assert scope.services == frozenset()
    assert scope.absent == ("redis", "cache")
    assert limitation(scope, "en") == (
        "No metrics or logs for redis, cache in the connected backends; the answer rests on runbook guidance only."
    )


def test_what_the_question_calls_the_component_is_named_in_the_sentence() -> None:
    scope = question_scope("After the rollout frontend pods never become Ready (KubePodNotReady). Why?", _demo_ledger())
    assert scope.absent == ("frontend", "KubePodNotReady")


def test_another_services_memory_kills_are_not_about_the_demo_service() -> None:
    scope = question_scope("inventory-service pods keep getting OOMKilled since the deploy", _demo_ledger())
    assert not scope.has_telemetry
    assert scope.absent == ("inventory-service",)


def test_generic_words_tie_a_question_to_nothing() -> None:
    scope = question_scope("users see errors and high latency; what is the root cause?", _demo_ledger())
    assert scope.services == frozenset()
    assert limitation(scope, "en") is not None


def test_telemetry_chosen_for_the_question_is_all_in_scope() -> None:
    scope = question_scope("users see errors; find the root cause", _demo_ledger(), whole=True)
    assert scope.services is None and scope.covers("anything")
    assert limitation(scope, "en") is None


def test_a_secret_in_the_question_is_never_named_back() -> None:
    scope = question_scope("redis-cache is slow; db password=hunter2-x-secret api_key: sk-live-0123456789abcdefXYZ", {})
    assert scope.absent == ("redis-cache",)
