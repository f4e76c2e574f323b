"""The diagnosis pipeline: one async generator of SSE events per run.

Every caller (the HTTP ingress, the CLI, tests) drains this generator; there is no second copy of
the loop. The generator always ends with exactly one ``done`` event unless it is cancelled, and a
cancelled run is recorded as ABORTED before the cancellation propagates.

router → planner → executor ⇄ tools → evidence guard → verifier → [LOW_CONFID and round < max:
retry_context → executor again] → release. Without a configured model (the LLM deployment is not
part of every profile yet) a run answers with a CHAT_ANSWER saying so and calls no model.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any

from harness.cluster_playbook import investigate_cluster
from harness.contracts import (
    ChatAnswerPayload,
    ChatRequest,
    ContentEvent,
    DoneEvent,
    FailureEvent,
    MetadataEvent,
    RetryContext,
    SseEvent,
    StatusEvent,
    VerifierEvaluation,
    VerifierOutput,
)
from harness.history import HistoryStore, SessionHistory, SessionKey, session_key
from harness.incident_time import incident_start
from harness.model import ChatModel
from harness.playbook import DEFAULT_STEPS
from harness.prompts import language_of
from harness.protocols import AuditSink
from harness.recorder import RunRecorder
from harness.routing import Embed, ExemplarRouter
from harness.rules_model import RulesModel
from harness.scope import RunOptions, RunScope
from harness.settings import HarnessSettings
from harness.stages import evidence_guard
from harness.stages.base import RunContext, StageError
from harness.stages.executor import ExecutorOutcome, execute
from harness.stages.planner import plan
from harness.stages.release import NO_DRAFT, Release, decided_by_evidence, fallback, fallback_gaps, guard_gaps, report
from harness.stages.router import route
from harness.stages.verifier import retry_context, verifier_input, verify
from harness.tools.base import Tool, ToolBoundary
from harness.tools.read_skill import Skill
from telemetry.clock import iso

log = logging.getLogger(__name__)

SKELETON_ANSWER = (
    "raydiag received your question, but no model is configured in this profile, so no diagnosis was "
    "made. Configure the llm section (docs/llm.md) to enable the diagnosis stages."
)
DEFAULT_DOMAINS = "database, jvm, kubernetes, network, disk, cache, message-queue, payment, api-latency"

__all__ = ["DiagnosisPipeline", "StageError"]

# A model call or the run past its time: the run answers with what the tools established (a
# MODEL_TIMEOUT fallback), never FAILED for slowness.
SLOW = {"MODEL_TIMEOUT", "RUN_TIMEOUT"}
OUT_OF_TIME = {
    "en": "The model did not answer within the run's time budget; the trace has the call that ran out.",
    "zh": "模型未在本次运行的时限内作答；超时的调用见本次运行的追踪记录。",
}


def new_run_id() -> str:
    return str(uuid.uuid4())


class DiagnosisPipeline:
    def __init__(
        self,
        sink: AuditSink,
        settings: HarnessSettings | None = None,
        model: ChatModel | None = None,
        tools: Callable[[RunScope], list[Tool]] | None = None,
        skills: dict[str, Skill] | None = None,
        domains: str = DEFAULT_DOMAINS,
        history: HistoryStore | None = None,
        run_id_factory: Callable[[], str] = new_run_id,
        clock: Callable[[], float] = time.time,
        embed: Embed | None = None,
        telemetry_source: Callable[[RunScope], str] | None = None,
    ) -> None:
        self.sink = sink
        self.settings = settings or HarnessSettings()
        self.model = model
        self.tools = tools or (lambda _scope: [])
        self.skills = skills or {}
        self.embed = embed
        self.telemetry_source = telemetry_source
        self.exemplars = ExemplarRouter(embed) if embed is not None else None
        self.domains = domains
        self.history: HistoryStore = history or SessionHistory()
        self.run_id_factory = run_id_factory
        self.clock = clock

    def _source(self, scope: RunScope) -> str:
        """Where this run's evidence comes from, for the report's limitations: the telemetry, and the
        scripted profile's rules model when it stands in for a language model (its answers are scripted)."""
        source = self.telemetry_source(scope) if self.telemetry_source else ""
        if isinstance(self.model, RulesModel):
            scripted = "model: scripted (rules, no language model)"
            source = f"{source}; {scripted}" if source else f"none connected; {scripted}"
        return source

    def scope(self, question: str, options: RunOptions | None) -> RunScope:
        """The run's clock and telemetry: the internal options where the service set them, else the
        service's clock, with the incident start read from the question."""
        options = options or RunOptions()
        as_of = options.as_of if options.as_of is not None else self.clock()
        start = options.incident_start if options.incident_start is not None else incident_start(question, as_of)
        return RunScope(as_of, start, options.telemetry, options.origin, options.cluster)

    async def run(
        self, request: ChatRequest, tenant_id: str | None = None, options: RunOptions | None = None
    ) -> AsyncGenerator[SseEvent, None]:
        run_id = self.run_id_factory()
        rec = RunRecorder(self.sink, request.Id, run_id, request.Question, tenant_id=tenant_id)
        scope = self.scope(request.Question, options)
        rec.start(
            as_of=iso(scope.as_of),
            incident_start=iso(scope.incident_start) if scope.incident_start is not None else None,
            origin=scope.origin,
        )
        ctx: RunContext | None = None
        out_of_time: StageError | None = None
        try:
            yield MetadataEvent(session_id=request.Id, run_id=run_id)
            if self.model is None:
                async for event in self._without_model(rec):
                    yield event
                return
            ctx = RunContext(
                question=request.Question,
                lang=language_of(request.Question),
                model=self.model,
                recorder=rec,
                settings=self.settings,
                boundary=ToolBoundary(self.tools(scope), timeout_s=self.settings.stage_timeout_s),
                history=await self.history.get(session_key(tenant_id, request.Id)),
                embed=self.embed,
                whole_telemetry=scope.telemetry is not None,
                telemetry_source=self._source(scope),
            )
            async for event in self._diagnose(ctx, session_key(tenant_id, request.Id)):
                yield event
        except (GeneratorExit, BaseException) as err:
            if isinstance(err, StageError) and err.code in SLOW and ctx is not None:
                out_of_time = err  # released below, outside this handler
            elif isinstance(err, StageError):
                log.warning("run %s failed in a stage: %s", run_id, err.code)
                rec.finish("FAILED", release_outcome="FAILED", error_code=err.code, error_message=err.message)
                yield FailureEvent(error_code=err.code, message=err.message)
                yield DoneEvent(outcome="FAILED")
            elif isinstance(err, Exception):
                log.exception("run %s failed", run_id)
                rec.finish("FAILED", release_outcome="FAILED", error_code="INTERNAL", error_message=str(err))
                yield FailureEvent(error_code="INTERNAL", message="the diagnosis failed; see the run's trace")
                yield DoneEvent(outcome="FAILED")
            else:  # cancelled, or the client went away and the stream was closed
                rec.finish("ABORTED", error_code="CLIENT_DISCONNECTED", error_message="the client went away")
                raise
        if out_of_time is not None and ctx is not None:
            async for event in self._out_of_time(ctx, out_of_time, session_key(tenant_id, request.Id)):
                yield event

    async def _without_model(self, rec: RunRecorder) -> AsyncGenerator[SseEvent, None]:
        yield StatusEvent(code="ROUTING", detail="routing the question")
        rec.timeline("ROUTING", "ROUTING_ATTEMPT", None, router="none")
        rec.timeline("ROUTING", "ROUTING_DECISION", "NO_MODEL", intent=None, reason="no model configured")
        rec.timeline("RELEASE", "RELEASE_DECISION", "SUCCESS", content_type="CHAT_ANSWER")
        yield ContentEvent(content_type="CHAT_ANSWER", payload=ChatAnswerPayload(text=SKELETON_ANSWER))
        rec.finish("SUCCEEDED", release_outcome="SUCCESS", content_type="CHAT_ANSWER", answer=SKELETON_ANSWER)
        yield DoneEvent(outcome="SUCCESS")

    def _check_deadline(self, ctx: RunContext) -> None:
        if time.time() - ctx.recorder.started_at > self.settings.run_timeout_s:
            raise StageError("RUN_TIMEOUT", f"the run took longer than {self.settings.run_timeout_s:.0f}s")

    async def _diagnose(self, ctx: RunContext, session: SessionKey) -> AsyncGenerator[SseEvent, None]:
        rec = ctx.recorder
        yield StatusEvent(code="ROUTING", detail="routing the question")
        decision = await route(ctx, self.exemplars)
        if decision.intent != "DIAGNOSIS":
            text = decision.answer.strip() or decision.reason or "OK"
            rec.timeline("RELEASE", "RELEASE_DECISION", "SUCCESS", content_type="CHAT_ANSWER")
            yield ContentEvent(content_type="CHAT_ANSWER", payload=ChatAnswerPayload(text=text))
            rec.finish(
                "SUCCEEDED", intent=decision.intent, release_outcome="SUCCESS", content_type="CHAT_ANSWER", answer=text
            )
            await self.history.add(session, ctx.question, text)
            yield DoneEvent(outcome="SUCCESS")
            return

        self._check_deadline(ctx)
        if self.settings.playbook:
            # The cluster first: an SRE looks at the pod before choosing a runbook; what it finds decides
            # the plan (harness/stages/planner.py) and, where an analyzer names the cause, the answer.
            async for found in investigate_cluster(ctx):
                yield found
        yield StatusEvent(code="PLANNING", detail="planning the diagnosis")
        planner_plan = await plan(ctx, self.domains, self.skills, None)
        skill = self.skills.get(planner_plan.selected_skill or "")
        playbook = list(skill.steps) if skill is not None and skill.steps else list(DEFAULT_STEPS)
        constructed = self.settings.grounding == "constructed"

        retry: RetryContext | None = None
        release: Release | None = None
        evaluation: dict[str, Any] = {}
        for round_no in range(1, self.settings.max_rounds + 1):
            self._check_deadline(ctx)
            yield StatusEvent(code="DIAGNOSIS_RUNNING", detail=f"gathering evidence (round {round_no})")
            outcome: ExecutorOutcome | None = None
            async for item in execute(ctx, planner_plan, retry, playbook):
                if isinstance(item, ExecutorOutcome):
                    outcome = item
                else:
                    yield item
            assert outcome is not None
            guard_event = "EVIDENCE_GUARD_INITIAL" if round_no == 1 else "EVIDENCE_GUARD_RETRY"
            if outcome.evidence is None:
                guard = evidence_guard.GuardResult(
                    passed=False,
                    violations=[{"claim_id": "", "problem": f"executor output {outcome.parse_status.status}"}],
                )
            else:
                guard = evidence_guard.check(outcome.evidence, ctx.boundary.ledger, "drop")
            rec.timeline(
                "EVIDENCE", guard_event, "PASSED" if guard.passed else "FAILED", round=round_no, **guard.details()
            )
            evaluation = {
                "evidence_guard": guard.details(),
                "executor_output_parse_status": outcome.parse_status.model_dump(),
            }
            draft = outcome.evidence
            steps = [a.action_text for a in draft.recommended_actions] if draft else []
            decided = decided_by_evidence(ctx.boundary.ledger, ctx.scope, ctx.question)
            if (not guard.passed or guard.kept is None) and decided:
                # Evidence decides (DESIGN.md §8): an analyzer's fact is the answer whatever the model drafted.
                release = report(
                    NO_DRAFT, ctx.boundary.ledger, ctx.lang, None, ctx.scope, ctx.question, ctx.telemetry_source
                )
                break
            if not guard.passed or guard.kept is None:
                rejected = len({v["claim_id"] for v in guard.violations if v["claim_id"]})
                gaps = guard_gaps(ctx.lang, rejected, outcome.parse_status.status, draft.missing_info if draft else [])
                release = fallback(
                    "INSUFFICIENT_EVIDENCE", ctx.lang, [], None, gaps, steps, ctx.boundary.ledger, None, ctx.scope
                )
                break
            kept = ExecutorOutcome(outcome.raw_text, guard.kept, outcome.parse_status)
            yield StatusEvent(code="SAFETY_VALIDATING", detail=f"verifying the draft (round {round_no})")
            payload = verifier_input(ctx, kept, retry)
            verdict = await verify(ctx, payload, round_no, guard.kept if constructed else None)
            evaluation["verifier_evaluation"] = self._evaluation(verdict, round_no, payload.model_dump())
            if verdict.verdict == "PASS":
                release = report(
                    guard.kept, ctx.boundary.ledger, ctx.lang, verdict, ctx.scope, ctx.question, ctx.telemetry_source
                )
                break
            rejected = verdict.verdict == "REJECT"
            if not rejected and round_no < self.settings.max_rounds:
                retry = retry_context(verdict, round_no, ctx.lang)
                rec.timeline("RETRY", "RETRY_SCHEDULED", None, **retry.model_dump())
                continue
            if decided:
                # The analyzers' fact stands on the tools' output; the verdict only takes out the model's
                # findings it did not find supported.
                release = report(
                    guard.kept, ctx.boundary.ledger, ctx.lang, verdict, ctx.scope, ctx.question, ctx.telemetry_source
                )
                break
            # A REJECT (never overruled) or a last round still LOW_CONFID: the fallback of that kind; only a
            # low-confidence answer cites the draft's backed claims.
            release = fallback(
                "INSUFFICIENT_EVIDENCE" if rejected else "LOW_CONFIDENCE",
                ctx.lang,
                guard.kept.claims,
                verdict,
                fallback_gaps(verdict, ctx.question, ctx.lang),
                steps,
                ctx.boundary.ledger,
                None if rejected else guard.kept,
                ctx.scope,
            )
            break
        assert release is not None
        async for event in self._release(ctx, release, evaluation, session):
            yield event

    async def _out_of_time(
        self, ctx: RunContext, err: StageError, session: SessionKey
    ) -> AsyncGenerator[SseEvent, None]:
        """Slowness is not a failure: what the tools established is released, labelled as such."""
        rec = ctx.recorder
        log.warning("run %s ran out of time (%s): releasing what the tools measured", rec.run_id, err.code)
        rec.timeline("RELEASE", "RUN_OUT_OF_TIME", None, error_code=err.code, message=err.message)
        released = False
        try:
            gaps = [OUT_OF_TIME[ctx.lang]]
            release = fallback("MODEL_TIMEOUT", ctx.lang, [], None, gaps, [], ctx.boundary.ledger, None, ctx.scope)
            async for event in self._release(ctx, release, {}, session):
                released = released or event.event == "content"
                yield event
        except Exception as failed:  # the fallback itself broke: the run still ends, once, with done
            log.exception("run %s: no release after running out of time", rec.run_id)
            if not released:
                rec.finish("FAILED", release_outcome="FAILED", error_code=err.code, error_message=str(failed))
                yield FailureEvent(error_code=err.code, message=err.message)
            yield DoneEvent(outcome="FALLBACK" if released else "FAILED")
        except BaseException:  # the client went away while it was sent
            if not rec.finished:
                rec.finish("ABORTED", error_code="CLIENT_DISCONNECTED", error_message="the client went away")
            raise

    async def _release(
        self, ctx: RunContext, release: Release, evaluation: dict[str, Any], session: SessionKey
    ) -> AsyncGenerator[SseEvent, None]:
        rec = ctx.recorder
        rec.timeline(
            "RELEASE",
            "RELEASE_DECISION",
            release.outcome,
            content_type=release.content_type,
            release_outcome=release.outcome,
        )
        yield ContentEvent(content_type=release.content_type, payload=release.payload)
        rec.finish(
            "SUCCEEDED" if release.outcome == "SUCCESS" else "FALLBACK",
            intent="DIAGNOSIS",
            release_outcome=release.outcome,
            content_type=release.content_type,
            answer=release.answer,
            conclusion=release.conclusion,
            self_evaluation=evaluation,
        )
        await self.history.add(session, ctx.question, release.answer)
        yield DoneEvent(outcome=release.outcome)

    @staticmethod
    def _evaluation(verdict: VerifierOutput, round_no: int, payload: dict[str, Any]) -> dict[str, Any]:
        return VerifierEvaluation(
            verdict=verdict.verdict,
            groundedness_score=verdict.groundedness_score,
            critical_fact_count=verdict.critical_fact_count,
            facts_checked=verdict.facts_checked,
            rationale=verdict.rationale,
            round=round_no,
            executor_output_parse_status=payload["executor_output_parse_status"],
            executor_structured_output=payload["executor_structured_output"],
            tool_trace_summary=payload["tool_trace_summary"],
        ).model_dump()
