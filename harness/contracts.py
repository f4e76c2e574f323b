"""Pydantic models of every contract in the seed documents.

Field names follow ../shared/seeds/ exactly (chat-agent-data-contracts.md, the e2e walkthrough),
so a payload produced or stored here can be compared with the seeds' own JSON examples.
Models that describe model output are lenient about extra keys (a model may add some) but strict
about the types of the keys the contract names; models that we emit ourselves forbid extras.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Retrieval (rag_lookup_v1): the result types belong to rag/, which knows nothing of the agent; they
# are re-exported here with the seed's other contracts.
from rag.results import AttemptName as AttemptName
from rag.results import L0Hints as L0Hints
from rag.results import RelevanceLevel as RelevanceLevel
from rag.results import RetrievalAttempt as RetrievalAttempt
from rag.results import RetrievalDetails as RetrievalDetails

MAX_QUESTION_CHARS = 8000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


# ----------------------------------------------------------------- request / workflow input


class ChatRequest(_Strict):
    """Body of ``POST /api/chat`` (seed e2e §4.2: ``Id`` is the session, ``Question`` the turn)."""

    Id: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:\-]+$")] = Field(
        description="Session id; reuse it for follow-up questions in the same conversation."
    )
    Question: str = Field(description="The question of this turn, Chinese or English.")

    @field_validator("Question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Question must not be empty")
        if len(value) > MAX_QUESTION_CHARS:
            raise ValueError(f"Question is {len(value)} characters; the limit is {MAX_QUESTION_CHARS}")
        return value


class RetryContext(_Strict):
    """Seed 000 §6: built after LOW_CONFID to make the executor gather the missing evidence only."""

    round: int = Field(ge=1)
    missing_evidence_facts: list[str]
    instruction: str


class WorkflowInput(_Strict):
    """Seed 000 §1."""

    question: str
    retry_context: RetryContext | None = None


# ----------------------------------------------------------------------------- planner


class PlannerInput(_Strict):
    """Seed 000 §2.1."""

    question: str
    history: list[dict[str, Any]] = Field(default_factory=list)
    available_knowledge_domains: str = ""
    skill_catalog: dict[str, str] = Field(default_factory=dict)
    retry_context: RetryContext | None = None


class PlannerPlan(_Lenient):
    """Seed 000 §2.2, runtime key ``planner_plan``."""

    selected_skill: str | None = None
    selection_reason: str
    plan: list[str] = Field(min_length=1)
    reasoning: str


# ----------------------------------------------------------------------------- executor

SupportLevel = Literal["direct", "indirect", "added"]  # added: the system, not the model, put it there


class EvidenceBinding(_Lenient):
    source_type: str
    source_id: str
    tool_name: str
    source_invocation_ids: list[str | int] = Field(default_factory=list)
    evidence_excerpt: str


class Claim(_Lenient):
    claim_id: str
    claim_type: str
    claim_text: str
    support_level: SupportLevel
    evidence_bindings: list[EvidenceBinding] = Field(min_length=1)


class Hypothesis(_Lenient):
    hypothesis_text: str
    basis: str
    needed_evidence: list[str] = Field(default_factory=list)


class RecommendedAction(_Lenient):
    action_text: str
    reason: str
    evidence_bindings: list[EvidenceBinding] = Field(default_factory=list)


RootCauseCategory = Literal["cpu", "memory", "network", "disk", "code", "config", "dependency", "unknown"]
ROOT_CAUSE_CATEGORIES: tuple[str, ...] = ("cpu", "memory", "network", "disk", "code", "config", "dependency", "unknown")


class RootCause(_Lenient):
    """A machine-readable root-cause candidate (DESIGN.md §8): the RCA evaluation, alert integrations and
    the console read these. ``claim_ids`` are the released findings it rests on; ``indirect`` when none of
    them is a root_cause finding (a lower-ranked candidate resting on a symptom); ``cause`` is the model's
    short sentence of what went wrong; ``added_by`` names what the system added it from (``ranking``: the
    anomaly ranking's next suspect, not the model's pick), empty for the model's own."""

    component: str = Field(max_length=120)
    category: RootCauseCategory = "unknown"
    confidence: Literal["high", "medium", "low"] = "medium"
    claim_ids: list[str] = Field(default_factory=list)
    indirect: bool = False
    cause: str = Field(default="", max_length=200)
    added_by: str = ""


