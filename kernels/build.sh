#!/usr/bin/env bash
# Builds every kernels/<name>.cu for every backend into python/pygpu/kernels/ (shipped in the wheel):
#   <name>.ptx     NVRTC 12.0, compute_70, PTX ISA 8.0: loads on any CUDA 12 or 13 driver
#   <name>.fatbin  nvcc 13.0: cubins for sm_80 and sm_90 (needs a CUDA 13 driver)
#   <name>.hsaco   Debian's hipcc (ROCm 5.2): a gfx90a code object
#   lib<name>.so   g++: the same source run on the CPU by the host backend (ABI: kernels/README.md)
# then checks what it built (kernels/selfcheck.py). The sources with hundreds of kernels (arith,
# cast, cumath, reduce) are built as one module per dtype, <name>_<part>.* (the parts are listed
# in python/pygpu/_toolchain/kernel_parts.py), so that a first call loads a small module.
#
#   kernels/build.sh                 # everything
#   kernels/build.sh host            # only some backends: any of cuda, hip, host
#   PYGPU_KERNEL_SOURCES="burgers" kernels/build.sh host   # only some sources (scripts/demo.sh's
#                                    # first run); pygpu builds the others from the sources embedded
#                                    # in its extension on first use
#
# It installs its pinned toolchains itself: the CUDA compilers from PyPI into kernels/.toolchain/
# (git-ignored, reused by later builds), hipcc and g++ from Debian with apt-get (as root or sudo).
set -euo pipefail

NVRTC_VERSION=12.0.76       # nvidia-cuda-nvrtc-cu12: the newest NVRTC whose PTX (ISA 8.0) every CUDA 12 driver loads
NVCC_VERSION=13.0.88        # nvidia-cuda-nvcc, nvidia-nvvm, nvidia-cuda-crt: must match one another
CUDA_RUNTIME_VERSION=13.0.96  # nvidia-cuda-runtime: the CUDA headers nvcc compiles against
HIPCC_VERSION=5.2.3-8       # Debian 12's hipcc (ROCm 5.2; knows gfx90a, not gfx942)
GXX=g++-12                  # Debian 12's g++ 12.2 (pinned by major: Debian's security updates replace the rest)
PTX_ARCH=compute_70
# Cubins only: a GPU with neither (sm_70, sm_75, sm_100 and later) loads <name>.ptx instead, which
# JIT-compiles on any CUDA 12 or 13 driver; a compute_90 PTX in every fatbin was that fallback
# twice over and 0.66 MB of the wheel.
CUDA_GENCODE=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90)
HIP_ARCH=gfx90a

KERNELS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(dirname "$KERNELS_DIR")"
OUT_DIR="$REPO_DIR/python/pygpu/kernels"
INCLUDE_DIR="$REPO_DIR/python/pygpu/include"  # pygpu_kernel.h, shipped in the wheel for runtime compilation
TOOLCHAIN_DIR="$KERNELS_DIR/.toolchain"
STAGE_DIR="$KERNELS_DIR/.build"
PARTS_DIR="$KERNELS_DIR/.build-parts"  # generated one-part sources (#define the part, #include the source)
PARTS_PY="$REPO_DIR/python/pygpu/_toolchain/kernel_parts.py"
PYTHON="${PYTHON:-python3}"

log() { printf '[kernels] %s\n' "$*" >&2; }
die() { printf '[kernels] error: %s\n' "$*" >&2; exit 1; }

TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=(cuda hip host)
for t in "${TARGETS[@]}"; do
  case "$t" in cuda | hip | host) ;; *) die "unknown target '$t' (expected cuda, hip or host)" ;; esac
done
wants() { [[ " ${TARGETS[*]} " == *" $1 "* ]]; }

