#!/usr/bin/env bash
# Profiling on the GPU machine, which has no `perf`: bundles this machine's perf (with the
# libraries it needs beyond libc) and a pygpu library built with line tables into .perf/
# (git-ignored), for `scripts/gpu_run.sh profile`. Carry .perf with the wheels.
#
#   here:  scripts/perf_bundle.sh
#   there: scripts/gpu_run.sh profile            # PROFILE_CMD="python3 ..." to profile another program
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
perf=$(readlink -f "$(command -v perf)") || { echo "perf_bundle: no perf on this machine" >&2; exit 2; }
rm -rf .perf && mkdir -p .perf
cp "$perf" .perf/perf
# glibc and the C++ runtime come from the GPU machine (newer there); the rest travels.
ldd .perf/perf | awk '/=> \// {print $3}' | grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s)\.so' | xargs -r cp -L -t .perf/
CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=none \
    cargo build --release --lib --quiet --target-dir "${CARGO_TARGET_DIR:-target}"
cp "${CARGO_TARGET_DIR:-target}/release/libpygpu.so" .perf/_pygpu.abi3.so
du -sh .perf
