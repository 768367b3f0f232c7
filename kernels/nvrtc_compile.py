"""Compile CUDA C++ sources to PTX with a given libnvrtc, through ctypes.

Used by kernels/build.sh with NVRTC 12.0 from PyPI: PyPI's CUDA 12 wheels ship NVRTC but no nvcc,
and NVRTC 12.0 writes PTX ISA 8.0, which every CUDA 12 or 13 driver loads.

    python3 nvrtc_compile.py --nvrtc LIBNVRTC --expect-version 12.0 \
        --arch compute_70 -I DIR -o OUT.ptx SRC.cu
    python3 nvrtc_compile.py ... --out-dir DIR SRC.cu...     # DIR/<SRC stem>.ptx for each

Several sources in one process: kernels/build.sh compiles every module of the by-dtype split
sources (dozens) this way, without paying a Python start and a libnvrtc load for each.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path


def _check(lib: ctypes.CDLL, code: int, what: str) -> None:
    if code != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        raise RuntimeError(f"{what}: {lib.nvrtcGetErrorString(code).decode()} ({code})")


def compile_to_ptx(nvrtc: str, source: Path, options: list[str]) -> tuple[str, str]:
    """Return (ptx, log); raise RuntimeError with the compile log on failure."""
    lib = ctypes.CDLL(nvrtc)
    prog = ctypes.c_void_p()
    _check(
        lib,
        lib.nvrtcCreateProgram(ctypes.byref(prog), source.read_bytes(), source.name.encode(), 0, None, None),
        "nvrtcCreateProgram",
    )
    try:
        opts = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
        status = lib.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)), "nvrtcGetProgramLogSize")
        log_buf = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetProgramLog(prog, log_buf), "nvrtcGetProgramLog")
        log = log_buf.value.decode(errors="replace")
        if status != 0:
            raise RuntimeError(f"{source}: NVRTC compile failed:\n{log}")
        _check(lib, lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
        ptx_buf = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetPTX(prog, ptx_buf), "nvrtcGetPTX")
        return ptx_buf.value.decode(), log
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def nvrtc_version(nvrtc: str) -> str:
    lib = ctypes.CDLL(nvrtc)
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return f"{major.value}.{minor.value}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sources", type=Path, nargs="+")
    ap.add_argument("-o", "--output", type=Path, help="the PTX file (one source)")
    ap.add_argument("--out-dir", type=Path, help="write <stem>.ptx here for each source")
    ap.add_argument("--nvrtc", required=True, help="path to libnvrtc.so")
    ap.add_argument("--arch", default="compute_70")
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("--expect-version", help="fail unless libnvrtc reports this MAJOR.MINOR")
    args = ap.parse_args()
    if (args.output is None) == (args.out_dir is None) or (args.output is not None and len(args.sources) > 1):
        ap.error("give -o OUT.ptx with one source, or --out-dir DIR")

    version = nvrtc_version(args.nvrtc)
    if args.expect_version and version != args.expect_version:
        print(f"error: {args.nvrtc} is NVRTC {version}, expected {args.expect_version}", file=sys.stderr)
        return 1
    options = [f"--gpu-architecture={args.arch}", "--std=c++17"]
    options += [f"--include-path={d}" for d in args.includes]
    for source in args.sources:
        try:
            ptx, log = compile_to_ptx(args.nvrtc, source, options)
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        if log.strip():
            print(log, file=sys.stderr)
        output = args.output if args.output is not None else args.out_dir / f"{source.stem}.ptx"
        output.write_text(ptx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
