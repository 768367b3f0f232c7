"""Check what kernels/build.sh built, before it goes into the package (standard library only).

    python3 selfcheck.py BUILD_DIR [cuda] [hip] [host]     (PYGPU_KERNEL_SOURCES: only those sources)

For every kernels/<name>.cu it checks that each backend's file holds exactly the kernels the
source exports (PYGPU_EXPORT) and the globals it declares (PYGPU_GLOBAL), a source split by dtype
(python/pygpu/_toolchain/kernel_parts.py) each of its <name>_<part> files exactly the kernels that pygpu
looks for there, that the PTX is ISA 8.0 for sm_70, that the fatbin holds sm_80 and sm_90 cubins
(and no PTX: the .ptx file is the fallback), that the HSACO is a gfx90a code object; and it runs
the host libraries' kernels through their C ABI against a reference computed here.
"""

from __future__ import annotations

import ctypes
import importlib.util
import math
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

KERNELS_DIR = Path(__file__).resolve().parent
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)


def _preprocessed_kernels(path: Path) -> list[str]:
    """The kernels of a source (or generated part file) as its host build exports them: each
    export has become its pygpu_run_blocks_K entry point in the preprocessed text."""
    include = KERNELS_DIR.parent / "python" / "pygpu" / "include"  # pygpu_kernel.h
    cpp = [os.environ.get("GXX", "g++-12"), "-E", "-P", "-x", "c++", "-std=c++17"]
    cpp += ["-I", str(include), "-I", str(KERNELS_DIR)]
    out = subprocess.run([*cpp, str(path)], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\bpygpu_run_blocks_(\w+)\s*\(", out)


def declared(source: Path) -> tuple[list[str], list[str]]:
    """(kernels, globals) in source order, from PYGPU_EXPORT(K) and PYGPU_GLOBAL(T, G) lines.

    Kernels that macros instantiate (the X-macros of pygpu/include/pygpu_types.h, reduce.cu's
    PYGPU_REDUCE_KERNEL) are found in the preprocessed text."""
    text = source.read_text()
    kernels = re.findall(r"^\s*PYGPU_EXPORT\((\w+)\)", text, re.M)
    if re.search(r"PYGPU_EW_KERNEL|PYGPU_PART_KEEP|PYGPU_REDUCE_KERNEL", text):
        kernels = _preprocessed_kernels(source)
    globals_ = re.findall(r"^\s*PYGPU_(?:GLOBAL|CONSTANT)\([^,]+,\s*(\w+)\)", text, re.M)
    return kernels, globals_


def _load_parts() -> Any:
    """python/pygpu/_toolchain/kernel_parts.py, the table of the split sources, loaded by path (no pygpu)."""
    path = KERNELS_DIR.parent / "python" / "pygpu" / "_toolchain" / "kernel_parts.py"
    spec = importlib.util.spec_from_file_location("kernel_parts", path)
    assert spec is not None and spec.loader is not None
    parts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(parts)
    return parts


def modules_of(source: Path) -> list[tuple[str, list[str], list[str]]]:
    """(module, kernels, globals) of every module kernels/build.sh builds from ``source``. A split
    source's kernels are expected in the module that pygpu.gpuarray._bundled looks for them in
    (kernel_parts.module_name); the built files are then checked to hold exactly those, so
    every kernel is in one module and the right one."""
    table = _load_parts()
    name = source.stem
    kernels, globals_ = declared(source)
    if name not in table.PARTS:
        return [(name, kernels, globals_)]
    check(not globals_, f"{source.name}: a split source cannot hold globals ({globals_})")
    homeless = [k for k in kernels if table.module_name(name, k) is None]
    check(not homeless, f"{source.name}: no part of kernel_parts.PARTS holds {homeless}")
    modules = [f"{name}_{part}" for part in table.PARTS[name]]
    return [(m, [k for k in kernels if table.module_name(name, k) == m], []) for m in modules]


# --- CUDA -----------------------------------------------------------------------------------


def check_ptx(path: Path, kernels: list[str], globals_: list[str]) -> None:
    ptx = path.read_text()
    check(re.search(r"^\.version 8\.0$", ptx, re.M) is not None, f"{path.name}: not PTX ISA 8.0")
    check(re.search(r"^\.target sm_70$", ptx, re.M) is not None, f"{path.name}: not .target sm_70")
    entries = re.findall(r"^\.visible \.entry (\w+)\(", ptx, re.M)
    check(sorted(entries) == sorted(kernels), f"{path.name}: entries {entries} != {kernels}")
    for g in globals_:
        check(re.search(rf"^(\.visible )?\.global .* {g};$", ptx, re.M) is not None, f"{path.name}: no global {g}")


FATBIN_MAGIC = 0xBA55ED50
FATBIN_KINDS = {1: "ptx", 2: "cubin"}


def fatbin_entries(data: bytes) -> list[tuple[str, int]]:
    """(kind, sm) of each image in a fatbin (fatbinary_section.h's container layout)."""
    magic, _version, header_size, body_size = struct.unpack_from("<IHHQ", data, 0)
    if magic != FATBIN_MAGIC:
        raise ValueError("not a fatbin")
    entries, offset, end = [], header_size, header_size + body_size
    while offset < end:
        kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, offset)
        (arch,) = struct.unpack_from("<I", data, offset + 28)
        entries.append((FATBIN_KINDS.get(kind, str(kind)), arch))
        offset += entry_header + payload
    return entries


def check_fatbin(path: Path) -> None:
    try:
        entries = sorted(fatbin_entries(path.read_bytes()))
    except (ValueError, struct.error) as e:
        failures.append(f"{path.name}: {e}")
        return
    want = sorted([("cubin", 80), ("cubin", 90)])
    check(entries == want, f"{path.name}: images {entries} != {want}")


# --- HIP ------------------------------------------------------------------------------------

EM_AMDGPU, ELFOSABI_AMDGPU_HSA, EF_AMDGPU_MACH_GFX90A = 0xE0, 64, 0x3F


def check_hsaco(path: Path, kernels: list[str], globals_: list[str]) -> None:
    data = path.read_bytes()
    if data[:4] != b"\x7fELF":
        failures.append(f"{path.name}: not an ELF file")
        return
    osabi = data[7]
    (machine,) = struct.unpack_from("<H", data, 18)
    (flags,) = struct.unpack_from("<I", data, 48)
    check(machine == EM_AMDGPU and osabi == ELFOSABI_AMDGPU_HSA, f"{path.name}: not an AMDGPU HSA ELF")
    check(flags & 0xFF == EF_AMDGPU_MACH_GFX90A, f"{path.name}: not gfx90a (e_flags {flags:#x})")
    out = subprocess.run(["readelf", "-Ws", "--dyn-syms", str(path)], capture_output=True, text=True)
    symbols = {(f[3], f[7]) for f in (line.split() for line in out.stdout.splitlines()) if len(f) == 8}
    for k in kernels:
        check(("FUNC", k) in symbols and ("OBJECT", k + ".kd") in symbols, f"{path.name}: no kernel {k}")
    for g in globals_:
        check(("OBJECT", g) in symbols, f"{path.name}: no global {g}")


# --- host -----------------------------------------------------------------------------------

Dims = ctypes.c_uint * 3


class LaunchDesc(ctypes.Structure):
    _fields_ = [
        ("grid", Dims),
        ("block", Dims),
        ("args", ctypes.POINTER(ctypes.c_void_p)),
        ("shared_bytes", ctypes.c_size_t),
    ]


class Worker(ctypes.Structure):
    _fields_ = [
        ("stack_memory", ctypes.c_void_p),
        ("stack_bytes", ctypes.c_size_t),
        ("stack_count", ctypes.c_uint),
        ("reserved", ctypes.c_uint),
        ("shared", ctypes.c_void_p),
        ("shared_capacity", ctypes.c_size_t),
        ("message", ctypes.c_char * 256),
        # fault isolation (ABI 3): left zero here, so nothing is abandoned or recovered
        ("jump", ctypes.c_void_p),
        ("recover", ctypes.c_void_p),
        ("abandon", ctypes.c_void_p),
        ("group", ctypes.c_ulonglong),
        ("thread_self", ctypes.c_void_p),
        ("fault_signal", ctypes.c_int),
        ("fault_code", ctypes.c_int),
        ("fault_address", ctypes.c_void_p),
    ]


STACK_BYTES, SHARED_BYTES = 64 * 1024, 48 * 1024


class HostLib:
    """The host ABI as the Rust host backend uses it (here: every block on the calling thread)."""

    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))
        self.stacks = ctypes.create_string_buffer(1024 * STACK_BYTES + 16)
        self.shared = ctypes.create_string_buffer(SHARED_BYTES + 16)
        self.worker = Worker(
            (ctypes.addressof(self.stacks) + 15) & ~15,
            STACK_BYTES,
            1024,
            0,
            (ctypes.addressof(self.shared) + 15) & ~15,
            SHARED_BYTES,
        )

    def names(self) -> list[str]:
        count = ctypes.c_uint.in_dll(self.lib, "pygpu_kernel_count").value
        table = (ctypes.c_char_p * (count + 1)).in_dll(self.lib, "pygpu_kernel_names")
        assert table[count] is None
        return [table[i].decode() for i in range(count)]

    def launch(self, kernel: str, grid, block, *args, shared: int = 0) -> int:
        """args are ctypes scalars, or arrays for pointer parameters (passed as their address);
        args[i] of the call points to the i-th value, as in cuLaunchKernel."""
        fn = getattr(self.lib, f"pygpu_run_blocks_{kernel}")
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.POINTER(LaunchDesc), ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.POINTER(Worker)]
        values = [ctypes.c_void_p(ctypes.addressof(a)) if isinstance(a, ctypes.Array) else a for a in args]
        params = (ctypes.c_void_p * max(len(values), 1))(*(ctypes.addressof(v) for v in values))
        desc = LaunchDesc(Dims(*grid), Dims(*block), ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p)), shared)
        return fn(ctypes.byref(desc), 0, grid[0] * grid[1] * grid[2], ctypes.byref(self.worker))

    def global_(self, name: str) -> tuple[int, int]:
        address = ctypes.addressof(ctypes.c_char.in_dll(self.lib, f"pygpu_global_{name}"))
        size = ctypes.c_size_t.in_dll(self.lib, f"pygpu_global_size_{name}").value
        return address, size


