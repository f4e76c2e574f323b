"""Audit settings: where the audit trail is written and how the writer batches."""

from pydantic import BaseModel, ConfigDict, Field


class AuditSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    db_url: str = Field(
        default="sqlite:///var/raydiag.db",
        description="SQLAlchemy URL of the audit database: sqlite:///path (embedded default) or "
        "mysql+pymysql://user:pass@host:3306/db. Overridden by RAYDIAG_DB_URL.",
    )
    apply_migrations: bool = Field(default=True, description="Apply Alembic migrations when the audit writer starts.")
    batch_size: int = Field(default=500, gt=0, le=10_000, description="Most events written per transaction.")
    flush_interval_s: float = Field(
        default=0.2, gt=0, le=60, description="Longest time an event waits in the queue before a write."
    )
    queue_bound: int = Field(
        default=100_000,
        gt=0,
        description="Events held in memory; beyond this they go to the spill file until the database is back.",
    )
    spill_path: str = Field(
        default="var/audit-spill.jsonl", description="Append-only file for events beyond queue_bound."
    )
    dead_letter_path: str | None = Field(
        default=None,
        description="Records the database rejects on their own (while it answers) go here with the error, "
        "instead of blocking later writes. Default: beside spill_path, <stem>.dead-letter.jsonl.",
    )
    poison_after_attempts: int = Field(
        default=3,
        ge=1,
        description="Failed attempts of one batch before it is written record by record to find a poison record.",
    )
    handoff_confirm_s: float = Field(
        default=5.0,
        gt=0,
        description="How long a producer's hand-off waits for its records to commit before the writer "
        "spills them durably and confirms anyway (the producer keeps a batch until it is confirmed).",
    )
    retry_initial_s: float = Field(default=0.1, gt=0, description="First back-off after a failed write.")
    retry_max_s: float = Field(default=5.0, gt=0, description="Longest back-off between write attempts.")
    reorder_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="How long a run's later events wait for a missing earlier sequence number.",
    )
