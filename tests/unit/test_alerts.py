"""POST /api/alerts (deployments/alerts.py): Alertmanager's webhook payload → one diagnosis per firing
group, on the alert's clock, in its language, deduplicated by groupKey, admitted like /api/chat.

The route runs the real pipeline (scripted model, bundled telemetry) and records into a list sink; the
test reads what the run recorded, not what the route said."""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from deployments.alerts import AlertmanagerWebhook, question_for, run_options_for, session_for
from deployments.config import AlertSettings
from deployments.http_api import create_api
from deployments.limits import RunLimiter
from harness.contracts import ChatRequest
from harness.pipeline import DiagnosisPipeline
from harness.rules_model import RulesModel
from harness.settings import HarnessSettings
from harness.wiring import build_pipeline, bundled_telemetry
from tests.conftest import REPO
from tests.fakes.sinks import ListSink
from tests.fakes.slow_pipeline import PacedPipeline
from tests.unit.test_trace_wait import ArrivingAudit

NOW = datetime(2026, 11, 30, 10, 30, tzinfo=UTC)


def webhook(status: str = "firing", starts: datetime | None = None, zh: bool = False, **extra: Any) -> dict[str, Any]:
    starts = starts or NOW - timedelta(minutes=20)
    annotations = (
        {"summary": "支付服务 5xx 错误率超过 5%", "description": "payment-service 最近 10 分钟错误率 12%"}
        if zh
        else {"summary": "payment-service 5xx ratio above 5%", "description": "12% of requests failed in 10 min"}
    )
    alert = {
        "status": status,
        "labels": {"alertname": "HighErrorRate", "service": "payment-service", "namespace": "prod"},
        "annotations": annotations,
        "startsAt": starts.isoformat().replace("+00:00", "Z"),
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus/graph",
        "fingerprint": "abc123",
    }
    body = {
        "version": "4",
        "groupKey": '{}:{alertname="HighErrorRate"}',
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "raydiag",
        "groupLabels": {"alertname": "HighErrorRate"},
        "commonLabels": alert["labels"],
        "commonAnnotations": annotations,
        "externalURL": "http://alertmanager:9093",
        "alerts": [alert],
    }
    return {**body, **extra}


def test_the_question_names_the_alert_in_its_language() -> None:
    en = question_for(AlertmanagerWebhook.model_validate(webhook()))
    assert "HighErrorRate" in en and "service payment-service" in en and "namespace prod" in en
    assert "2026-11-30 10:10:00 UTC" in en and "12% of requests failed" in en and en.endswith("root cause?")
    zh = question_for(AlertmanagerWebhook.model_validate(webhook(zh=True)))
    assert "告警 HighErrorRate" in zh and "支付服务 5xx 错误率超过 5%" in zh and zh.endswith("根因是什么？")


def test_a_group_of_long_alerts_still_makes_a_valid_question() -> None:
    body = webhook()
    body["alerts"] = [
        {**body["alerts"][0], "annotations": {"summary": "x" * 5000, "description": "y" * 5000}} for _ in range(20)
    ]
    question = question_for(AlertmanagerWebhook.model_validate(body))
    assert ChatRequest(Id="alert-x", Question=question).Question  # within the request's limits
    assert "15 more alerts of the same group are firing." in question


def test_the_clock_stops_at_start_plus_the_investigation_delay() -> None:
    old = AlertmanagerWebhook.model_validate(webhook(starts=NOW - timedelta(hours=3)))
    opts = run_options_for(old, NOW.timestamp(), delay_s=900)
    assert opts.origin == "alert"
    assert opts.incident_start == (NOW - timedelta(hours=3)).timestamp()
    assert opts.as_of == (NOW - timedelta(hours=3) + timedelta(seconds=900)).timestamp()
    fresh = AlertmanagerWebhook.model_validate(webhook(starts=NOW - timedelta(minutes=2)))
    assert run_options_for(fresh, NOW.timestamp(), delay_s=900).as_of == NOW.timestamp()


def test_a_group_maps_to_one_session_per_tenant() -> None:
    key = '{}:{alertname="HighErrorRate"}'
    assert session_for(key, "team-a") == session_for(key, "team-a")
    assert session_for(key, "team-a") != session_for(key, "team-b")
    assert session_for(key, None).startswith("alert-") and len(session_for(key, None)) <= 64