def run_testing(lib: HostLib) -> None:
    n = 1000
    x = (ctypes.c_double * n)(*range(n))
    rc = lib.launch("add_scalar_f64", (3, 1, 1), (128, 1, 1), x, ctypes.c_longlong(n), ctypes.c_double(0.5))
    check(rc == 0 and list(x) == [i + 0.5 for i in range(n)], "add_scalar_f64")

    y = (ctypes.c_float * n)(*([1.0] * n))
    xs = (ctypes.c_float * n)(*range(n))
    rc = lib.launch("axpy_f32", (2, 1, 1), (64, 1, 1), y, xs, ctypes.c_float(2.0), ctypes.c_int(n))
    check(rc == 0 and list(y) == [2.0 * i + 1.0 for i in range(n)], "axpy_f32")

    z = (ctypes.c_int * n)()
    rc = lib.launch("fill_i32", (1, 1, 1), (32, 1, 1), z, ctypes.c_int(n - 1), ctypes.c_int(-7))
    check(rc == 0 and list(z) == [-7] * (n - 1) + [0], "fill_i32 (and its bound)")

    out = (ctypes.c_double * 1)()
    rc = lib.launch("scale_args", (1, 1, 1), (1, 1, 1), out, ctypes.c_int(-3), ctypes.c_double(1.25))
    check(rc == 0 and out[0] == -3.75, "scale_args")

    check(lib.launch("empty_kernel", (1, 1, 1), (1, 1, 1)) == 0, "empty_kernel")

    w = (ctypes.c_int * 8)()
    rc = lib.launch("oob_write", (1, 1, 1), (4, 1, 1), w, ctypes.c_longlong(5))
    check(rc == 0 and list(w) == [0, 0, 0, 0, 0, 1, 0, 0], "oob_write (in bounds)")

    address, size = lib.global_("pygpu_test_counter")
    counter = ctypes.c_int.from_address(address)
    check(size == 4 and counter.value == 0, "pygpu_test_counter: size 4, zero at load")
    rc = lib.launch("bump_counter", (4, 1, 1), (32, 1, 1), ctypes.c_int(3))
    rc |= lib.launch("bump_counter", (1, 1, 1), (1, 1, 1), ctypes.c_int(4))
    check(rc == 0 and counter.value == 7, "bump_counter (once per launch)")
    counter.value = 0

    # Launches a GPU refuses, the host refuses too, with CUDA_ERROR_INVALID_VALUE.
    check(lib.launch("empty_kernel", (0, 1, 1), (1, 1, 1)) == 1, "empty grid refused")
    check(lib.launch("empty_kernel", (1, 1, 1), (1025, 1, 1)) == 1, "block > 1024 refused")
    check(lib.launch("empty_kernel", (1, 1, 1), (1, 1, 65)) == 1, "blockDim.z > 64 refused")


