#!/usr/bin/env bash
# The whole GPU run, on a CUDA machine (no network, no Rust toolchain needed there):
# installs the wheel built on a development machine, then runs the test suite on the
# cuda backend and, if asked, the benchmarks. Logs go to $OUT (or ./gpu-out).
#
#   here:  scripts/build_wheel.sh                 # writes wheels/pygpu-*.whl
#   here:  scripts/build_demo_for_gpu.sh          # the Rust Burgers driver -> .device-libs/
#   there: scripts/gpu_run.sh [tests|fuzz|sanitize|sanitize-new|arrays|arrays-ab|reduce-ab|bench|demo|pool|speed|launch-ab|copies|profile|profiler|graphs|placement|reduce-tune|multi|scaling|clients|kernel-tuner|drop-in|all]   # default: all
#          (multi, scaling: 2 GPUs; clients, drop-in: carry .clients from `scripts/client_suite.sh fetch`;
#          kernel-tuner, drop-in: .clients/kernel_tuner-* from `scripts/client_kernel_tuner.sh fetch 3.12`)
#   there: scripts/gpu_run.sh fetch-python       # copies its libpython 3.12 to $OUT/py312
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
what="${1:-all}"
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
site=/tmp/pygpu-site
if [ "$what" = fetch-python ]; then
    mkdir -p "$out/py312"
    cp /usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0 /usr/lib/python3.12/_sysconfigdata__x86_64-linux-gnu.py "$out/py312/"
    exit 0
fi
wheel=$(ls wheels/pygpu-*.whl 2>/dev/null | head -n1)
if [ -z "$wheel" ]; then
    echo "gpu_run: no wheel in wheels/: run scripts/build_wheel.sh first" >&2
    exit 2
fi
python3 -m pip install -q --no-deps --no-index --no-compile --force-reinstall --target "$site" "$wheel" || exit 2
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 PYGPU_BACKEND=cuda MPLBACKEND=Agg
if [ -x .device-libs/burger-demo ]; then
    export BURGER_DEMO_BIN="$PWD/.device-libs/burger-demo"
fi
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 --version; } | tee "$out/machine.txt"
status=0
baseline_site=/tmp/pygpu-baseline
# Installs $BASELINE_WHEEL (e.g. the last commit's wheel) beside this one; false when none is named.
install_baseline() {
    [ -n "${BASELINE_WHEEL:-}" ] || return 1
    python3 -m pip install -q --no-deps --no-index --no-compile --force-reinstall --target "$baseline_site" "$BASELINE_WHEEL" || exit 2
}
# Runs the function $2 ROUNDS ($1) times with each wheel in turn (this one, then the baseline),
# in its own process with that wheel on PYTHONPATH and $ab_name (new, baseline) and $ab_round
# set, appending its output to the log $3 under a header.
ab_rounds() {
    local rounds=$1 run=$2 log=$3 entry
    for ab_round in $(seq "$rounds"); do
        for entry in "new=$site" "baseline=$baseline_site"; do
            ab_name=${entry%%=*}
            echo "== $ab_name (round $ab_round)" >> "$log"
            (PYTHONPATH="${entry#*=}" "$run") >> "$log" 2>&1 || status=1
        done
    done
}
if [ "$what" = tests ] || [ "$what" = all ]; then
    python3 -m pytest -q -p no:cacheprovider -o addopts="-ra --strict-markers" tests 2>&1 | tee "$out/pytest-cuda.log"
    status=${PIPESTATUS[0]}
    python3 scripts/leak_check.py > "$out/leaks.json" || status=1
fi
if [ "$what" = fuzz ]; then
    # The fuzz suite three times over (it once exhausted a 128 GiB machine's memory), then the MPI
    # collectives with one rank per GPU.
    for round in 1 2 3; do
        python3 -c 'import resource, subprocess, sys
