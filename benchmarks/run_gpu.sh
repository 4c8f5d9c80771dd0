#!/usr/bin/env bash
# Everything the GPU machine runs for a change (see ../shared/gpu/README.md); logs under
# $OUT, a short table last.  Steps, all by default, or those named:
#   tests          pytest -m gpu, and futgen test --backend cuda on examples/
#   programs       benchmarks/futhark_programs.py on CUDA, if a copy of the suite's
#                  programs is carried in .suite/ (never committed), with the
#                  interpreter's results in .gpurefs/ (made by --reference elsewhere)
#   futhark-tests  futgen test --backend cuda on a carried copy of Futhark's tests
#                  (futhark-tests/, never committed)
#   baseline       benchmarks/gpu_baseline.py
#   tune           benchmarks/tune_matmul.py: autotune the matrix family, test on larger sizes
#   bash benchmarks/run_gpu.sh [STEP ...]   (from the repository root, OUT set by the device tool)
set -u
OUT=${OUT:-/tmp/futgen-gpu-out}
mkdir -p "$OUT"
steps=${*:-tests programs futhark-tests baseline}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpuwheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD:$PWD/runtime:${PYTHONPATH:-}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for step in $steps; do
  case $step in
    tests)
      python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" 2>&1 | tee "$OUT/pytest_gpu.log" | tail -15
      python3 -m futgen test --backend cuda --no-progress examples/ 2>&1 | tee "$OUT/futgen_test_cuda.log" | tail -3 ;;
    programs)
      [ -d .suite ] && python3 benchmarks/futhark_programs.py --suite .suite --backends cuda \
        --reference .gpurefs --out "$OUT" 2>&1 | tee "$OUT/programs_cuda.log" | tail -16 ;;
    futhark-tests)
      [ -d futhark-tests ] && python3 -m futgen test --backend cuda -j 12 --timeout 120 --no-progress \
        --report-json "$OUT/futhark_tests_cuda.json" futhark-tests/ 2>&1 \
        | tee "$OUT/futhark_tests_cuda.log" | tail -1 ;;
    baseline)
      python3 benchmarks/gpu_baseline.py --out "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -12 ;;
    tune)
      python3 benchmarks/tune_matmul.py --out "$OUT" 2>&1 | tee "$OUT/tune_matmul.log" | tail -40 ;;
    *) echo "unknown step $step" ;;
  esac
done