def burgers_reference(u: list[float], nu_dt_h2: float, dt_2h: float) -> list[float]:
    """One burgers_ghosts + burgers_step, written as the kernels are."""
    u = list(u)
    u[0], u[-1] = u[-2], u[1]
    new = list(u)
    for i in range(1, len(u) - 1):
        left, centre, right = u[i - 1], u[i], u[i + 1]
        new[i] = centre + nu_dt_h2 * (right - 2.0 * centre + left) - centre * dt_2h * (right - left)
    return new


def run_burgers(lib: HostLib) -> None:
    nx = 257
    n = nx + 2
    h, dt, nu = 2 * math.pi / nx, 1e-3, 0.01
    c1, c2 = ctypes.c_double(nu * dt / h**2), ctypes.c_double(dt / (2 * h))
    start = [0.0] + [math.sin(h * (i - 1)) + 0.5 for i in range(1, nx + 1)] + [0.0]
    want = burgers_reference(start, c1.value, c2.value)

    u, u_new = (ctypes.c_double * n)(*start), (ctypes.c_double * n)()
    rc = lib.launch("burgers_ghosts", (5, 1, 1), (64, 1, 1), u, ctypes.c_int(n))
    rc |= lib.launch("burgers_step", (2, 1, 1), (32, 1, 1), u, u_new, ctypes.c_int(n), c1, c2)
    check(rc == 0 and list(u_new)[1:-1] == want[1:-1], "burgers_ghosts + burgers_step")

    u, u_new = (ctypes.c_double * n)(*start), (ctypes.c_double * n)()
    rc = lib.launch("burgers_step_periodic", (3, 1, 1), (7, 1, 1), u, u_new, ctypes.c_int(n), c1, c2)
    ghosts_ok = u_new[0] == u_new[nx] and u_new[nx + 1] == u_new[1]
    check(rc == 0 and list(u_new)[1:-1] == want[1:-1] and ghosts_ok, "burgers_step_periodic")

    # The seeds' scheme: u's ghosts are used as they are (here deliberately not periodic) and
    # u_new's ghosts are copied from u's interior.
    ghosted = [-0.25] + start[1:-1] + [0.75]
    u, u_new = (ctypes.c_double * n)(*ghosted), (ctypes.c_double * n)()
    rc = lib.launch("burgers_step_lagged", (3, 1, 1), (7, 1, 1), u, u_new, ctypes.c_int(n), c1, c2)
    lagged = [
        ghosted[i]
        + c1.value * (ghosted[i + 1] - 2.0 * ghosted[i] + ghosted[i - 1])
        - ghosted[i] * c2.value * (ghosted[i + 1] - ghosted[i - 1])
        for i in range(1, nx + 1)
    ]
    ghosts_ok = u_new[0] == ghosted[nx] and u_new[nx + 1] == ghosted[1]
    check(rc == 0 and list(u_new)[1:-1] == lagged and ghosts_ok, "burgers_step_lagged")