class Harness:
    """The API over the real pipeline with the scripted model, its records in a list."""

    def __init__(
        self, max_runs: int = 8, pipeline_cls: type[DiagnosisPipeline] = DiagnosisPipeline, **alert_settings: Any
    ) -> None:
        self.sink = ListSink()
        self.pipeline = build_pipeline(
            self.sink, HarnessSettings(), bundled_telemetry(REPO), RulesModel(), pipeline_cls=pipeline_cls
        )

        async def flush() -> bool:
            return True

        self.app = create_api(
            self.pipeline.run,
            ArrivingAudit(1),
            lambda r: None,
            flush,
            1 << 20,
            limiter=RunLimiter(max_runs, max_runs),
            alerts=AlertSettings(**alert_settings),
        )

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://t")

    async def finished(self, run_id: str) -> dict[str, Any]:
        for _ in range(200):
            done = [r for r in self.sink.records if r.run_id == run_id and r.kind == "run_finished"]
            if done:
                started = next(
                    r for r in self.sink.records if r.run_id == run_id and r.data.get("event_type") == "RUN_STARTED"
                )
                return {"started": started.data["details"], "finished": done[0].data}
            await asyncio.sleep(0.05)
        raise AssertionError(f"run {run_id} did not finish")


async def test_a_firing_group_starts_one_audited_run_on_the_alerts_clock() -> None:
    h = Harness(investigation_delay_s=600)
    starts = datetime.now(UTC) - timedelta(hours=2)
    async with h.client() as c:
        r = await c.post("/api/alerts", json=webhook(starts=starts))
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["started"] is True and body["sessionId"] == session_for('{}:{alertname="HighErrorRate"}', None)
    run = await h.finished(body["runId"])
    assert run["started"]["origin"] == "alert"
    as_of = datetime.fromisoformat(run["started"]["as_of"].replace("Z", "+00:00"))
    assert abs((as_of - (starts + timedelta(seconds=600))).total_seconds()) < 1
    question = next(r for r in h.sink.records if r.run_id == body["runId"] and r.kind == "run_started").data["query"]
    assert "HighErrorRate" in question and "payment-service" in question
    # The deterministic model's one outcome for this alert: an honest fallback.
    assert run["finished"]["status"] == "FALLBACK"


async def test_resolved_and_repeated_groups_start_nothing() -> None:
    h = Harness()
    async with h.client() as c:
        resolved = await c.post("/api/alerts", json=webhook(status="resolved"))
        first = await c.post("/api/alerts", json=webhook())
        again = await c.post("/api/alerts", json=webhook())
        other = await c.post("/api/alerts", json=webhook(groupKey='{}:{alertname="DiskFull"}'))
    assert resolved.status_code == 200 and resolved.json() == {"started": False, "reason": "resolved"}
    assert first.status_code == 202
    assert again.status_code == 200 and again.json() == {"started": False, "reason": "duplicate"}
    assert other.status_code == 202
    await h.finished(first.json()["runId"])
    await h.finished(other.json()["runId"])
    runs = {r.run_id for r in h.sink.records if r.kind == "run_started"}
    assert runs == {first.json()["runId"], other.json()["runId"]}


async def test_a_repeat_after_the_window_starts_a_new_run() -> None:
    h = Harness(dedupe_window_s=0.2)
    async with h.client() as c:
        first = await c.post("/api/alerts", json=webhook())
        await asyncio.sleep(0.3)
        second = await c.post("/api/alerts", json=webhook())
    assert first.status_code == 202 and second.status_code == 202
    assert first.json()["runId"] != second.json()["runId"]
    assert first.json()["sessionId"] == second.json()["sessionId"]  # the group's runs stay together


async def test_over_the_limit_is_429_and_does_not_burn_the_dedupe_claim() -> None:
    h = Harness(max_runs=1, pipeline_cls=PacedPipeline)  # each event paced: the first run stays in flight
    async with h.client() as c:
        first = await c.post("/api/alerts", json=webhook())
        refused = await c.post("/api/alerts", json=webhook(groupKey='{}:{alertname="DiskFull"}'))
        assert first.status_code == 202
        assert refused.status_code == 429 and refused.headers["Retry-After"]
        await h.finished(first.json()["runId"])
        for _ in range(50):  # Alertmanager retries with back-off until the slot is free
            retried = await c.post("/api/alerts", json=webhook(groupKey='{}:{alertname="DiskFull"}'))
            if retried.status_code != 429:
                break
            await asyncio.sleep(0.1)
    assert retried.status_code == 202, retried.text  # not taken for a duplicate of the refused one
    await h.finished(retried.json()["runId"])


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.update(version="3"),
        lambda b: b.pop("groupKey"),
        lambda b: b.update(alerts=[]),
        lambda b: b["alerts"][0].update(startsAt="yesterday"),
    ],
)
async def test_a_payload_that_is_not_alertmanagers_is_422(mutate: Any) -> None:
    body = copy.deepcopy(webhook())
    mutate(body)
    async with Harness().client() as c:
        r = await c.post("/api/alerts", json=body)
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_REQUEST"