code = subprocess.call(sys.argv[1:])
print("peak RSS of the run:", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, "MiB")
sys.exit(code)' python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/test_fuzz.py 2>&1 | tail -n 4 | tee -a "$out/fuzz.log"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
    done
    python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/test_nccl_mpi.py 2>&1 | tail -n 5 | tee "$out/nccl-mpi.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "$what" = sanitize ] || [ "$what" = all ]; then
    sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    # memcheck over the GPU suite (minus the tests that fault, exhaust memory or signal on
    # purpose, the long fuzzing and cycling runs, a test that times a refusal, and the demo,
    # which has its own), then
    # racecheck and initcheck over every bundled kernel.
    # API calls that fail on purpose (the suite's error cases; the probe for a kernel's
    # parameter sizes, which ends at the first index past the last parameter) are the
    # tests' business: memcheck reports memory errors only.
    # Device backtraces only: compute-sanitizer 2025.3's host backtrace of each launch keeps the
    # launching Python frames (and so their locals, e.g. a temporary GPUArray) alive for the rest
    # of the process, which tests that count the pool's bytes in use see as a leak.
    "$sanitizer" --tool memcheck --show-backtrace device --report-api-errors no --error-exitcode 9 --target-processes all \
        python3 -m pytest -q -p no:cacheprovider -o addopts="" -k "not fault and not out_of_memory and not ctrl_c and not 100k and not refused_at_once" \
        --ignore tests/test_fuzz.py --ignore tests/test_bench_smoke.py --ignore tests/test_burgers_demo.py tests \
        > "$out/sanitizer-memcheck.log" 2>&1 || status=1
    tail -n 5 "$out/sanitizer-memcheck.log"
    for tool in racecheck initcheck; do
        "$sanitizer" --tool "$tool" --error-exitcode 9 python3 scripts/sanitize_kernels.py 2>&1 | tee "$out/sanitizer-$tool.log"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
    done
fi
if [ "$what" = demo ] || [ "$what" = all ]; then
    python3 demos/burger/burger.py --out "$out/burger-python" 2>&1 | tail -n 12 | tee "$out/burger-python.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    if [ -n "${BURGER_DEMO_BIN:-}" ]; then
        syspath=$(python3 -c 'import sys; print(":".join(p for p in sys.path if p))')
        PYTHONPATH="$syspath" "$BURGER_DEMO_BIN" --out "$out/burger-rust" --quiet --analysis-dir demos/burger 2>&1 | tail -n 12 | tee "$out/burger-rust.log"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
    fi
    if [ -f demos/burger/burger.py ]; then
        sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
        "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 9 python3 demos/burger/burger.py --out "$out/burger" \
            > "$out/sanitizer-burger.log" 2>&1 || status=1
        tail -n 5 "$out/sanitizer-burger.log"
    fi
fi
if [ "$what" = arrays ] || [ "$what" = bench ] || [ "$what" = all ]; then
    # Runtime compilation, GPUArray operations, reductions and user-defined kernels against
    # their peers (CuPy, cuda.bindings' NVRTC), each as a fraction of what the hardware does.
    for b in compile_bench array_bench reduction_bench kernels_bench first_call; do
        [ -f "bench/$b.py" ] || continue
        python3 "bench/$b.py" --json "$out/$b.json" 2>&1 | tee "$out/$b.log"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
    done
fi
if { [ "$what" = bench ] || [ "$what" = all ]; } && [ -d bench ]; then
    python3 bench/run.py --json "$out/bench.json" --rounds 3 --budget "${BENCH_BUDGET:-400}" 2>&1 | tee "$out/bench.log" || status=1
fi
if [ "$what" = pool ]; then
    # The caching allocator (issue 16): its tests and the stream/interop/capture tests around it,
    # then the allocator and launch-bound figures of this wheel and, when BASELINE_WHEEL names
    # another wheel (e.g. the last commit's), of that one in the same run.
    python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/test_memory_pool.py tests/test_foreign_stream.py \
        tests/test_stream_event.py tests/test_capture_reliability.py tests/test_interop.py 2>&1 | tail -n 15 | tee "$out/pytest-pool.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    sites=("new=$site")
    if install_baseline; then
        sites+=("baseline=$baseline_site")
    fi
    for entry in "${sites[@]}"; do
        label=${entry%%=*}
        for b in alloc_bench launch_bench; do
            PYTHONPATH="${entry#*=}" python3 "bench/$b.py" --json "$out/$b-$label.json" 2>&1 | tail -n 30 | tee "$out/$b-$label.log"
            [ "${PIPESTATUS[0]}" = 0 ] || status=1
        done
    done
