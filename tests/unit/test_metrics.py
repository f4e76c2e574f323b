"""raydiag's own Prometheus series (deployments/metrics.py): counted from the audit records a real run
emits, and the node-level view that GET /metrics serves (Ray's per-worker series renamed to raydiag_*
and summed over workers). The serve tier has a real Prometheus scrape it (tests/serve)."""

from __future__ import annotations

import asyncio
from collections import Counter as Tally
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import deployments.metrics as metrics_module
from deployments.http_api import create_api
from deployments.metrics import COUNTERS, GAUGES, HISTOGRAMS, MetricsSink, RequestMetrics, ServiceMetrics, node_view
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
        for name in [*COUNTERS, *HISTOGRAMS, "build_info"]:
            setattr(self, name, Recorded())
        self.gauges = {name: Recorded() for name in GAUGES}

    keep_gauges = ServiceMetrics.keep_gauges


async def test_series_agree_with_the_audit_records_of_the_run() -> None:
    records = ListSink()
    m = RecordedMetrics()
    sink = MetricsSink(records, m)  # type: ignore[arg-type]
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
    assert m.run_errors.calls == []  # both runs ended without an error code


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
    assert "ray_serve_num_http_requests" not in families and "serve_num_http_requests" not in families  # Serve's own
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


def test_every_counter_and_histogram_is_there_before_its_first_event() -> None:
    families = {f.name: f for f in text_string_to_metric_families(node_view(RAY_TEXT))}
    rejections = {s.labels["limit"]: s.value for s in families["raydiag_admission_rejections"].samples}
    assert rejections == {"service": 0.0, "tenant": 0.0, "cluster_tenant": 0.0}
    assert [s.value for s in families["raydiag_run_errors"].samples] == [0.0]
    ttr = {s.name: s.value for s in families["raydiag_http_request_duration_seconds"].samples}
    assert ttr["raydiag_http_request_duration_seconds_count"] == 0.0
    # A series that has samples is not zero-filled again.
    assert sum(s.value for s in families["raydiag_runs"].samples) == 6.0
    assert {n for n in families} >= {v[0].removesuffix("_total") for v in COUNTERS.values()}


VLLM_TEXT = """# HELP ray_vllm_time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE ray_vllm_time_to_first_token_seconds histogram
ray_vllm_time_to_first_token_seconds_bucket{WorkerId="w3",engine="0",model_name="m",le="+Inf"} 4.0
ray_vllm_time_to_first_token_seconds_sum{WorkerId="w3",engine="0",model_name="m"} 2.0
ray_vllm_time_to_first_token_seconds_count{WorkerId="w3",engine="0",model_name="m"} 4.0
# HELP ray_raydiag_build_info 1, labelled with the version and the models served.
# TYPE ray_raydiag_build_info gauge
ray_raydiag_build_info{WorkerId="w1",embedder="usem3",model="m",version="0.1.0"} 1.0
ray_raydiag_build_info{WorkerId="w2",embedder="usem3",model="m",version="0.1.0"} 1.0
"""


def test_vllm_series_are_shown_beside_and_build_info_is_one() -> None:
    families = {f.name: f for f in text_string_to_metric_families(node_view(VLLM_TEXT))}
    ttft = {s.name: s.value for s in families["vllm_time_to_first_token_seconds"].samples}
    assert ttft["vllm_time_to_first_token_seconds_count"] == 4.0
    (info,) = families["raydiag_build_info"].samples  # two ingress replicas, one build
    assert info.value == 1.0 and info.labels == {"embedder": "usem3", "model": "m", "version": "0.1.0"}


async def test_responses_are_counted_by_route_and_status() -> None:
    async def run_chat(*_: Any) -> Any:  # pragma: no cover - not called
        yield None

    async def flush() -> bool:
        return True

    m = RecordedMetrics()
    app = create_api(run_chat, None, lambda r: None, flush, 65536, api_keys={"t": "key-12345678"})  # type: ignore[arg-type]
    app.add_middleware(RequestMetrics, metrics=m)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        await c.get("/livez")
        await c.post("/api/chat", json={})  # no key: 401, counted too
        await c.get("/no/such/page")
    assert [t for _, t in m.http_requests.calls] == [
        {"route": "probe", "status": "200"},
        {"route": "chat", "status": "401"},
        {"route": "other", "status": "404"},
    ]
    assert [t["route"] for _, t in m.http_seconds.calls] == ["probe", "chat", "other"]


async def test_gauges_are_set_on_a_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_module, "GAUGE_PERIOD_S", 0.01)
    m = RecordedMetrics()
    sampled = 0
    three = asyncio.Event()

    async def values() -> dict[str, float]:
        nonlocal sampled
        sampled += 1
        if sampled == 3:
            three.set()
        return {"runs_admitted": float(sampled), "runs_waiting": 0.0}

    task = asyncio.create_task(m.keep_gauges(values, {"version": "v"}))  # type: ignore[arg-type]
    await asyncio.wait_for(three.wait(), 5)
    task.cancel()
    assert [v for v, _ in m.gauges["runs_admitted"].calls][:3] == [1.0, 2.0, 3.0]
    assert m.build_info.calls[0] == (1, {"version": "v"})


async def test_a_request_whose_client_left_before_an_answer_is_not_counted_a_500() -> None:
    m = RecordedMetrics()

    async def left(scope: Any, receive: Any, send: Any) -> None:
        raise asyncio.CancelledError  # the server cancels the handler of a client that went away

    async def broke(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("a bug")

    for app in (left, broke):
        with pytest.raises((asyncio.CancelledError, RuntimeError)):
            await RequestMetrics(app, m)({"type": "http", "path": "/api/chat"}, None, None)  # type: ignore[arg-type]
    assert [t["status"] for _, t in m.http_requests.calls] == ["499", "500"]
