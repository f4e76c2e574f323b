"""Renders README tables from the results files, between ``<!-- name:begin -->`` and
``<!-- name:end -->`` markers, so a quoted number is the number in the file (tests/unit/test_readme.py
fails when they differ).

    python benchmarks/render_readme.py          # rewrite the README's rendered blocks
    python benchmarks/render_readme.py --check  # exit 1 if any block differs from its results file
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "results"


def _num(value: Any, fmt: str = "{}") -> str:
    return "—" if value is None else fmt.format(value)


def diagnosis_quality(data: dict[str, Any]) -> str:
    """One column per model, the default first; a subset run also shows the others on its questions."""
    models = data["models"]
    names = sorted(models, key=lambda n: (n != data.get("default_model"), n))
    columns: list[tuple[str, dict[str, Any]]] = []
    for name in names:
        entry = models[name]
        label = f"`{name}`" + (" (default)" if name == data.get("default_model") else "")
        if "subset_ids" in entry:
            label += f", {entry['questions']} of the questions"
        columns.append((label, entry))
        for other, figures in (entry.get("others_on_same_questions") or {}).items():
            columns.append((f"`{other}` on the same {entry['questions']}", figures))
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("report_rate (target ≥ 0.8)", lambda e: _num(e["report_rate"])),
        ("failed (target 0)", lambda e: _num(e["failed"])),
        ("off-topic answered as chat (target 1.0)", lambda e: _num(e["chat_rate_offtopic"])),
        ("grounded_rate (target 1.0)", lambda e: _num(e["grounded_rate"])),
        ("supported_rate (target ≥ 0.9)", lambda e: _num(e["supported_rate"])),
        ("decode, tok/s (same run)", lambda e: _num(e["decode_tok_per_s"])),
        ("ttr p50 / p95, s", lambda e: f"{_num(e['ttr_p50_s'])} / {_num(e['ttr_p95_s'])}"),
        ("cost: ttr p50 × decode (target ≤ 450)", lambda e: _num(e["cost_tokens"])),
        (
            "output tokens p50 / model calls p50",
            lambda e: f"{_num(e['output_tokens_p50'])} / {_num(e['model_calls_p50'])}",
        ),
        ("LLM replica peak RSS, GiB", lambda e: _num(e.get("llm_replica_peak_rss_gib"))),
    ]
    lines = ["| | " + " | ".join(label for label, _ in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += ["| " + name + " | " + " | ".join(cell(e) for _, e in columns) + " |" for name, cell in rows]
    stamps = [f"`{name}`: commit {models[name]['commit']}, `{models[name]['command']}`" for name in names]
    return "\n".join(lines) + "\n\nMeasured by " + "; ".join(stamps) + "."


BLOCKS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "diagnosis_quality": ("diagnosis_quality.json", diagnosis_quality),
}


def render(readme: str) -> str:
    for name, (file, fn) in BLOCKS.items():
        data = json.loads((RESULTS / file).read_text(encoding="utf-8"))
        pattern = re.compile(rf"(<!-- {name}:begin -->\n)(?:.*?\n)?(<!-- {name}:end -->)", re.S)
        if not pattern.search(readme):
            raise SystemExit(f"README.md has no <!-- {name}:begin --> … <!-- {name}:end --> block")
        text = fn(data)
        readme = pattern.sub(lambda m, text=text: m.group(1) + text + "\n" + m.group(2), readme)
    return readme


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    current = README.read_text(encoding="utf-8")
    rendered = render(current)
    if args.check:
        sys.exit(0 if rendered == current else 1)
    README.write_text(rendered, encoding="utf-8")


if __name__ == "__main__":
    main()