fi
if [ "$what" = speed ]; then
    # Issue 16's per-call figures: bench/run.py against C++ and the peers not in BENCH_SKIP (and,
    # with BASELINE_WHEEL, that wheel's pygpu figures in the same run, the rounds alternating).
    baseline=()
    if install_baseline; then
        baseline=(--also-pygpu "baseline=$baseline_site")
    fi
    # shellcheck disable=SC2086 # BENCH_SKIP is a list of names
    python3 bench/run.py --json "$out/bench.json" --rounds "${BENCH_ROUNDS:-3}" --skip ${BENCH_SKIP:-cuda.core pycuda} \
        --budget "${BENCH_BUDGET:-300}" ${baseline[@]+"${baseline[@]}"} 2>&1 | tee "$out/bench.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "$what" = sanitize-new ]; then
    # memcheck over the tests of the latest reliability and launch-checking work (issues 27, 28:
    # index checks, imported tensors, declared kernel parameters), or over $SANITIZE_TESTS.
    sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    # shellcheck disable=SC2086
    "$sanitizer" --tool memcheck --show-backtrace device --report-api-errors no --error-exitcode 9 --target-processes all \
        python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" \
        ${SANITIZE_TESTS:-tests/test_reliability_python.py tests/test_reliability_memory.py tests/test_kernel_signatures.py} \
        2>&1 | tail -n 15 | tee "$out/sanitize-new.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "$what" = arrays-ab ]; then
    # Issue 30's array figures (bench/array_bench.py: reductions against the copy, small
    # reductions, strided against contiguous, CuPy beside), this wheel then BASELINE_WHEEL's, twice.
    install_baseline || { echo "gpu_run: arrays-ab needs BASELINE_WHEEL" >&2; exit 2; }
    arrays_run() { python3 bench/array_bench.py --json "$out/array-$ab_name-$ab_round.json"; }
    ab_rounds 2 arrays_run "$out/arrays-ab.log"
    tail -n 80 "$out/arrays-ab.log"
fi
if [ "$what" = reduce-ab ]; then
    # Issue 30's one-pass reductions: the reductions' tests on this wheel, then what a reduction
    # costs (bench/reduction_host_cost.py, CuPy beside) with this wheel and BASELINE_WHEEL's in
    # alternating processes, twice.
    install_baseline || { echo "gpu_run: reduce-ab needs BASELINE_WHEEL" >&2; exit 2; }
    python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/test_reductions.py 2>&1 | tail -n 3 | tee "$out/reduce-tests.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    reduce_run() { python3 bench/reduction_host_cost.py; }
    ab_rounds 2 reduce_run "$out/reduce-ab.log"
    cat "$out/reduce-ab.log"
fi
if [ "$what" = launch-ab ]; then
    # Issue 16's launch-bound figures, this wheel against BASELINE_WHEEL in alternating processes:
    # bench/launch_args.py (the demo's prepared call and its parts), then bench/burgers.py at the
    # seeds' size, each wheel's loop alternating with C++'s (AB_ROUNDS times each).
    install_baseline || { echo "gpu_run: launch-ab needs BASELINE_WHEEL" >&2; exit 2; }
    export OPENBLAS_NUM_THREADS=1
    launch_run() { cd bench && python3 launch_args.py; }
    ab_rounds "${AB_ROUNDS:-4}" launch_run "$out/launch-ab.log"
    cat "$out/launch-ab.log"
    mkdir -p /tmp/burgers-ab
    cpp=()
    for round in $(seq "${AB_ROUNDS:-4}"); do
        for entry in "new=$site" "baseline=$baseline_site"; do
            PYTHONPATH="${entry#*=}" python3 bench/burgers.py --no-analysis --sizes 256 --reps 10 --rounds 5 \
                --build-dir /tmp/burgers-ab ${cpp[@]+"${cpp[@]}"} --json "$out/burgers-${entry%%=*}-$round.json" 2>&1 \
                | grep -v '^+' | sed "s/^/${entry%%=*}: /" | tee -a "$out/burgers-ab.log"
            [ "${PIPESTATUS[0]}" = 0 ] || status=1
            cpp=(--cpp /tmp/burgers-ab/burgers_loop)
        done
    done
