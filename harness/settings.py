"""Harness settings: per-stage budgets of the diagnosis pipeline."""

from pydantic import BaseModel, ConfigDict, Field


class HarnessSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_tool_steps: int = Field(default=6, gt=0, le=50, description="Most executor model rounds per run.")
    max_rounds: int = Field(default=2, ge=1, le=5, description="Verifier rounds (1 + evidence retries).")
    max_tokens_per_call: int = Field(default=1024, gt=0, description="Output token cap for one model call.")
    stage_timeout_s: float = Field(default=120.0, gt=0, description="Wall-clock limit of one stage.")
    run_timeout_s: float = Field(default=600.0, gt=0, description="Wall-clock limit of a whole run.")
    history_token_budget: int = Field(
        default=1500, ge=0, description="Tokens of earlier turns of the session shown to the planner/executor."
    )
