#!/usr/bin/env bash
# Builds the release wheel (abi3, CPython >= 3.11) into wheels/, kernels included.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rm -rf wheels
python3 -m maturin build --release --out wheels "$@"
ls -l wheels
