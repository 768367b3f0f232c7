#!/usr/bin/env bash
# The Rust linters: rustfmt (rustfmt.toml) and clippy with warnings as errors, including
# clippy::undocumented_unsafe_blocks (also set in [lints.clippy] of each Cargo.toml), over
# the pygpu crate (with and without the `hip` feature where HIP is installed) and the
# compiled Burgers demo. CARGO_TARGET_DIR and the other cargo settings come from the
# environment as they are.
#
# Usage: scripts/lint_rust.sh        (from anywhere)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

clippy=(cargo clippy --all-targets --locked -- -D warnings -W clippy::undocumented_unsafe_blocks)

echo "lint_rust: cargo fmt --check"
cargo fmt --check
(cd demos/burger/rust && cargo fmt --check)

echo "lint_rust: cargo clippy (pygpu)"
"${clippy[@]}"
# The HIP backend compiles only against the HIP headers (.ci/hip_check.sh installs them).
if [ -f "${HIP_PATH:-/usr}/include/hip/hip_runtime_api.h" ]; then
    echo "lint_rust: cargo clippy --features hip (pygpu)"
    HIP_PATH="${HIP_PATH:-/usr}" cargo clippy --all-targets --locked --features hip -- -D warnings \
        -W clippy::undocumented_unsafe_blocks
else
    echo "lint_rust: skipping --features hip (no HIP headers; .ci/hip_check.sh installs them)"
fi

echo "lint_rust: cargo clippy (demos/burger/rust)"
(cd demos/burger/rust && "${clippy[@]}")
echo "lint_rust: OK"
