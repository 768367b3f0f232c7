"""Function.prepared_timed_call, the shared-memory bank configuration (a no-op since CUDA 12),
Context.get_api_version and limits, Device(pci_bus_id) and lower-case attribute names, as
PyCUDA documents them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pygpu
import pygpu.driver as cuda
from pygpu.compiler import SourceModule

SOURCE = """
__global__ void add_one(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += 1.0f;
}
__global__ void reverse_block(float *a) {
    extern __shared__ float tile[];
    int t = threadIdx.x;
    tile[t] = a[t];
    __syncthreads();
    a[t] = tile[blockDim.x - 1 - t];
}
"""


@pytest.fixture(scope="module")
def module() -> Any:
    return SourceModule(SOURCE)


def test_prepared_timed_call_launches_and_returns_a_timer(module: Any) -> None:
    f = module.get_function("add_one").prepare("Pi")
    a = np.arange(100, dtype=np.float32)
    a_gpu = cuda.to_device(a)
    timer = f.prepared_timed_call((1, 1), (128, 1, 1), a_gpu, 100)
    assert callable(timer)
    seconds = timer()
    assert isinstance(seconds, float) and 0.0 <= seconds < 10.0
    assert timer() == seconds  # the same two events: the same duration
    assert (cuda.from_device_like(a_gpu, a) == a + 1).all()


def test_prepared_timed_call_passes_the_shared_size(module: Any) -> None:
    f = module.get_function("reverse_block").prepare("P")
    a = np.arange(64, dtype=np.float32)
    a_gpu = cuda.to_device(a)
    f.prepared_timed_call(1, (64, 1, 1), a_gpu, shared_size=64 * 4)()
    assert (cuda.from_device_like(a_gpu, a) == a[::-1]).all()


def test_prepared_timed_call_needs_prepare_and_matching_arguments(module: Any) -> None:
    f = SourceModule("__global__ void k(int *x) { x[0] = 1; }").get_function("k")
    with pytest.raises(ValueError, match="prepare"):
        f.prepared_timed_call(1, 1, 0)
    f.prepare("P")
    with pytest.raises(ValueError, match="prepared for 1 arguments but got 2"):
        f.prepared_timed_call(1, 1, 0, 0)


def test_function_shared_config_is_accepted_and_checked(module: Any) -> None:
    f = module.get_function("add_one")
    for config in cuda.shared_config:
        f.set_shared_config(config)
    with pytest.raises(ValueError, match="shared_config"):
        f.set_shared_config(3)


def test_context_shared_config_stays_the_default() -> None:
    assert cuda.Context.get_shared_config() is cuda.shared_config.DEFAULT_BANK_SIZE
    cuda.Context.set_shared_config(cuda.shared_config.EIGHT_BYTE_BANK_SIZE)
    assert cuda.Context.get_shared_config() is cuda.shared_config.DEFAULT_BANK_SIZE
    with pytest.raises(ValueError, match="not a shared_config"):
        cuda.Context.set_shared_config(7)


def test_context_api_version() -> None:
    version = cuda.Context.get_api_version()
    assert isinstance(version, int)
    if pygpu.backend() == "host":
        assert version == 3020
    else:
        assert version >= 3020
    ctx = cuda.Device(0).retain_primary_context()
    assert ctx.get_api_version() == version


def test_limits_round_trip() -> None:
    # The stack size can change at any time; CUDA refuses a new printf FIFO size once a kernel
    # has used printf, which an earlier test of the suite may have done.
    old = cuda.Context.get_limit(cuda.limit.STACK_SIZE)
    new = 8192 if old != 8192 else 4096
    cuda.Context.set_limit(cuda.limit.STACK_SIZE, new)
    try:
        assert cuda.Context.get_limit(cuda.limit.STACK_SIZE) == new
    finally:
        cuda.Context.set_limit(cuda.limit.STACK_SIZE, old)
    with pytest.raises(ValueError):
        cuda.Context.get_limit(99)


@pytest.mark.gpu
def test_prepared_timed_call_measures_the_kernel_on_the_gpu(module: Any) -> None:
    """A bigger launch takes longer than a tiny one, as the events around it measure."""
    f = module.get_function("add_one").prepare("Pi")
    n = 1 << 26
    a_gpu = cuda.mem_alloc(n * 4)
    f.prepared_timed_call((1, 1), (32, 1, 1), a_gpu, 1)()  # warm up
    small = min(f.prepared_timed_call((1, 1), (32, 1, 1), a_gpu, 1)() for _ in range(5))
    big = min(f.prepared_timed_call((n // 256, 1), (256, 1, 1), a_gpu, n)() for _ in range(5))
    assert 0 < small < big < 1.0


def test_device_by_pci_bus_id_and_lower_case_attributes() -> None:
    dev = cuda.Device(0)
    bus_id = dev.pci_bus_id()
    assert cuda.Device(bus_id) == dev and cuda.Device(bus_id.upper()) == dev
    if bus_id.startswith("0000:"):
        assert cuda.Device(bus_id.split(":", 1)[1]) == dev  # domain 0 may be left out
    with pytest.raises(ValueError, match="no device has the PCI bus id"):
        cuda.Device("ffff:ff:1f.7")
    assert (
        dev.max_threads_per_block
        == dev.MAX_THREADS_PER_BLOCK
        == dev.get_attribute(cuda.device_attribute.MAX_THREADS_PER_BLOCK)
    )
    assert dev.warp_size in (32, 64)
    with pytest.raises(AttributeError):
        _ = dev.Warp_Size  # type: ignore[attr-defined]
