#!/usr/bin/env bash
# Builds the wheel the GPU test procedure installs (scripts/gpu_run.sh): manylinux_2_28 abi3
# x86_64 (CPython >= 3.11), with the kernels of python/pygpu/kernels/ (built for every backend
# where missing or stale), checked with `auditwheel show`. Release wheels: scripts/release_wheels.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The set-up (scripts/env.sh, inside) builds whichever backends' kernels are missing or stale.
PYGPU_KERNEL_TARGETS="cuda hip host" PYGPU_REUSE_KERNELS=1 scripts/release_wheels.sh x86_64
rm -f wheels/*.tar.gz wheels/SHA256SUMS
ls -l wheels
