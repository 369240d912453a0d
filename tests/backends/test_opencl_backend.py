"""OpenCLBackend on a real OpenCL device (PoCL's CPU device here): every op against float64.

Inputs are fresh on-device random numbers; sizes are chosen so they divide no tile or work-group.
The tiled matmul is compared with the naive one as a ratio within one run, never as a time.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed: pip install accelbench[opencl]")

from accelbench.backends.opencl_backend import OpenCLBackend  # noqa: E402
from accelbench.backends.opencl_kernels import MatmulTiling, tiling_candidates  # noqa: E402
from accelbench.errors import Unsupported  # noqa: E402

SCALAR = 3.0
# per-element error allowed, relative to the size of the terms (so cancellation is fair)
ELEMENT_TOL = {"float64": 1e-14, "float32": 1e-6}
# ||C - C_ref||_F / ||C_ref||_F: grows like sqrt(k) ulp for a k-long dot product
MATMUL_TOL = {"float64": 1e-13, "float32": 1e-5}
# |sum - ref| / sum(|a|)
TOTAL_TOL = {"float64": 1e-13, "float32": 1e-5}
DTYPES = ("float32", "float64")


@pytest.fixture(scope="module")
def backend() -> OpenCLBackend:
    backend = OpenCLBackend()
    available = backend.availability()
    if not available.ok:
        pytest.skip(f"no OpenCL device: {available.reason}")
    return backend


@pytest.fixture(scope="module")
def device(backend) -> str:
    """The PoCL CPU device: fp64, and present wherever pocl-binary-distribution is installed."""
    for device_id in backend.device_ids():
        if "Portable Computing Language" in backend._cl_device(device_id).platform.name:
            return device_id
    pytest.skip("PoCL is absent: pip install pocl-binary-distribution")


def _host64(backend, array) -> np.ndarray:
    return backend.to_host(array).astype(np.float64)


def _worst(got, reference, magnitude) -> float:
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == np.shape(reference)
    return float((np.abs(got - reference) / np.maximum(magnitude, 1e-300)).max(initial=0.0))


def test_available_with_ids_dtypes_and_versions(backend, device):
    assert backend.availability().ok
    ids = backend.device_ids()
    assert ids and all(re.fullmatch(r"opencl:\d+:\d+", i) for i in ids)
    assert backend.dtypes(device) == ("float64", "float32")  # PoCL: cl_khr_fp64, no cl_khr_fp16
    assert backend.versions()["pyopencl"] == cl.VERSION_TEXT
    assert backend.namespace(device) is None  # kernel-only
    assert backend.asynchronous and backend.name == "pyopencl"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 1000, 300_007])
def test_memory_ops_match_float64_reference(backend, device, dtype, n):
    a, b = backend.random((n,), dtype, device, 10 + n % 7), backend.random((n,), dtype, device, 20 + n % 5)
    a64, b64 = _host64(backend, a), _host64(backend, b)
    out = backend.empty((n,), dtype, device)
    cases = {
        "copy": (lambda: backend.copy(a, out), a64, np.abs(a64)),
        "scale": (lambda: backend.scale(a, SCALAR, out), SCALAR * a64, SCALAR * np.abs(a64)),
        "add": (lambda: backend.add(a, b, out), a64 + b64, np.abs(a64) + np.abs(b64)),
        "triad": (lambda: backend.triad(a, b, SCALAR, out), a64 + SCALAR * b64, np.abs(a64) + SCALAR * np.abs(b64)),
        "elementwise": (lambda: backend.elementwise(a, out), a64 * a64 + a64, a64 * a64 + np.abs(a64)),
    }
    for name, (call, reference, magnitude) in cases.items():
        result = call()
        assert result is out, f"{name} must write into out= (timed calls do not allocate)"
        backend.synchronize(device)
        assert _worst(_host64(backend, result), reference, magnitude) <= ELEMENT_TOL[dtype], name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 7, 1000, 1_000_003])
def test_total_matches_float64_reference(backend, device, dtype, n):
    a = backend.random((n,), dtype, device, 3)
    a64 = _host64(backend, a)
    result = backend.total(a)
    assert backend.location(result) == device  # left on the device
    got = backend.to_host(result)
    assert got.shape == () and got.dtype == np.dtype(dtype)
    assert abs(float(got) - a64.sum()) / np.abs(a64).sum() <= TOTAL_TOL[dtype]


def test_total_of_nothing_is_zero(backend, device):
    assert float(backend.to_host(backend.total(backend.empty((0,), "float32", device)))) == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 9), (65, 64, 63), (130, 70, 200), (257, 257, 257)])
def test_matmul_matches_float64_reference_at_sizes_no_tile_divides(backend, device, dtype, shape):
    m, k, n = shape
    a, b = backend.random((m, k), dtype, device, 1), backend.random((k, n), dtype, device, 2)
    reference = _host64(backend, a) @ _host64(backend, b)
    out = backend.empty((m, n), dtype, device)
    for result in (backend.matmul(a, b, out=out), backend.matmul(a, b), backend.matmul_naive(a, b)):
        error = np.linalg.norm(_host64(backend, result) - reference) / np.linalg.norm(reference)
        assert error <= MATMUL_TOL[dtype], (shape, error)
    assert backend.matmul(a, b, out=out) is out


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_n1000_against_norm_tolerance(backend, device, dtype):
    n = 1000
    a, b = backend.random((n, n), dtype, device, 5), backend.random((n, n), dtype, device, 6)
    reference = _host64(backend, a) @ _host64(backend, b)
    error = np.linalg.norm(_host64(backend, backend.matmul(a, b)) - reference) / np.linalg.norm(reference)
    assert error <= MATMUL_TOL[dtype] * np.sqrt(n / 256)


def test_matmul_rejects_mismatched_operands(backend, device):
    a, b = backend.empty((4, 5), "float32", device), backend.empty((4, 5), "float32", device)
    with pytest.raises(ValueError, match="matmul needs"):
        backend.matmul(a, b)
    with pytest.raises(ValueError, match="out is"):
        backend.matmul(a, backend.empty((5, 3), "float32", device), out=backend.empty((4, 4), "float32", device))


def test_tiled_matmul_beats_naive_by_a_clear_margin(backend, device):
    """Interleaved in one run (tiled, naive, tiled, ...), best of each: a ratio, not a time."""
    n = 768
    a, b = backend.random((n, n), "float32", device, 7), backend.random((n, n), "float32", device, 8)
    out = backend.empty((n, n), "float32", device)
    calls = {"tiled": lambda: backend.matmul(a, b, out=out), "naive": lambda: backend.matmul_naive(a, b, out=out)}
    best_s = {name: float("inf") for name in calls}
    for call in calls.values():  # compile and warm up
        call()
    backend.synchronize(device)
    for _ in range(3):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            backend.synchronize(device)
            best_s[name] = min(best_s[name], time.perf_counter() - started)
    speedup = best_s["naive"] / best_s["tiled"]
    assert speedup >= 2.0, f"tiled is only {speedup:.2f}x the naive kernel"


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_is_uniform_on_minus_one_one_and_seeded(backend, device, dtype):
    n = 1_000_003
    draws = _host64(backend, backend.random((n,), dtype, device, 42))
    assert draws.min() >= -1.0 and draws.max() < 1.0
    sigma = np.sqrt(1 / 3)
    assert abs(draws.mean()) < 5 * sigma / np.sqrt(n)
    assert abs(draws.var() - 1 / 3) < 0.005
    assert np.array_equal(draws, _host64(backend, backend.random((n,), dtype, device, 42)))  # reproducible
    other = _host64(backend, backend.random((n,), dtype, device, 43))
    assert np.mean(draws == other) < 1e-3
    assert abs(np.corrcoef(draws, other)[0, 1]) < 0.01
    shaped = backend.random((3, 5, 7), dtype, device, 1)
    assert shaped.shape == (3, 5, 7) and shaped.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pinned", [False, True])
def test_round_trip_through_a_real_device_buffer(backend, device, dtype, pinned):
    host = np.random.default_rng(0).uniform(-1, 1, size=(33, 17)).astype(dtype)
    source = backend.host_buffer(host.shape, dtype, pinned=pinned, device=device)
    source[...] = host
    on_device = backend.from_host(source, device, pinned=pinned)
    backend.synchronize(device)
    source[...] = 0  # a copy, not a view of host memory
    assert isinstance(on_device.base_data, cl.Buffer)
    assert not on_device.base_data.flags & cl.mem_flags.USE_HOST_PTR
    assert backend.location(on_device) == device
    if len(cl.get_platforms()) == 1:
        assert device == "opencl:0:0"
    back = backend.to_host(on_device)
    assert back.dtype == np.dtype(dtype) and np.array_equal(back, host)
    into = backend.host_buffer(host.shape, dtype, pinned=pinned, device=device)
    assert backend.to_host(on_device, out=into) is into and np.array_equal(into, host)


def test_a_read_back_keeps_no_host_copy_alive(backend, device):
    """pyopencl's get() leaves its copy's event, which holds the host copy, on the device array: a
    STREAM end-to-end block kept 12 read-backs of 64 MiB alive per output (issue 28)."""
    import gc
    import weakref

    on_device = backend.from_host(np.ones(4096, dtype=np.float32), device)
    copies = [weakref.ref(backend.to_host(on_device)) for _ in range(3)]
    gc.collect()
    assert not on_device.events and all(copy() is None for copy in copies)


def test_a_pinned_copy_is_enqueued_and_finished_by_synchronize(backend, device):
    host = backend.host_buffer((1_000_003,), "float32", pinned=True, device=device)
    host[...] = 1.5
    on_device = backend.from_host(host, device, pinned=True)
    event = backend.last_event(device)  # kept: dropping pyopencl's copy event would wait for it
    backend.synchronize(device)
    assert event.command_execution_status == cl.command_execution_status.COMPLETE
    assert float(backend.to_host(backend.total(on_device))) == pytest.approx(1.5 * 1_000_003, rel=1e-6)


def test_pinned_is_offered_only_where_host_and_device_memory_differ(backend, device):
    assert backend.supports_pinned(device) is False  # a CPU device: the same memory
    assert backend.shares_host_memory(device) is False  # yet buffers are separate copies


def test_ops_are_enqueued_and_synchronize_waits(backend, device):
    a = backend.random((512, 512), "float32", device, 1)
    backend.matmul(a, a)
    event = backend.last_event(device)
    assert event is not None
    backend.synchronize(device)
    assert event.command_execution_status == cl.command_execution_status.COMPLETE


def test_astype_and_unsupported_dtypes(backend, device):
    a = backend.random((100,), "float32", device, 1)
    doubled = backend.astype(a, "float64")
    assert doubled.dtype == np.float64 and np.array_equal(backend.to_host(doubled), backend.to_host(a))
    with pytest.raises(Unsupported, match="bfloat16"):
        backend.random((4,), "bfloat16", device, 0)
    with pytest.raises(Unsupported, match="float16"):
        backend.empty((4,), "float16", device)


def test_tilings_respect_the_device_limits():
    small = tiling_candidates(False, 64, (64, 64, 64), 32 * 1024, 4)
    assert small and all(t.group_items <= 64 for t in small)
    tiny_local = tiling_candidates(True, 4096, (4096, 4096, 4096), 4 * 1024, 8)
    assert all(t.local_memory_bytes(8) <= 4 * 1024 for t in tiny_local)
    assert tiny_local[-1] == MatmulTiling(1, 1, 1, 1, 1)  # always something that runs
    tiling = MatmulTiling(64, 64, 16, 4, 4)
    assert tiling.local_size == (16, 16)
    assert tiling.global_size(1000, 1001) == (16 * 16, 16 * 16)  # padded to whole tiles


def test_module_imports_without_pyopencl():
    code = (
        "import sys; sys.modules['pyopencl'] = None\n"
        "from accelbench.backends.opencl_backend import OpenCLBackend\n"
        "a = OpenCLBackend().availability(); print(a.ok, a.reason)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False pyopencl is not installed: pip install accelbench[opencl]"
