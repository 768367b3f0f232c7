#!/usr/bin/env bash
# The whole GPU run, on a CUDA machine (no network, no Rust toolchain needed there):
# installs the wheel built on a development machine, then runs the test suite on the
# cuda backend and, if asked, the benchmarks. Logs go to $OUT (or ./gpu-out).
#
#   here:  scripts/build_wheel.sh                 # writes wheels/pygpu-*.whl
#   there: scripts/gpu_run.sh [tests|sanitize|bench|demo|all]   # default: all
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
    python3 scripts/leak_check.py > "$out/leaks.json" || status=1
fi
if [ "$what" = sanitize ] || [ "$what" = all ]; then
    sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    # memcheck over the GPU suite (minus the tests that fault, exhaust memory or signal on
    # purpose), then racecheck and initcheck over every bundled kernel.
    "$sanitizer" --tool memcheck --error-exitcode 9 --target-processes all \
        python3 -m pytest -q -p no:cacheprovider -o addopts="" -k "not fault and not out_of_memory and not ctrl_c and not 100k" tests \
        2>&1 | tail -n 40 | tee "$out/sanitizer-memcheck.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    for tool in racecheck initcheck; do
        "$sanitizer" --tool "$tool" --error-exitcode 9 python3 scripts/sanitize_kernels.py 2>&1 | tee "$out/sanitizer-$tool.log"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
    done
fi
if [ "$what" = demo ] || [ "$what" = all ]; then
    if [ -f demos/burger/burger.py ]; then
        sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
        "$sanitizer" --tool memcheck --error-exitcode 9 python3 demos/burger/burger.py --out "$out/burger" 2>&1 | tail -n 30 | tee "$out/sanitizer-burger.log"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
    fi
fi
if { [ "$what" = bench ] || [ "$what" = all ]; } && [ -d bench ]; then
    python3 bench/run.py --json "$out/bench.json" 2>&1 | tee "$out/bench.log" || status=1
fi
exit "$status"
