"""Knowledge packs: what each declares, how its documents are read and cited, and the embedding cache
that keeps a second ingest from embedding them again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag.chunking import chunk_file
from rag.embedding_cache import CachedEmbedder
from rag.encoded import Encoded
from rag.ingest import pack_documents
from rag.markup import hugo_text
from rag.packs import PACKS_DIR, Pack, load_packs, loaded_packs, record_loaded, select_packs

HUGO = """---
title: 调试 Pod
---
<!--
title: Debug Pods
-->

<!-- body -->

<!--
## Debugging Pods
The English original.
-->
## 调试 Pod   {#debugging-pods}

一个 {{< glossary_tooltip text="Pod" term_id="pod" >}} 处于 Pending 状态。

{{< note >}}
调度器找不到合适的节点。
{{</ note >}}

{{< mermaid >}}
graph LR; a-->b
{{< /mermaid >}}

{{% heading "whatsnext" %}}
"""


def test_hugo_text_keeps_what_a_reader_sees() -> None:
    text = hugo_text(HUGO)
    assert "English original" not in text and "Debug Pods" not in text
    assert "## 调试 Pod\n" in text
    assert "一个 Pod 处于 Pending 状态。" in text
    assert "Note: \n调度器找不到合适的节点。" in text
    assert "graph LR" not in text and "{{" not in text
    assert "What's next" in text


def test_every_pack_says_where_it_came_from() -> None:
    packs = load_packs()
    assert {"runbooks", "kubernetes"} <= set(packs)
    for pack in packs.values():
        assert pack.repository and pack.commit and pack.license, pack.name
        assert (PACKS_DIR / pack.name / "SOURCE.md").is_file(), pack.name
        if pack.root.is_relative_to(PACKS_DIR):  # converted here: the upstream license travels with it
            assert (PACKS_DIR / pack.name / "LICENSE").is_file(), pack.name


def test_select_packs_by_name_and_set() -> None:
    packs = load_packs()
    assert [p.name for p in select_packs(["runbooks"], packs)] == ["runbooks"]
    assert {p.name for p in select_packs(["all"], packs)} == set(packs)
    assert {p.name for p in select_packs(["default"], packs)} == {n for n, p in packs.items() if p.default}
    with pytest.raises(KeyError, match="no knowledge pack 'nope'"):
        select_packs(["nope"], packs)


def _hugo_pack(root: Path) -> Pack:
    return Pack(
        name="kube",
        title="t",
        systems=("kubernetes",),
        langs=("zh",),
        repository="r",
        commit="c",
        license="CC-BY-4.0",
        default=True,
        root=root,
        markup="hugo",
        domain="kube",
        urls={"content/zh-cn/docs/": "https://kubernetes.io/zh-cn/docs/"},
    )


def test_a_pack_page_is_cited_by_its_public_address(tmp_path: Path) -> None:
    page = tmp_path / "content" / "zh-cn" / "docs" / "tasks" / "debug-pods.md"
    page.parent.mkdir(parents=True)
    page.write_text(HUGO, encoding="utf-8")
    (page.parent / "_index.md").write_text("# index\n", encoding="utf-8")
    pack = _hugo_pack(tmp_path)
    [doc] = pack_documents([pack])
    assert doc.path == page and doc.domain == "kube"
    assert doc.source == "https://kubernetes.io/zh-cn/docs/tasks/debug-pods/"
    chunks = chunk_file(doc.path, doc.domain, 1500, doc.text, doc.source)
    assert chunks[0].source == doc.source and chunks[0].title == "调试 Pod"
    assert all("English original" not in c.text for c in chunks)


def test_the_loaded_packs_are_recorded_beside_the_collection(tmp_path: Path) -> None:
    uri = str(tmp_path / "milvus.db")
    assert loaded_packs(uri, "k") == {}
    record_loaded(uri, "k", {"runbooks": {"documents": 31}})
    record_loaded(uri, "k", {"kubernetes": {"documents": 120}})
    assert sorted(loaded_packs(uri, "k")) == ["kubernetes", "runbooks"]
    assert loaded_packs(uri, "other") == {}


class CountingEmbedder:
    """A neighbour of the cache: deterministic vectors, and a count of the texts it was asked for."""

    dim = 4
    sparse = False

    def __init__(self) -> None:
        self.asked: list[str] = []

    def encode_sync(self, texts: list[str]) -> Encoded:
        self.asked += texts
        rows = [np.asarray([len(t), t.count("a"), 1.0, 0.5], dtype=np.float32) for t in texts]
        return Encoded(np.stack(rows))


def test_the_cache_embeds_each_text_once_per_model(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cache = CachedEmbedder(inner, "m1", tmp_path / "cache.sqlite")  # type: ignore[arg-type]
    first = cache.encode_sync(["alpha", "beta"])
    again = cache.encode_sync(["beta", "alpha", "gamma"])
    assert inner.asked == ["alpha", "beta", "gamma"]
    assert np.array_equal(again.dense[0], first.dense[1]) and np.array_equal(again.dense[1], first.dense[0])
    assert np.array_equal(again.dense[2], inner.encode_sync(["gamma"]).dense[0])
    assert (cache.hits, cache.misses) == (2, 3)
    cache.close()
    other = CachedEmbedder(inner, "m2", tmp_path / "cache.sqlite")  # type: ignore[arg-type]
    other.encode_sync(["alpha"])
    assert other.misses == 1  # another model's vectors are never returned


def _ingest(env: dict[str, str], config: Path) -> str:
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "cli.main", "--config", str(config), "ingest", "--pack", "tiny"]
    done = subprocess.run(cmd, cwd=PACKS_DIR.parents[1], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_pack_already_in_the_collection_is_not_ingested_again(tmp_path: Path) -> None:
    """The second `make run` re-reads a pack and finds it unchanged; a changed pack replaces what it had,
    a page it dropped included."""
    import os

    pack = tmp_path / "packs" / "tiny"
    (pack / "docs").mkdir(parents=True)
    (pack / "pack.yaml").write_text("name: tiny\nsystems: [tiny]\nrepository: r\ncommit: c\nlicense: MIT\n")
    (pack / "docs" / "a.md").write_text("# Disk full\n\nThe disk fills when logs are not rotated.\n")
    (pack / "docs" / "b.md").write_text("# Pool exhausted\n\nA slow query holds connections.\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"search:\n  milvus_uri: {tmp_path / 'k.db'}\n  embedding_cache: {tmp_path / 'cache.sqlite'}\n")
    env = {**os.environ, "RAYDIAG_PACKS_DIR": str(tmp_path / "packs")}
    first = _ingest(env, config)
    assert first.startswith("ingested 2 documents as 2 chunks") and "unchanged" not in first
    again = _ingest(env, config)
    assert again.startswith("ingested 0 documents") and "1 packs unchanged" in again
    assert again.endswith("the collection holds 2 chunks")
    (pack / "docs" / "b.md").unlink()
    changed = _ingest(env, config)
    assert changed.startswith("ingested 1 documents") and changed.endswith("the collection holds 1 chunks")
    assert loaded_packs(str(tmp_path / "k.db"), "raydiag_knowledge")["tiny"]["chunks"] == 1
