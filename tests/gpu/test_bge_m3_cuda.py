"""The transformers BGE-M3 encoder on CUDA: fp16 against the fp32 CPU result, batching against one
text at a time, and a text at BGE-M3's full 8,192 tokens on a model of BGE-M3's shape.

Runs on the lent GPU machine (benchmarks/gpu_checks.sh), which has torch and transformers but not
the project's other dependencies: this module needs only those, numpy and pytest, and builds its
models in-process (no FlagEmbedding environment, no hub). Elsewhere the `gpu` marker skips it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag.bge_m3_transformers import TransformersBgeM3Embedder
from tests.fakes.tiny_bge_m3 import build, build_full_size

pytestmark = pytest.mark.gpu

TEXTS = [
    "database connection pool exhausted hikari timeout",
    "数据库 连接池 耗尽 超时",
    "payment service latency p99 timeout checkout " * 20,
    "jvm full gc heap out of memory",
    "kubernetes pod crashloop oomkilled node disk pressure",
    "gc",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("tiny-bge-m3"))


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))


def test_fp16_on_cuda_matches_fp32_on_cpu(tiny: Path) -> None:
    cpu = TransformersBgeM3Embedder(str(tiny), device="cpu").encode_sync(TEXTS)
    gpu_emb = TransformersBgeM3Embedder(str(tiny), device="cuda")
    assert gpu_emb.fp16 and next(gpu_emb.model.parameters()).dtype.is_floating_point
    gpu = gpu_emb.encode_sync(TEXTS)
    assert gpu.dense.dtype == np.float32 and cosines(cpu.dense, gpu.dense).min() > 0.999
    assert cpu.lexical is not None and gpu.lexical is not None
    for c, g in zip(cpu.lexical, gpu.lexical, strict=True):
        assert c.keys() == g.keys()
        assert all(abs(c[k] - g[k]) <= 0.01 * max(1.0, abs(c[k])) for k in c)


def test_batches_on_cuda_equal_one_text_at_a_time(tiny: Path) -> None:
    emb = TransformersBgeM3Embedder(str(tiny), device="cuda", batch_size=4)
    together = emb.encode_sync(TEXTS)
    alone = np.concatenate([emb.encode_sync([t]).dense for t in TEXTS])
    assert cosines(together.dense, alone).min() > 0.999


def test_full_length_text_on_a_model_of_bge_m3_shape(tmp_path: Path) -> None:
    model = build_full_size(tmp_path / "bge-m3-shape")
    emb = TransformersBgeM3Embedder(str(model), device="cuda", batch_size=8)
    assert emb.max_length == 8192 and emb.dim == 1024
    enc = emb.encode_sync(["timeout " * 9000, "gc"])
    assert enc.dense.shape == (2, 1024) and np.isfinite(enc.dense).all()
    assert enc.lexical is not None and enc.lexical[0] and enc.lexical[1]