class ExecutorEvidence(_Lenient):
    """Seed 000 §3.2, ``executor_evidence_v1``; runtime key ``executor_feedback``. ``root_causes`` is
    raydiag's addition (DESIGN.md §8), most likely first."""

    answer_version: Literal["executor_evidence_v1"] = "executor_evidence_v1"
    diagnosis_summary: str
    claims: list[Claim]
    hypotheses: list[Hypothesis] = Field(default_factory=list)
    recommended_actions: list[RecommendedAction] = Field(default_factory=list)
    missing_info: list[str] = Field(default_factory=list)
    user_facing_answer: str
    root_causes: list[RootCause] = Field(default_factory=list)


ParseStatus = Literal["valid", "missing", "malformed"]


class ExecutorOutputParseStatus(_Strict):
    status: ParseStatus
    detail: str


# ----------------------------------------------------------------------------- verifier


class ToolTraceSummaryItem(_Strict):
    """Seed 000 §4.2: one evidence index entry built from real ``tool_invocation`` rows."""

    trace_ref: str
    tool_name: str
    success: bool
    input_summary: str
    output_summary: str
    evidence_level: Literal["direct", "indirect", "none"]
    topic_domain: str
    source_invocation_ids: list[str | int]
    invocation_count: int = Field(ge=0)
    failed_invocation_count: int = Field(ge=0)
    no_hit_invocation_count: int = Field(ge=0)
    query_samples: list[str] = Field(default_factory=list)
    retrieval_layers: list[str] = Field(default_factory=list)
    relevance_levels: list[str] = Field(default_factory=list)
    source_documents: list[str] = Field(default_factory=list)


class VerifierInput(_Strict):
    """Seed 000 §4.1."""

    original_query: str
    executor_final_answer: str
    executor_structured_output: dict[str, Any] | None
    executor_output_parse_status: ExecutorOutputParseStatus
    tool_trace_summary: list[ToolTraceSummaryItem]
    retry_context: RetryContext | None = None


Verdict = Literal["PASS", "LOW_CONFID", "REJECT"]
Verification = Literal["direct_evidence", "indirect_support", "no_evidence", "contradicted"]


class EvidenceRef(_Lenient):
    trace_ref: str
    tool_name: str
    topic_domain: str = ""
    source_invocation_ids: list[str | int] = Field(default_factory=list)
    note: str = ""


class FactChecked(_Lenient):
    fact: str
    is_critical: bool
    verification: Verification
    detail: str = ""
    evidence_refs: list[EvidenceRef] = Field(default_factory=list)


class VerifierOutput(_Lenient):
    """Seed 000 §4.3, runtime key ``verifier_output``."""

    verdict: Verdict
    groundedness_score: float = Field(ge=0.0, le=1.0)
    critical_fact_count: int = Field(ge=0)
    facts_checked: list[FactChecked] = Field(default_factory=list)
    rationale: str


class VerifierDecision(_Strict):
    """Seed 000 §5 (the internal record keeps the seed's camelCase names)."""

    verdict: Verdict
    groundednessScore: float
    criticalFactCount: int
    factsChecked: list[FactChecked]
    rationale: str
    round: int = Field(ge=1)

    @classmethod
    def from_output(cls, output: VerifierOutput, round_: int) -> VerifierDecision:
        return cls(
            verdict=output.verdict,
            groundednessScore=output.groundedness_score,
            criticalFactCount=output.critical_fact_count,
            factsChecked=output.facts_checked,
            rationale=output.rationale,
            round=round_,
        )


class VerifierEvaluation(_Strict):
    """Seed 000 §7: stored under ``diagnosis_run.self_evaluation.verifier_evaluation``."""

    verdict: Verdict
    groundedness_score: float
    critical_fact_count: int
    facts_checked: list[FactChecked]
    rationale: str
    round: int
    traceability_version: Literal["v1"] = "v1"
    executor_output_parse_status: ExecutorOutputParseStatus
    executor_structured_output: dict[str, Any] | None
    tool_trace_summary: list[ToolTraceSummaryItem]


# --------------------------------------------------------------------------------- release


class Conclusion(_Strict):
    """``written_by``: ``model`` when the text is the model's (as written, or as the system frames it);
    ``template`` when the system composed it from the analyzers' leading candidate cause, because the
    model's sentence did not name that cause and its component (DESIGN.md §8)."""

    text: str
    based_on_analysis_ids: list[str] = Field(default_factory=list)
    written_by: Literal["model", "template"] = "model"


AnalysisKind = Literal["finding", "guidance", "hypothesis"]


