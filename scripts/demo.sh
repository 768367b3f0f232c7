#!/usr/bin/env bash
# The Burgers in-situ demo, both drivers (the README's main command):
#   1. sets up .venv, builds the kernels and pygpu (scripts/env.sh);
#   2. runs the Python driver, demos/burger/burger.py, on CUDA if pygpu can start it, else on the
#      host backend (and says so);
#   3. builds the Rust driver (demos/burger/rust, which embeds Python) with cargo and runs it;
#   4. checks that both drivers printed the same u[10].
#
#   scripts/demo.sh                       # the seeds' run: NX = 256, t < 2.0
#   scripts/demo.sh --nx 4096 --graph     # options go to both drivers (see burger.py --help)
#
# Outputs (plots, summary.json, final.npy) go to demos/burger/out/{python,rust} (BURGER_OUT to
# change). PYGPU_BACKEND forces a backend; BURGER_DEMO_BIN runs a Rust driver built elsewhere
# instead of building one; BURGER_TARGET_DIR is its cargo target folder (default
# demos/burger/rust/target), BURGER_PROFILE its cargo profile (default demo; release for timings).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Only what the demo needs (scripts/requirements-demo.txt, the kernels of this machine's backends,
# pygpu and the Rust driver in the lighter `demo` cargo profile), unless scripts/test.sh already
# set up everything.
export PYGPU_SETUP="${PYGPU_SETUP:-demo}"
# shellcheck disable=SC1091
source scripts/env.sh

out="${BURGER_OUT:-demos/burger/out}"
backend="${PYGPU_BACKEND:-}"
if [ -z "$backend" ]; then
    if python - <<'EOF' 2>/dev/null; then
import pygpu
pygpu.set_backend("cuda")
count, status = pygpu.cudaGetDeviceCount()
raise SystemExit(0 if int(status) == 0 and count > 0 else 1)
EOF
        backend=cuda
    else
        backend=host
        echo "demo: no CUDA GPU could be started here: running on the host backend (the same kernels on the CPU)."
    fi
fi
export PYGPU_BACKEND="$backend"

echo
echo "== Python driver: demos/burger/burger.py (backend $backend)"
python demos/burger/burger.py --out "$out/python" "$@"

echo
echo "== Rust driver: demos/burger/rust (pygpu's Rust runtime, Python embedded)"
binary="${BURGER_DEMO_BIN:-}"
if [ -z "$binary" ]; then
    if ! command -v cargo >/dev/null; then
        echo "demo: cargo is not installed: cannot build the Rust driver (install Rust, or set BURGER_DEMO_BIN)" >&2
        exit 3
    fi
    target="${BURGER_TARGET_DIR:-demos/burger/rust/target}"
    profile="${BURGER_PROFILE:-demo}"
    binary="$target/$profile/burger-demo"
    # cargo runs only when a source of the driver or of the pygpu crate is newer than the binary.
    if [ ! -x "$binary" ] || [ -n "$(find demos/burger/rust/src demos/burger/rust/Cargo.toml demos/burger/rust/build.rs \
        src build.rs Cargo.toml Cargo.lock kernels -maxdepth 3 -newer "$binary" -type f -print -quit)" ]; then
        echo "[demo] building the Rust driver (cargo, profile $profile; about 30 s the first time) ..."
        start=$SECONDS
        PYO3_PYTHON="$(command -v python)" CARGO_TARGET_DIR="$target" \
            cargo build --profile "$profile" --quiet --manifest-path demos/burger/rust/Cargo.toml
        echo "[demo]   done in $((SECONDS - start)) s"
    fi
fi
# The embedded interpreter sees the same packages as the venv's python.
PYTHONPATH="$(python -c 'import os, sys; print(os.pathsep.join(p for p in sys.path if p))')" \
    "$binary" --out "$out/rust" --quiet --analysis-dir demos/burger "$@"

echo
python - "$out/python/summary.json" "$out/rust/summary.json" <<'EOF'
import json
import sys

py, rs = (json.load(open(path)) for path in sys.argv[1:3])
if f"{py['u10']:.6g}" != f"{rs['u10']:.6g}" or abs(py["u10"] - rs["u10"]) > 1e-12:
    sys.exit(f"demo: the drivers disagree: u[10] = {py['u10']!r} (Python) and {rs['u10']!r} (Rust)")
print(
    f"demo: both drivers give u[10] = {py['u10']:.6g} on the {py['backend']} backend "
    f"({py['mean_step_seconds'] * 1e6:.2f} us/step in Python, {rs['mean_step_seconds'] * 1e6:.2f} us/step in Rust)"
)
EOF
