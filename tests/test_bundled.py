"""The bundled kernel modules (kernels/*.cu): each loaded once per process, on first use, each
kernel looked up once, and the sources with hundreds of kernels split by dtype, so that a first
call loads only the small module of its dtype (python/pygpu/_toolchain/kernel_parts.py)."""

from __future__ import annotations

import ctypes
import json
import os

import numpy as np
import pytest
from conftest import GPUARRAY_DTYPES, run_python

from pygpu.gpuarray import _bundled
from pygpu._toolchain import kernel_parts
from pygpu._pygpu import Module, backend
from pygpu._toolchain.bundled_kernels import KERNELS_DIR
from pygpu.gpuarray._dtypes import kernel_suffix

# Each split module's files stay small (the whole arith fatbin was 4.3 MB, reduce's 5.6 MB);
# the largest part today, reduce_uint64.fatbin, is 685 KB.
MOST_BYTES_PER_PART = 1 << 20


def test_each_bundled_module_loads_once_and_only_when_needed() -> None:
    out = run_python(
        """
        import collections, json
        import numpy as np
        import pygpu.gpuarray as ga
        from pygpu.gpuarray import _bundled

        loads, lookups = collections.Counter(), collections.Counter()
        real_load = _bundled.load_kernels

        class Counting:
            def __init__(self, module):
                self.module = module

            def get_function(self, name):
                lookups[name] += 1
                return self.module.get_function(name)

        def load(source):
            loads[source] += 1
            return Counting(real_load(source))

        _bundled.load_kernels = load
        a = ga.to_gpu(np.arange(1000.0))
        before = dict(loads)
        for _ in range(3):
            (a + a).get(); (a * 2.0).get(); ga.sum(a).get(); (a.astype(np.float32) + 1).get()
        print(json.dumps({"before": before, "loads": loads, "lookups": lookups}))
        """
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["before"] == {}, "to_gpu loaded a kernel module it does not need"
    # float64 arithmetic and sum, the cast to float32 and float32 arithmetic: nothing else.
    assert set(seen["loads"]) == {"arith_f64", "reduce_float64", "cast_f32", "arith_f32"}
    assert all(count == 1 for count in seen["loads"].values()), seen["loads"]
    assert {"add_f64", "mul_f64", "add_f32", "cast_f64_f32"} <= set(seen["lookups"])
    assert all(count == 1 for count in seen["lookups"].values()), seen["lookups"]


def _host_kernel_names(path: str) -> list[str]:
    lib = ctypes.CDLL(path)
    count = ctypes.c_uint.in_dll(lib, "pygpu_kernel_count").value
    table = (ctypes.c_char_p * (count + 1)).in_dll(lib, "pygpu_kernel_names")
    return [(table[i] or b"").decode() for i in range(count)]


@pytest.mark.parametrize("source", sorted(kernel_parts.PARTS))
def test_split_modules_hold_what_the_loader_looks_for(source: str) -> None:
    """Every kernel of every part is found where _bundled looks for it (the host libraries'
    own kernel tables, as kernels/selfcheck.py checks each build); the parts' files are small."""
    names: list[str] = []
    for part in kernel_parts.PARTS[source]:
        module = f"{source}_{part}"
        kernels = _host_kernel_names(os.path.join(KERNELS_DIR, f"lib{module}.so"))
        assert kernels, module
        assert all(kernel_parts.module_name(source, k) == module for k in kernels), (module, kernels)
        names += kernels
        for filename in (f"lib{module}.so", f"{module}.fatbin", f"{module}.ptx", f"{module}.hsaco"):
            path = os.path.join(KERNELS_DIR, filename)
            if os.path.exists(path):  # the GPU backends' files where this checkout built them
                assert os.path.getsize(path) <= MOST_BYTES_PER_PART, path
    assert len(names) == len(set(names))
    assert not os.path.exists(os.path.join(KERNELS_DIR, f"lib{source}.so")), "a stale whole-source build"


@pytest.mark.parametrize("dtype", GPUARRAY_DTYPES)
def test_every_dtype_has_its_arith_and_cast_module(dtype: str) -> None:
    """The comparison and cast kernels of every GPUArray dtype map to a module that was built."""
    suffix = kernel_suffix(np.dtype(dtype))
    for source, kernel in (("arith", f"eq_{suffix}"), ("cast", f"cast_f64_{suffix}")):
        module = kernel_parts.module_name(source, kernel)
        assert module is not None
        assert os.path.exists(os.path.join(KERNELS_DIR, f"lib{module}.so")), module


def test_unknown_suffix_is_a_type_error() -> None:
    assert kernel_parts.module_name("arith", "add_x3") is None
    assert kernel_parts.module_name("burgers", "burgers_step") == "burgers"
    with pytest.raises(TypeError, match="does not support these dtypes"):
        _bundled.function("arith", "add_x3")
    with pytest.raises(TypeError, match="does not support these dtypes"):
        _bundled.function("arith", "truediv_i32")  # the module exists, the kernel does not


@pytest.mark.gpu
def test_every_fatbin_loads_and_the_ptx_fallback_too() -> None:
    """On a CUDA GPU: each module's fatbin (cubins only) loads, and the PTX that a GPU without a
    cubin (or a CUDA 12 driver) falls back to loads and runs, here for the first call's modules."""
    if backend() != "cuda":
        pytest.skip("the fatbin and PTX are the cuda backend's files")
    for source, parts in kernel_parts.PARTS.items():
        for part in parts:
            module = Module.from_file(os.path.join(KERNELS_DIR, f"{source}_{part}.fatbin"))
            assert module is not None
    for name, kernel in (("arith_f64", "add_f64"), ("reduce_float64", "reduce_sum_float64_float64")):
        module = Module.from_file(os.path.join(KERNELS_DIR, f"{name}.ptx"))
        assert module.get_function(kernel) is not None
