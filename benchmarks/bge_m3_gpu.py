"""BGE-M3 through plain transformers on a CUDA GPU, fp16: texts/s one at a time vs batches of 32, for
query-length and passage-length texts, and the latency of one text at the full 8,192 tokens.

The lent GPU machine has torch and transformers but no model weights and no hub, so the model is
random weights in BGE-M3's exact shape (XLM-RoBERTa large, tests/fakes/tiny_bge_m3.py): the arithmetic,
memory and batching are BGE-M3's, the vectors mean nothing. Writes benchmarks/results/bge_m3_gpu.json
(or $OUT/bge_m3_gpu.json when OUT is set, as on the GPU machine). Without CUDA it says so and exits.

    python benchmarks/bge_m3_gpu.py        (benchmarks/gpu_checks.sh runs it on the GPU machine)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.provenance import stamp  # noqa: E402
from rag.bge_m3_transformers import TransformersBgeM3Embedder  # noqa: E402
from tests.fakes.tiny_bge_m3 import CORPUS, build_full_size  # noqa: E402

WORDS = " ".join(CORPUS).split()


def texts(n: int, words: int) -> list[str]:
    return [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(words)) for i in range(n)]


def rate(emb: TransformersBgeM3Embedder, batch: list[str], size: int) -> float:
    import torch

    emb.batch_size = size
    emb.encode_sync(batch[:size])  # warm-up at this shape
    torch.cuda.synchronize()
    start = time.perf_counter()
    if size == 1:
        for t in batch:
            emb.encode_sync([t])
    else:
        emb.encode_sync(batch)
    torch.cuda.synchronize()
    return len(batch) / (time.perf_counter() - start)


def main() -> None:
    import torch

    if not torch.cuda.is_available():
        print("bge_m3_gpu: no CUDA device here; run it on a GPU machine (benchmarks/gpu_checks.sh)")
        return
    out_dir = Path(os.environ.get("OUT") or ROOT / "benchmarks" / "results")
    with tempfile.TemporaryDirectory(prefix="bge-m3-shape-") as tmp:
        emb = TransformersBgeM3Embedder(str(build_full_size(Path(tmp) / "m")), device="cuda")
        result: dict[str, object] = {
            "device": torch.cuda.get_device_name(0),
            "torch": torch.__version__,
            "dtype": "float16",
            "model": "random weights in BGE-M3's shape (24 layers, 1024 wide, 8194 positions)",
        }
        for name, words, n in (("query", 16, 512), ("passage", 350, 256)):
            one = rate(emb, texts(n, words), 1)
            batched = rate(emb, texts(n, words), 32)
            result[name] = {
                "tokens_per_text": words + 2,
                "texts": n,
                "one_at_a_time_per_s": round(one, 1),
                "batch32_per_s": round(batched, 1),
                "batch32_over_one": round(batched / one, 2),
            }
        long_text = ["timeout " * 9000]
        emb.encode_sync(long_text)
        torch.cuda.synchronize()
        start = time.perf_counter()
        emb.encode_sync(long_text)
        torch.cuda.synchronize()
        result["one_text_8192_tokens_ms"] = round((time.perf_counter() - start) * 1000, 1)
        result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    result.update(stamp())
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bge_m3_gpu.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
