"""NumpyBackend: every op against a float64 reference, honest copies, threads read back."""
from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from accelbench.backends.base import Availability
from accelbench.backends.numpy_backend import BLOCK_ELEMENTS, NumpyBackend
from accelbench.errors import Unsupported, UsageError

# per-element relative error allowed, against the size of the terms (so cancellation is fair)
ELEMENT_TOL = {"float64": 1e-14, "float32": 1e-6}
# ||C - C_ref||_F / ||C_ref||_F for matmul
MATMUL_TOL = {"float64": 1e-12, "float32": 1e-5}
SCALAR = 3.0


@pytest.fixture(scope="module")
def backend() -> NumpyBackend:
    return NumpyBackend()


def _close(got, reference, magnitude, dtype):
    got = np.asarray(got, dtype=np.float64)
    error = np.abs(got - reference) / np.maximum(magnitude, np.finfo(np.float64).tiny)
    assert got.shape == np.shape(reference)
    assert float(error.max(initial=0.0)) <= ELEMENT_TOL[dtype], float(error.max())


def _inputs(backend, dtype, n, seed):
    a, b = backend.random((n,), dtype, "cpu", seed), backend.random((n,), dtype, "cpu", seed + 1)
    return a, b, a.astype(np.float64), b.astype(np.float64)


def test_available_with_one_device_and_two_dtypes(backend):
    assert backend.availability() == Availability(True)
    assert backend.device_ids() == ["cpu"]
    assert backend.dtypes("cpu") == ("float64", "float32")  # float16 has no BLAS: left out
    assert "numpy" in backend.versions() and "blas" in backend.versions()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matmul_matches_float64_reference(backend, dtype):
    a = backend.random((96, 80), dtype, "cpu", 1)
    b = backend.random((80, 64), dtype, "cpu", 2)
    out = backend.empty((96, 64), dtype, "cpu")
    result = backend.matmul(a, b, out=out)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    assert result is out and result.dtype == np.dtype(dtype)
    error = np.linalg.norm(result - reference) / np.linalg.norm(reference)
    assert error <= MATMUL_TOL[dtype]
    assert np.linalg.norm(backend.matmul(a, b) - reference) / np.linalg.norm(reference) <= MATMUL_TOL[dtype]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n", [1000, 3 * BLOCK_ELEMENTS + 17])  # one block, and several with a tail
def test_memory_ops_match_float64_reference(backend, dtype, n):
    a, b, a64, b64 = _inputs(backend, dtype, n, seed=10 + n % 7)
    out = backend.empty((n,), dtype, "cpu")
    total = _every_op_matches(backend, a, b, a64, b64, out, dtype)
    assert abs(float(total) - a64.sum()) <= ELEMENT_TOL[dtype] * np.sqrt(n) * np.abs(a64).sum()


def _every_op_matches(backend, a, b, a64, b64, out, dtype):
    """copy, scale, add, triad and elementwise against float64; returns the backend's total of `a`."""
    assert backend.copy(a, out) is out and np.array_equal(out, a)
    _close(backend.scale(a, SCALAR, out), SCALAR * a64, np.abs(SCALAR * a64), dtype)
    _close(backend.add(a, b, out), a64 + b64, np.abs(a64) + np.abs(b64), dtype)
    _close(backend.triad(a, b, SCALAR, out), a64 + SCALAR * b64, np.abs(a64) + np.abs(SCALAR * b64), dtype)
    _close(backend.elementwise(a, out), a64 * a64 + a64, a64 * a64 + np.abs(a64), dtype)
    return backend.total(a)


def test_blocked_ops_handle_non_contiguous_and_2d_arrays(backend):
    base = backend.random((64, 64), "float64", "cpu", 3)
    a, b = base[:, ::2], base[:, 1::2]  # strided views: computed whole, not in blocks
    out = np.empty((64, 32))
    np.testing.assert_allclose(backend.triad(a, b, 2.0, out), a + 2.0 * b, rtol=1e-15)
    square = backend.random((300, 500), "float32", "cpu", 4)
    out2 = np.empty_like(square)
    np.testing.assert_allclose(backend.elementwise(square, out2), square * square + square, rtol=1e-6)


def test_random_is_uniform_on_minus_one_to_one_and_reproducible(backend):
    for dtype in backend.dtypes("cpu"):
        x = backend.random((100_000,), dtype, "cpu", 7)
        assert x.dtype == np.dtype(dtype)
        assert x.min() >= -1.0 and x.max() < 1.0
        assert abs(float(x.mean())) < 0.01 and 0.32 < float(x.var()) < 0.35  # var of U(-1,1) is 1/3
        assert np.array_equal(x, backend.random((100_000,), dtype, "cpu", 7))
        assert not np.array_equal(x, backend.random((100_000,), dtype, "cpu", 8))