class AnalysisItem(_Strict):
    """``kind`` (DESIGN.md §8): a *finding* is what a tool measured (the tool's own line, verbatim, that
    the model cited or the system added); *guidance* is a runbook's own sentence, quoted, from ``source``
    (``docId#chunk-n``); a *hypothesis* is what the evidence suggests but does not show, with ``needs``
    (what would confirm it). ``added`` marks an item the system added, not the model."""

    id: str
    text: str
    status: Literal["NORMAL", "WARNING", "CRITICAL"] = "NORMAL"
    evidence_keys: list[str] = Field(default_factory=list)
    kind: AnalysisKind = "finding"
    source: str | None = None
    needs: str | None = None
    added: bool = False


class Limitations(_Strict):
    scope: str
    missing_info: list[str] = Field(default_factory=list)


class Report(_Strict):
    conclusion: Conclusion
    analysis: list[AnalysisItem]
    action_plan: list[str] = Field(default_factory=list)
    recommendations: list[str] = Field(default_factory=list)
    limitations: Limitations


class Reference(_Strict):
    source_type: Literal["RAG", "LOGS", "METRICS", "SKILL", "TOOL", "K8S"]
    source: str
    scope: str
    tool_call_id: str | None = None
    excerpt: str | None = None
    url: str | None = None  # a knowledge-base passage's page, to read it whole


class DiagnosisReportPayload(_Strict):
    """Seed e2e §7.1: the payload of a ``content`` event with content_type DIAGNOSIS_REPORT."""

    report: Report
    references: list[Reference]
    root_causes: list[RootCause] = Field(default_factory=list, max_length=5)
    outcome: Literal["SUCCESS"] = "SUCCESS"


# TOOL_ERROR: no evidence tool answered (a search error, Prometheus down): not a finding about the
# incident, so it is not reported as missing evidence. MODEL_TIMEOUT: the model did not finish within the
# run's budget; what the tools had established is released instead of no answer.
FallbackType = Literal["INSUFFICIENT_EVIDENCE", "LOW_CONFIDENCE", "GUARD_FAILED", "TOOL_ERROR", "MODEL_TIMEOUT"]


class SafeFallbackPayload(_Strict):
    """The seed's reject / low-confidence templates (seed 000 §8) as structured data plus text."""

    fallback_type: FallbackType
    text: str
    confirmed: list[str] = Field(default_factory=list)
    gaps: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    references: list[Reference] = Field(default_factory=list)
    # What the tools returned about the asked components, verbatim with its evidence key: measured, not
    # analysed (no model wrote it, no verifier checked a reading of it).
    measured: list[str] = Field(default_factory=list)
    # Only the anomaly ranking's suspects (``added_by: ranking``, low confidence), and only when the question
    # is about the whole replayed system: what the tools measured, said as unconfirmed; never a model's pick.
    root_causes: list[RootCause] = Field(default_factory=list)
    outcome: Literal["FALLBACK"] = "FALLBACK"


class ChatAnswerPayload(_Strict):
    text: str


# ------------------------------------------------------------------------------ SSE events

StatusCode = Literal["ROUTING", "PLANNING", "DIAGNOSIS_RUNNING", "SAFETY_VALIDATING"]
ContentType = Literal["DIAGNOSIS_REPORT", "SAFE_FALLBACK", "CHAT_ANSWER"]
Outcome = Literal["SUCCESS", "FALLBACK", "FAILED"]


class MetadataEvent(_Strict):
    event: Literal["metadata"] = "metadata"
    session_id: str
    run_id: str


class StatusEvent(_Strict):
    event: Literal["status"] = "status"
    code: StatusCode
    detail: str = ""


class ContentEvent(_Strict):
    event: Literal["content"] = "content"
    content_type: ContentType
    payload: DiagnosisReportPayload | SafeFallbackPayload | ChatAnswerPayload

    @model_validator(mode="after")
    def _payload_matches_type(self) -> ContentEvent:
        expected = {
            "DIAGNOSIS_REPORT": DiagnosisReportPayload,
            "SAFE_FALLBACK": SafeFallbackPayload,
            "CHAT_ANSWER": ChatAnswerPayload,
        }[self.content_type]
        if not isinstance(self.payload, expected):
            raise ValueError(f"content_type {self.content_type} needs a {expected.__name__} payload")
        return self


class FailureEvent(_Strict):
    event: Literal["failure"] = "failure"
    error_code: str
    message: str


class DoneEvent(_Strict):
    event: Literal["done"] = "done"
    outcome: Outcome


SseEvent = Annotated[
    MetadataEvent | StatusEvent | ContentEvent | FailureEvent | DoneEvent,
    Field(discriminator="event"),
]


def event_data(event: BaseModel) -> dict[str, Any]:
    """The JSON body of an SSE event: every field but the discriminator, which is the SSE name."""
    return event.model_dump(mode="json", exclude={"event"})
