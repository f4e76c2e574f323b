"""The record of every benchmark run: one line per run in ``benchmarks/results/history.jsonl``.

``benchmarks/results/*.json`` holds the current run of each benchmark (what the README and docs
render); a run it replaces survives here as a row — benchmark, commit, date, command and its headline
figures (the numbers of its ``summary``, or of each run's or day's summary where a file holds several),
never its cases. A file without its own commit (the oldest runs) takes the one in its name; the benchmark is the
script its command ran.

    python benchmarks/results_history.py FILE...   # append one row per results file
    python benchmarks/results_history.py --current # a row for each current results file not yet recorded
                                                   # (``make readme-tables`` runs it)
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

HISTORY = Path(__file__).resolve().parent / "results" / "history.jsonl"
_COMMIT_IN_NAME = re.compile(r"_([0-9a-f]{7,12})(?:_|\.json$)")
_SCRIPT = re.compile(r"benchmarks/(\w+)\.py")
_SUMMARY_KEYS = ("summary", "tools_only", "defaults")


def _numbers(value: Any, depth: int = 2) -> Any:
    """The numeric leaves of a summary (nested at most ``depth`` deep), everything else left out."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, dict) and depth > 0:
        kept = {k: _numbers(v, depth - 1) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, {})} or None
    return None


def headline(data: dict[str, Any]) -> dict[str, Any]:
    """The figures a reader charts: each summary-like block of the file, of each run or of each day."""
    out: dict[str, Any] = {}
    for key in _SUMMARY_KEYS:
        if key in data and (figures := _numbers(data[key])):
            out[key] = figures
    for group in ("runs", "days"):
        parts = data.get(group)
        for name, part in parts.items() if isinstance(parts, dict) else ():
            if isinstance(part, dict) and (figures := headline(part)):
                out[f"{group[:-1]} {name}"] = figures
    return out


def _first(data: dict[str, Any], key: str) -> Any:
    if data.get(key):
        return data[key]
    runs = data.get("runs")
    for part in runs.values() if isinstance(runs, dict) else ():
        if isinstance(part, dict) and part.get(key):
            return part[key]
    return None


def row(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    named = _COMMIT_IN_NAME.search(path.name)
    command = _first(data, "command")
    script = _SCRIPT.search(command or "")
    return {
        "benchmark": script.group(1) if script else path.name.removesuffix(".json"),
        "file": path.name,
        "commit": _first(data, "commit") or (named.group(1) if named else None),
        "date": _first(data, "date"),
        "command": command,
        "headline": headline(data),
    }


def append(paths: list[Path], history: Path = HISTORY) -> int:
    """One row per file, oldest run first."""
    rows = sorted((row(p) for p in paths), key=lambda r: r["date"] or "")
    with history.open("a", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    return len(rows)


def recorded(history: Path = HISTORY) -> set[tuple[str, str | None, str | None]]:
    if not history.exists():
        return set()
    rows = (json.loads(line) for line in history.read_text(encoding="utf-8").splitlines() if line.strip())
    return {(r["file"], r["commit"], r["date"]) for r in rows}


def record_current(results: Path = HISTORY.parent, history: Path = HISTORY) -> int:
    """A row for each current results file whose run (file, commit, date) the history lacks: rendering
    the docs records every run it shows, before a later run replaces it."""
    known = recorded(history)
    new = []
    for path in sorted(results.glob("*.json")):
        r = row(path)
        if (r["file"], r["commit"], r["date"]) not in known:
            new.append(path)
    return append(new, history) if new else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--current", action="store_true", help="record the current results files' runs")
    args = parser.parse_args()
    added = (record_current() if args.current else 0) + (append(args.files) if args.files else 0)
    print(f"appended {added} rows to {HISTORY}")


if __name__ == "__main__":
    main()
