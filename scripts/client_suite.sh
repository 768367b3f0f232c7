#!/usr/bin/env bash
# A PyCUDA-based library's own test suite (reikna 0.9.0's, `--api=cuda`) on pygpu under its PyCUDA
# alias (pygpu.pycuda_alias), measured against a real PyCUDA (issue 26). Everything fetched lives
# in the git-ignored .clients/ and is never committed. docs/clients.md says more.
#
#   here:  scripts/client_suite.sh fetch      # PyPI: reikna's sdist (unpacked), PyCUDA's sdist, and
#                                             # the wheels the GPU machine (Python 3.12, offline) needs
#   there: scripts/gpu_run.sh clients         # installs pygpu's wheel, then `run-gpu`; carry
#                                             # .clients/reikna-0.9.0 .clients/pycuda-2026.1.tar.gz
#                                             # .clients/wheels (3 MB; not .clients/host-*)
#          scripts/client_suite.sh run-gpu    # builds PyCUDA, runs the suite on it and on pygpu in
#                                             # the same call, compares: $OUT/clients-summary.txt
#                                             # (5-5.5 min on an H100: build 105-110 s, suites 180-210 s)
#   here, CI: scripts/client_suite.sh run-host  # a fixed subset on the host backend (fetches reikna
#                                             # if missing; needs PyPI then); about 2 min on 2 cores;
#                                             # then PyNUFFT (on reikna): scripts/clients/pynufft_programs.py
#
# Settings (environment): CLIENT_SUITE_MIN_RATE (run-host, run-gpu: fail below this pass rate in
# percent; unset: report only), CLIENTS_WORKERS (run-gpu: pytest-xdist workers per suite, default
# 6), CLIENTS_SUITE_TIMEOUT (run-gpu: seconds per suite, default 300), CLIENTS_SERIAL=1 (run-gpu:
# the two suites one after the other instead of at once), CLIENTS_HOST_SUBSET (run-host:
# ends-per-function, the default; one-per-function; all), CLIENTS_HOST_TIMEOUT (run-host: seconds,
# default 900), PYGPU_SITE (run-gpu: where pygpu is, default the /tmp/pygpu-site that gpu_run.sh
# installs into).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
root=$PWD
clients=.clients
reikna_version=0.9.0
pynufft_version=2025.2.1
pycuda_version=2026.1
reikna_src=$clients/reikna-$reikna_version
pycuda_sdist=$clients/pycuda-$pycuda_version.tar.gz
wheels=$clients/wheels
plugins=$root/scripts/clients
# The suite's own pytest.ini applies (its rootdir is the sdist); its tests see the device through
# reikna's `--api=cuda` thread parameters; cacheprovider off so that nothing is written into the
# unpacked sdist between runs; a file that cannot be collected (test_cbrng.py without scipy)
# leaves the others running.
pytest_common=(-p no:cacheprovider --api=cuda -q -rN --tb=line --continue-on-collection-errors)

say() { printf 'client_suite: %s\n' "$*" >&2; }

# PyPI via pip only. The sdists: pip builds their metadata (a minute, PyCUDA's build deps as
# wheels); --no-binary for these two only, so that their build deps are not built from source.
fetch_reikna() {
    [ -f "$reikna_src/test/conftest.py" ] && return 0
    local tmp
    tmp=$(mktemp -d) || return 2
    "${pip_python:-python3}" -m pip download -q --disable-pip-version-check --no-deps --no-binary reikna -d "$tmp" \
        "reikna==$reikna_version" || { rm -rf "$tmp"; return 2; }
    mkdir -p "$clients" && rm -rf "$reikna_src"
    tar xzf "$tmp/reikna-$reikna_version.tar.gz" -C "$clients" || { rm -rf "$tmp"; return 2; }
    rm -rf "$tmp"
    say "reikna $reikna_version's sdist unpacked in $reikna_src/ (test/, reikna/)"
}

