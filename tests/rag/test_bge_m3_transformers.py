"""The transformers-only BGE-M3 encoder (main environment, transformers 5) against FlagEmbedding's
BGEM3FlagModel (its own environment, transformers 4) on the same tiny model built offline: the same
dense vectors and the same lexical weights, text by text, across batches of mixed lengths."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag.bge_m3_transformers import TransformersBgeM3Embedder, position_limit
from tests.conftest import run_bge

TEXTS = [
    "database connection pool exhausted hikari timeout",
    "jvm full gc heap out of memory",
    "数据库 连接池 耗尽 超时",
    "payment service latency p99 timeout checkout " * 6,  # long: sorted first, pads the others
    "timeout timeout timeout pool",  # a repeated token keeps its largest weight
    "zebra unicorn",  # words outside the vocabulary: <unk>, which carries no weight
    "kubernetes pod crashloop oomkilled",
    "支付 服务 延迟 内存 溢出",
    "slow query",
    "gc",
]


def same_weights(got: list[dict[int, float]], want: list[dict[int, float]]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.keys() == w.keys()
        assert all(abs(g[k] - w[k]) < 1e-5 for k in g), (g, w)


def reference(model_dir: Path, batch_size: int, max_length: int) -> dict[str, object]:
    out = run_bge(
        "tests/rag/bge_m3_reference.py", str(model_dir), str(batch_size), str(max_length), stdin=json.dumps(TEXTS)
    )
    return json.loads(out.splitlines()[-1])


@pytest.mark.parametrize("batch_size", [4, 32])
def test_the_same_vectors_and_weights_as_flagembedding(tiny_bge_m3: Path, batch_size: int) -> None:
    ref = reference(tiny_bge_m3, batch_size, 512)
    assert str(ref["transformers"]).startswith("4.")
    ours = TransformersBgeM3Embedder(str(tiny_bge_m3), device="cpu", batch_size=batch_size).encode_sync(TEXTS)
    import transformers

    assert transformers.__version__.startswith("5.")  # the point: no FlagEmbedding, no transformers<5
    np.testing.assert_allclose(ours.dense, np.asarray(ref["dense"], dtype=np.float32), atol=1e-5)
    expected = [{int(k): v for k, v in w.items()} for w in ref["lexical"]]  # type: ignore[attr-defined]
    assert ours.lexical is not None
    same_weights(ours.lexical, expected)
    assert all(len(w) > 0 for w in ours.lexical[:5]) and ours.lexical[5] == {}


def test_order_and_batching_do_not_change_a_text_s_encoding(tiny_bge_m3: Path) -> None:
    emb = TransformersBgeM3Embedder(str(tiny_bge_m3), device="cpu", batch_size=3)
    together = emb.encode_sync(TEXTS)
    alone = [emb.encode_sync([t]) for t in TEXTS]
    np.testing.assert_allclose(together.dense, np.concatenate([a.dense for a in alone]), atol=1e-5)
    assert together.lexical is not None
    same_weights(together.lexical, [a.lexical[0] for a in alone if a.lexical])
    assert np.allclose(np.linalg.norm(together.dense, axis=1), 1.0, atol=1e-5)


def test_reads_up_to_the_model_s_position_limit(tiny_bge_m3: Path) -> None:
    emb = TransformersBgeM3Embedder(str(tiny_bge_m3), device="cpu")
    # BGE-M3's 8,194 positions give 8,192 tokens; the tiny model's 520 give 518.
    assert emb.max_length == position_limit(emb.model.config) == 518
    long_text = "timeout " * 2000
    enc = emb.encode_sync([long_text, "gc"])
    assert enc.dense.shape == (2, emb.dim) and enc.lexical is not None and enc.lexical[1]


def test_an_empty_batch(tiny_bge_m3: Path) -> None:
    enc = TransformersBgeM3Embedder(str(tiny_bge_m3), device="cpu").encode_sync([])
    assert enc.dense.shape == (0, 32) and enc.lexical == []
