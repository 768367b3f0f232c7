#!/usr/bin/env bash
# Builds the release wheels into wheels/: manylinux_2_28 abi3 (CPython >= 3.11) for x86_64 and
# aarch64 (Grace Hopper), each checked with `auditwheel show`, plus the sdist and SHA256SUMS.
#
#   scripts/release_wheels.sh                  # kernels rebuilt for every backend, both wheels, sdist
#   scripts/release_wheels.sh x86_64           # one architecture (x86_64 or aarch64)
#   PYGPU_REUSE_KERNELS=1 scripts/release_wheels.sh   # ship python/pygpu/kernels/ as it is
#
# Reproducible here: the Rust toolchain is pinned (rust-toolchain.toml; rustup adds the aarch64
# target), the linker is the pinned ziglang (maturin --zig, glibc 2.28 symbols), the kernels'
# toolchains are pinned in kernels/build.sh, and maturin writes fixed timestamps into the zip.
# Kernels in the wheels: CUDA (PTX, fatbin) and HIP code objects in both; the host libraries are
# x86_64 code, so the aarch64 wheel leaves them out and builds them from source on first use
# (kernels/README.md, "Install paths").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck disable=SC1091
source scripts/env.sh

arches=("$@")
[ ${#arches[@]} -gt 0 ] || arches=(x86_64 aarch64)
for arch in "${arches[@]}"; do
    case "$arch" in x86_64 | aarch64) ;; *) echo "release_wheels: unknown architecture '$arch' (x86_64, aarch64)" >&2; exit 2 ;; esac
done
say() { printf '[release] %s\n' "$*" >&2; }

if [ -z "${PYGPU_REUSE_KERNELS:-}" ]; then
    say "building the bundled kernels for cuda, hip and host (kernels/build.sh; a few minutes) ..."
    kernels/build.sh cuda hip host
fi
for line in cuda-ptx cuda-fatbin hip-hsaco 'host-so: .*linked for glibc 2.28'; do
    grep -q "^$line" python/pygpu/kernels/BUILD_INFO.txt 2>/dev/null || {
        say "python/pygpu/kernels/ lacks '$line' kernels: run kernels/build.sh cuda hip host (or without PYGPU_REUSE_KERNELS)"
        exit 1
    }
done

rm -rf wheels
mkdir -p wheels
log="$(mktemp)"
for arch in "${arches[@]}"; do
    rustup target list --installed | grep -qx "$arch-unknown-linux-gnu" || rustup target add "$arch-unknown-linux-gnu"
    aside=""
    if [ "$arch" != "$(uname -m)" ]; then
        # This machine's host kernel libraries do not run there: keep them out of this wheel.
        aside="$(mktemp -d)"
        mv python/pygpu/kernels/lib*.so "$aside"/
        trap 'mv "$aside"/lib*.so python/pygpu/kernels/ 2>/dev/null || true' EXIT
    fi
    say "maturin build --zig, $arch, manylinux_2_28 (a few minutes) ..."
    # Deflate at level 9 (pip reads any level): issue 12 caps the wheel at 5 MB and the kernels fill most of it.
    maturin build --release --quiet --zig --compatibility manylinux_2_28 --compression-level 9 --target "$arch-unknown-linux-gnu" \
        --out wheels >"$log" 2>&1 || { tail -n 40 "$log" >&2; say "maturin failed (above: the end of its output)"; exit 1; }
    if [ -n "$aside" ]; then
        mv "$aside"/lib*.so python/pygpu/kernels/
        rmdir "$aside"
        trap - EXIT
    fi
done
maturin sdist --out wheels >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
rm -f "$log"

for wheel in wheels/*.whl; do
    tag="$(auditwheel show "$wheel" 2>/dev/null | tr -s ' \n' ' ' | grep -o 'consistent with the following platform tag: "[^"]*"' || true)"
    say "$(basename "$wheel"): ${tag:-auditwheel gave no platform tag}"
    [[ "$tag" == *'"manylinux_2_28_'* ]] || { say "$(basename "$wheel") is not manylinux_2_28"; exit 1; }
done
(cd wheels && sha256sum -- * >SHA256SUMS)
ls -l wheels
