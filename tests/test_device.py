"""Device control, status objects and the exception hierarchy."""

from __future__ import annotations

import pytest

import pygpu
from conftest import run_python


def test_backend_is_the_requested_one(backend: str) -> None:
    import os

    assert backend == os.environ["PYGPU_BACKEND"]


def test_get_device_returns_value_then_status() -> None:
    dev, err = pygpu.cudaGetDevice()
    assert isinstance(dev, int) and dev >= 0
    assert err == 0 and isinstance(err, pygpu.cudaError)
    assert repr(err) == "<cudaError: code=0>"


def test_device_count_is_positive() -> None:
    count, err = pygpu.cudaGetDeviceCount()
    assert err == 0
    assert count >= 1


def test_set_device_round_trip() -> None:
    assert pygpu.cudaSetDevice(0) == 0
    assert pygpu.cudaGetDevice() == (0, 0)


def test_invalid_ordinal_is_status_101_and_last_error() -> None:
    pygpu.cudaGetLastError()
    count, _ = pygpu.cudaGetDeviceCount()
    for bad in (count, count + 7, -1):
        err = pygpu.cudaSetDevice(bad)
        assert int(err) == 101
        assert err.name == "cudaErrorInvalidDevice"
        assert str(err) == "cudaErrorInvalidDevice (101): invalid device ordinal"
    assert pygpu.cudaPeekAtLastError() == 101
    assert pygpu.cudaGetLastError() == 101
    assert pygpu.cudaGetLastError() == 0
    # The failed calls left the current device alone.
    assert pygpu.cudaGetDevice()[0] == 0


def test_set_device_rejects_non_int() -> None:
    with pytest.raises(TypeError):
        pygpu.cudaSetDevice("0")  # type: ignore[arg-type]


def test_device_properties_are_populated() -> None:
    prop = pygpu.cudaDeviceProp(0)
    assert isinstance(prop.name, str) and prop.name
    assert isinstance(prop.uuid, bytes) and len(prop.uuid) == 16
    assert prop.totalGlobalMem > 0
    assert prop.multiProcessorCount >= 1
    assert prop.compute_capability == (prop.major, prop.minor)
    assert all(isinstance(v, int) and v >= 0 for v in (prop.pciBusID, prop.pciDeviceID, prop.pciDomainID))
    assert "cudaDeviceProp 0" in repr(prop)


def test_device_properties_of_missing_device_raise() -> None:
    count, _ = pygpu.cudaGetDeviceCount()
    with pytest.raises(pygpu.InvalidDeviceError) as info:
        pygpu.cudaDeviceProp(count)
    assert info.value.code == 101
    assert isinstance(info.value, ValueError)


def test_mem_get_info_is_consistent() -> None:
    free, total, err = pygpu.cudaMemGetInfo()
    assert err == 0
    assert 0 < free <= total
    assert pygpu.mem_get_info()[1] == total


def test_device_synchronize() -> None:
    assert pygpu.cudaDeviceSynchronize() == 0


def test_status_object_behaves_like_its_code() -> None:
    ok = pygpu.cudaError(0)
    bad = pygpu.cudaError(2)
    assert ok == 0 and ok == pygpu.cudaError(0) and ok != bad
    assert int(bad) == 2 and bad.code == 2
    assert hash(bad) == hash(2)
    assert {ok, 0, bad, 2} == {0, 2}
    assert bad.name == "cudaErrorMemoryAllocation"
    assert bad.message == "out of memory"
    assert ok.check() is None
    with pytest.raises(pygpu.CudaMemoryError):
        bad.check()


def test_unknown_codes_keep_their_number() -> None:
    err = pygpu.cudaError(123456)
    assert "123456" in err.name or "123456" in err.message
    assert int(err) == 123456


def test_error_name_and_string_accept_status_or_int() -> None:
    assert pygpu.cudaGetErrorName(pygpu.cudaError(101)) == "cudaErrorInvalidDevice"
    assert pygpu.cudaGetErrorName(600) == "cudaErrorNotReady"
    assert pygpu.cudaGetErrorString(1) == "invalid argument"
    with pytest.raises(TypeError):
        pygpu.cudaGetErrorName("bad")  # type: ignore[arg-type]
    for huge in (2**40, 2**70, -(2**70)):  # ints, just too large: a range error, not a type error
        with pytest.raises(ValueError, match="is out of range: cudaError codes are 32-bit ints"):
            pygpu.cudaGetErrorString(huge)