def run_cooperation(lib: HostLib) -> None:
    """The fibers: a reduction with barriers, a warp shuffle, a barrier only some threads reach."""
    n = 5000
    x = (ctypes.c_double * n)(*range(n))
    partial = (ctypes.c_double * 3)()
    rc = lib.launch("block_sum_f64", (3, 1, 1), (256, 1, 1), x, partial, ctypes.c_longlong(n))
    check(rc == 0 and sum(partial) == n * (n - 1) / 2, f"block_sum_f64 ({rc}, {list(partial)})")

    xs = (ctypes.c_float * 128)(*range(128))
    out = (ctypes.c_float * 4)()
    rc = lib.launch("warp_sum_f32", (2, 1, 1), (64, 1, 1), xs, out)
    want = [sum(range(32 * w, 32 * w + 32)) for w in range(4)]
    check(rc == 0 and list(out) == want, f"warp_sum_f32 ({rc}, {list(out)})")

    # Threads 16-31 skip the barrier and exit: as on a GPU, it waits only for the others.
    flags = (ctypes.c_int * 32)()
    rc = lib.launch("divergent_barrier", (1, 1, 1), (32, 1, 1), flags)
    check(rc == 0 and list(flags) == [1] * 32, f"divergent_barrier ({rc}, {list(flags)})")


