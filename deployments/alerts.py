"""Diagnoses triggered by Alertmanager: ``POST /api/alerts`` takes its webhook payload (version 4).

One diagnosis per firing alert group. Its question is built from the group's alerts (alertname, the
service/job/namespace labels, summary, description, startsAt) in the language of their annotations;
its clock is min(now, earliest ``startsAt`` + ``alerts.investigation_delay_s``) and its incident start
that ``startsAt``, passed through the same internal run context the RCA evaluation uses
(harness/scope.py), so an old alert is diagnosed as it stood, not with what came after. The run is an
ordinary audited run (trace, console); the answer is 202 with its session and run ids, and the run goes
on in the background. Resolved groups start nothing; a group seen again within
``alerts.dedupe_window_s`` (Alertmanager re-sends at each ``group_interval`` and ``repeat_interval``)
starts nothing new: the claim is made in the cluster's control actor, so it holds across ingress
replicas. The same authentication (a bearer key from Alertmanager's ``http_config``) and the same
admission limits as ``/api/chat`` apply. With ``alerts.notify_url`` the released report is posted there.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import AsyncGenerator, Callable
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from deployments.admission import Admission
from deployments.api_docs import request_body
from deployments.api_schemas import AlertAnswer
from deployments.config import AlertSettings
from deployments.stopping import ClaimBook
from harness.contracts import ChatRequest, SseEvent, event_data
from harness.prompts import language_of
from harness.scope import RunOptions

log = logging.getLogger(__name__)

MAX_ALERTS_IN_QUESTION = 5
MAX_ANNOTATION_CHARS = 600


class Alert(BaseModel):
    model_config = ConfigDict(extra="allow")

    status: Literal["firing", "resolved"]
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    startsAt: datetime
    endsAt: datetime | None = None
    generatorURL: str | None = None
    fingerprint: str | None = None


class AlertmanagerWebhook(BaseModel):
    """Alertmanager's webhook body, version 4 (fields it may add later are accepted and ignored)."""

    model_config = ConfigDict(extra="allow")

    version: Literal["4"]
    groupKey: str = Field(min_length=1, max_length=4096)
    status: Literal["firing", "resolved"]
    receiver: str = ""
    groupLabels: dict[str, str] = Field(default_factory=dict)
    commonLabels: dict[str, str] = Field(default_factory=dict)
    commonAnnotations: dict[str, str] = Field(default_factory=dict)
    externalURL: str = ""
    alerts: list[Alert] = Field(min_length=1, max_length=1000)

    def firing(self) -> list[Alert]:
        return [a for a in self.alerts if a.status == "firing"]