shopt -s nullglob
SOURCES=("$KERNELS_DIR"/*.cu)
[[ ${#SOURCES[@]} -gt 0 ]] || die "no kernels/*.cu sources"
if [[ -n "${PYGPU_KERNEL_SOURCES:-}" ]]; then
  SOURCES=()
  for name in $PYGPU_KERNEL_SOURCES; do
    [[ -f "$KERNELS_DIR/$name.cu" ]] || die "PYGPU_KERNEL_SOURCES names '$name', but there is no kernels/$name.cu"
    SOURCES+=("$KERNELS_DIR/$name.cu")
  done
fi
export PYGPU_KERNEL_SOURCES  # selfcheck.py checks the same sources

# --- toolchains -------------------------------------------------------------------------------

# pip_toolchain NAME REQUIREMENT...: installs the pinned wheels once into .toolchain/NAME.
# Into a temporary folder first, so an interrupted install is never mistaken for a complete one.
pip_toolchain() {
  local name="$1"; shift
  local dest="$TOOLCHAIN_DIR/$name"
  if [[ -f "$dest/.complete" ]]; then return; fi
  log "installing $* into ${dest#"$REPO_DIR"/}"
  rm -rf "$dest" "$dest.tmp"
  mkdir -p "$TOOLCHAIN_DIR"
  "$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-cache-dir --no-deps \
    --only-binary=:all: --target "$dest.tmp" "$@"
  touch "$dest.tmp/.complete"
  mv "$dest.tmp" "$dest"
}

# apt_tool PACKAGE[=VERSION]...: installs Debian packages unless they are there (at that version).
apt_tool() {
  local missing=() spec have
  for spec in "$@"; do
    have="$(dpkg-query -W -f='${Status} ${Version}' "${spec%%=*}" 2>/dev/null || true)"
    if [[ "$have" != "install ok installed "* ]] || [[ "$spec" == *=* && "${have##* }" != "${spec#*=}" ]]; then
      missing+=("$spec")
    fi
  done
  [[ ${#missing[@]} -gt 0 ]] || return 0
  command -v apt-get >/dev/null || die "need ${missing[*]} from Debian, and apt-get is not here"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || die "need root or sudo to apt-get install ${missing[*]}"
    sudo=(sudo -n)
  fi
  log "apt-get install ${missing[*]}"
  # The lock timeout waits for another apt-get on this machine instead of failing at once.
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

if wants host || wants cuda; then
  command -v "$GXX" >/dev/null || apt_tool "$GXX"
fi
if wants cuda; then
  pip_toolchain "nvrtc-$NVRTC_VERSION" "nvidia-cuda-nvrtc-cu12==$NVRTC_VERSION"
  pip_toolchain "nvcc-$NVCC_VERSION" "nvidia-cuda-nvcc==$NVCC_VERSION" "nvidia-nvvm==$NVCC_VERSION" \
    "nvidia-cuda-crt==$NVCC_VERSION" "nvidia-cuda-runtime==$CUDA_RUNTIME_VERSION"
  NVRTC_LIB="$TOOLCHAIN_DIR/nvrtc-$NVRTC_VERSION/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
  NVCC="$TOOLCHAIN_DIR/nvcc-$NVCC_VERSION/nvidia/cu13/bin/nvcc"
  [[ -f "$NVRTC_LIB" ]] || die "no libnvrtc in the nvidia-cuda-nvrtc-cu12 wheel at $NVRTC_LIB"
  [[ -x "$NVCC" ]] || die "no nvcc in the nvidia-cuda-nvcc wheel at $NVCC"
fi
if wants hip; then
  apt_tool "hipcc=$HIPCC_VERSION"
fi

# --- build ------------------------------------------------------------------------------------

rm -rf "$STAGE_DIR" "$PARTS_DIR"
mkdir -p "$STAGE_DIR" "$PARTS_DIR"

# MODULE_NAMES[i] is built from MODULE_SOURCES[i]: a kernels/*.cu itself, or for a split source
# one generated file per part that keeps only the kernels of that part's suffixes (pygpu_parts.h).
MODULE_NAMES=()
MODULE_SOURCES=()
for src in "${SOURCES[@]}"; do
  name="$(basename "$src" .cu)"
  parts="$("$PYTHON" "$PARTS_PY" "$name")"
  while read -r module _suffixes; do
    if [[ "$module" == "$name" ]]; then
      MODULE_NAMES+=("$name")
      MODULE_SOURCES+=("$src")
      continue
    fi
    "$PYTHON" "$PARTS_PY" --part "$module" >"$PARTS_DIR/$module.cu"
    MODULE_NAMES+=("$module")
    MODULE_SOURCES+=("$PARTS_DIR/$module.cu")
  done <<<"$parts"
done

build_cuda() {  # builds every module
  # NVRTC (one process for all modules) beside nvcc: they are the longest steps.
  "$PYTHON" "$KERNELS_DIR/nvrtc_compile.py" --nvrtc "$NVRTC_LIB" --expect-version 12.0 \
    --arch "$PTX_ARCH" -I "$INCLUDE_DIR" -I "$KERNELS_DIR" --out-dir "$STAGE_DIR" "${MODULE_SOURCES[@]}" &
  local nvrtc=$! i
  for i in "${!MODULE_NAMES[@]}"; do
    log "cuda: ${MODULE_NAMES[$i]}"
    # nvcc needs a host compiler even for device code (preprocessing); -ccbin pins it.
    "$NVCC" -ccbin "$GXX" -std=c++17 -O3 -fatbin "${CUDA_GENCODE[@]}" -I "$INCLUDE_DIR" -I "$KERNELS_DIR" \
      -o "$STAGE_DIR/${MODULE_NAMES[$i]}.fatbin" "${MODULE_SOURCES[$i]}"
  done
  wait "$nvrtc"
}

build_hip() {  # NAME SOURCE
  # HIP_PLATFORM=amd: hipcc would otherwise pick the NVIDIA platform if any nvcc is on PATH.
  # --no-gpu-bundle-output: a plain AMDGPU ELF code object rather than a clang offload bundle.
  HIP_PLATFORM=amd hipcc -std=c++17 --genco --offload-arch="$HIP_ARCH" --no-gpu-bundle-output -O3 \
    -I "$INCLUDE_DIR" -I "$KERNELS_DIR" -o "$STAGE_DIR/$1.hsaco" "$2"
}

build_host() {  # NAME SOURCE
  # -fvisibility=hidden: only the PYGPU_API symbols are exported.
  # -Bsymbolic: the library's own references bind to its own symbols, whatever else is loaded.
  # -fno-exceptions and --as-needed: no libstdc++ dependency, only the dynamic loader's TLS.
  # -ffp-contract=off: no fused multiply-adds, so results are the plain IEEE evaluation everywhere.
  # -fno-math-errno -fno-trapping-math: device code has neither errno nor floating-point traps;
  # with them loops of sqrt, floor or a comparison's choice vectorise (results are the same).
  # -s: no static symbol table (dlsym uses the dynamic one); 13% of the libraries' deflated size.
  "$GXX" -x c++ -std=c++17 -O3 -fPIC -shared -fvisibility=hidden -fno-exceptions -fno-rtti \
    -fno-gnu-unique -ffp-contract=off -fno-math-errno -fno-trapping-math -Wall -Wextra -Werror -Wl,-Bsymbolic -Wl,--as-needed -Wl,-z,defs -s \
    -I "$INCLUDE_DIR" -I "$KERNELS_DIR" -o "$STAGE_DIR/lib$1.so" "$2"
}

# --- portable host libraries (the wheels' install path) ----------------------------------------
# The host libraries ship in manylinux_2_28 wheels, so they must not need a newer glibc than 2.28.
# Linked against this machine's glibc they would (exp, log, pow @GLIBC_2.29, hypot @GLIBC_2.35:
# the same functions, re-versioned). So g++ compiles as above and the pinned zig links against its
# glibc 2.28 stubs. PYGPU_KERNELS_GLIBC= (empty) links with g++ against this machine's glibc.
ZIGLANG_VERSION=0.15.2      # PyPI ziglang, also in scripts/requirements-dev.txt
KERNELS_GLIBC="${PYGPU_KERNELS_GLIBC-2.28}"
if wants host && [[ -n "$KERNELS_GLIBC" ]]; then
  have_zig="$("$PYTHON" -m ziglang version 2>/dev/null || true)"
  [[ "$have_zig" == "$ZIGLANG_VERSION" ]] ||
    die "linking the host libraries for glibc $KERNELS_GLIBC needs ziglang $ZIGLANG_VERSION in $PYTHON's environment" \
      "(found: ${have_zig:-none}): pip install ziglang==$ZIGLANG_VERSION, or set PYGPU_KERNELS_GLIBC= to link for this machine"
  build_host() {  # NAME SOURCE: build_host's flags, compiled by g++ and linked by zig
    "$GXX" -x c++ -std=c++17 -O3 -fPIC -fvisibility=hidden -fno-exceptions -fno-rtti -fno-gnu-unique \
      -ffp-contract=off -fno-math-errno -fno-trapping-math -Wall -Wextra -Werror -I "$INCLUDE_DIR" -I "$KERNELS_DIR" -c -o "$STAGE_DIR/$1.o" "$2"
    "$PYTHON" -m ziglang cc -target "$(uname -m)-linux-gnu.$KERNELS_GLIBC" -shared -Wl,-Bsymbolic -Wl,--as-needed \
      -Wl,-z,defs -s -o "$STAGE_DIR/lib$1.so" "$STAGE_DIR/$1.o" -lm
    rm -f "$STAGE_DIR/$1.o"
  }
fi

# CUDA compiles all modules in two processes (NVRTC beside nvcc); the host and HIP modules are
# compiled one per core, from one queue shared by those backends. A failed job leaves a mark.
JOBS="$(nproc 2>/dev/null || echo 2)"
FAILED_DIR="$STAGE_DIR/.failed"
mkdir -p "$FAILED_DIR"
if wants cuda; then
  build_cuda || touch "$FAILED_DIR/cuda" &
fi
for t in "${TARGETS[@]}"; do
  [[ "$t" == cuda ]] && continue
  for i in "${!MODULE_NAMES[@]}"; do
    while [[ $(jobs -rp | wc -l) -ge $JOBS ]]; do wait -n || true; done
    log "$t: ${MODULE_NAMES[$i]}"
    { "build_$t" "${MODULE_NAMES[$i]}" "${MODULE_SOURCES[$i]}" || touch "$FAILED_DIR/$t-${MODULE_NAMES[$i]}"; } &
  done
done
wait
failed="$(ls "$FAILED_DIR")"
[[ -z "$failed" ]] || die "build failed: $(echo "$failed" | tr '\n' ' ')"
rm -rf "$FAILED_DIR"

# --- install into the package -----------------------------------------------------------------

# BUILD_INFO.txt: which tool built each kind of file, one "<target>-<kind>: ..." line each.
{
  echo "# Written by kernels/build.sh: the tools that built these files."
  if wants cuda; then
    echo "cuda-ptx: nvidia-cuda-nvrtc-cu12 $NVRTC_VERSION, $PTX_ARCH"
    echo "cuda-fatbin: nvidia-cuda-nvcc $NVCC_VERSION, ${CUDA_GENCODE[*]}"
  fi
  if wants hip; then echo "hip-hsaco: hipcc $(dpkg-query -W -f='${Version}' hipcc), $HIP_ARCH"; fi
  if wants host; then
    echo "host-so: $GXX $("$GXX" -dumpfullversion)${KERNELS_GLIBC:+, linked for glibc $KERNELS_GLIBC by ziglang $ZIGLANG_VERSION}"
  fi
  if [[ -f "$OUT_DIR/BUILD_INFO.txt" ]]; then  # keep the lines of the backends not rebuilt now
    while IFS= read -r line; do
      [[ "$line" == \#* ]] || wants "${line%%-*}" || echo "$line"
    done <"$OUT_DIR/BUILD_INFO.txt"
  fi
} >"$STAGE_DIR/BUILD_INFO.txt"

GXX="$GXX" "$PYTHON" "$KERNELS_DIR/selfcheck.py" "$STAGE_DIR" "${TARGETS[@]}"

# Replace only the selected backends' artifacts, so `build.sh host` keeps the GPU ones.
mkdir -p "$OUT_DIR"
if [[ -z "${PYGPU_KERNEL_SOURCES:-}" ]]; then
  wants cuda && rm -f "$OUT_DIR"/*.ptx "$OUT_DIR"/*.fatbin
  wants hip && rm -f "$OUT_DIR"/*.hsaco
  wants host && rm -f "$OUT_DIR"/lib*.so
fi
cp "$STAGE_DIR"/* "$OUT_DIR"/
rm -rf "$STAGE_DIR" "$PARTS_DIR"
log "done: $(cd "$OUT_DIR" && ls | tr '\n' ' ')"
