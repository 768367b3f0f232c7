#!/usr/bin/env bash
# Installs pygpu as a user would, each way into a fresh virtual environment, and checks that the
# result works on the host backend: a bundled kernel loads and runs, and the Burgers demo takes its
# first steps. The sdist has no prebuilt kernels: pygpu builds them from the sources embedded in
# the compiled module on first use (kernels/README.md, "Install paths").
#
#   1. the sdist (maturin sdist), installed with pip;
#   2. `pip install .` from this checkout;
#   3. a warm rerun of the README's set-up (scripts/env.sh): its time is reported (budget 3 s);
#   4. the GPU procedure's wheel (scripts/build_wheel.sh): its platform tag must be manylinux_2_28.
#
# Runs after scripts/test.sh (it uses .venv's maturin to make the sdist). The Rust build inside
# pip reuses CARGO_TARGET_DIR (default: this checkout's target/) for the dependencies.
#
# Usage: .ci/install_check.sh        (from anywhere)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$(pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

say() { printf 'install_check: %s\n' "$*"; }
seconds() { python3 -c "import time; print(f'{time.monotonic() - $1:.1f}')"; }
now() { python3 -c 'import time; print(time.monotonic())'; }

# check_install VENV SOURCE_TREE: a bundled kernel, then the demo's first steps, from outside the
# checkout (so the installed package is the one imported), with an empty kernel cache.
check_install() {
    local venv="$1" tree="$2" start
    start="$(now)"
    (
        cd "$work"
        PYGPU_BACKEND=host PYGPU_CACHE_DIR="$work/cache-$(basename "$venv")" "$venv/bin/python" - <<'EOF'
import numpy as np
import pygpu
from pygpu._toolchain import bundled_kernels

x = pygpu.gpuarray.to_gpu(np.arange(8.0))
bundled_kernels.load_kernels("testing").get_function("add_scalar_f64")(
    x, np.int64(x.size), np.float64(1.0), block=(256, 1, 1), grid=(1, 1)
)
assert x.get().tolist() == [float(i + 1) for i in range(8)], x.get()
print(f"install_check: bundled kernel 'testing' ran from {pygpu.__file__}")
EOF
        PYGPU_BACKEND=host PYGPU_CACHE_DIR="$work/cache-$(basename "$venv")" "$venv/bin/python" \
            "$tree/demos/burger/burger.py" --t-final 0.1 --snapshot-every 0 --no-progress --out "$work/out"
    )
    say "kernel + demo's first 100 steps (kernels built from source on first use): $(seconds "$start") s"
}

# 1. The sdist.
source .venv/bin/activate
start="$(now)"
maturin sdist --out "$work/sdist" >"$work/sdist.log" 2>&1 || { cat "$work/sdist.log"; exit 1; }
sdist="$(ls "$work"/sdist/pygpu-*.tar.gz)"
tar xzf "$sdist" -C "$work"
tree="$(ls -d "$work"/pygpu-*/)"
for required in kernels/burgers.cu build.rs demos/burger/rust/src/main.rs demos/burger/burger.py LICENSE; do
    [[ -e "$tree/$required" ]] || { say "the sdist lacks $required"; exit 1; }
done
python3 -m venv "$work/venv-sdist"
say "pip install $(basename "$sdist") (builds the Rust extension in release; about a minute) ..."
"$work/venv-sdist/bin/pip" install --quiet --disable-pip-version-check "$sdist"
say "sdist built and installed in $(seconds "$start") s"
check_install "$work/venv-sdist" "$tree"

# 2. pip install . (the same path as pip install git+URL: a build from a source tree).
start="$(now)"
python3 -m venv "$work/venv-dot"
say "pip install . (about a minute) ..."
"$work/venv-dot/bin/pip" install --quiet --disable-pip-version-check "$repo"
say "pip install . took $(seconds "$start") s"
check_install "$work/venv-dot" "$repo"

# 3. The README's set-up, warm: everything is in place, so it must be quick.
deactivate
start="$(now)"
bash -c 'source scripts/env.sh' >/dev/null
warm="$(seconds "$start")"
say "warm rerun of the README's set-up (scripts/env.sh): $warm s (budget 3 s)"
python3 -c "import sys; sys.exit(0 if $warm <= 3.0 else 1)" || { say "the warm set-up took over 3 s"; exit 1; }

# 4. The wheel the GPU procedure installs: manylinux_2_28, checked with auditwheel.
source .venv/bin/activate
start="$(now)"
say "scripts/build_wheel.sh (manylinux_2_28 x86_64 with zig; a few minutes) ..."
scripts/build_wheel.sh >"$work/wheel.log" 2>&1 || { tail -n 40 "$work/wheel.log"; exit 1; }
grep '\[release\]' "$work/wheel.log"
say "wheel built and its platform tag checked in $(seconds "$start") s"
