"""The runtime layer against the CUDA runtime API's own view of the machine (through
PyTorch and CuPy, which use the runtime API): same device, same properties, shared
pointers and streams. Runs on the GPU machine only."""

from __future__ import annotations

import numpy as np
import pytest

import pygpu

pytestmark = pytest.mark.gpu


def test_properties_match_the_runtime_api() -> None:
    torch = pytest.importorskip("torch")
    ours = pygpu.cudaDeviceProp(0)
    theirs = torch.cuda.get_device_properties(0)
    assert ours.name == theirs.name
    assert ours.totalGlobalMem == theirs.total_memory
    assert ours.multiProcessorCount == theirs.multi_processor_count
    assert (ours.major, ours.minor) == (theirs.major, theirs.minor)
    assert ours.pciBusID == theirs.pci_bus_id
    assert ours.pciDeviceID == theirs.pci_device_id
    assert ours.pciDomainID == theirs.pci_domain_id
    assert ours.uuid.hex() == str(theirs.uuid).replace("-", "")


def test_device_count_matches_cupy() -> None:
    cupy = pytest.importorskip("cupy")
    assert pygpu.cudaGetDeviceCount() == (cupy.cuda.runtime.getDeviceCount(), 0)


def test_current_device_is_shared_with_the_runtime_api() -> None:
    cupy = pytest.importorskip("cupy")
    assert pygpu.cudaSetDevice(0) == 0
    assert cupy.cuda.runtime.getDevice() == 0
    cupy.cuda.runtime.setDevice(0)
    assert pygpu.cudaGetDevice() == (0, 0)


def test_pygpu_memory_is_usable_by_cupy_and_back() -> None:
    cupy = pytest.importorskip("cupy")
    host = np.arange(1000, dtype=np.float64)
    dev = pygpu.mem_alloc(host.nbytes)
    pygpu.memcpy_htod(dev, host)
    mem = cupy.cuda.UnownedMemory(int(dev), dev.nbytes, dev)
    view = cupy.ndarray(host.shape, host.dtype, cupy.cuda.MemoryPointer(mem, 0))
    assert float(view.sum()) == float(host.sum())
    view *= 2  # CuPy writes into pygpu's allocation
    cupy.cuda.runtime.deviceSynchronize()
    out = np.empty_like(host)
    pygpu.memcpy_dtoh(out, dev)
    np.testing.assert_array_equal(out, host * 2)
    # And pygpu reads CuPy's own allocation.
    theirs = cupy.arange(10, dtype=cupy.int32)
    got = np.empty(10, np.int32)
    pygpu.memcpy_dtoh(got, theirs.data.ptr)
    assert got.tolist() == list(range(10))


def test_pygpu_stream_drives_cupy_work() -> None:
    cupy = pytest.importorskip("cupy")
    s = pygpu.cudaStream_t()
    ev = pygpu.cudaEvent_t()
    with cupy.cuda.Stream.from_external(s):
        a = cupy.ones(1 << 22, dtype=cupy.float32)
        total = a.sum()
    assert pygpu.cudaEventRecord(ev, s) == 0
    assert pygpu.cudaEventSynchronize(ev) == 0
    assert pygpu.cudaStreamQuery(s) == 0
    assert float(total) == float(1 << 22)


def test_stream_query_reports_pending_work() -> None:
    cupy = pytest.importorskip("cupy")
    s = pygpu.cudaStream_t()
    with cupy.cuda.Stream.from_external(s):
        a = cupy.ones((4096, 4096), dtype=cupy.float32)
        for _ in range(20):
            a = a @ a / 4096.0
    pending = pygpu.cudaStreamQuery(s)
    assert int(pending) in (0, 600)  # may already be done on a fast GPU
    assert pygpu.cudaStreamSynchronize(s) == 0
    assert pygpu.cudaStreamQuery(s) == 0
    assert pygpu.cudaGetLastError() == 0