fetch_all() {
    fetch_reikna || return
    if [ ! -f "$pycuda_sdist" ]; then
        python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary pycuda -d "$clients" \
            "pycuda==$pycuda_version" || return 2
    fi
    # The GPU machine's interpreter: CPython 3.12 on x86_64 (markupsafe and siphash24 are compiled).
    # reikna needs mako (+markupsafe) and funcsigs; PyCUDA pytools (+platformdirs, siphash24,
    # typing_extensions) and mako; PyNUFFT's program (gpu_run.sh drop-in) pynufft. numpy, scipy,
    # setuptools, pytest and pytest-xdist are there already.
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
        --python-version 3.12 --platform manylinux2014_x86_64 --implementation cp -d "$wheels" \
        mako markupsafe funcsigs pytools platformdirs siphash24 typing_extensions "pynufft==$pynufft_version" || return 2
    say "fetched into $clients/ ($(du -sh "$clients" | cut -f1)):"
    ls -l "$clients" "$wheels" >&2
}

# junit XML, then the comparison; a run killed by its timeout gets SIGINT first, so that pytest
# still writes its XML for the tests that ran.
run_pytest() { # LOG XML TIMEOUT PYTHONPATH PYTEST-ARGS...
    local log="$1" xml="$2" limit="$3" path="$4"
    shift 4
    (cd "$reikna_src" && PYTHONPATH="$path" timeout -s INT -k 30 "$limit" python3 -m pytest "${pytest_common[@]}" \
        --junitxml="$xml" "$@" test) >"$log" 2>&1
}

