#!/usr/bin/env bash
# Runs every test: Rust unit tests, the stub check, and the pytest suite on the host
# backend (plus, on a GPU machine with PYGPU_BACKEND=cuda, the GPU tests).
# Creates .venv and installs what it needs on first use.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

echo "== cargo test (Rust units; compiling them takes 1-2 min the first time)"
cargo test --lib --quiet

echo "== stubtest (python/pygpu/_pygpu.pyi against the compiled module)"
python -m mypy.stubtest pygpu._pygpu --allowlist python/pygpu/stubtest-allowlist.txt

echo "== pytest (PYGPU_BACKEND=${PYGPU_BACKEND:-host})"
PYGPU_BACKEND="${PYGPU_BACKEND:-host}" python -m pytest "$@"