FUNCTIONAL = {"testing": run_testing, "burgers": run_burgers, "cooperation": run_cooperation}


def check_host(path: Path, name: str, kernels: list[str], globals_: list[str]) -> None:
    lib = HostLib(path)
    check(ctypes.c_uint.in_dll(lib.lib, "pygpu_host_abi_version").value == 3, f"{path.name}: ABI version")
    check(lib.names() == kernels, f"{path.name}: kernel list {lib.names()} != {kernels}")
    for g in globals_:
        try:
            lib.global_(g)
        except ValueError:
            failures.append(f"{path.name}: no global {g}")
    if name in FUNCTIONAL:
        FUNCTIONAL[name](lib)


def main() -> int:
    build_dir, targets = Path(sys.argv[1]), set(sys.argv[2:]) or {"cuda", "hip", "host"}
    # kernels/build.sh builds only these sources when PYGPU_KERNEL_SOURCES names some.
    only = os.environ.get("PYGPU_KERNEL_SOURCES", "").split()
    sources = [KERNELS_DIR / f"{name}.cu" for name in only] if only else sorted(KERNELS_DIR.glob("*.cu"))
    for source in sources:
        for name, kernels, globals_ in modules_of(source):
            check(bool(kernels), f"{name}: exports no kernel")
            files = []
            if "cuda" in targets:
                files += [(f"{name}.ptx", lambda p: check_ptx(p, kernels, globals_)), (f"{name}.fatbin", check_fatbin)]
            if "hip" in targets:
                files += [(f"{name}.hsaco", lambda p: check_hsaco(p, kernels, globals_))]
            if "host" in targets:
                files += [(f"lib{name}.so", lambda p: check_host(p, name, kernels, globals_))]
            for filename, run in files:
                path = build_dir / filename
                if path.is_file():
                    run(path)
                else:
                    failures.append(f"{filename}: missing")
    for f in failures:
        print(f"[kernels] selfcheck FAILED: {f}", file=sys.stderr)
    if not failures:
        print(f"[kernels] selfcheck passed ({', '.join(sorted(targets))})", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
