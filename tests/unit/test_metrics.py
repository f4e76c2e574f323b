"""raydiag's own Prometheus series (deployments/metrics.py): counted from the audit records a real run
emits, and the node-level view that GET /metrics serves (Ray's per-worker series renamed to raydiag_*
and summed over workers). The serve tier has a real Prometheus scrape it (tests/serve)."""

from __future__ import annotations

from collections import Counter as Tally

from prometheus_client.parser import text_string_to_metric_families

from deployments.metrics import MetricsSink, node_view
from harness.contracts import ChatRequest
from harness.rules_model import RulesModel
from harness.settings import HarnessSettings
from harness.wiring import build_pipeline, bundled_telemetry
from tests.conftest import REPO
from tests.fakes.sinks import ListSink
from tests.harness.test_rules_model import OneRunbook


class Recorded:
    """Stands in for one ray.util.metrics series: keeps what it was told."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, dict[str, str]]] = []

    def inc(self, value: float = 1, tags: dict[str, str] | None = None) -> None:
        self.calls.append((value, tags or {}))

    observe = set = inc


class RecordedMetrics:
    def __init__(self) -> None:
        for name in (
            "runs",
            "run_seconds",
            "stage_seconds",
            "model_calls",
            "model_tokens",
            "tool_calls",
            "retrieval_seconds",
            "admission_rejections",
            "audit_pending",
            "audit_spilled",
            "audit_dead_lettered",
        ):
            setattr(self, name, Recorded())


async def test_series_agree_with_the_audit_records_of_the_run() -> None:
    records = ListSink()
    m = RecordedMetrics()
    sink = MetricsSink(records, m, lambda: 7)  # type: ignore[arg-type]
    pipeline = build_pipeline(sink, HarnessSettings(), bundled_telemetry(REPO), RulesModel(), OneRunbook(True))
    for q in ("HikariCP connection pool exhausted, requests time out", "hello, who are you?"):
        events = [e async for e in pipeline.run(ChatRequest(Id="m", Question=q), None)]
        assert events[-1].event == "done"
    finished = [r.data for r in records.records if r.kind == "run_finished"]
    assert Tally((t["outcome"], t["content_type"]) for _, t in m.runs.calls) == Tally(
        (d["release_outcome"], d["content_type"]) for d in finished
    )
    usage = [
        r.data["details"]
        for r in records.records
        if r.kind == "trace_event" and r.data["event_type"] == "MODEL_TOKEN_USAGE"
    ]
    assert len(m.model_calls.calls) == len(usage) >= 2
    assert sum(v for v, t in m.model_tokens.calls if t["direction"] == "input") == sum(u["input_tokens"] for u in usage)
    tools = [r.data for r in records.records if r.kind == "tool_invocation"]
    assert Tally(t["tool"] for _, t in m.tool_calls.calls) == Tally(t["tool_name"] for t in tools)
    assert len(m.retrieval_seconds.calls) == sum(1 for t in tools if t["tool_name"] == "lookup_knowledge") >= 1
    assert {t["stage"] for _, t in m.stage_seconds.calls} >= {"ROUTING", "RUN"}
    assert m.audit_pending.calls[-1][0] == 7


W = 'Component="core_worker",NodeAddress="10.0.0.1",SessionName="s",Version="2.60.0",otel_scope_name="x"'
RAY_TEXT = f"""# HELP ray_raydiag_runs_total Runs finished.
# TYPE ray_raydiag_runs_total counter
ray_raydiag_runs_total{{{W},WorkerId="w1",content_type="DIAGNOSIS_REPORT",flow="CHAT",outcome="SUCCESS"}} 3.0
ray_raydiag_runs_total{{{W},WorkerId="w2",content_type="DIAGNOSIS_REPORT",flow="CHAT",outcome="SUCCESS"}} 2.0
ray_raydiag_runs_total{{{W},WorkerId="w2",content_type="CHAT_ANSWER",flow="CHAT",outcome="SUCCESS"}} 1.0
# HELP ray_raydiag_retrieval_duration_seconds lookup_knowledge duration.
# TYPE ray_raydiag_retrieval_duration_seconds histogram
ray_raydiag_retrieval_duration_seconds_bucket{{WorkerId="w1",le="0.1"}} 1.0
ray_raydiag_retrieval_duration_seconds_bucket{{WorkerId="w1",le="+Inf"}} 2.0
ray_raydiag_retrieval_duration_seconds_bucket{{WorkerId="w2",le="0.1"}} 4.0
ray_raydiag_retrieval_duration_seconds_bucket{{WorkerId="w2",le="+Inf"}} 4.0
ray_raydiag_retrieval_duration_seconds_sum{{WorkerId="w1"}} 0.3
ray_raydiag_retrieval_duration_seconds_sum{{WorkerId="w2"}} 0.2
ray_raydiag_retrieval_duration_seconds_count{{WorkerId="w1"}} 2.0
ray_raydiag_retrieval_duration_seconds_count{{WorkerId="w2"}} 4.0
# HELP ray_serve_num_http_requests_total Serve's own.
# TYPE ray_serve_num_http_requests_total counter
ray_serve_num_http_requests_total{{route="/"}} 9.0
"""


def test_the_node_view_sums_the_workers_under_raydiag_names() -> None:
    text = node_view(RAY_TEXT)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert set(families) == {"raydiag_runs", "raydiag_retrieval_duration_seconds"}  # Serve's own left out
    runs = {tuple(sorted(s.labels.items())): s.value for s in families["raydiag_runs"].samples}
    assert runs == {
        (("content_type", "DIAGNOSIS_REPORT"), ("flow", "CHAT"), ("outcome", "SUCCESS")): 5.0,
        (("content_type", "CHAT_ANSWER"), ("flow", "CHAT"), ("outcome", "SUCCESS")): 1.0,
    }
    assert families["raydiag_runs"].type == "counter"
    hist = {(s.name, s.labels.get("le")): s.value for s in families["raydiag_retrieval_duration_seconds"].samples}
    assert hist[("raydiag_retrieval_duration_seconds_bucket", "0.1")] == 5.0
    assert hist[("raydiag_retrieval_duration_seconds_bucket", "+Inf")] == 6.0
    assert hist[("raydiag_retrieval_duration_seconds_count", None)] == 6.0
    assert "WorkerId" not in text and "SessionName" not in text