@pytest.mark.parametrize(
    "code, cls, extra",
    [
        (1, "InvalidValueError", ValueError),
        (2, "CudaMemoryError", MemoryError),
        (101, "InvalidDeviceError", ValueError),
        (100, "NoDeviceError", None),
        (400, "InvalidHandleError", ValueError),
        (600, "NotReadyError", None),
        (700, "LaunchError", None),
        (999, "CudaError", None),
    ],
)
def test_exception_hierarchy(code: int, cls: str, extra: type | None) -> None:
    with pytest.raises(pygpu.CudaError) as info:
        pygpu.cudaError(code).check()
    assert type(info.value).__name__ == cls
    assert info.value.code == code
    assert str(info.value).startswith(f"{info.value.name} ({code}): ")
    if extra is not None:
        assert isinstance(info.value, extra)


def test_switching_backend_after_first_use_is_refused(backend: str) -> None:
    other = "cuda" if backend == "host" else "host"
    with pytest.raises(ValueError, match="already in use"):
        pygpu.set_backend(other)
    pygpu.set_backend(backend)  # choosing the active one again is fine
    assert pygpu.backend() == backend


def test_unknown_backend_name() -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        pygpu.set_backend("opencl")


def test_set_backend_before_first_use_in_fresh_process() -> None:
    result = run_python(
        """
        import pygpu
        pygpu.set_backend("host")
        print(pygpu.backend())
        """,
        env={"PYGPU_BACKEND": ""},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "host"


def test_bad_environment_backend_is_a_clear_error() -> None:
    result = run_python(
        """
        import pygpu
        try:
            pygpu.cudaGetDevice()
        except ValueError as e:
            print("ValueError:", e)
        """,
        env={"PYGPU_BACKEND": "vulkan"},
    )
    assert result.returncode == 0, result.stderr
    assert "unknown backend 'vulkan'" in result.stdout


def test_missing_cuda_driver_is_an_exception_not_a_panic() -> None:
    import ctypes.util

    if ctypes.util.find_library("cuda"):
        pytest.skip("this machine has an NVIDIA driver")
    result = run_python(
        """
        import pygpu
        try:
            pygpu.cudaGetDeviceCount()
        except pygpu.BackendUnavailableError as e:
            assert isinstance(e, RuntimeError)
            print("unavailable:", e)
        """,
        env={"PYGPU_BACKEND": "cuda"},
    )
    assert result.returncode == 0, result.stderr
    assert "libcuda.so.1" in result.stdout
    assert "panic" not in (result.stdout + result.stderr).lower()


def test_default_selection_never_falls_back_to_host_silently() -> None:
    import ctypes.util

    if ctypes.util.find_library("cuda"):
        pytest.skip("this machine has an NVIDIA driver")
    result = run_python(
        """
        import pygpu
        try:
            print(pygpu.backend())
        except pygpu.BackendUnavailableError as e:
            print("unavailable:", e)
        """,
        env={"PYGPU_BACKEND": ""},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("unavailable:")
    assert "PYGPU_BACKEND=host" in result.stdout


@pytest.mark.parametrize("name", ["cuda", "hip"])
def test_a_gpu_backend_that_cannot_start_names_the_host_backend(name: str) -> None:
    # Issue 29: PYGPU_BACKEND=cuda copied onto a machine without a GPU must say how to go on.
    result = run_python(
        """
        import pygpu
        try:
            print("started:", pygpu.backend(), pygpu.cudaGetDeviceCount()[0])
        except pygpu.BackendUnavailableError as e:
            print("unavailable:", e)
        """,
        env={"PYGPU_BACKEND": name},
    )
    assert result.returncode == 0, result.stderr
    if result.stdout.startswith("started:"):
        pytest.skip(f"the {name} backend starts on this machine")
    assert result.stdout.startswith("unavailable:"), result.stdout
    assert f"the {name} backend could not be started" in result.stdout
    assert "PYGPU_BACKEND=host" in result.stdout


@pytest.mark.parametrize(
    ("variable", "value"),
    [("PYGPU_MEMORY_POOL", "maybe"), ("PYGPU_HOST_DEVICES", "abc"), ("PYGPU_STAGED_COPY_BUFFERS", "1000")],
)
def test_a_tuning_variable_with_a_bad_value_is_named(variable: str, value: str) -> None:
    # Issue 27 (class I): these are read lazily where no error can be raised, and used to be
    # ignored or clamped without a word; the backend now refuses to start, naming the variable.
    result = run_python(
        """
        import pygpu
        try:
            pygpu.cudaGetDeviceCount()[1].check()
            print("started")
        except ValueError as e:
            print("refused:", e)
        """,
        env={variable: value},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("refused:"), result.stdout
    assert f"{variable}={value!r}".replace("'", '"') in result.stdout
