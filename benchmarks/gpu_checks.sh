#!/usr/bin/env bash
# The GPU tier in one call on a lent GPU machine (torch + transformers, no registry, no vLLM, no Ray):
#   run: RAYDIAG_COMMIT=<HEAD's short hash> bash benchmarks/gpu_checks.sh
#        (the device tool; results come back under $OUT; the tree travels without .git, so the commit
#        that bge_m3_gpu.json records is named)
# The gpu tests need only torch, transformers, numpy and pytest; --noconftest keeps the project's
# fixtures (SQLAlchemy, MariaDB) out, and with them the hook that skips gpu tests without CUDA.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
PY="${PYTHON:-python3}"  # the GPU machine's torch interpreter is python3
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu_machine.txt"
"$PY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" \
  | tee -a "$OUT/gpu_machine.txt"
rc=0
if "$PY" -c "import pytest" 2>/dev/null; then
  "$PY" -m pytest tests/gpu --noconftest -p no:cacheprovider -o addopts="" -q --junitxml="$OUT/gpu_tests.xml" \
    2>&1 | tee "$OUT/gpu_tests.txt" || rc=1
else
  echo "pytest is not installed here: gpu tests not run" | tee "$OUT/gpu_tests.txt"; rc=1
fi
OUT="$OUT" GPU_TESTS_XML="$OUT/gpu_tests.xml" "$PY" benchmarks/bge_m3_gpu.py || rc=1
exit $rc
