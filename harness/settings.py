"""Harness settings: per-stage budgets and strategies of the diagnosis pipeline."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class StageTokens(BaseModel):
    """Output token caps per stage: no stage may run into the run timeout (each schema is bounded too)."""

    model_config = ConfigDict(extra="forbid")

    router: int = Field(default=120, gt=0, description="The router's intent decision when rules cannot decide.")
    chat: int = Field(default=200, gt=0, description="A CHAT_ANSWER to a greeting or off-topic question.")
    planner: int = Field(default=220, gt=0, description="A plan when no skill fits the question.")
    executor_tools: int = Field(default=160, gt=0, description="A round in which the executor calls tools.")
    executor_answer: int = Field(default=700, gt=0, description="The executor's final, cited answer.")
    verifier: int = Field(default=320, gt=0, description="The verifier's verdict.")


class HarnessSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_tool_steps: int = Field(
        default=6,
        gt=0,
        le=50,
        description="Most executor model calls per round: tool-calling rounds plus the final answer (1: the "
        "model answers from the playbook's evidence at once).",
    )
    max_rounds: int = Field(default=2, ge=1, le=5, description="Verifier rounds (1 + evidence retries).")
    max_tokens_per_call: int = Field(default=1024, gt=0, description="Upper bound on any one model call's output.")
    stage_tokens: StageTokens = Field(default_factory=StageTokens, description="Output caps per stage.")
    stage_timeout_s: float = Field(default=120.0, gt=0, description="Wall-clock limit of one stage.")
    run_timeout_s: float = Field(default=600.0, gt=0, description="Wall-clock limit of a whole run.")
    history_token_budget: int = Field(
        default=1500, ge=0, description="Tokens of earlier turns of the session shown to the planner/executor."
    )
    routing: Literal["auto", "model"] = Field(
        default="auto",
        description="'auto': rules and exemplar similarity decide, the model only when they cannot; 'model': "
        "always the model.",
    )
    planning: Literal["auto", "model"] = Field(
        default="auto",
        description="'auto': a skill whose keywords the question matches gives the plan without a model call; "
        "'model': always the planner model.",
    )
    playbook: bool = Field(
        default=True, description="Run the selected skill's tool steps before the executor model's turn."
    )
    grounding: Literal["constructed", "model"] = Field(
        default="constructed",
        description="'constructed': the final answer cites evidence ids from a per-run enum and the system copies "
        "the excerpts (a model cannot cite what does not exist); 'model': the model writes executor_evidence_v1 "
        "bindings itself and the rule guard checks them (for engines that cannot constrain decoding).",
    )
    verifier_rules: bool = Field(
        default=True,
        description="Check a constructed draft's claims by rule first (their services, signals, numbers and "
        "quotes must occur in the cited evidence); the verifier model sees the draft only when some claim has "
        "nothing to check.",
    )
    verifier_min_similarity: float = Field(
        default=0.20,
        ge=0.0,
        le=1.0,
        description="A claim is unsupported when its text is further (cosine, the lookup's embedder) from every "
        "excerpt it cites than this, whatever key terms it shares with them: the lookup's lowest bar for a block "
        "related to a question at all (search.related). 0 turns the check off (claims with nothing to check go "
        "to the verifier model).",
    )
    max_evidence_spans: int = Field(default=14, gt=0, le=40, description="Evidence spans the final answer may cite.")
    repetition_penalty: float = Field(
        default=1.05, ge=1.0, le=2.0, description="Sampling penalty on repeated tokens (cuts loops in small models)."
    )

    def tokens(self, stage: str) -> int:
        return min(int(getattr(self.stage_tokens, stage)), self.max_tokens_per_call)
