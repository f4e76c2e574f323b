from __future__ import annotations

from pathlib import Path

from rag.chunking import chunk_document, chunk_file, doc_id_for
from tests.conftest import REPO

EN = (
    """# Disk full

## Symptoms

Writes fail with No space left on device. Databases stop.

## Diagnosis

Run df -h. Then du from the mount point. """
    + "Check inodes too. " * 80
)

ZH = (
    """# 连接池耗尽

## 现象

请求超时。连接池 active 等于 total。

## 处置

"""
    + "先终止阻塞查询。再修复泄漏。" * 60
)


def test_english_chunks_follow_headings_and_budget() -> None:
    chunks = chunk_document("disk-full", EN, domain="disk", source="x", max_chars=300)
    assert [c.key for c in chunks] == [f"disk-full#chunk-{i}" for i in range(len(chunks))]
    assert chunks[0].heading == "Disk full > Symptoms" and "No space left" in chunks[0].text
    assert all(len(c.text) <= 300 for c in chunks)
    assert {c.heading for c in chunks[1:]} == {"Disk full > Diagnosis"} and len(chunks) > 3
    # The document title, then the heading path (which starts with the H1 again), then the text.
    assert chunks[0].embed_text.startswith("Disk full > Disk full > Symptoms\nWrites fail with No space left")


def test_chinese_sentences_split_without_spaces() -> None:
    chunks = chunk_document("pool", ZH, domain="database", source="x", max_chars=200)
    long_ones = [c for c in chunks if c.heading.endswith("处置")]
    assert len(long_ones) > 3 and all(len(c.text) <= 200 for c in long_ones)
    assert all(c.text.endswith("。") for c in long_ones[:-1])  # cut at sentence ends
    assert "".join(c.text for c in long_ones) == "先终止阻塞查询。再修复泄漏。" * 60


def test_code_blocks_are_not_headings_and_front_matter_is_read(tmp_path: Path) -> None:
    doc = tmp_path / "My Runbook.md"
    doc.write_text("---\ntitle: T\ndomain: jvm\n---\n# H\n\n```\n# not a heading\n```\n\ntext\n")
    chunks = chunk_file(doc)
    assert doc_id_for(doc) == "my-runbook" and chunks[0].domain == "jvm" and chunks[0].title == "T"
    assert "# not a heading" in chunks[0].text and chunks[0].heading == "H"


def test_bundled_knowledge_base_has_both_languages() -> None:
    files = sorted((REPO / "knowledge" / "runbooks").rglob("*.md"))
    assert len(files) >= 30
    langs = [f.read_text(encoding="utf-8").split("lang: ")[1][:2] for f in files]
    assert langs.count("zh") >= 10 and langs.count("en") >= 10
