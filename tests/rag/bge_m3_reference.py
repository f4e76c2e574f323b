"""Run under the BGE-M3 environment (.venv-bge): FlagEmbedding's BGEM3FlagModel encodes the texts given
as a JSON list on stdin; prints its dense vectors and lexical weights as JSON (the reference that
tests/rag/test_bge_m3_transformers.py holds the transformers-only encoder to)."""

from __future__ import annotations

import json
import sys

import transformers
from FlagEmbedding import BGEM3FlagModel

from rag.bge_m3 import lexical_to_plain


def main(model_dir: str, batch_size: int, max_length: int) -> None:
    texts = json.loads(sys.stdin.read())
    model = BGEM3FlagModel(model_dir, use_fp16=False, devices="cpu")
    out = model.encode(texts, batch_size=batch_size, max_length=max_length, return_dense=True, return_sparse=True)
    print(
        json.dumps(
            {
                "transformers": transformers.__version__,
                "dense": [[float(x) for x in row] for row in out["dense_vecs"]],
                "lexical": [lexical_to_plain(w) for w in out["lexical_weights"]],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
