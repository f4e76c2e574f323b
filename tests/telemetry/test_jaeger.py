"""The Jaeger backend against responses in Jaeger's query API format (``tests/telemetry/jaeger/``),
served by a stand-in transport: no Jaeger server installs here. The stand-in answers like Jaeger's
``/api/*`` handlers — a trace comes back under every service it touches — and records each call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.tools.telemetry import TelemetryView
from harness.tools.traces import QueryTracesTool
from telemetry.backends.jaeger import JaegerError, JaegerTelemetry
from telemetry.combined import ClockedTelemetry, CompositeTelemetry
from telemetry.model import Edge
from telemetry.settings import JaegerSettings, TelemetrySettings

RECORDED = Path(__file__).parent / "jaeger"
T0 = 1_700_000_000.0  # the first trace's start (2023-11-14T22:13:20Z)


class StandIn:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []
        self.fail = fail

    def __call__(self, request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        self.calls.append((request.url.path, params))
        if self.fail:
            return httpx.Response(400, json=json.loads((RECORDED / "error.json").read_text()))
        name = {"/api/services": "services", "/api/traces": "traces", "/api/dependencies": "dependencies"}
        return httpx.Response(200, json=json.loads((RECORDED / f"{name[request.url.path]}.json").read_text()))


def _jaeger(stand_in: StandIn) -> JaegerTelemetry:
    return JaegerTelemetry(JaegerSettings(url="http://127.0.0.1:16686"), transport=httpx.MockTransport(stand_in))


async def test_spans_come_once_each_with_parents_hosts_and_times() -> None:
    stand_in = StandIn()
    spans = await _jaeger(stand_in).spans(T0 - 60, T0 + 60)
    assert spans is not None
    assert [(s.service, s.operation, s.parent_id) for s in spans] == [
        ("frontend", "GET /cart", ""),
        ("cart", "CartService/GetCart", "00f067aa0ba902b7"),
        ("cart", "HGET", "b7ad6b7169203331"),  # CHILD_OF wins over an earlier FOLLOWS_FROM
    ]
    assert [s.instance for s in spans] == ["frontend-7d9f8b6c5-abcde", "cart-5f6d7c8b9-fghij", "cart-5f6d7c8b9-fghij"]
    assert spans[0].start == T0 and spans[0].duration == pytest.approx(0.12)
    # The 20-s trace ends after the window's end: it is not there yet.
    traced = [p for path, p in stand_in.calls if path == "/api/traces"]
    assert sorted(p["service"] for p in traced) == ["cart", "frontend"]
    assert traced[0]["start"] == str(int((T0 - 60) * 1e6)) and traced[0]["end"] == str(int((T0 + 60) * 1e6))
    assert traced[0]["limit"] == "500"


async def test_the_call_graph_comes_from_dependencies_without_self_calls() -> None:
    assert await _jaeger(StandIn()).edges() == [Edge("frontend", "cart")]


async def test_an_error_answer_names_the_call() -> None:
    with pytest.raises(JaegerError, match="/api/services: parameter 'service' is required"):
        await _jaeger(StandIn(fail=True)).spans(T0, T0 + 60)


async def test_query_traces_reads_jaeger_behind_the_clock_and_reports_errors_as_values() -> None:
    as_of = T0 + 60
    view = TelemetryView(ClockedTelemetry(CompositeTelemetry([_jaeger(StandIn())]), as_of), as_of, T0 - 60)
    result = await QueryTracesTool(view).run({"service": "cart"})
    assert result.status == "success", result.output
    assert [e["name"] for e in result.output["edges"]] == ["frontend->cart"]
    failing = TelemetryView(ClockedTelemetry(_jaeger(StandIn(fail=True)), as_of), as_of, T0 - 60)
    broken = await QueryTracesTool(failing).run({"service": "cart"})
    assert broken.status == "error" and "Jaeger" in str(broken.error)


def test_settings_name_jaeger_in_the_scope_a_report_states() -> None:
    settings: dict[str, Any] = {"log_roots": [], "metric_roots": [], "jaeger": {"url": "http://127.0.0.1:16686"}}
    assert TelemetrySettings.model_validate(settings).describe() == "traces from Jaeger at http://127.0.0.1:16686"
