"""curandom: bit-exactness of the bundled Philox4x32-10 against a pure-Python reference (itself
checked against Random123's known answers), statistical sanity of uniform, normal and
log-normal numbers, the stream continuing across calls, and PyCUDA's API forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pygpu import curandom, gpuarray

MASK = 0xFFFFFFFF


def philox4x32_10(counter: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, int, int, int]:
    """Philox4x32-10 as Salmon et al. define it (Random123's constants), in plain Python."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & MASK, (k1 + 0xBB67AE85) & MASK
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & MASK, p1 & MASK, ((p0 >> 32) ^ c3 ^ k1) & MASK, p0 & MASK
    return c0, c1, c2, c3


def reference_words(seed: int, block: int) -> tuple[int, int, int, int]:
    """The words of Philox block `block` under pygpu's counter layout (block in words 0-1)."""
    return philox4x32_10((block & MASK, block >> 32, 0, 0), (seed & MASK, seed >> 32))


def test_reference_matches_random123_known_answers() -> None:
    assert philox4x32_10((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    assert philox4x32_10((MASK,) * 4, (MASK, MASK)) == (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)
    assert philox4x32_10((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0)) == (
        0xD16CFE09,
        0x94FDCCEB,
        0x5001E420,
        0x24126EA1,
    )


@pytest.mark.parametrize("seed", [0, 1, 0xDEADBEEF, 2**63 + 12345])
def test_bits_are_philox_exactly(seed: int) -> None:
    gen = curandom.PhiloxRandomNumberGenerator(seed=seed, offset=2**32 - 3)  # crosses a counter word
    got = gen.gen_uniform((4 * 6 + 2,), np.uint32).get()
    want = [w for b in range(7) for w in reference_words(seed, 2**32 - 3 + b)][: got.size]
    assert got.tolist() == want
    # the generator continues where it stopped: 7 blocks later
    assert gen.offset == 2**32 - 3 + 7
    got64 = gen.gen_uniform((3,), np.uint64).get()
    words = [reference_words(seed, gen.offset - 2 + b) for b in range(2)]
    halves = [(w[0] << 32) | w[1] for w in words], [(w[2] << 32) | w[3] for w in words]
    assert got64.tolist() == [halves[0][0], halves[1][0], halves[0][1]]


def test_uniform_floats_are_the_top_bits() -> None:
    seed = 77
    f32 = curandom.PhiloxRandomNumberGenerator(seed=seed).gen_uniform((8,), np.float32).get()
    words = [w for b in range(2) for w in reference_words(seed, b)]
    assert f32.tolist() == [np.float32((w >> 8) / 2**24) for w in words]
    f64 = curandom.PhiloxRandomNumberGenerator(seed=seed).gen_uniform((2,), np.float64).get()
    w = reference_words(seed, 0)
    assert f64.tolist() == [(((w[0] << 32) | w[1]) >> 11) / 2**53, (((w[2] << 32) | w[3]) >> 11) / 2**53]


def test_normal_is_box_muller_of_the_same_words() -> None:
    seed = 5
    got = curandom.PhiloxRandomNumberGenerator(seed=seed).gen_normal((2,), np.float64).get()
    w = reference_words(seed, 0)
    u1 = ((((w[0] << 32) | w[1]) >> 11) + 1) / 2**53
    u2 = (((w[2] << 32) | w[3]) >> 11) / 2**53
    r = math.sqrt(-2 * math.log(u1))
    np.testing.assert_allclose(got, [r * math.cos(2 * math.pi * u2), r * math.sin(2 * math.pi * u2)], rtol=1e-13)


def ks_statistic(sample: np.ndarray, cdf: np.ndarray) -> float:
    """Kolmogorov-Smirnov distance between a sorted sample and its model CDF at those points."""
    n = sample.size
    ranks = np.arange(1, n + 1) / n
    return float(max(np.max(ranks - cdf), np.max(cdf - (ranks - 1 / n))))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_statistics(dtype: type) -> None:
    n = 200_000
    np.random.seed(2026)  # rand draws its seed from numpy's global generator: a fixed sample, never flaky
    x = curandom.rand((n,), dtype).get()
    assert x.dtype == dtype and x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(x.var() - 1 / 12) < 0.002
    s = np.sort(x.astype(np.float64))
    assert ks_statistic(s, s) < 1.63 / math.sqrt(n)  # 1% critical value


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_statistics(dtype: type) -> None:
    n = 200_000
    gen = curandom.XORWOWRandomNumberGenerator(seed=1234)
    x = gen.gen_normal((n,), dtype).get().astype(np.float64)
    assert np.isfinite(x).all()
    assert abs(x.mean()) < 5 / math.sqrt(n) and abs(x.std() - 1) < 0.01
    s = np.sort(x)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(s / math.sqrt(2)))
    assert ks_statistic(s, cdf) < 1.63 / math.sqrt(n)


def test_log_normal_and_complex_normal() -> None:
    gen = curandom.MRG32k3aRandomNumberGenerator(seed=9)
    x = gen.gen_log_normal((100_000,), np.float64, 1.0, 0.5).get()
    assert (x > 0).all()
    logs = np.log(x)
    assert abs(logs.mean() - 1.0) < 0.01 and abs(logs.std() - 0.5) < 0.01
    z = gen.gen_normal((50_001,), np.complex64).get()
    assert z.dtype == np.complex64
    assert abs(z.real.std() - 1) < 0.02 and abs(z.imag.std() - 1) < 0.02


def test_same_seed_same_numbers_and_calls_continue_the_stream() -> None:
    a = curandom.PhiloxRandomNumberGenerator(seed=42)
    b = curandom.PhiloxRandomNumberGenerator(seed=42)
    first, second = a.gen_uniform((1001,), np.float32).get(), a.gen_uniform((1001,), np.float32).get()
    assert np.array_equal(first, b.gen_uniform((1001,), np.float32).get())
    assert not np.array_equal(first, second)
    np.random.seed(3)
    r1 = curandom.rand((10,)).get()
    np.random.seed(3)
    assert np.array_equal(r1, curandom.rand((10,)).get())


def test_fill_of_a_non_contiguous_view() -> None:
    g = gpuarray.zeros((100, 10), np.float64)
    view = g[:, ::2]
    curandom.PhiloxRandomNumberGenerator(seed=1).fill_uniform(view)
    h = g.get()
    assert (h[:, 1::2] == 0).all() and (h[:, ::2] > 0).all() and (h[:, ::2] < 1).all()


def test_api_forms_and_errors() -> None:
    version = curandom.get_curand_version()
    assert version >= (3, 2, 0) and "Philox" in str(version)
    for cls in (curandom.Sobol32RandomNumberGenerator, curandom.ScrambledSobol64RandomNumberGenerator):
        x = cls().gen_uniform((1000,), np.float32).get()
        assert 0 <= x.min() and x.max() < 1
    gen = curandom.XORWOWRandomNumberGenerator(curandom.seed_getter_unique)
    assert gen.gen_uniform((5,), np.int32).dtype == np.int32
    with pytest.raises(TypeError, match="not supported"):
        gen.gen_normal((5,), np.int32)
    with pytest.raises(TypeError, match="rand supports"):
        curandom.rand((5,), np.int8)
    with pytest.raises(ValueError, match="lambda_value"):
        gen.gen_poisson((5,), np.uint32, -1.0)
    with pytest.raises(TypeError, match="Poisson"):
        gen.gen_poisson((5,), np.int8, 1.0)
    empty = gen.gen_uniform((0,), np.float32)
    assert empty.size == 0


@pytest.mark.parametrize("dtype", [np.uint32, np.float32, np.float64])
def test_poisson_statistics(dtype: type) -> None:
    gen = curandom.PhiloxRandomNumberGenerator(seed=11)
    for lam in (0.5, 13.0, 100.0):
        x = gen.gen_poisson((40_000,), dtype, lam).get().astype(np.float64)
        assert x.min() >= 0 and (x == np.round(x)).all()
        assert abs(x.mean() - lam) < 5 * math.sqrt(lam / x.size) and abs(x.var() / lam - 1) < 0.05
    # PyCUDA's form: each element's value is its own mean
    a = gpuarray.to_gpu(np.repeat(np.array([1.0, 50.0], dtype), 20_000))
    gen.fill_poisson(a)
    h = a.get().astype(np.float64)
    assert abs(h[:20_000].mean() - 1) < 0.05 and abs(h[20_000:].mean() - 50) < 0.5
    bad = gpuarray.to_gpu(np.array([1.0, np.nan], np.float32))
    with pytest.raises(ValueError, match="means"):
        gen.fill_poisson(bad)
