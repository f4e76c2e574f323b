"""What a results file says made it: the commit is HEAD's here, the named one where the tree travels
without its history (the lent GPU machine), and "unknown" rather than a crash where git is absent."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from deployments import provenance


def test_the_commit_is_heads_in_a_checkout() -> None:
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=provenance.ROOT, capture_output=True, text=True
    ).stdout.strip()
    assert provenance.commit().removesuffix("-dirty") == head


def test_a_named_commit_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYDIAG_COMMIT", "0123456789ab")
    assert provenance.stamp()["commit"] == "0123456789ab"


def test_a_tree_without_history_says_unknown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RAYDIAG_COMMIT", raising=False)
    monkeypatch.setattr(provenance, "ROOT", tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert provenance.commit() == "unknown"


def test_a_machine_without_git_says_unknown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RAYDIAG_COMMIT", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on it
    assert provenance.commit() == "unknown"
