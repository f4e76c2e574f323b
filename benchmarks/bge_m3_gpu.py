"""BGE-M3 through plain transformers on a CUDA GPU, fp16: texts/s one at a time vs batches of 32, for
query-length and passage-length texts, fp16 vs fp32 on the passages in batches, and the latency of one
text at the full 8,192 tokens. With ``GPU_TESTS_XML`` set (benchmarks/gpu_checks.sh sets it) the file
also records the outcome of the ``gpu`` tests of the same run, read from pytest's JUnit XML.

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
import xml.etree.ElementTree as ET
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


def junit_outcome(path: Path) -> dict[str, object]:
    """Counts and failed names from pytest's JUnit XML (one testsuite)."""
    suite = ET.parse(path).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    assert suite is not None, f"no testsuite in {path}"
    cases = suite.findall("testcase")
    bad = [c.get("name", "?") for c in cases if c.find("failure") is not None or c.find("error") is not None]
    skipped = [c.get("name", "?") for c in cases if c.find("skipped") is not None]
    return {
        "tests": len(cases),
        "passed": len(cases) - len(bad) - len(skipped),
        "failed": bad,
        "skipped": skipped,
    }


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
        times = []
        for _ in range(5):
            torch.cuda.synchronize()
            start = time.perf_counter()
            emb.encode_sync(long_text)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1000)
        result["one_text_8192_tokens_ms"] = round(sorted(times)[2], 1)  # the median of 5
        result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        # After the fp16 figures and their peak memory: the fp32 copy would double the peak.
        passages = texts(256, 350)
        fp16_rate = rate(emb, passages, 32)
        fp32 = TransformersBgeM3Embedder(str(Path(tmp) / "m"), device="cuda", fp16=False)
        fp32_rate = rate(fp32, passages, 32)
        del fp32
        torch.cuda.empty_cache()
        result["passage_batch32_fp16_vs_fp32"] = {
            "fp16_per_s": round(fp16_rate, 1),
            "fp32_per_s": round(fp32_rate, 1),
            "fp16_over_fp32": round(fp16_rate / fp32_rate, 2),
        }
    xml = os.environ.get("GPU_TESTS_XML")
    if xml and Path(xml).exists():
        result["gpu_tests"] = junit_outcome(Path(xml))
    result.update(stamp())
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bge_m3_gpu.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
