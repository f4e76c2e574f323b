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


def test_every_results_file_is_rendered_and_stamped() -> None:
    """A results file no README block renders is a number nobody sees; one without its commit, date
    and command cannot be traced back to the code that made it."""
    from benchmarks.render_readme import BLOCKS

    rendered = {file for file, _ in BLOCKS.values()}
    assert {p.name for p in RESULTS.glob("*.json")} == rendered
    for file in rendered:
        data = json.loads((RESULTS / file).read_text(encoding="utf-8"))
        if file == "diagnosis_quality.json":
            entries = list(data["models"].values())
        elif file == "diagnosis_correctness.json":
            entries = list(data["runs"].values())
        elif file == "retrieval.json":
            entries = list(data.values())
        else:
            entries = [data]  # the other files are stamped once; these three per model and per set or split
        for entry in entries:
            assert entry.get("commit") and entry.get("command"), file


def test_a_changed_number_changes_the_readme() -> None:
    """The check can fail: the same README against a results file with one number moved."""
    from benchmarks import render_readme

    current = README.read_text(encoding="utf-8")
    data = json.loads((RESULTS / "audit.json").read_text(encoding="utf-8"))
    data["events_per_s"] += 1000
    block = render_readme.audit(data)
    assert block not in current and render_readme.audit(json.loads((RESULTS / "audit.json").read_text())) in current
