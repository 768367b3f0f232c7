"""pygpu.driver's PyCUDA surface beyond memory basics: versions, modules, device and function
attributes, pitched allocations and 2-D/3-D copies, to_device/from_device, PointerHolderBase,
the removed texture-reference API. Each call is checked against numpy or documented values."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import numpy as np
import pytest
from conftest import run_python

import pygpu
import pygpu.driver as cuda
from pygpu._toolchain.bundled_kernels import kernel_files
from pygpu._pygpu import cudaDeviceGetAttribute, cudaDeviceGetLimit, memcpy_pitched

REPO = pathlib.Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------ versions, enums


def test_get_version_matches_the_cuda_bindings_built_against() -> None:
    cargo = (REPO / "Cargo.toml").read_text()
    found = re.search(r'"cuda-(\d\d)(\d\d)(\d)"', cargo)
    assert found is not None
    expected = tuple(int(g) for g in found.groups())
    assert cuda.get_version() == expected
    assert all(isinstance(v, int) for v in cuda.get_version())


def test_device_attribute_has_cuda12_names_and_pycuda_aliases() -> None:
    da = cuda.device_attribute
    assert da.MAX_THREADS_PER_BLOCK == 1 and da.WARP_SIZE == 10 and da.MULTIPROCESSOR_COUNT == 16
    assert da.COMPUTE_CAPABILITY_MAJOR == 75 and da.COMPUTE_CAPABILITY_MINOR == 76
    assert da.PCI_DOMAIN_ID == 50 and da.CLUSTER_LAUNCH == 120 and da.HOST_NUMA_ID == 134
    # PyCUDA's older spellings are aliases of the same members.
    assert da.SHARED_MEMORY_PER_BLOCK is da.MAX_SHARED_MEMORY_PER_BLOCK
    assert da.MAXIMUM_TEXTURE2D_ARRAY_NUMSLICES is da.MAXIMUM_TEXTURE2D_LAYERED_LAYERS
    values = sorted(m.value for m in da)
    assert values == sorted(set(values)) and len(values) >= 139
    assert set(range(1, 138)) <= set(values)


def test_other_enums_have_cuda_numbers() -> None:
    assert cuda.function_attribute.NUM_REGS == 4 and cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES == 8
    assert [int(c) for c in cuda.func_cache] == [0, 1, 2, 3]
    assert cuda.host_alloc_flags.PORTABLE | cuda.host_alloc_flags.DEVICEMAP | cuda.host_alloc_flags.WRITECOMBINED == 7
    assert cuda.mem_host_register_flags.DEVICEMAP == 2 and cuda.mem_host_register_flags.READ_ONLY == 8
    assert cuda.jit_option.MAX_REGISTERS == 0 and cuda.ipc_mem_flags.LAZY_ENABLE_PEER_ACCESS == 1
    assert cuda.limit.MALLOC_HEAP_SIZE == 2 and cuda.ctx_flags.SCHED_BLOCKING_SYNC == 4


# ------------------------------------------------------------------------ modules


def _testing_image() -> pathlib.Path:
    files = [pathlib.Path(f) for f in kernel_files("testing") if pathlib.Path(f).is_file()]
    if not files:
        pytest.skip("the bundled 'testing' kernels are not built (kernels/build.sh)")
    return files[-1]


def _run_fill(module: pygpu.Module) -> np.ndarray:
    out = np.zeros(8, np.int32)
    module.get_function("fill_i32")(cuda.Out(out), np.int32(8), np.int32(5), block=8)
    return out


def test_module_from_file_and_buffer_load_working_kernels() -> None:
    path = _testing_image()
    assert (_run_fill(cuda.module_from_file(path)) == 5).all()
    assert (_run_fill(cuda.module_from_file(str(path))) == 5).all()
    seen: list[tuple[bool, str, str]] = []
    module = cuda.module_from_buffer(
        path.read_bytes(), message_handler=lambda ok, info, err: seen.append((ok, info, err))
    )
    assert (_run_fill(module) == 5).all()
    assert seen == [(True, "", "")]
    # Any buffer works, not only bytes.
    assert (_run_fill(cuda.module_from_buffer(np.frombuffer(path.read_bytes(), np.uint8))) == 5).all()


def test_module_from_buffer_bad_input() -> None:
    seen: list[tuple[bool, str, str]] = []
    with pytest.raises(pygpu.CudaError):
        cuda.module_from_buffer(b"this is not a code object", message_handler=lambda *a: seen.append(a))
    assert len(seen) == 1 and seen[0][0] is False and seen[0][2]
    with pytest.raises(TypeError, match="buffer"):
        cuda.module_from_buffer(12345)
    with pytest.raises(ValueError, match="JIT options are not supported"):
        cuda.module_from_buffer(b"x", options=[(cuda.jit_option.MAX_REGISTERS, 32)])
    with pytest.raises(ValueError):
        cuda.module_from_buffer(b"x", options=[(999, 1)])
    with pytest.raises(TypeError, match="pairs"):
        cuda.module_from_buffer(b"x", options=[cuda.jit_option.MAX_REGISTERS])
    with pytest.raises(FileNotFoundError):
        cuda.module_from_file("/nonexistent/kernels.cubin")


# ------------------------------------------------------------------------ to_device, from_device


def test_to_device_from_device_round_trip() -> None:
    a = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    d = cuda.to_device(a)
    assert isinstance(d, cuda.DeviceAllocation) and d.nbytes == a.nbytes
    np.testing.assert_array_equal(cuda.from_device(d, a.shape, a.dtype), a)
    like = cuda.from_device_like(d, a)
    assert like.dtype == a.dtype and like.shape == a.shape
    np.testing.assert_array_equal(like, a)
    f = np.asfortranarray(a)
    df = cuda.to_device(f.reshape(-1, order="F"))
    back = cuda.from_device_like(df, f)
    assert back.flags.f_contiguous and not back.flags.c_contiguous
    np.testing.assert_array_equal(back, f)
    assert cuda.from_device(cuda.to_device(b""), (0,), np.int32).shape == (0,)
    np.testing.assert_array_equal(cuda.from_device(cuda.to_device(b"\x01\x02"), 2, np.uint8), [1, 2])


def test_mem_alloc_like() -> None:
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    d = cuda.mem_alloc_like(a)
    assert isinstance(d, cuda.DeviceAllocation) and d.nbytes == a.nbytes
    cuda.memcpy_htod(d, a)
    np.testing.assert_array_equal(cuda.from_device_like(d, a), a)


def test_from_device_bad_input() -> None:
    d = cuda.mem_alloc(16)
    with pytest.raises(ValueError, match="do not fit"):
        cuda.from_device(d, (3,), np.float64)
    with pytest.raises(ValueError, match="order"):
        cuda.from_device(d, (2,), np.float64, order="K")
    with pytest.raises(ValueError, match="C-contiguous"):
        cuda.to_device(np.zeros((4, 4))[:, ::2])


class _Holder(cuda.PointerHolderBase):
    def __init__(self, allocation: cuda.DeviceAllocation) -> None:
        self.allocation = allocation

    def get_pointer(self) -> int:
        return int(self.allocation)


def test_pointer_holder_is_a_device_pointer_everywhere() -> None:
    a = np.arange(16, dtype=np.int32)
    holder = _Holder(cuda.to_device(a))
    assert int(holder) == int(holder.allocation) == holder.ptr
    out = np.empty_like(a)
    cuda.memcpy_dtoh(out, holder)
    np.testing.assert_array_equal(out, a)
    cuda.memcpy_htod(holder, a * 2)
    np.testing.assert_array_equal(cuda.from_device(holder, 16, np.int32), a * 2)
    path = _testing_image()
    cuda.module_from_file(path).get_function("fill_i32")(holder, np.int32(16), np.int32(9), block=16)
    np.testing.assert_array_equal(cuda.from_device(holder, 16, np.int32), np.full(16, 9))
    with pytest.raises(NotImplementedError, match="get_pointer"):
        int(cuda.PointerHolderBase())


# ------------------------------------------------------------------------ pitched memory


def test_mem_alloc_pitch_aligns_rows_like_a_gpu() -> None:
    for width in (1, 24, 512, 513, 4000):
        allocation, pitch = cuda.mem_alloc_pitch(width, 3, 4)
        assert pitch >= width and pitch % 512 == 0 and pitch - width < 512
        assert allocation.nbytes >= pitch * 3
    with pytest.raises(ValueError, match="access_size"):
        cuda.mem_alloc_pitch(16, 2, 3)
    with pytest.raises(ValueError, match="positive"):
        cuda.mem_alloc_pitch(0, 2, 4)
    with pytest.raises(ValueError, match="negative"):
        cuda.mem_alloc_pitch(16, -1, 4)
    with pytest.raises(ValueError, match="largest pitch"):
        cuda.mem_alloc_pitch(2**31, 1, 4)


def _copy2d(src: Any, dst: Any, **fields: int) -> cuda.Memcpy2D:
    copy = cuda.Memcpy2D()
    for side, target in (("src", src), ("dst", dst)):
        if isinstance(target, np.ndarray):
            getattr(copy, f"set_{side}_host")(target)
        else:
            getattr(copy, f"set_{side}_device")(target)
    for name, value in fields.items():
        setattr(copy, name, value)
    return copy


def test_memcpy2d_host_device_host_with_offsets_and_pitches() -> None:
    rows, cols = 5, 7
    host = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    device, pitch = cuda.mem_alloc_pitch(cols * 4, rows, 4)
    cuda.memset_d8(device, 0xFF, device.nbytes)
    _copy2d(host, device, src_pitch=cols * 4, dst_pitch=pitch, width_in_bytes=cols * 4, height=rows)()
    # The padding between rows is untouched, as cuMemcpy2D leaves it.
    raw = cuda.from_device(device, (rows, pitch), np.uint8)
    assert (raw[:, cols * 4 :] == 0xFF).all()
    np.testing.assert_array_equal(raw[:, : cols * 4].copy().view(np.float32), host)

    # A 3x4 sub-block starting at row 1, column 2, into the middle of a larger host array.
    out = np.zeros((6, 9), np.float32)
    _copy2d(
        device,
        out,
        src_x_in_bytes=2 * 4,
        src_y=1,
        src_pitch=pitch,
        dst_x_in_bytes=1 * 4,
        dst_y=2,
        dst_pitch=9 * 4,
        width_in_bytes=4 * 4,
        height=3,
    )(aligned=False)
    expected = np.zeros((6, 9), np.float32)
    expected[2:5, 1:5] = host[1:4, 2:6]
    np.testing.assert_array_equal(out, expected)


def test_memcpy2d_device_to_device_and_on_a_stream() -> None:
    host = np.arange(48, dtype=np.uint8).reshape(4, 12)
    a, pa = cuda.mem_alloc_pitch(12, 4, 4)
    b, pb = cuda.mem_alloc_pitch(20, 4, 4)
    cuda.memset_d8(b, 0, pb * 4)  # the columns the copy must leave alone (new memory is not zeroed)
    stream = cuda.Stream()
    _copy2d(host, a, src_pitch=12, dst_pitch=pa, width_in_bytes=12, height=4)(stream)
    _copy2d(a, b, src_pitch=pa, dst_pitch=pb, dst_x_in_bytes=8, width_in_bytes=12, height=4)(stream)
    out = np.zeros((4, 20), np.uint8)
    _copy2d(b, out, src_pitch=pb, dst_pitch=20, width_in_bytes=20, height=4)(stream)
    stream.synchronize()
    np.testing.assert_array_equal(out[:, 8:], host)
    assert not out[:, :8].any()
    # Contiguous rows on both sides: one linear copy, same result.
    flat = np.zeros_like(host)
    dense = cuda.mem_alloc(host.nbytes)
    _copy2d(host, dense, src_pitch=12, dst_pitch=12, width_in_bytes=12, height=4)()
    _copy2d(dense, flat, src_pitch=12, dst_pitch=12, width_in_bytes=12, height=4)()
    np.testing.assert_array_equal(flat, host)
    # Host to host works as in CUDA.
    h2 = np.zeros((4, 6), np.uint8)
    _copy2d(host, h2, src_pitch=12, src_x_in_bytes=3, dst_pitch=6, width_in_bytes=6, height=4)(stream)
    np.testing.assert_array_equal(h2, host[:, 3:9])


def test_memcpy2d_bad_input(backend: str) -> None:
    host = np.zeros((4, 8), np.uint8)
    device, pitch = cuda.mem_alloc_pitch(8, 4, 4)
    with pytest.raises(ValueError, match="src was not set"):
        c = cuda.Memcpy2D()
        c.set_dst_host(host)
        c.width_in_bytes, c.height = 8, 1
        c()
    with pytest.raises(ValueError, match="src_pitch .* smaller than width"):
        _copy2d(host, device, src_pitch=4, dst_pitch=pitch, width_in_bytes=8, height=4)()
    with pytest.raises(ValueError, match="reaches byte"):
        _copy2d(host, device, src_pitch=8, dst_pitch=pitch, width_in_bytes=8, height=5)()
    with pytest.raises(ValueError, match="reaches byte .* dst"):
        _copy2d(host, device, src_pitch=8, dst_pitch=pitch, dst_y=1, width_in_bytes=8, height=4)()
    with pytest.raises(ValueError, match="read-only"):
        cuda.Memcpy2D().set_dst_host(b"12345678")
    with pytest.raises(ValueError, match="C-contiguous"):
        cuda.Memcpy2D().set_src_host(np.zeros((4, 4))[:, ::2])
    with pytest.raises(TypeError, match="host buffer"):
        cuda.Memcpy2D().set_src_host(42)
    with pytest.raises(TypeError, match="device pointer"):
        cuda.Memcpy2D().set_dst_device(1.5)
    with pytest.raises(ValueError, match="negative"):
        _copy2d(host, device, src_pitch=8, dst_pitch=pitch, src_y=-1, width_in_bytes=8, height=1)()
    with pytest.raises(TypeError, match="Stream"):
        _copy2d(host, device, src_pitch=8, dst_pitch=pitch, width_in_bytes=8, height=1)("stream")
    with pytest.raises(NotImplementedError, match="CUDA arrays"):
        cuda.Memcpy2D().set_src_array(object())
    # A plain integer address past the end of an allocation: the host backend's registry
    # refuses it (a GPU may not notice bytes past an allocation inside the same page).
    if backend == "host":
        with pytest.raises(pygpu.CudaError):
            _copy2d(host, int(device) + device.nbytes - 4, src_pitch=8, dst_pitch=8, width_in_bytes=8, height=1)()
    freed = cuda.mem_alloc(64)
    freed.free()
    with pytest.raises(pygpu.InvalidHandleError):
        _copy2d(host, freed, src_pitch=8, dst_pitch=8, width_in_bytes=8, height=1)()
    # Nothing to copy is not an error.
    _copy2d(host, device, src_pitch=8, dst_pitch=pitch, width_in_bytes=0, height=4)()


def test_memcpy3d_sub_volume() -> None:
    vol = np.arange(4 * 5 * 6, dtype=np.int16).reshape(4, 5, 6)  # depth, height, width
    row = 6 * 2
    device, pitch = cuda.mem_alloc_pitch(row, 5 * 4, 4)  # 4 slices of 5 rows
    c = cuda.Memcpy3D()
    c.set_src_host(vol)
    c.set_dst_device(device)
    c.src_pitch, c.src_height = row, 5
    c.dst_pitch, c.dst_height = pitch, 5
    c.width_in_bytes, c.height, c.depth = row, 5, 4
    c()
    out = np.zeros((2, 3, 4), np.int16)
    back = cuda.Memcpy3D()
    back.set_src_device(device)
    back.set_dst_host(out)
    back.src_pitch, back.src_height = pitch, 5
    back.src_x_in_bytes, back.src_y, back.src_z = 1 * 2, 2, 1
    back.dst_pitch, back.dst_height = 4 * 2, 3
    back.width_in_bytes, back.height, back.depth = 4 * 2, 3, 2
    stream = cuda.Stream()
    back(stream)
    stream.synchronize()
    np.testing.assert_array_equal(out, vol[1:3, 2:5, 1:5])


def test_memcpy3d_bad_input() -> None:
    vol = np.zeros((2, 3, 4), np.uint8)
    device = cuda.mem_alloc(24)
    c = cuda.Memcpy3D()
    c.set_src_host(vol)
    c.set_dst_device(device)
    c.src_pitch = c.dst_pitch = 4
    c.width_in_bytes, c.height, c.depth = 4, 3, 2
    c.src_height = 2
    with pytest.raises(ValueError, match="src_height must be at least height"):
        c()
    c.src_height = 3
    c.dst_z = 1
    with pytest.raises(ValueError, match="reaches byte 36 of the dst"):
        c()
    c.dst_z = 0
    c.dst_lod = 1
    with pytest.raises(ValueError, match="mipmap"):
        c()
    c.dst_lod = 0
    c()
    np.testing.assert_array_equal(cuda.from_device(device, vol.shape, np.uint8), vol)


def test_memset_2d() -> None:
    device, pitch = cuda.mem_alloc_pitch(16, 3, 4)
    cuda.memset_d8(device, 0, device.nbytes)
    cuda.memset_d2d8(device, pitch, 7, 5, 3)
    cuda.memset_d2d16(int(device) + 6, pitch, 0x0102, 2, 2)
    cuda.memset_d2d32(int(device) + 12, pitch, 0xAABBCCDD, 1, 3, cuda.Stream())
    raw = cuda.from_device(device, (3, pitch), np.uint8)
    expected = np.zeros((3, pitch), np.uint8)
    expected[:, :5] = 7
    expected[:2, 6:10] = np.frombuffer(np.array([0x0102, 0x0102], np.uint16).tobytes(), np.uint8)
    expected[:, 12:16] = np.frombuffer(np.uint32(0xAABBCCDD).tobytes(), np.uint8)
    np.testing.assert_array_equal(raw, expected)
    with pytest.raises(ValueError, match="does not fit in the pitch"):
        cuda.memset_d2d32(device, 8, 0, 4, 2)
    with pytest.raises(ValueError, match="multiple of the element size"):
        cuda.memset_d2d32(device, 6, 0, 1, 2)
    with pytest.raises(ValueError, match="rows of pitch"):
        cuda.memset_d2d8(device, pitch, 0, 16, 4)


# ------------------------------------------------------------------------ removed texture references


@pytest.mark.parametrize(
    "call",
    [
        cuda.TextureReference,
        cuda.SurfaceReference,
        lambda: cuda.matrix_to_texref(np.zeros((2, 2)), None),
        lambda: cuda.bind_array_to_texref(None, None),
    ],
)
def test_texture_references_name_their_replacement(call: Any) -> None:
    with pytest.raises(NotImplementedError, match="removed in CUDA 12.*global-memory loads.*texture objects"):
        call()


@pytest.mark.parametrize(
    "name",
    [
        "np_to_array",
        "matrix_to_array",
        "gpuarray_to_array",
        "make_multichannel_2d_array",
        "Array",
        "ArrayDescriptor",
        "ArrayDescriptor3D",
        "memcpy_atoa",
        "memcpy_atod",
        "memcpy_atoh",
        "memcpy_dtoa",
        "memcpy_htoa",
    ],
)
def test_cuda_arrays_are_refused_clearly(name: str) -> None:
    with pytest.raises(NotImplementedError, match="linear device memory"):
        getattr(cuda, name)(np.zeros((2, 2), np.float32), "C")


# ------------------------------------------------------------------------ driver version, device attributes


def test_get_driver_version_is_a_cuda_version_number(backend: str) -> None:
    version = cuda.get_driver_version()
    assert isinstance(version, int) and version > 0
    if backend == "host":
        major, minor, _ = cuda.get_version()
        assert version == 1000 * major + 10 * minor
    elif backend == "cuda":
        assert version >= 12000


def test_enumerations_print_as_pycudas_boost_python_enums() -> None:
    # PyCUDA's enumerations are Boost.Python enums, whose str() is the member's name: Kernel Tuner
    # keys a device's attributes by it, PyCUDA's dump_properties example prints it.
    dev = cuda.Device(0)
    by_name = {str(k): v for k, v in dev.get_attributes().items()}
    assert by_name["MAX_THREADS_PER_BLOCK"] == dev.get_attribute(cuda.device_attribute.MAX_THREADS_PER_BLOCK)
    assert f"{cuda.function_attribute.NUM_REGS}" == "NUM_REGS" and "%d" % cuda.function_attribute.NUM_REGS == "4"
    assert str(cuda.ctx_flags.SCHED_AUTO) == "SCHED_AUTO" and str(cuda.event_flags.DISABLE_TIMING) == "DISABLE_TIMING"
    assert str(cuda.ctx_flags.SCHED_SPIN | cuda.ctx_flags.MAP_HOST) == "9"  # no name: its number, as Boost's
    assert str(cuda.host_alloc_flags.DEVICEMAP) == "2"  # plain integers in PyCUDA
    # The rest of PyCUDA's enumerations, numbered as cuda.h numbers them.
    assert (cuda.compute_mode.PROHIBITED, cuda.memory_type.DEVICE, cuda.pointer_attribute.HOST_POINTER) == (2, 2, 4)
    assert (cuda.array_format.FLOAT, cuda.address_mode.BORDER, cuda.filter_mode.LINEAR) == (0x20, 3, 1)
    assert (cuda.jit_target.COMPUTE_90A, cuda.jit_fallback.PREFER_BINARY) == (0x10000 + 90, 1)
    assert getattr(cuda.array3d_flags, "2DARRAY") == cuda.array3d_flags.ARRAY3D_LAYERED == 1
    assert (
        str(cuda.compute_mode(dev.get_attribute(cuda.device_attribute.COMPUTE_MODE))) in cuda.compute_mode.__members__
    )


def test_device_attributes_by_name_and_number() -> None:
    dev = cuda.Device(0)
    da = cuda.device_attribute
    assert dev.get_attribute(da.MAX_THREADS_PER_BLOCK) >= 64
    assert dev.get_attribute(da.WARP_SIZE) in (32, 64)
    assert dev.MAX_THREADS_PER_BLOCK == dev.get_attribute(da.MAX_THREADS_PER_BLOCK)
    assert dev.get_attribute(int(da.MULTIPROCESSOR_COUNT)) == pygpu.cudaDeviceProp(0).multiProcessorCount
    assert (dev.get_attribute(da.COMPUTE_CAPABILITY_MAJOR), dev.get_attribute(da.COMPUTE_CAPABILITY_MINOR)) == (
        dev.compute_capability()
    )
    assert dev.get_attribute(da.PCI_DOMAIN_ID) == pygpu.cudaDeviceProp(0).pciDomainID
    attributes = dev.get_attributes()
    assert all(isinstance(k, da) and isinstance(v, int) for k, v in attributes.items())
    assert attributes[da.MAX_BLOCK_DIM_X] >= attributes[da.MAX_BLOCK_DIM_Z] > 0
    assert attributes[da.MAX_SHARED_MEMORY_PER_BLOCK] >= 16 * 1024 and len(attributes) > 40
    with pytest.raises(ValueError, match="not a device_attribute"):
        dev.get_attribute(9999)
    with pytest.raises(AttributeError):
        _ = dev.NOT_AN_ATTRIBUTE  # type: ignore[attr-defined]
    # A number CUDA 12 does not define: the runtime-style call reports it in its status.
    value, status = cudaDeviceGetAttribute(100_000, 0)
    assert value == 0 and status != 0


def test_host_device_attributes_are_a_gpus(backend: str) -> None:
    if backend != "host":
        pytest.skip("documented values of the host backend")
    attributes = cuda.Device(0).get_attributes()
    da = cuda.device_attribute
    assert attributes[da.MAX_THREADS_PER_BLOCK] == 1024 and attributes[da.WARP_SIZE] == 32
    assert (attributes[da.MAX_BLOCK_DIM_X], attributes[da.MAX_BLOCK_DIM_Y], attributes[da.MAX_BLOCK_DIM_Z]) == (
        1024,
        1024,
        64,
    )
    assert attributes[da.MAX_GRID_DIM_X] == 2**31 - 1 and attributes[da.MAX_PITCH] == 2**31 - 1
    assert attributes[da.INTEGRATED] == 1 and attributes[da.UNIFIED_ADDRESSING] == 1
    assert attributes[da.CAN_MAP_HOST_MEMORY] == 1 and attributes[da.HOST_REGISTER_SUPPORTED] == 1
    assert attributes[da.CLUSTER_LAUNCH] == 0 and attributes[da.MAXIMUM_TEXTURE2D_WIDTH] == 0
    assert attributes[da.NUMA_ID] == -1
    assert set(attributes) == set(da)
    with pytest.raises(pygpu.InvalidDeviceError):
        cudaDeviceGetAttribute(1, 99)[1].check()


# ------------------------------------------------------------------------ function attributes


def test_function_attributes_and_cache_config(backend: str) -> None:
    f = cuda.module_from_file(_testing_image()).get_function("fill_i32")
    fa = cuda.function_attribute
    assert f.get_attribute(fa.MAX_THREADS_PER_BLOCK) == f.max_threads_per_block > 0
    assert f.get_attribute(fa.NUM_REGS) == f.num_regs
    assert f.get_attribute(fa.SHARED_SIZE_BYTES) == f.shared_size_bytes
    # PyCUDA's Function.__getattr__: a function_attribute by its lower-case name (those PyCUDA lists).
    for attribute in (a for a in fa if a <= fa.PREFERRED_SHARED_MEMORY_CARVEOUT):
        assert getattr(f, attribute.name.lower()) == f.get_attribute(attribute), attribute
    for absent in ("no_such_attribute", "PTX_VERSION", "_secret"):
        assert not hasattr(f, absent)
    limit = f.get_attribute(fa.MAX_DYNAMIC_SHARED_SIZE_BYTES)
    assert limit >= 0
    if backend != "hip":
        f.set_attribute(fa.MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024)
        assert f.get_attribute(fa.MAX_DYNAMIC_SHARED_SIZE_BYTES) == 1024
        with pytest.raises(pygpu.CudaError):
            f.set_attribute(fa.MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 30)
        with pytest.raises(pygpu.CudaError):
            f.set_attribute(fa.NUM_REGS, 3)
    for config in cuda.func_cache:
        f.set_cache_config(config)
    with pytest.raises(pygpu.CudaError):
        f.set_cache_config(17)
    with pytest.raises(pygpu.CudaError):
        f.get_attribute(999)


def test_module_texref_names_the_replacement() -> None:
    module = cuda.module_from_file(_testing_image())
    with pytest.raises(NotImplementedError, match="removed in CUDA 12.*texture objects"):
        module.get_texref("tex")
    with pytest.raises(NotImplementedError, match="Module.get_surfref"):
        module.get_surfref("surf")


# ------------------------------------------------------------------------ page-locked and registered host memory


def test_pagelocked_flags_and_device_pointer() -> None:
    flags = cuda.host_alloc_flags
    for mem_flags in (0, flags.PORTABLE, flags.DEVICEMAP, flags.DEVICEMAP | flags.WRITECOMBINED):
        a = cuda.pagelocked_zeros((3, 5), np.float32, mem_flags=mem_flags)
        assert isinstance(a.base, cuda.HostAllocation) and a.base.flags == mem_flags and not a.any()
    mapped = cuda.pagelocked_empty(64, np.int32, mem_flags=flags.DEVICEMAP)
    mapped[:] = np.arange(64)
    device_ptr = mapped.base.get_device_pointer()
    # The kernel writes through the device pointer straight into the host array.
    cuda.module_from_file(_testing_image()).get_function("fill_i32")(
        np.uintp(device_ptr), np.int32(32), np.int32(-4), block=32
    )
    cuda.Context.synchronize()
    np.testing.assert_array_equal(mapped, np.r_[np.full(32, -4), np.arange(32, 64)])
    out = np.empty(64, np.int32)
    cuda.memcpy_dtoh(out, device_ptr)
    np.testing.assert_array_equal(out, mapped)
    f = cuda.pagelocked_empty((2, 3), np.float64, order="F")
    assert f.flags.f_contiguous and isinstance(f.base, cuda.HostAllocation)
    with pytest.raises(ValueError, match="mem_flags"):
        cuda.pagelocked_empty(4, np.float32, mem_flags=8)
    with pytest.raises(ValueError, match="only PORTABLE"):
        cuda.HostAllocation(16, 64)


def test_register_host_memory_round_trip() -> None:
    host = cuda.aligned_zeros((8, 16), np.float32)
    assert host.ctypes.data % 4096 == 0
    host[:] = np.arange(128, dtype=np.float32).reshape(8, 16)
    registered = cuda.register_host_memory(host, cuda.mem_host_register_flags.DEVICEMAP)
    holder = registered.base
    assert isinstance(holder, cuda.RegisteredHostMemory) and holder.base is host and holder.registered
    assert registered.ctypes.data == host.ctypes.data and registered.shape == host.shape
    d = cuda.mem_alloc(host.nbytes)
    stream = cuda.Stream()
    cuda.memcpy_htod_async(d, registered, stream)
    stream.synchronize()
    np.testing.assert_array_equal(cuda.from_device_like(d, host), host)
    device_ptr = holder.get_device_pointer()
    back = np.empty_like(host)
    cuda.memcpy_dtoh(back, device_ptr)
    np.testing.assert_array_equal(back, host)
    holder.unregister()
    holder.unregister()
    assert not holder.registered
    with pytest.raises(pygpu.InvalidHandleError):
        holder.get_device_pointer()
    # Fortran order registers its bytes as they lie.
    fortran = cuda.register_host_memory(cuda.aligned_zeros((3, 4), np.float64, order="F"))
    assert fortran.flags.f_contiguous


def test_register_host_memory_bad_input(backend: str) -> None:
    with pytest.raises(TypeError, match="numpy array"):
        cuda.register_host_memory(b"abc")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="contiguous"):
        cuda.register_host_memory(np.zeros((4, 4))[:, ::2])
    with pytest.raises(ValueError, match="empty"):
        cuda.register_host_memory(np.zeros(0))
    with pytest.raises(ValueError, match="only PORTABLE"):
        cuda.register_host_memory(np.zeros(4), 64)
    host = cuda.aligned_zeros(1024, np.uint8)
    first = cuda.register_host_memory(host)
    with pytest.raises(pygpu.CudaError, match="712|[Aa]lready"):
        cuda.register_host_memory(host)
    del first
    readonly = cuda.aligned_zeros(16, np.float64)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        cuda.register_host_memory(readonly)
    if cuda.Device(0).get_attribute(cuda.device_attribute.READ_ONLY_HOST_REGISTER_SUPPORTED):
        assert cuda.register_host_memory(readonly, cuda.mem_host_register_flags.READ_ONLY).base.base is readonly
    else:
        with pytest.raises(pygpu.CudaError):
            cuda.register_host_memory(readonly, cuda.mem_host_register_flags.READ_ONLY)
    if backend == "host":
        with pytest.raises(pygpu.CudaError):
            cuda.memcpy_dtoh(np.empty(8), np.zeros(8).ctypes.data)


def test_aligned_arrays() -> None:
    for alignment in (64, 4096):
        a = cuda.aligned_empty((5, 3), np.float64, order="F", alignment=alignment)
        assert a.ctypes.data % alignment == 0 and a.flags.f_contiguous and a.shape == (5, 3)
    z = cuda.aligned_zeros_like(np.ones((2, 2), np.int16))
    assert z.dtype == np.int16 and not z.any() and z.ctypes.data % 4096 == 0
    assert cuda.aligned_empty_like(np.ones(3)).shape == (3,)
    with pytest.raises(ValueError, match="power of two"):
        cuda.aligned_empty(4, np.float32, alignment=48)


# ------------------------------------------------------------------------ IPC


def test_ipc_on_the_host_backend_refuses_what_cuda_refuses(backend: str) -> None:
    if backend != "host":
        pytest.skip("host backend behaviour")
    with pytest.raises(pygpu.CudaError, match="caching memory pool"):
        cuda.mem_get_ipc_handle(pygpu.pool_alloc(16))
    with pytest.raises(pygpu.CudaError, match="not a memory handle"):
        cuda.IPCMemoryHandle(bytes(64))
    with pytest.raises(pygpu.CudaError, match="made by this process"):
        cuda.IPCMemoryHandle(cuda.mem_get_ipc_handle(cuda.mem_alloc(16)))
    with pytest.raises(ValueError, match="64 bytes"):
        cuda.IPCMemoryHandle(b"short")


def test_ipc_memory_is_shared_with_another_process() -> None:
    a = np.arange(256, dtype=np.float32)
    d = cuda.to_device(a)
    handle = cuda.mem_get_ipc_handle(d)
    assert isinstance(handle, bytes) and len(handle) == 64
    result = run_python(
        f"""
        import numpy as np, pygpu.driver as cuda
        h = cuda.IPCMemoryHandle({handle!r})
        out = cuda.from_device(h, 256, np.float32)
        assert (out == np.arange(256, dtype=np.float32)).all(), out[:4]
        cuda.memcpy_htod(h, out * 2)
        cuda.Context.synchronize()
        h.close()
        print("ok")
        """
    )
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr
    np.testing.assert_array_equal(cuda.from_device(d, 256, np.float32), a * 2)


def test_memcpy_pitched_checks_what_python_hands_it() -> None:
    host = np.zeros(64, np.uint8)
    device = cuda.mem_alloc(64)
    with pytest.raises(ValueError, match="reaches byte 72 of the source"):
        memcpy_pitched(("device", device, 0, 0, 0, 8, 0), ("host", host, 8, 0, 0, 8, 0), 8, 8)
    with pytest.raises(ValueError, match="reaches byte 80 of the destination"):
        memcpy_pitched(("device", device, 0, 1, 0, 16, 0), ("host", host, 0, 0, 0, 16, 0), 16, 4)
    with pytest.raises(ValueError, match="pitch"):
        memcpy_pitched(("device", device, 0, 0, 0, 4, 0), ("host", host, 0, 0, 0, 8, 0), 8, 2)
    with pytest.raises(ValueError, match="slice height"):
        memcpy_pitched(("device", device, 0, 0, 0, 8, 1), ("host", host, 0, 0, 0, 8, 2), 8, 2, 2)
    with pytest.raises(ValueError, match="'host' or 'device'"):
        memcpy_pitched(("array", device, 0, 0, 0, 8, 0), ("host", host, 0, 0, 0, 8, 0), 8, 1)
    with pytest.raises(ValueError, match="read-only"):
        memcpy_pitched(("host", b"12345678", 0, 0, 0, 8, 0), ("device", device, 0, 0, 0, 8, 0), 8, 1)
    with pytest.raises(OverflowError):
        memcpy_pitched(("device", device, 0, 0, 0, 8, 0), ("host", host, -1, 0, 0, 8, 0), 8, 1)
    with pytest.raises(ValueError, match="overflow"):
        memcpy_pitched(("device", int(device), 0, 2**62, 0, 8, 0), ("host", host, 0, 0, 0, 8, 0), 8, 1)
    host[:] = np.arange(64)
    memcpy_pitched(("device", device, 0, 0, 0, 8, 0), ("host", host, 0, 0, 0, 8, 0), 8, 8)
    np.testing.assert_array_equal(cuda.from_device(device, 64, np.uint8), host)


# ------------------------------------------------------------------------ context limits and cache configuration


def test_context_limits_and_cache_config(backend: str) -> None:
    heap = cuda.Context.get_limit(cuda.limit.MALLOC_HEAP_SIZE)
    assert heap > 0
    cuda.Context.set_limit(cuda.limit.MALLOC_HEAP_SIZE, 16 << 20)
    assert cuda.Context.get_limit(cuda.limit.MALLOC_HEAP_SIZE) >= 16 << 20
    cuda.Context.set_limit(cuda.limit.MALLOC_HEAP_SIZE, heap)
    if backend == "host":
        assert heap == 8 << 20 and cuda.Context.get_limit(cuda.limit.STACK_SIZE) == 1024
        assert cudaDeviceGetLimit(42)[1].name == "cudaErrorUnsupportedLimit"
    with pytest.raises(ValueError, match="not a valid limit"):
        cuda.Context.get_limit(42)
    before = cuda.Context.get_cache_config()
    assert isinstance(before, cuda.func_cache)
    cuda.Context.set_cache_config(cuda.func_cache.PREFER_SHARED)
    if backend == "host":
        assert cuda.Context.get_cache_config() is cuda.func_cache.PREFER_SHARED
    cuda.Context.set_cache_config(before)
    with pytest.raises(ValueError):
        cuda.Context.set_cache_config(9)


def test_can_access_peer() -> None:
    dev = cuda.Device(0)
    assert dev.can_access_peer(dev) is False
    for other in range(1, cuda.Device.count()):
        assert isinstance(dev.can_access_peer(cuda.Device(other)), bool)
    with pytest.raises(TypeError, match="Device"):
        dev.can_access_peer(0)  # type: ignore[arg-type]


def test_context_attach_gives_the_current_device_without_pushing() -> None:
    depth_before = cuda.Context.get_current()
    ctx = cuda.Context.attach()
    assert ctx.device == cuda.Context.get_device() and cuda.Context.get_current() is depth_before
    ctx.detach()
    with pytest.raises(cuda.LogicError, match="detached"):
        ctx.push()
    with pytest.raises(ValueError, match="flags"):
        cuda.Context.attach(1)