run_gpu() {
    [ -f "$reikna_src/test/conftest.py" ] && [ -f "$pycuda_sdist" ] && [ -d "$wheels" ] ||
        { say "run 'scripts/client_suite.sh fetch' here and carry .clients"; return 2; }
    local out="${OUT:-$root/gpu-out}" pygpu_site="${PYGPU_SITE:-/tmp/pygpu-site}" pycuda_site=/tmp/pycuda-site
    local reikna_site=/tmp/reikna-site workers="${CLIENTS_WORKERS:-6}" limit="${CLIENTS_SUITE_TIMEOUT:-300}"
    local start=$SECONDS status=0
    mkdir -p "$out"
    [ -d "$pygpu_site/pygpu" ] || { say "no pygpu in $pygpu_site: run via scripts/gpu_run.sh clients"; return 2; }
    # The real PyCUDA, in a folder of its own: only run (a) has it on its path. pip --target
    # ignores what is installed, so the dependencies go in from the carried wheels (--no-deps both):
    # numpy and setuptools for the build are the machine's (--no-build-isolation).
    rm -rf "$pycuda_site" "$reikna_site"
    python3 -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --target "$pycuda_site" \
        "$wheels"/pytools-*.whl "$wheels"/platformdirs-*.whl "$wheels"/siphash24-*.whl \
        "$wheels"/typing_extensions-*.whl "$wheels"/mako-*.whl "$wheels"/markupsafe-*.whl || return 2
    python3 -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --target "$reikna_site" \
        "$wheels"/mako-*.whl "$wheels"/markupsafe-*.whl "$wheels"/funcsigs-*.whl || return 2
    # The suite imports reikna from the unpacked sdist (the current folder of its runs); scipy is
    # needed by test_cbrng.py only, and is the machine's if it has one.
    local t0=$SECONDS
    CUDA_ROOT=/usr/local/cuda PATH="/usr/local/cuda/bin:$PATH" PYTHONPATH="$pycuda_site" \
        timeout 400 python3 -m pip install --disable-pip-version-check --no-build-isolation --no-index --no-deps \
        --no-compile --target "$pycuda_site" "$pycuda_sdist" >"$out/pycuda-build.log" 2>&1 ||
        { tail -n 30 "$out/pycuda-build.log"; say "building PyCUDA failed: $out/pycuda-build.log"; return 2; }
    say "PyCUDA $pycuda_version built in $((SECONDS - t0)) s"
    PYTHONPATH="$pycuda_site" python3 -c 'import pycuda, pycuda.driver as d; d.init(); print("PyCUDA", pycuda.VERSION, "on", d.Device(0).name())' ||
        return 2
    python3 -c 'import scipy' 2>/dev/null || say "no scipy on this machine: test_cbrng.py is not collected on either side"

    local xdist=()
    [ "$workers" -gt 0 ] && xdist=(-n "$workers")
    # (a) the real PyCUDA; (b) pygpu under the alias, with no real PyCUDA on the path (the plugin
    # enables the alias, which raises at `import pycuda` if a real one were importable).
    export PYGPU_BACKEND=cuda
    PYTHONPATH="$pygpu_site:$reikna_site" python3 -c 'import pygpu.pycuda_alias as a; a.enable()
import pycuda.driver, pygpu.driver
assert pycuda.driver is pygpu.driver
print("pygpu", getattr(pygpu, "__version__", "?"), "from", pygpu.__file__, "stands in for pycuda (no real PyCUDA on its path)")' ||
        return 2
    suite_pycuda() {
        run_pytest "$out/reikna-pycuda.log" "$out/reikna-pycuda.xml" "$limit" "$pycuda_site:$reikna_site" \
            -p no:benchmark ${xdist[@]+"${xdist[@]}"}
    }
    suite_pygpu() {
        run_pytest "$out/reikna-pygpu.log" "$out/reikna-pygpu.xml" "$limit" "$plugins:$pygpu_site:$reikna_site" \
            -p pycuda_alias_plugin -p no:benchmark ${xdist[@]+"${xdist[@]}"}
    }
    t0=$SECONDS
    local rc_pycuda=0 rc_pygpu=0
    if [ "${CLIENTS_SERIAL:-0}" = 1 ]; then
        suite_pycuda || rc_pycuda=$?
        say "suite on PyCUDA: $((SECONDS - t0)) s"
        t0=$SECONDS
        suite_pygpu || rc_pygpu=$?
        say "suite on pygpu: $((SECONDS - t0)) s"
    else
        # At once: the tests are pass/fail (the perf ones only report times), and the GPU and 16
        # cores have room for both; it halves the call's time.
        suite_pycuda &
        local a_pid=$!
        suite_pygpu || rc_pygpu=$?
        wait "$a_pid" || rc_pycuda=$?
        say "both suites (at once): $((SECONDS - t0)) s"
    fi
    # pytest's 0 and 1 are a finished run; 124 is the time limit (the XML has the tests that ran,
    # and a test PyCUDA passes that pygpu never ran counts against pygpu).
    local incomplete=""
    [ "$rc_pycuda" -gt 1 ] && incomplete="$incomplete; the suite on PyCUDA did not finish (exit $rc_pycuda)"
    [ "$rc_pygpu" -gt 1 ] && incomplete="$incomplete; the suite on pygpu did not finish (exit $rc_pygpu)"
    for side in pycuda pygpu; do
        printf '%s: ' "$side"
        tail -n 1 "$out/reikna-$side.log"
    done
    local min=()
    [ -n "${CLIENT_SUITE_MIN_RATE:-}" ] && min=(--min-rate "$CLIENT_SUITE_MIN_RATE")
    local device
    device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
    python3 scripts/compare_junit.py --reference "$out/reikna-pycuda.xml" --candidate "$out/reikna-pygpu.xml" \
        --title "reikna $reikna_version's suite (--api=cuda) on ${device:-the GPU}: PyCUDA $pycuda_version against pygpu (alias)${incomplete:+
INCOMPLETE$incomplete: the figures cover only the tests that ran}" \
        --out "$out/clients-summary.txt" ${min[@]+"${min[@]}"} || status=$?
    # A comparison of runs cut short is no measurement.
    [ -n "$incomplete" ] && [ "$status" = 0 ] && status=2
    say "run-gpu took $((SECONDS - start)) s"
    return "$status"
}

