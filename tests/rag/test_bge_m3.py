"""The BGE-M3 backend in its own environment (FlagEmbedding needs transformers<5; vLLM needs 5.x):
the real BGEM3FlagModel code path on a tiny model built offline, dense and sparse into Milvus."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from rag.bge_m3 import lexical_to_plain
from tests.conftest import REPO, run_bge


def test_lexical_weights_become_int_keys_and_float_values() -> None:
    import numpy as np

    assert lexical_to_plain({"5": np.float32(0.25), "7": np.float32(0.0)}) == {5: 0.25}


def test_main_environment_cannot_import_flagembedding() -> None:
    """Why the backend needs its own environment: if this starts passing, the isolation can go."""
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-c", "import FlagEmbedding"], capture_output=True, text=True
    )
    assert done.returncode != 0


def test_dense_and_sparse_flow_into_milvus(tiny_bge_m3: Path, tmp_path: Path) -> None:
    out = json.loads(run_bge("tests/rag/bge_m3_probe.py", str(tiny_bge_m3), str(tmp_path / "m.db")).splitlines()[-1])
    assert out["transformers"].startswith("4.")
    assert out["dim"] == 32 and all(abs(n - 1.0) < 1e-4 for n in out["dense_norms"])
    assert out["lexical_types"] == ["int:float"] and min(out["lexical_sizes"]) > 0
    # every chunk stored a non-empty sparse row; hybrid fused all three lists
    assert len(out["stored_lexical"]) == 3 and min(out["stored_lexical"].values()) > 0
    assert any(modes == ["bm25", "dense", "lexical"] for modes in out["ranked_modes"])
    assert out["top"] == "pool"
