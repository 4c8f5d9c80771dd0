#!/usr/bin/env bash
# Everything the GPU machine runs for a change, in one call (see ../shared/gpu/README.md):
# the GPU test suite, then the baseline benchmark; logs under $OUT, a short table last.
#   bash benchmarks/run_gpu.sh            (from the repository root, OUT set by the device tool)
set -u
OUT=${OUT:-/tmp/futgen-gpu-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpuwheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD:$PWD/runtime:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" 2>&1 | tee "$OUT/pytest_gpu.log" | tail -15
python3 -m futgen test --backend cuda --no-progress examples/ 2>&1 | tee "$OUT/futgen_test_cuda.log" | tail -3
if [ -d futhark-tests ]; then  # a local copy of Futhark's own tests (never committed), if carried
  python3 -m futgen test --backend cuda -j 8 --no-progress futhark-tests/ 2>&1 \
    | tee "$OUT/futhark_tests_cuda.log" | tail -1
fi
python3 benchmarks/gpu_baseline.py --out "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -12
