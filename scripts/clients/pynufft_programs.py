"""PyNUFFT 2025.2.1 on reikna under pygpu's PyCUDA alias: a non-uniform FFT plan on the device
(reikna's ``cuda`` API), its forward and adjoint transforms and a conjugate-gradient solve,
each checked against PyNUFFT's own numpy implementation.

Run by ``scripts/client_suite.sh run-host`` (CI) and ``scripts/gpu_run.sh drop-in``, with reikna
and PyNUFFT on the path. Exits non-zero when a result is off.
"""

from __future__ import annotations

import pygpu.pycuda_alias

pygpu.pycuda_alias.enable()  # before reikna imports pycuda

import numpy as np  # noqa: E402
from pynufft import NUFFT, helper  # noqa: E402


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main() -> None:
    rng = np.random.default_rng(3)
    om = rng.standard_normal((1500, 2)) * 0.8  # non-uniform sample positions, radians
    shape, oversampled, kernel = (64, 64), (128, 128), (6, 6)
    image = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    reference = NUFFT()  # numpy, complex128
    reference.plan(om, shape, oversampled, kernel)
    cuda = [d for d in helper.device_list() if d[0] == "cuda"]
    if not cuda:
        raise SystemExit(f"PyNUFFT found no 'cuda' device through reikna: {helper.device_list()}")
    device = NUFFT(cuda[0])  # complex64 on the device
    device.plan(om, shape, oversampled, kernel)

    samples = reference.forward(image)
    checks = {
        "forward": _relative(device.forward(image), samples),
        "adjoint": _relative(device.adjoint(samples), reference.adjoint(samples)),
    }
    for name, error in checks.items():
        print(f"{name}: relative difference from numpy {error:.2e}")
        if error > 1e-5:
            raise SystemExit(f"{name}: {error:.2e} off PyNUFFT's numpy result (single precision allows 1e-5)")
    # 20 conjugate-gradient steps in single precision: as good a fit as numpy's in double.
    fit = {
        name: _relative(reference.forward(nufft.solve(samples, "cg", maxiter=20)), samples)
        for name, nufft in (("device", device), ("numpy", reference))
    }
    print(f"cg solve: residual {fit['device']:.4f} on the device, {fit['numpy']:.4f} with numpy")
    if fit["device"] > 1.05 * fit["numpy"]:
        raise SystemExit(f"cg solve: the device's fit {fit['device']:.4f} is worse than numpy's {fit['numpy']:.4f}")


if __name__ == "__main__":
    main()