fi
if [ "$what" = copies ]; then
    # The staged pageable copies (issue 16): their tests, then GB/s from 4 KiB to 1 GiB against
    # the driver's pageable path, the sweep over the staging settings, and the plot.
    python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/test_staged_copies.py 2>&1 | tail -n 5 | tee "$out/pytest-copies.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    python3 bench/copies.py --sweep --json "$out/copies.json" --plot "$out/copies.png" 2>&1 | tail -n 12 | tee "$out/copies.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "$what" = profiler ]; then
    # pygpu.profile() on CUDA (CUPTI): its tests, its cost per launch, the reductions' device
    # timeline (bench/reduce_variants.py), and pygpu.nvtx's ranges seen by NVIDIA's tools (needs
    # the nvtx wheel carried in .clients/wheels: scripts/client_suite.sh fetch).
    python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/test_profile.py 2>&1 | tee "$out/profiler-tests.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    python3 bench/profile_bench.py --calls 20000 --rounds 9 --json "$out/profile_bench.json" 2>&1 | tee "$out/profile_bench.txt"
    python3 bench/reduce_variants.py > "$out/reduce_variants.json" 2>&1 || status=1
    # Nsight Systems there lacks its report importer (only the copy inside Nsight Compute is
    # installed), so Nsight Compute checks the ranges: filtered by range, it profiles the 20
    # kernels inside them and none for a range that never ran.
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    if python3 -m pip install -q --no-index --find-links .clients/wheels --target /tmp/nvtx-site nvtx; then
        for range in pygpu-step pygpu-inner no-such-range; do
            PYTHONPATH="/tmp/nvtx-site:$PYTHONPATH" "$ncu" --nvtx --nvtx-include "$range/" --metrics gpu__time_duration.sum \
                python3 bench/nvtx_ranges.py > /tmp/nvtx-ncu.txt 2>&1
            echo "ncu --nvtx-include $range/: $(grep -c '==PROF== Profiling' /tmp/nvtx-ncu.txt) kernels profiled" | tee -a "$out/nvtx-ncu.txt"
        done
        grep -E "ERR|rror" /tmp/nvtx-ncu.txt | head -n 3
    else
        echo "gpu_run: no nvtx wheel in .clients/wheels: NVTX not checked" | tee "$out/nvtx-ncu.txt"
    fi
fi
if [ "$what" = graphs ]; then
    # Graphs built node by node (issue 31): their tests, the Burgers demo's --device-loop (its u[10]),
    # the Burgers steps under graphs of different shapes, and the seeds' run (NX = 256, 2,001 steps,
    # with and without snapshots) as plain, graph-batch and one-launch device loops against C++'s
    # graph loop, in alternating fresh processes.
    python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/test_graph_building.py tests/test_bench_smoke.py \
        2>&1 | tee "$out/graph-tests.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    (cd /tmp && python3 "$OLDPWD/demos/burger/burger.py" --device-loop --no-progress --out /tmp/device-loop) \
        2>&1 | tee "$out/device-loop-demo.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    python3 bench/graph_shapes.py 2>&1 | tee "$out/graph-shapes.txt"
    timeout 300 python3 bench/burgers.py --no-analysis --sizes 256 --reps 10 --rounds 5 --json "$out/burgers-graphs.json" \
        2>&1 | grep -E "NX=|error|Error" | tee "$out/burgers-graphs.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "$what" = placement ]; then
    # Where a small kernel's time per graph node comes from (issue 31): the Burgers step's host
    # batches with the two rows at offsets 0 B to 8 MiB into allocations of their own, in pygpu
    # (bench/graph_shapes.py --placements) and in C++'s graph loop (BURGERS_ROW_OFFSET), twice each.
    nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    "$nvcc_bin" -O3 -std=c++17 -arch=native -I kernels -I python/pygpu/include -o /tmp/burgers_loop bench/cpp/burgers_loop.cu || status=1
    grid=$(python3 -c 'import sys; sys.path.insert(0, "bench"); import burgers; print(burgers.demo_grid(256))')
    for round in 1 2; do
        python3 bench/graph_shapes.py --placements 2>&1 | sed "s/^/pygpu: /" | tee -a "$out/placement.txt"
        for offset in 0 256 4096 65536 1048576 3145728 5242880 8388608; do
            echo "C++ rows at +$offset B: $(BURGERS_ROW_OFFSET=$offset /tmp/burgers_loop 256 2000 15 graph 0 200 0.001 0.01 lagged "$grid" \
                | python3 -c 'import json, sys; print(round(json.load(sys.stdin)["median_step_us"], 3), "us/step")')" | tee -a "$out/placement.txt"
        done
    done
fi
if [ "$what" = reduce-tune ]; then
    # The measurements behind kernels/reduce.cu's shape and _bundled.reduction_launch's grid
    # (issue 30): candidate kernels (bench/reduce_variants.py), then the bundled kernel's time
    # against its grid (bench/reduce_grid.py), twice.
    python3 bench/reduce_variants.py > "$out/reduce_variants.json" 2>&1 || status=1
    for round in 1 2; do
        (cd bench && python3 reduce_grid.py) 2>&1 | grep -v '^{' | tee -a "$out/reduce-grid.txt"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
    done
