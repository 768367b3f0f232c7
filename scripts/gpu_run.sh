#!/usr/bin/env bash
# The whole GPU run, on a CUDA machine (no network, no Rust toolchain needed there):
# installs the wheel built on a development machine, then runs the test suite on the
# cuda backend and, if asked, the benchmarks. Logs go to $OUT (or ./gpu-out).
#
#   here:  scripts/build_wheel.sh                 # writes wheels/pygpu-*.whl
#   there: scripts/gpu_run.sh [tests|bench|all]   # default: all
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
what="${1:-all}"
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
site=/tmp/pygpu-site
wheel=$(ls wheels/pygpu-*.whl 2>/dev/null | head -n1)
if [ -z "$wheel" ]; then
    echo "gpu_run: no wheel in wheels/: run scripts/build_wheel.sh first" >&2
    exit 2
fi
python3 -m pip install -q --no-deps --no-index --no-compile --force-reinstall --target "$site" "$wheel" || exit 2
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 PYGPU_BACKEND=cuda
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 --version; } | tee "$out/machine.txt"
status=0
if [ "$what" = tests ] || [ "$what" = all ]; then
    python3 -m pytest -q -p no:cacheprovider -o addopts="-ra --strict-markers" tests 2>&1 | tee "$out/pytest-cuda.log"
    status=${PIPESTATUS[0]}
fi
if { [ "$what" = bench ] || [ "$what" = all ]; } && [ -d bench ]; then
    python3 bench/run.py --json "$out/bench.json" 2>&1 | tee "$out/bench.log" || status=1
fi
exit "$status"
