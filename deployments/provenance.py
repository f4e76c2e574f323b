"""What every results file records about how it was made: the commit, the date and the command
(benchmarks/ and `raydiag eval` write it)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def package_version() -> str:
    """raydiag's installed version (the OpenAPI description, MCP's serverInfo, raydiag_build_info)."""
    from importlib import metadata

    try:
        return metadata.version("raydiag")
    except metadata.PackageNotFoundError:  # run from a checkout that was not installed
        return "0.0.0"


def commit() -> str:
    """HEAD's commit, marked ``-dirty`` when the code differs from it. Results files do not count:
    a chain of benchmarks rewrites them one after the other, and the code that made each is HEAD's.

    ``RAYDIAG_COMMIT`` names it where the tree has no git history: the lent GPU machine gets a copy
    of the working tree without ``.git`` (benchmarks/gpu_checks.sh is started with it set)."""
    named = os.environ.get("RAYDIAG_COMMIT", "").strip()
    if named:
        return named
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
    except FileNotFoundError:  # no git on this machine
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def stamp() -> dict[str, str]:
    argv = [Path(sys.argv[0]).as_posix(), *sys.argv[1:]]
    rel = [a.replace(str(ROOT) + "/", "") for a in argv]
    return {
        "commit": commit(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python " + " ".join(rel),
    }
