#!/usr/bin/env bash
# Kernel Tuner 1.5.0 on pygpu under its PyCUDA alias. Kernel Tuner's `lang="CUDA"` backend is
# PyCUDA: its own tests of that backend (unmodified, from its sdist), then
# scripts/clients/kernel_tuner_programs.py (tuning runs whose results are checked against numpy).
# Everything fetched lives in the git-ignored .clients/. docs/clients.md says more.
#
#   scripts/client_kernel_tuner.sh fetch [X.Y]  # PyPI: the sdist, and wheels of the dependencies
#                                               # for CPython X.Y (default: this one; the GPU
#                                               # machine, offline, has 3.12: `fetch 3.12`, then
#                                               # carry .clients/kernel_tuner-1.5.0 and
#                                               # .clients/kernel_tuner-wheels-3.12, 20 MB)
#   scripts/client_kernel_tuner.sh run          # on $PYGPU_BACKEND (the default backend if unset);
#                                               # fetches first where the wheels are missing
#
# Exit status: 0 when every test run passed and every program's results were right, 1 otherwise,
# 2 when something could not be fetched or installed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
root=$PWD
version=1.5.0
src=.clients/kernel_tuner-$version
# Its wheel (for its metadata) and what the tested paths import besides numpy, packaging and pytest
# (the environment's own); not scikit-learn and pymoo, which only some search strategies use.
deps=("kernel_tuner==$version" scipy jsonschema attrs referencing rpds-py jsonschema-specifications python-constraint2 xmltodict
    pandas python-dateutil six tzdata)
# Its tests of the PyCUDA backend, and those that drive a backend through tune_kernel.
tests=(test/test_pycuda_functions.py test/test_pycuda_mocked.py test/test_backend.py test/test_observers.py
    test/test_util_functions.py test/test_integration.py test/test_core.py test/test_lazy_imports.py)

say() { printf 'client_kernel_tuner: %s\n' "$*" >&2; }

py=python3
if [ -z "${VIRTUAL_ENV:-}" ] && [ -x .venv/bin/python ]; then py=$root/.venv/bin/python; fi
here=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || exit 2

fetch() { # [X.Y]
    local pyver="${1:-$here}"
    if [ ! -f "$src/test/context.py" ]; then
        local tmp
        tmp=$(mktemp -d) || return 2
        "$py" -m pip download -q --disable-pip-version-check --no-deps --no-binary kernel_tuner -d "$tmp" \
            "kernel_tuner==$version" || { rm -rf "$tmp"; return 2; }
        mkdir -p .clients && rm -rf "$src"
        tar xzf "$tmp/kernel_tuner-$version.tar.gz" -C .clients || { rm -rf "$tmp"; return 2; }
        rm -rf "$tmp"
    fi
    local wheels=.clients/kernel_tuner-wheels-$pyver wanted=() dep
    # Another interpreter's wheels are the GPU machine's, which has scipy: left out, as the device
    # call's carry is 64 MiB in all.
    for dep in "${deps[@]}"; do
        [ "$dep" = scipy ] && [ "$pyver" != "$here" ] && continue
        wanted+=("$dep")
    done
    if [ ! -f "$wheels/.complete" ]; then
        "$py" -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
            --python-version "$pyver" --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
            --implementation cp -d "$wheels" "${wanted[@]}" || return 2
        touch "$wheels/.complete"
    fi
    say "Kernel Tuner $version in $src/, wheels for CPython $pyver in $wheels/ ($(du -sh "$wheels" | cut -f1))"
}

run() {
    "$py" -c 'import pygpu' || { say "pygpu is not importable by $py (source scripts/env.sh first)"; return 2; }
    local site=$root/.clients/kernel_tuner-site-$here
    if [ ! -f "$site/.complete" ]; then
        fetch "$here" || { say "could not fetch Kernel Tuner (no network? on the GPU machine, carry .clients/)"; return 2; }
        rm -rf "$site"
        "$py" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --target "$site" \
            .clients/kernel_tuner-wheels-"$here"/*.whl || { say "could not install its dependencies"; return 2; }
        touch "$site/.complete"
    fi
    local out="${OUT:-$root/.clients/host-out}" code=0
    mkdir -p "$out"
    local path="$root/scripts/clients:$site${PYTHONPATH:+:$PYTHONPATH}"
    # -o addopts="": the sdist's pytest settings ask for coverage plugins. The host backend has no
    # registers (Function.num_regs is 0), which test_register_observer_pycuda asserts are used.
    local deselect=()
    if [ "$("$py" -c 'import pygpu; print(pygpu.capabilities().backend)')" = host ]; then
        deselect=(--deselect test/test_observers.py::test_register_observer_pycuda)
    fi
    (cd "$src" && PYTHONPATH="$path" timeout -s INT -k 30 600 "$py" -m pytest -p no:cacheprovider -o addopts="" \
        -q -rfE -p pycuda_alias_plugin --junitxml="$out/kernel-tuner.xml" ${deselect[@]+"${deselect[@]}"} \
        "${tests[@]}") >"$out/kernel-tuner.log" 2>&1 || code=1
    tail -n 1 "$out/kernel-tuner.log"
    [ "$code" = 0 ] || { grep -E '^(FAILED|ERROR)' "$out/kernel-tuner.log" >&2; say "its tests failed: $out/kernel-tuner.log"; }
    PYTHONPATH="$path" timeout 600 "$py" scripts/clients/kernel_tuner_programs.py || {
        code=1
        say "a program failed"
    }
    return "$code"
}

case "${1:-}" in
fetch) fetch "${2:-}" ;;
run) run ;;
*)
    echo "usage: scripts/client_kernel_tuner.sh fetch [X.Y] | run" >&2
    exit 2
    ;;
esac