fi
if [ "$what" = profile ]; then
    # Where the time of a launch-bound program goes (scripts/perf_bundle.sh made .perf here):
    # pygpu's library with line tables in a copy of the installed package, then perf's flat
    # profile by library and by symbol. The library links the build machine's libpython, which
    # .perf provides; the running interpreter's own symbols are the ones used.
    [ -x .perf/perf ] || { echo "gpu_run: no .perf: run scripts/perf_bundle.sh and carry .perf" >&2; exit 2; }
    rm -rf /tmp/pygpu-profile-site && cp -r "$site" /tmp/pygpu-profile-site
    cp .perf/_pygpu.abi3.so /tmp/pygpu-profile-site/pygpu/_pygpu.abi3.so
    # shellcheck disable=SC2086 # PROFILE_CMD is a command line
    PYTHONPATH=/tmp/pygpu-profile-site OPENBLAS_NUM_THREADS=1 LD_LIBRARY_PATH="$PWD/.perf" \
        .perf/perf record -e cpu-clock -F 10000 -o /tmp/perf.data ${PROFILE_CMD:-python3 bench/launch_args.py} 2>&1 | tail -n 15
    for sort in dso dso,sym; do
        LD_LIBRARY_PATH="$PWD/.perf" .perf/perf report -i /tmp/perf.data --no-children --sort "$sort" --percent-limit 0.3 \
            --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 40 | tee -a "$out/profile.txt"
    done
