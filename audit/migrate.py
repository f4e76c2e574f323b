"""Apply the audit schema's Alembic migrations to a database URL."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

from audit.db import make_engine

MIGRATIONS = Path(__file__).with_name("migrations")
log = logging.getLogger(__name__)


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head", engine: Engine | None = None) -> None:
    """Bring the database at ``url`` to ``revision`` (idempotent)."""
    cfg = alembic_config(url)
    own = engine is None
    engine = engine or make_engine(url)
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
    finally:
        if own:
            engine.dispose()
    log.info("audit schema at %s", revision)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
