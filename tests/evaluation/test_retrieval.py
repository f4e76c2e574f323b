"""`raydiag eval retrieval`: BEIR loading, metrics, and a small end-to-end run through Milvus Lite."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evaluation.retrieval import doc_ranking, load_beir, ndcg_at, recall_at, score
from rag.store import Candidate, FusionSettings, confidence, fuse
from tests.conftest import REPO

DOCS = {
    "D1": (
        "Disk full",
        "The node ran out of disk space: No space left on device. Clean old logs and expand the volume.",
    ),
    "D2": ("Connection pool", "HikariCP connection pool exhausted; requests wait for a connection and time out."),
    "D3": ("GC pauses", "Long full GC pauses in the JVM stop the application; heap usage is near the maximum."),
    "D4": ("连接池耗尽", "数据库连接池耗尽导致请求超时，需要检查慢查询和连接泄漏。"),
    "D5": ("Kafka lag", "Consumer lag grows when consumers are slower than producers on the topic."),
}
QUERIES = {
    "q1": "no space left on device",
    "q2": "connection pool exhausted timeout",
    "q3": "数据库连接池耗尽",
    "q4": "JVM full GC pause",
    "q9": "unjudged query",
}
QRELS = [("q1", "D1", 1), ("q2", "D2", 1), ("q2", "D4", 1), ("q3", "D4", 2), ("q4", "D3", 1), ("q4", "D5", 0)]


def lst(*items: tuple[str, str, float]) -> list[Candidate]:
    return [Candidate(*i) for i in items]


def write_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for i, (t, x) in DOCS.items():
            f.write(json.dumps({"_id": i, "title": t, "text": x}, ensure_ascii=False) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as f:
        for i, t in QUERIES.items():
            f.write(json.dumps({"_id": i, "text": t}, ensure_ascii=False) + "\n")
    rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, d, s in QRELS]
    (root / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")
    return root


def test_metrics_by_hand() -> None:
    rel = {"a": 1, "b": 1}
    assert ndcg_at(["a", "b", "c"], rel) == pytest.approx(1.0)
    # one hit at rank 2 of two relevant: (1/log2(3)) / (1 + 1/log2(3))
    assert ndcg_at(["x", "a"], rel) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert recall_at(["a", "x", "b"], rel, 2) == 0.5 and recall_at(["a", "x", "b"], rel, 3) == 1.0
    assert doc_ranking(["d1", "d2", "d1", "d3"]) == ["d1", "d2", "d3"]
    assert score({"q": ["a", "b"]}, {"q": rel, "r": {"z": 1}}) == {"ndcg@10": 0.5, "recall@10": 0.5, "recall@100": 0.5}


def test_weighted_rrf_favours_the_heavier_list() -> None:
    dense = lst(("k1", "d1", 0.9), ("k2", "d2", 0.8))
    bm25 = lst(("k2", "d2", 12.0), ("k3", "d3", 9.0))
    equal = fuse({"dense": dense, "bm25": bm25}, FusionSettings(method="rrf", dense_weight=1, bm25_weight=1), 10)
    assert equal[0].key == "k2" and equal[0].ranks == {"dense": 2, "bm25": 1}
    heavy_dense = fuse({"dense": dense, "bm25": bm25}, FusionSettings(method="rrf", dense_weight=1, bm25_weight=0), 10)
    assert [r.key for r in heavy_dense][:2] == ["k1", "k2"]
    alone = fuse({"bm25": bm25}, FusionSettings(), 1)
    assert [(r.key, r.score) for r in alone] == [("k2", 12.0)]


def test_score_fusion_weighs_each_list_by_its_confidence() -> None:
    # Dense barely separates its hits; BM25 has one standout (k3). By rank, equal-weight RRF sees
    # three near-ties (k1 and k3 tie exactly, the key breaks it); score fusion trusts the standout.
    dense = lst(("k1", "d1", 0.50), ("k2", "d2", 0.49), ("k3", "d3", 0.45))
    bm25 = lst(("k3", "d3", 20.0), ("k2", "d2", 2.0), ("k1", "d1", 1.0))
    f = FusionSettings(method="score", dense_weight=0.5, bm25_weight=0.5)
    out = fuse({"dense": dense, "bm25": bm25}, f, 3)
    assert out[0].key == "k3"
    cd = confidence(np.array([0.50, 0.49, 0.45]))
    cb = confidence(np.array([20.0, 2.0, 1.0]))
    assert cb > cd > 0
    assert out[0].score == pytest.approx(0.5 * cb * 1.0 + 0.5 * cd * 0.0)
    rrf = fuse({"dense": dense, "bm25": bm25}, FusionSettings(method="rrf", dense_weight=1, bm25_weight=1), 3)
    assert rrf[0].key == "k1"
    single_value = fuse({"dense": lst(("k", "d", 0.3)), "bm25": lst(("k", "d", 5.0))}, f, 1)
    assert single_value[0].score == pytest.approx(1.0)  # one hit per list: each normalises to 1, confidence 1


def test_load_beir_keeps_judged_queries_and_positive_grades(tmp_path: Path) -> None:
    data = load_beir(write_beir(tmp_path / "ds"))
    assert set(data.queries) == {"q1", "q2", "q3", "q4"}  # q9 has no judgement
    assert data.qrels["q4"] == {"D3": 1}  # grade 0 is not relevant
    with pytest.raises(FileNotFoundError, match=r"qrels/dev\.tsv"):
        load_beir(tmp_path / "ds", "dev")
    (tmp_path / "bad" / "qrels").mkdir(parents=True)
    (tmp_path / "bad" / "corpus.jsonl").write_text("{not json\n")
    (tmp_path / "bad" / "queries.jsonl").write_text("")
    (tmp_path / "bad" / "qrels" / "test.tsv").write_text("q\td\t1\n")
    with pytest.raises(ValueError, match=r"corpus\.jsonl:1"):
        load_beir(tmp_path / "bad")


def test_cli_eval_end_to_end(tmp_path: Path) -> None:
    ds = write_beir(tmp_path / "ds")
    out = tmp_path / "res.json"
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "eval", "retrieval", "--dataset", str(ds), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "hybrid" in done.stdout and "nDCG@10" in done.stdout
    res = json.loads(out.read_text())
    assert res["corpus"] == 5 and res["queries"] == 4
    for mode in ("dense", "bm25", "hybrid"):
        assert set(res[mode]) == {"ndcg@10", "recall@10", "recall@100"}
    assert res["dense"]["recall@100"] == 1.0  # five documents: dense ranks every one of them
    assert res["bm25"]["ndcg@10"] > 0.8 and res["hybrid"]["ndcg@10"] > 0.8
    missing = subprocess.run(
        [sys.executable, "-m", "cli.main", "eval", "retrieval", "--dataset", str(tmp_path / "nope")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "not a directory" in missing.stderr


def test_outdated_collection_is_refused_then_rebuilt_by_ingest(tmp_path: Path) -> None:
    from pymilvus import DataType, MilvusClient

    from rag.store import KnowledgeStore

    uri = str(tmp_path / "old.db")
    c = MilvusClient(uri)
    s = c.create_schema(auto_id=False)
    s.add_field("key", DataType.VARCHAR, is_primary=True, max_length=300)
    s.add_field("dense", DataType.FLOAT_VECTOR, dim=4)
    idx = c.prepare_index_params()
    idx.add_index("dense", index_type="FLAT", metric_type="IP")
    c.create_collection("kb", schema=s, index_params=idx)
    c.close()
    with pytest.raises(RuntimeError, match="raydiag ingest"):
        KnowledgeStore(uri, "kb", 4)
    store = KnowledgeStore(uri, "kb", 4, rebuild_outdated=True)
    fields = {f["name"] for f in store.client.describe_collection("kb")["fields"]}
    assert store.rebuilt and {"text_en", "cjk_share"} <= fields and store.count() == 0
    store.close()


def test_a_collection_analysed_the_old_way_is_refused_then_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its BM25 postings (stop words, punctuation) were made by the old analyser: only a rebuild changes them.
    import rag.store
    from rag.store import KnowledgeStore

    uri = str(tmp_path / "old.db")
    with monkeypatch.context() as m:
        m.setattr(rag.store, "ANALYSED_FIELDS", {**rag.store.ANALYSED_FIELDS, "text": {"tokenizer": "jieba"}})
        KnowledgeStore(uri, "kb", 4).close()
    with pytest.raises(RuntimeError, match=r"text analyser\): rebuild it with `raydiag ingest"):
        KnowledgeStore(uri, "kb", 4)
    store = KnowledgeStore(uri, "kb", 4, rebuild_outdated=True)
    assert store.rebuilt
    store.close()
    KnowledgeStore(uri, "kb", 4).close()  # what ingest rebuilt opens as it is


def test_script_aware_fusion_lets_dense_decide_across_languages() -> None:
    # A Chinese question; the dense list's nearest runbooks are English (the embedder reads across
    # languages). BM25 only matches generic Chinese words in a Chinese runbook about something else
    # (rare script, inflated IDF) and, weakly, the question's one Latin word in the English runbook.
    q_cjk = 0.9
    dense = [Candidate(f"en{i}", f"en{i}", 0.7 - i * 0.02, 0.0) for i in range(10)]
    dense.append(Candidate("zh", "zh", 0.30, 0.8))
    bm25 = [Candidate("zh", "zh", 40.0, 0.8), Candidate("en0", "en0", 6.0, 0.0), Candidate("en5", "en5", 5.0, 0.0)]
    aware = fuse({"dense": dense, "bm25": bm25}, FusionSettings(), 5, q_cjk)
    blind = fuse({"dense": dense, "bm25": bm25}, FusionSettings(script_aware=False), 5, q_cjk)
    assert blind[0].key == "zh"  # the old weighting: BM25's standout decides
    assert aware[0].key == "en0" and "zh" not in [r.key for r in aware[:3]]


def test_script_aware_fusion_leaves_one_language_alone() -> None:
    # Question and documents in one script: nothing to re-weigh, the fused scores are the old ones.
    dense = lst(("a", "a", 0.6), ("b", "b", 0.5), ("c", "c", 0.45), ("d", "d", 0.2))
    bm25 = lst(("c", "c", 12.0), ("a", "a", 3.0), ("e", "e", 1.0))
    for share, q_cjk in ((0.0, 0.0), (0.85, 0.95)):
        d = [c._replace(cjk_share=share) for c in dense]
        b = [c._replace(cjk_share=share) for c in bm25]
        aware = fuse({"dense": d, "bm25": b}, FusionSettings(), 5, q_cjk)
        blind = fuse({"dense": d, "bm25": b}, FusionSettings(script_aware=False), 5, q_cjk)
        assert [(r.key, r.score) for r in aware] == [(r.key, pytest.approx(r.score)) for r in blind]
        assert aware[0].key == "c"


def _near_and_right() -> tuple[list[Candidate], list[Candidate]]:
    """A Chinese question's own dense list puts a near-miss English runbook first; an English reading
    of it (the gloss, a translation) puts the right one first."""
    dense = [Candidate("near", "near", 0.62, 0.0), Candidate("right", "right", 0.60, 0.0)]
    dense += [Candidate(f"en{i}", f"en{i}", 0.5 - i * 0.02, 0.0) for i in range(8)]
    reading = [Candidate("right", "right", 0.75, 0.0), Candidate("near", "near", 0.55, 0.0)]
    reading += [Candidate(f"en{i}", f"en{i}", 0.5 - i * 0.02, 0.0) for i in range(8)]
    return dense, reading


def test_the_gloss_list_counts_where_the_nearest_documents_are_english() -> None:
    q_cjk = 0.9
    dense, gloss = _near_and_right()
    with_gloss = fuse({"dense": dense, "gloss": gloss}, FusionSettings(), 5, q_cjk)
    assert fuse({"dense": dense}, FusionSettings(), 5, q_cjk)[0].key == "near"
    assert with_gloss[0].key == "right" and with_gloss[0].ranks == {"dense": 2, "gloss": 1}
    # The same lists over Chinese prose without a Latin word: an English reading matches nothing there,
    # so the gloss list has no weight and the question's own list decides.
    zh = {name: [c._replace(cjk_share=1.0) for c in items] for name, items in (("dense", dense), ("gloss", gloss))}
    assert fuse(zh, FusionSettings(), 5, q_cjk)[0].key == "near"
    assert [r.key for r in fuse(zh, FusionSettings(), 5, q_cjk)] == [
        r.key for r in fuse({"dense": zh["dense"]}, FusionSettings(), 5, q_cjk)
    ]


def test_the_english_bm25_parameters_take_effect_and_an_index_without_them_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pymilvus sends index parameters as keys Milvus Lite drops: the store's k1 and b must reach the index
    # (the scores move) and an index scored with Milvus's defaults must be rebuilt, not silently kept.
    import rag.analysers
    from rag.chunking import chunk_document
    from rag.embedding import Encoded
    from rag.store import KnowledgeStore

    texts = ["disk full on the node", "the disk is failing: disk errors, disk retries, slow writes everywhere"]
    chunks = [
        c for i, t in enumerate(texts) for c in chunk_document(f"d{i}", t, domain="eval", source=f"d{i}", title=f"t{i}")
    ]
    vectors = Encoded(np.eye(len(chunks), 4, dtype=np.float32))

    def scores(store: KnowledgeStore) -> list[tuple[str, float]]:
        store.insert_chunks(chunks, vectors)
        store.finish_ingest()
        hits = store._ranked(["disk errors"], "sparse_en", {"metric_type": "BM25"}, 5, None)
        return [(h.doc_id, round(h.score, 4)) for h in hits]

    old_uri = str(tmp_path / "old.db")
    with monkeypatch.context() as m:
        m.setattr(rag.analysers, "BM25_SCORING", {})  # Milvus's defaults, as every index had before
        old = KnowledgeStore(old_uri, "kb", 4)
        before = scores(old)
        old.close()
    with pytest.raises(RuntimeError, match=r"sparse_en BM25 parameters\): rebuild it"):
        KnowledgeStore(old_uri, "kb", 4)
    new = KnowledgeStore(str(tmp_path / "new.db"), "kb", 4)
    assert new._bm25_scoring("sparse_en") == {"bm25_k1": 0.9, "bm25_b": 0.5}
    after = scores(new)
    new.close()
    assert [d for d, _ in after] == [d for d, _ in before] and after != before


def test_another_english_reading_is_weighed_like_the_gloss_list() -> None:
    # The headroom benchmark fuses other readings of a question (a model's translation) by name and
    # weight; each weighs as the gloss list does: full weight where the nearest documents are English,
    # none over Chinese prose.
    q_cjk = 0.9
    dense, reading = _near_and_right()
    f = FusionSettings()
    as_gloss = fuse({"dense": dense, "gloss": reading}, f, 5, q_cjk)
    as_reading = fuse({"dense": dense, "translation": reading}, f, 5, q_cjk, readings={"translation": f.dense_weight})
    assert [(r.key, round(r.score, 9)) for r in as_reading] == [(r.key, round(r.score, 9)) for r in as_gloss]
    assert as_reading[0].key == "right"
    heavier = fuse({"dense": dense, "translation": reading}, f, 5, q_cjk, readings={"translation": 4 * f.dense_weight})
    assert heavier[0].score > as_reading[0].score
    zh = {
        "dense": [c._replace(cjk_share=1.0) for c in dense],
        "translation": [c._replace(cjk_share=1.0) for c in reading],
    }
    assert fuse(zh, f, 5, q_cjk, readings={"translation": 1.0})[0].key == "near"