fi
if [ "$what" = multi ]; then
    # Needs two GPUs: the multi-device, IPC, NCCL and MPI tests and the distributed demo, then peer
    # copy bandwidth against cuda.bindings.
    python3 -m pytest -q -p no:cacheprovider -o addopts="-ra --strict-markers" \
        tests/test_multi_device.py tests/test_multi_gpu.py tests/test_nccl.py tests/test_nccl_mpi.py \
        tests/test_mpi_buffers.py tests/test_burgers_mpi.py tests/test_bench_scaling_smoke.py 2>&1 | tee "$out/pytest-multi.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    python3 bench/peer_copy.py --json "$out/peer_copy.json" 2>&1 | tee "$out/peer_copy.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "$what" = scaling ]; then
    # Issue 17's scaling figures (bench/burgers_scaling.py, about 4 minutes): the 2-rank job (the
    # 1-rank runs as one copy per GPU at once, then both ranks together; the C++ NCCL halo loop
    # built with nvcc against the NCCL wheel), then a 1-rank job alone at the weak size only
    # (--strong-nx = --weak-nx: one run), a check that t1 does not depend on the other GPU being
    # busy. Most of the time is the demo setting up u0 before each timed run (np.sin over 2^27
    # points: seconds). Each job rewrites its JSON after every part.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
    mpiexec=$(python3 -c 'import pathlib, shutil, sys
beside = pathlib.Path(sys.executable).parent / "mpiexec"
print(beside if beside.exists() else shutil.which("mpiexec") or "mpiexec")')
    build=/tmp/halo-nccl-build
    # mpiexec's ranks search PATH afresh and may find another python3 than this one.
    python=$(python3 -c 'import sys; print(sys.executable)')
    # SCALING_ARGS: more options for both jobs (e.g. --reps 5).
    timeout 330 "$mpiexec" -n 2 "$python" bench/burgers_scaling.py --json "$out/scaling-2ranks.json" --build-dir "$build" ${SCALING_ARGS:-} \
        2>&1 | tee "$out/scaling-2ranks.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    cpp=()
    [ -x "$build/halo_nccl" ] && cpp=(--cpp "$build/halo_nccl")
    timeout 200 "$mpiexec" -n 1 "$python" bench/burgers_scaling.py --json "$out/scaling-1rank.json" --strong-nx $((1 << 26)) ${SCALING_ARGS:-} ${cpp[@]+"${cpp[@]}"} \
        2>&1 | tee "$out/scaling-1rank.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "$what" = drop-in ]; then
    # The drop-in's whole check in one call: reikna's suite against a real PyCUDA (clients, in the
    # background from its own copy of the wheel), this wheel's GPU suite, then PyCUDA's own tests
    # renamed (carry wheels, .pycuda-tests and .clients' reikna, PyCUDA sdist and wheels).
    python3 -m pip install -q --no-deps --no-index --no-compile --force-reinstall --target /tmp/pygpu-site-clients "$wheel" || exit 2
    PYGPU_SITE=/tmp/pygpu-site-clients CLIENTS_WORKERS="${CLIENTS_WORKERS:-5}" scripts/client_suite.sh run-gpu >"$out/clients.log" 2>&1 &
    clients_pid=$!
    # Less the tests that compare the device's free memory: the client suites allocate on the
    # same device meanwhile (the tests mode runs them, alone on the device).
    python3 -m pytest -q -p no:cacheprovider -o addopts="-ra --strict-markers" -m "not device_free_memory" tests \
        >"$out/pytest-cuda.log" 2>&1 || status=1
    tail -n 3 "$out/pytest-cuda.log"
    # PyCUDA's test_complex_bits imports pytools (not pygpu's): from the carried wheels.
    python3 -m pip install -q --no-deps --no-index --no-compile --target /tmp/pytools-site .clients/wheels/pytools-*.whl \
        .clients/wheels/platformdirs-*.whl .clients/wheels/siphash24-*.whl .clients/wheels/typing_extensions-*.whl || status=1
    (cd .pycuda-tests && PYTHONPATH="$PYTHONPATH:/tmp/pytools-site" timeout 240 python3 -m pytest -q -p no:cacheprovider \
        -o addopts="" -k "not 8gb and not 16gb" test) >"$out/pycuda-tests.log" 2>&1 || status=1
    tail -n 2 "$out/pycuda-tests.log"
    # PyCUDA's example programs, six at a time (each as pycuda_suite.sh runs them: its own folder,
    # 60 s), with pytools, which two of them import.
    find "$PWD/.pycuda-tests/examples" -name '*.py' | sort | PYTHONPATH="$PYTHONPATH:/tmp/pytools-site" xargs -P 6 -I{} sh -c \
        'cd "$(dirname "$1")" && timeout 60 python3 "$(basename "$1")" >/dev/null 2>&1 </dev/null; echo "$? $1"' _ {} \
        >"$out/pycuda-examples.log"
    echo "PyCUDA's examples run to completion: $(grep -c '^0 ' "$out/pycuda-examples.log") of $(wc -l <"$out/pycuda-examples.log")"
    OUT="$out" scripts/client_kernel_tuner.sh run >"$out/kernel-tuner-run.log" 2>&1 || status=1
    tail -n 6 "$out/kernel-tuner-run.log"
    # PyNUFFT on reikna (its wheel and reikna's dependencies from .clients/wheels; scipy is there).
    python3 -m pip install -q --no-deps --no-index --no-compile --target /tmp/pynufft-site .clients/wheels/pynufft-*.whl \
        .clients/wheels/mako-*.whl .clients/wheels/markupsafe-*.whl .clients/wheels/funcsigs-*.whl || status=1
    PYTHONPATH="$PYTHONPATH:$PWD/.clients/reikna-0.9.0:/tmp/pynufft-site" timeout 300 python3 scripts/clients/pynufft_programs.py \
        >"$out/pynufft.log" 2>&1 || status=1
    tail -n 3 "$out/pynufft.log"
    wait "$clients_pid" || status=1
    tail -n 12 "$out/clients.log"
fi
if [ "$what" = kernel-tuner ]; then
    # Kernel Tuner's PyCUDA backend on this wheel: its own tests of it and tuning programs
    # (scripts/client_kernel_tuner.sh; under a minute).
    OUT="$out" scripts/client_kernel_tuner.sh run 2>&1 | tee "$out/kernel-tuner-run.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "$what" = clients ]; then
    # Issue 26: reikna's own suite on this wheel under the PyCUDA alias and on a real PyCUDA built
    # here from its sdist, in this one call, compared (scripts/client_suite.sh; about 6-8 minutes).
    scripts/client_suite.sh run-gpu 2>&1 | tee "$out/clients.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
echo "gpu_run: status $status"
if [ -n "${GPU_RUN_PACK:-}" ]; then
    # The device tool returns at most 8 files: pack everything into one.
    (cd "$out" && tar czf /tmp/gpu-out.tgz . && find . -mindepth 1 -delete && mv /tmp/gpu-out.tgz .)
fi
exit "$status"
