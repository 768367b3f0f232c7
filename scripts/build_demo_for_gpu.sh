#!/usr/bin/env bash
# Builds the Rust Burgers driver for the GPU machine (Ubuntu 24.04, Python 3.12, no Rust
# there) into .device-libs/burger-demo, linked against that machine's libpython, a copy of
# which lives in .device-libs/py312 (fetch it with `scripts/gpu_run.sh fetch-python` there
# and copy the returned files in). Then carry .device-libs with the wheels.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
lib=.device-libs/py312
if [ ! -f "$lib/libpython3.12.so.1.0" ]; then
    echo "build_demo_for_gpu: $lib/libpython3.12.so.1.0 is missing: see the comment at the top" >&2
    exit 2
fi
[ -e "$lib/libpython3.12.so" ] || ln -s libpython3.12.so.1.0 "$lib/libpython3.12.so"
PYO3_CROSS_LIB_DIR="$PWD/$lib" PYO3_CROSS_PYTHON_VERSION=3.12 CARGO_TARGET_DIR=/tmp/target-burger-gpu \
    cargo build --release --quiet --manifest-path demos/burger/rust/Cargo.toml
cp /tmp/target-burger-gpu/release/burger-demo .device-libs/burger-demo
echo "build_demo_for_gpu: .device-libs/burger-demo"