run_host() {
    local py=python3
    if [ -z "${VIRTUAL_ENV:-}" ] && [ -x .venv/bin/python ]; then py=$root/.venv/bin/python; fi
    "$py" -c 'import pygpu' || { say "pygpu is not importable by $py (source scripts/env.sh first)"; return 2; }
    pip_python=$py
    fetch_reikna || { say "could not fetch reikna (no network?)"; return 2; }
    # reikna's dependencies (and scipy, for test_cbrng.py) for this interpreter, beside it, and
    # PyNUFFT (built on reikna) for scripts/clients/pynufft_programs.py.
    local site
    site=$root/$clients/host-site-$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    if [ ! -f "$site/.complete" ] || [ ! -d "$site/pynufft" ]; then
        rm -rf "$site"
        "$py" -m pip install -q --disable-pip-version-check --no-deps --only-binary :all: --target "$site" \
            mako markupsafe funcsigs scipy "pynufft==$pynufft_version" || { say "could not install reikna's dependencies"; return 2; }
        touch "$site/.complete"
    fi
    local out="${OUT:-$root/$clients/host-out}" start=$SECONDS code=0 known=()
    mkdir -p "$out"
    # Tests that fail on a real PyCUDA for reasons of their own are not run: pytest's closing line
    # then counts pygpu's failures only.
    while read -r test_id; do
        [ -n "$test_id" ] && [ "${test_id#\#}" = "$test_id" ] && known+=(--deselect "$test_id")
    done <scripts/clients/reikna-pycuda-failures.txt
    # The host runs the CUDA C itself: `--api=cuda` against pygpu's host backend.
    (cd "$reikna_src" && PYGPU_BACKEND=host PYTHONPATH="$plugins:$site${PYTHONPATH:+:$PYTHONPATH}" \
        timeout -s INT -k 30 "${CLIENTS_HOST_TIMEOUT:-900}" "$py" -m pytest "${pytest_common[@]}" \
        -p pycuda_alias_plugin -p subset_plugin --client-subset="${CLIENTS_HOST_SUBSET:-ends-per-function}" \
        ${known[@]+"${known[@]}"} --junitxml="$out/reikna-host.xml" test) >"$out/reikna-host.log" 2>&1 || code=$?
    tail -n 1 "$out/reikna-host.log"
    say "reikna's suite on the host backend: $((SECONDS - start)) s (log: $out/reikna-host.log)"
    # pytest: 0 all passed, 1 some failed; anything else (interrupted, internal error, usage, no
    # tests) means the suite itself did not run through.
    if [ "$code" -gt 1 ]; then
        tail -n 30 "$out/reikna-host.log"
        say "the suite did not run through (pytest exit $code)"
        return 2
    fi
    local min=() status=0
    [ -n "${CLIENT_SUITE_MIN_RATE:-}" ] && min=(--min-rate "$CLIENT_SUITE_MIN_RATE")
    "$py" scripts/compare_junit.py --candidate "$out/reikna-host.xml" --reference-failures scripts/clients/reikna-pycuda-failures.txt \
        --title "reikna $reikna_version's suite, host backend, subset ${CLIENTS_HOST_SUBSET:-ends-per-function}" \
        --out "$out/clients-host-summary.txt" ${min[@]+"${min[@]}"} || status=$?
    # A program on reikna: PyNUFFT's transforms and solver against its numpy implementation.
    PYGPU_BACKEND=host PYTHONPATH="$root/$reikna_src:$site${PYTHONPATH:+:$PYTHONPATH}" \
        timeout 600 "$py" scripts/clients/pynufft_programs.py || { say "PyNUFFT's program failed"; status=1; }
    return "$status"
}

case "${1:-}" in
fetch) fetch_all ;;
run-gpu) run_gpu ;;
run-host) run_host ;;
*)
    echo "usage: scripts/client_suite.sh fetch|run-gpu|run-host" >&2
    exit 2
    ;;
esac