def _utc(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _where(labels: dict[str, str]) -> str:
    parts = [f"{k} {labels[k]}" for k in ("service", "job", "namespace", "instance") if labels.get(k)]
    return ", ".join(parts)


def question_for(hook: AlertmanagerWebhook) -> str:
    """The diagnosis question for a firing group, in the language of its annotations."""
    alerts = sorted(hook.firing(), key=lambda a: a.startsAt)[:MAX_ALERTS_IN_QUESTION]
    text = " ".join(v for a in alerts for v in a.annotations.values()) + " ".join(hook.commonAnnotations.values())
    zh = language_of(text) == "zh"
    lines = []
    for a in alerts:
        name = a.labels.get("alertname", "alert")
        where = _where(a.labels)
        # Bounded: five alerts' annotations stay far inside a question's length limit.
        summary = a.annotations.get("summary", "")[:MAX_ANNOTATION_CHARS]
        description = a.annotations.get("description", "")[:MAX_ANNOTATION_CHARS]
        if zh:
            line = f"告警 {name}" + (f"（{where}）" if where else "") + f" 自 {_utc(a.startsAt)} 起触发。"
            line += (f"摘要：{summary}。" if summary else "") + (f"描述：{description}。" if description else "")
        else:
            line = f"Alert {name}" + (f" ({where})" if where else "") + f" has been firing since {_utc(a.startsAt)}."
            line += (f" Summary: {summary}." if summary else "") + (
                f" Description: {description}." if description else ""
            )
        lines.append(line)
    more = len(hook.firing()) - len(alerts)
    if more > 0:
        lines.append(f"另有 {more} 条同组告警。" if zh else f"{more} more alerts of the same group are firing.")
    lines.append("根因是什么？" if zh else "What is the root cause?")
    return "\n".join(lines)


def run_options_for(hook: AlertmanagerWebhook, now: float, delay_s: float) -> RunOptions:
    start = min(a.startsAt for a in hook.firing()).timestamp()
    return RunOptions(as_of=min(now, start + delay_s), incident_start=start, origin="alert")


def session_for(group_key: str, tenant: str | None) -> str:
    """One session per (tenant, alert group): its runs are listed together, and no tenant's id is
    derivable from another's."""
    digest = hashlib.sha256(f"{tenant or ''}\n{group_key}".encode()).hexdigest()[:32]
    return f"alert-{digest}"


class AlertDedupe(Protocol):
    async def claim(self, key: str, window_s: float) -> bool:
        """True for the first claim of ``key`` within ``window_s``; False for a repeat."""
        ...

    async def unclaim(self, key: str) -> None: ...


class LocalAlertDedupe:
    """Claims in this process (one ingress replica, and the tests of the route)."""

    def __init__(self) -> None:
        self.book = ClaimBook()

    async def claim(self, key: str, window_s: float) -> bool:
        return self.book.claim(key, window_s)

    async def unclaim(self, key: str) -> None:
        self.book.unclaim(key)


class ClusterAlertDedupe:
    """Claims in the cluster's control actor (deployments/stopping.py), shared by every replica. An
    actor that does not answer lets the alert through: a duplicate diagnosis beats a missed one."""

    def __init__(self, app: str, control: Callable[[], Any], timeout_s: float = 1.0) -> None:
        self.app = app
        self.timeout_s = timeout_s
        self._factory = control
        self._control: Any = None

    def _actor(self) -> Any:
        if self._control is None:
            self._control = self._factory()
        return self._control

    async def claim(self, key: str, window_s: float) -> bool:
        try:
            return bool(await asyncio.wait_for(self._actor().claim.remote(self.app, key, window_s), self.timeout_s))
        except Exception as err:
            self._control = None
            log.warning("alert dedupe unreachable (%s): starting the run", type(err).__name__)
            return True

    async def unclaim(self, key: str) -> None:
        try:
            await asyncio.wait_for(self._actor().unclaim.remote(self.app, key), self.timeout_s)
        except Exception as err:
            log.warning("alert claim not released (%s)", type(err).__name__)


RunChat = Callable[..., AsyncGenerator[SseEvent, None]]


async def post_report(url: str, timeout_s: float, report: dict[str, Any]) -> None:
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            reply = await client.post(url, json=report)
        if reply.status_code >= 300:
            log.warning("alert report to the notify URL answered %d", reply.status_code)
    except httpx.HTTPError as err:
        log.warning("alert report not delivered: %s", type(err).__name__)


def add_alert_routes(
    app: FastAPI,
    run_chat: RunChat,
    settings: AlertSettings,
    *,
    admission: Admission,
    dedupe: AlertDedupe,
    tenant_of: Callable[[Request], str | None],
    parse_body: Callable[..., Any],
    error: Callable[..., JSONResponse],
    stopping: Callable[[], bool],
    retry_after_s: int,
) -> None:
    background: set[asyncio.Task[None]] = set()  # held until done, so none is collected mid-run

    async def finish(events: AsyncGenerator[SseEvent, None], ticket: Any, report: dict[str, Any]) -> None:
        try:
            async for event in events:
                if event.event == "content":
                    report["content"] = event_data(event)
                elif event.event == "failure":
                    report["failure"] = event_data(event)
                elif event.event == "done":
                    report["outcome"] = event_data(event).get("outcome")
        finally:
            await events.aclose()
            await admission.release(ticket)
        if settings.notify_url:
            await post_report(settings.notify_url, settings.notify_timeout_s, report)

    @app.post(
        "/api/alerts",
        summary="Alertmanager webhook (version 4): one diagnosis per firing alert group",
        status_code=202,
        responses={
            200: {
                "model": AlertAnswer,
                "description": "nothing started: the group is resolved, or was seen within the dedupe window",
            },
            202: {"model": AlertAnswer, "description": "a diagnosis started: its sessionId and runId"},
            422: {"description": "not an Alertmanager version 4 payload"},
            429: {"description": "too many runs in flight for the service or the tenant (Retry-After)"},
            503: {"description": "the service is stopping gracefully (Retry-After)"},
        },
        openapi_extra=request_body(AlertmanagerWebhook),
    )
    async def alerts(request: Request) -> JSONResponse:
        hook = await parse_body(request, AlertmanagerWebhook)
        if isinstance(hook, JSONResponse):
            return hook
        if stopping():
            return error(
                503,
                "SERVICE_STOPPING",
                "the service is stopping; retry shortly",
                headers={"Retry-After": str(retry_after_s)},
            )
        if hook.status != "firing" or not hook.firing():
            return JSONResponse({"started": False, "reason": "resolved"}, status_code=200)
        tenant = tenant_of(request)
        ticket, reason = await admission.admit(tenant)
        if ticket is None:  # Alertmanager retries a 429 with back-off
            return error(429, "TOO_MANY_RUNS", reason, headers={"Retry-After": str(retry_after_s)})
        key = f"{tenant or ''}\n{hook.groupKey}"
        if not await dedupe.claim(key, settings.dedupe_window_s):
            await admission.release(ticket)
            return JSONResponse({"started": False, "reason": "duplicate"}, status_code=200)
        req = ChatRequest(Id=session_for(hook.groupKey, tenant), Question=question_for(hook))
        options = run_options_for(hook, time.time(), settings.investigation_delay_s)
        admission.start(ticket)
        events = run_chat(req, tenant, options)
        try:
            first = await anext(events)  # metadata: the run's ids
        except BaseException:
            await events.aclose()
            await admission.release(ticket)
            await dedupe.unclaim(key)  # the run never started: Alertmanager's retry may start it
            raise
        ids = event_data(first)
        report = {
            "sessionId": ids["session_id"],
            "runId": ids["run_id"],
            "groupKey": hook.groupKey,
            "alertnames": sorted({a.labels.get("alertname", "") for a in hook.firing()}),
        }
        task = asyncio.get_running_loop().create_task(finish(events, ticket, report), name="alert-run")
        background.add(task)
        task.add_done_callback(background.discard)
        return JSONResponse({"started": True, "sessionId": ids["session_id"], "runId": ids["run_id"]}, status_code=202)
