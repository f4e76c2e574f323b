"""README tables rendered from the results files match them (benchmarks/render_readme.py)."""

from __future__ import annotations

import json

from benchmarks.render_readme import README, RESULTS, diagnosis_quality, render


def test_rendered_blocks_match_the_results_files() -> None:
    current = README.read_text(encoding="utf-8")
    assert render(current) == current, "run `python benchmarks/render_readme.py` after a benchmark"


def test_the_diagnosis_table_carries_the_files_numbers() -> None:
    data = json.loads((RESULTS / "diagnosis_quality.json").read_text(encoding="utf-8"))
    default = data["models"][data["default_model"]]
    table = diagnosis_quality(data)
    first_row = next(line for line in table.splitlines() if line.startswith("| report_rate"))
    assert first_row.strip(" |").split(" | ")[1] == str(default["report_rate"])
    assert default["commit"] in table