def test_transfers_are_real_copies(backend):
    host = np.arange(10.0)
    on_device = backend.from_host(host, "cpu")
    back = backend.to_host(on_device)
    assert np.array_equal(back, host)
    assert not np.shares_memory(on_device, host) and not np.shares_memory(back, on_device)
    assert backend.location(on_device) == "cpu"
    assert backend.location(backend.total(on_device)) == "cpu"  # a numpy scalar lives there too
    assert backend.shares_host_memory("cpu")


def test_astype_copies_and_refuses_what_numpy_cannot_compute_in(backend):
    x = backend.random((10,), "float64", "cpu", 1)
    y = backend.astype(x, "float32")
    assert y.dtype == np.float32 and not np.shares_memory(x, y)
    with pytest.raises(Unsupported):
        backend.astype(x, "bfloat16")
    with pytest.raises(Unsupported, match="float16"):
        backend.random((4,), "float16", "cpu", 0)


def test_only_the_cpu_and_no_pinned_memory(backend):
    with pytest.raises(UsageError, match="'cuda:0'"):
        backend.from_host(np.zeros(3), "cuda:0")
    with pytest.raises(UsageError):
        backend.dtypes("mps")
    assert not backend.supports_pinned("cpu")
    with pytest.raises(Unsupported):
        backend.from_host(np.zeros(3), "cpu", pinned=True)
    backend.synchronize("cpu")  # nothing to wait for, and it says so by returning


def _blas_threads_now() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_threads_one_really_limits_blas_and_restores(backend):
    before = _blas_threads_now()
    assert before, "threadpoolctl sees numpy's BLAS"
    with backend.threads(1) as in_force:
        assert in_force == 1
        assert _blas_threads_now() == [1] * len(before)
        assert all(lib["num_threads"] == 1 for lib in threadpool_info())  # OpenMP too
    assert _blas_threads_now() == before
    with backend.threads(None) as untouched:
        assert untouched == max(before)
    with pytest.raises(UsageError):
        with backend.threads(0):
            pass


# -- the CPU thread pool: element-wise ops on every thread asked for ---------------------------------
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_memory_ops_on_the_pool_match_the_reference(backend, threads, dtype):
    n = 5 * BLOCK_ELEMENTS + 12345  # several pieces and a ragged tail
    a, b, a64, b64 = _inputs(backend, dtype, n, seed=40 + threads)
    out = backend.empty((n,), dtype, "cpu")
    with backend.threads(threads):
        assert backend.cpu_threads() == threads
        assert backend.implementation() == f"numpy, {threads} thread{'s' if threads > 1 else ''}, blocked"
        out[...] = np.nan
        total = _every_op_matches(backend, a, b, a64, b64, out, dtype)
    assert type(total) is np.dtype(dtype).type
    assert abs(float(total) - a64.sum()) <= ELEMENT_TOL[dtype] * np.sqrt(n) * np.abs(a64).sum()


def test_threads_none_means_every_usable_core_and_is_restored(backend):
    import os

    usable = len(os.sched_getaffinity(0))
    with backend.threads(1):
        with backend.threads(None):
            assert backend.cpu_threads() == usable
        assert backend.cpu_threads() == 1
    assert backend.cpu_threads() == usable  # never set: every usable core, like BLAS


def test_the_pool_keeps_order_passes_errors_and_nests():
    from accelbench.backends.cpu_pool import CpuPool

    pool = CpuPool()
    assert pool.run(lambda x: x * x, range(50), 3) == [x * x for x in range(50)]
    assert pool.started == 2  # the caller is the third thread

    def fails(x):
        if x == 7:
            raise ValueError("item 7")
        return x

    with pytest.raises(ValueError, match="item 7"):
        pool.run(fails, range(20), 3)
    # work that itself maps runs its inner map in its own thread: no deadlock on a full pool
    assert pool.run(lambda x: sum(pool.run(lambda y: y, range(x), 3)), range(6), 3) == [0, 0, 1, 3, 6, 10]


def test_idle_pool_threads_do_not_spin(backend):
    """After work the pool's threads block on a queue: no CPU time while idle (schedstat, ns)."""
    import threading
    import time
    from pathlib import Path

    a = backend.random((4 * BLOCK_ELEMENTS,), "float64", "cpu", 5)
    out = np.empty_like(a)
    with backend.threads(2):
        backend.triad(a, a, SCALAR, out)
    ids = [t.native_id for t in threading.enumerate() if t.name.startswith("accelbench-cpu-")]
    assert ids
    if not Path(f"/proc/self/task/{ids[0]}/schedstat").exists():
        pytest.skip("no /proc schedstat here")

    def on_cpu_ns():
        return sum(int(Path(f"/proc/self/task/{i}/schedstat").read_text().split()[0]) for i in ids)

    before = on_cpu_ns()
    time.sleep(0.3)
    assert on_cpu_ns() - before < 5_000_000  # under 5 ms of 300: asleep, not spinning
