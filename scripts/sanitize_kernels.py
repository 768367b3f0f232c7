"""A workload for compute-sanitizer's racecheck and initcheck: every bundled kernel that is
meant to be correct (not oob_write, which faults on purpose), launched on pygpu arrays the
way the test suite and the Burgers demo launch them. Exits non-zero on wrong results."""

from __future__ import annotations

import numpy as np

import pygpu


def device(a: np.ndarray) -> pygpu.DeviceAllocation:
    d = pygpu.mem_alloc(a.nbytes)
    pygpu.memcpy_htod(d, np.ascontiguousarray(a))
    return d


def main() -> None:
    testing = pygpu.load_kernels("testing")
    burgers = pygpu.load_kernels("burgers")
    n = 4096
    x = device(np.arange(n, dtype=np.float64))
    testing.get_function("add_scalar_f64")(x, np.int64(n), np.float64(1), grid=8, block=256)
    y, xf = device(np.zeros(n, np.float32)), device(np.ones(n, np.float32))
    testing.get_function("axpy_f32")(y, xf, np.float32(2), np.int32(n), grid=8, block=256)
    i = device(np.zeros(n, np.int32))
    testing.get_function("fill_i32")(i, np.int32(n), np.int32(3), grid=8, block=256)
    out = device(np.zeros(1))
    testing.get_function("scale_args")(out, np.int32(2), np.float64(4), block=32)
    testing.get_function("empty_kernel")(block=32)
    testing.get_function("bump_counter")(np.int32(1), block=64)
    testing.get_function("spin")(out, np.int64(1000), block=1)

    nx = 1 << 12
    h = 2 * np.pi / nx
    u0 = np.sin(np.arange(-1, nx + 1) * h)
    ua, ub = device(u0), device(u0)
    a, b, m = np.float64(0.01 * 0.001 / h**2), np.float64(0.001 / (2 * h)), np.int32(nx + 2)
    for step in range(20):
        burgers.get_function("burgers_ghosts")(ua, m, block=1)
        burgers.get_function("burgers_step")(ua, ub, m, a, b, grid=16, block=256)
        burgers.get_function("burgers_step_periodic")(ub, ua, m, a, b, grid=16, block=256)
    assert pygpu.cudaDeviceSynchronize() == 0
    check = np.empty(n)
    pygpu.memcpy_dtoh(check, x)
    assert (check == np.arange(n) + 1).all()
    print("sanitize_kernels: ok")


if __name__ == "__main__":
    main()
