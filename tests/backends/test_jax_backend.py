"""JaxBackend: availability here (jax absent), and its logic against a fake jax built on numpy.

The fake's arrays are numpy arrays that remember their device and record block_until_ready,
so the formulas, placement, immutability (out ignored) and synchronisation are checked;
the numerics of real XLA are checked in tests/gpu where jax is installed.
"""
from __future__ import annotations

import contextlib
import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest

from accelbench.backends.jax_backend import JaxBackend, xla_cpu_threads
from accelbench.errors import Unsupported, UsageError

SCALAR = 3.0
ELEMENT_TOL = {"float64": 1e-14, "float32": 1e-6, "float16": 2e-3, "bfloat16": 1e-2}


class FakeDevice:
    def __init__(self, platform: str, index: int, capability: str | None = None, version: str = "") -> None:
        self.platform, self.id, self.local_hardware_id = platform, index, index
        self.compute_capability = capability
        self.client = SimpleNamespace(platform_version=version)
        self.blocked: list = []  # arrays block_until_ready() was called on


class FakeArray(np.ndarray):
    """A numpy array that lives on a fake device; numpy ops keep the device of their input."""

    def __new__(cls, values, device: FakeDevice) -> "FakeArray":
        array = np.array(values).view(cls)
        array.device_ = device
        return array

    def __array_finalize__(self, obj) -> None:
        self.device_ = getattr(obj, "device_", None)

    def devices(self) -> set:
        return {self.device_}

    def block_until_ready(self) -> "FakeArray":
        self.device_.blocked.append(self)
        return self


class FakeJax:
    """The parts of jax the backend uses. Old jax (`modern=False`) knows GPUs only as "gpu"."""

    __version__ = "0.4.35"

    def __init__(self, gpus: int = 0, capability: str = "9.0", x64: bool = False, modern: bool = True,
                 vendor: str = "cuda 12040") -> None:
        self.cpu = FakeDevice("cpu", 0)
        self.gpus = [FakeDevice("gpu", i, capability, vendor) for i in range(gpus)]
        self.modern, self.current, self.jitted, self.precisions = modern, self.cpu, [], []
        self.config = SimpleNamespace(jax_enable_x64=x64)
        self.random = SimpleNamespace(key=lambda seed: ("key", seed), uniform=self._uniform)
        self.numpy = SimpleNamespace(
            float64=np.float64, float32=np.float32, float16=np.float16,
            bfloat16=np.float32,  # numpy has no bfloat16: the fake computes it in float32
            matmul=self._matmul, sum=np.sum, copy=lambda a: np.array(a, copy=True, subok=True),
            zeros=lambda shape, dtype: FakeArray(np.zeros(shape, dtype), self.current))

    def devices(self, platform: str):
        if platform == "cpu":
            return [self.cpu]
        names = ("cuda", "rocm") if self.modern else ("gpu",)
        matches = platform == "gpu" or self.gpus and platform in self.gpus[0].client.platform_version
        if platform in names and self.gpus and matches:
            return self.gpus
        raise RuntimeError(f"Unknown backend {platform}")

    def device_put(self, values, device):
        return FakeArray(values, device)

    @contextlib.contextmanager
    def default_device(self, device):
        previous, self.current = self.current, device
        try:
            yield
        finally:
            self.current = previous

    def jit(self, function):
        self.jitted.append(function)
        return function

    def _matmul(self, a, b, precision=None):
        self.precisions.append(precision)
        return np.matmul(a, b)

    def _uniform(self, key, shape, dtype, minval, maxval):
        values = np.random.default_rng(key[1]).uniform(minval, maxval, shape).astype(dtype)
        return FakeArray(values, self.current)


def test_not_installed_here_says_how_to_install():
    if importlib.util.find_spec("jax") is not None:
        pytest.skip("jax is installed here")
    backend = JaxBackend()
    assert backend.availability().ok is False
    assert backend.availability().reason == "jax is not installed: pip install accelbench[jax]"
    assert backend.device_ids() == [] and backend.versions() == {}


def test_devices_and_dtypes_follow_what_jax_reports():
    cpu_only = JaxBackend(jax_module=FakeJax())
    assert cpu_only.availability().ok and cpu_only.device_ids() == ["cpu"]
    assert cpu_only.dtypes("cpu") == ("float32",)  # float64 needs jax_enable_x64
    assert JaxBackend(jax_module=FakeJax(x64=True)).dtypes("cpu") == ("float64", "float32")
    two = JaxBackend(jax_module=FakeJax(gpus=2, capability="9.0"))
    assert two.device_ids() == ["cpu", "cuda:0", "cuda:1"]
    assert two.dtypes("cuda:1") == ("float32", "float16", "bfloat16")
    assert JaxBackend(jax_module=FakeJax(gpus=1, capability="7.5")).dtypes("cuda:0") == ("float32", "float16")
    with pytest.raises(UsageError, match=r"'mps'.*cpu, cuda:0, cuda:1"):
        two.dtypes("mps")


def test_older_jax_gpus_are_told_apart_by_their_platform_version():
    rocm = JaxBackend(jax_module=FakeJax(gpus=1, modern=False, vendor="rocm 6.0"))
    assert rocm.device_ids() == ["cpu", "rocm:0"]
    cuda = JaxBackend(jax_module=FakeJax(gpus=1, modern=False, vendor="cuda 12040"))
    assert cuda.device_ids() == ["cpu", "cuda:0"]


def _check(result, reference, magnitude, dtype):
    error = np.abs(np.asarray(result, np.float64) - reference) / np.maximum(magnitude, 1e-300)
    assert float(error.max(initial=0.0)) <= ELEMENT_TOL[dtype]


@pytest.mark.parametrize("device", ["cpu", "cuda:1"])
def test_every_op_matches_the_reference_on_every_dtype_and_stays_on_the_device(device):
    backend = JaxBackend(jax_module=FakeJax(gpus=2, x64=True))
    for dtype in backend.dtypes(device):
        a, b = backend.random((64, 48), dtype, device, 1), backend.random((48, 32), dtype, device, 2)
        x, y = backend.random((1000,), dtype, device, 3), backend.random((1000,), dtype, device, 4)
        a64, b64, x64, y64 = (backend.to_host(v).astype(np.float64) for v in (a, b, x, y))
        out = backend.empty((1000,), dtype, device)
        product = backend.matmul(a, b, out=None)
        reference = a64 @ b64
        assert np.linalg.norm(backend.to_host(product) - reference) / np.linalg.norm(reference) <= 1e-2
        results = {
            "copy": (backend.copy(x, out), x64, np.abs(x64)),
            "scale": (backend.scale(x, SCALAR, out), SCALAR * x64, np.abs(SCALAR * x64)),
            "add": (backend.add(x, y, out), x64 + y64, np.abs(x64) + np.abs(y64)),
            "triad": (backend.triad(x, y, SCALAR, out), x64 + SCALAR * y64, np.abs(x64) + np.abs(SCALAR * y64)),
            "elementwise": (backend.elementwise(x, out), x64 * x64 + x64, x64 * x64 + np.abs(x64)),
            "total": (backend.total(x), x64.sum(), np.abs(x64).sum()),
        }
        for op, (result, ref, magnitude) in results.items():
            assert result is not out and backend.location(result) == device, op  # new array, same device
            _check(result, ref, magnitude, dtype)
        assert not np.any(np.asarray(out))  # immutable: `out` is never written


def test_kernels_are_jitted_once_and_matmul_is_full_precision():
    fake = FakeJax(gpus=1)
    backend = JaxBackend(jax_module=fake)
    a = backend.random((8, 8), "float32", "cuda:0", 0)
    backend.matmul(a, a)
    backend.matmul(a, a)
    assert len(fake.jitted) == 6  # built once, reused
    assert fake.precisions == ["highest", "highest"]  # XLA's default on Ampere+ would be TF32


def test_synchronize_waits_on_the_newest_array_of_that_device():
    fake = FakeJax(gpus=2)
    backend = JaxBackend(jax_module=fake)
    x = backend.from_host(np.ones(16, np.float32), "cuda:1")
    first = backend.scale(x, 2.0, None)
    last = backend.add(first, x, None)
    backend.synchronize("cuda:0")
    assert fake.gpus[0].blocked == []  # nothing was queued there
    backend.synchronize("cuda:1")
    assert fake.gpus[1].blocked == [last]
    backend.synchronize("cuda:1")
    assert fake.gpus[1].blocked == [last]  # nothing new since: nothing to wait for


def test_transfers():
    backend = JaxBackend(jax_module=FakeJax(gpus=1))
    host = np.arange(6.0, dtype=np.float32)
    on_cpu = backend.from_host(host, "cpu")
    assert not np.shares_memory(np.asarray(on_cpu), host)  # jax may alias on the CPU: we copy
    on_gpu = backend.from_host(host, "cuda:0")
    assert backend.location(on_gpu) == "cuda:0" and np.array_equal(backend.to_host(on_gpu), host)
    assert type(backend.to_host(on_gpu)) is np.ndarray
    assert not backend.supports_pinned("cuda:0")
    with pytest.raises(Unsupported):
        backend.from_host(host, "cuda:0", pinned=True)
    assert backend.astype(on_gpu, "float16").dtype == np.float16
    assert backend.location(backend.astype(on_gpu, "float16")) == "cuda:0"


def test_random_is_seeded_and_made_on_the_device():
    backend = JaxBackend(jax_module=FakeJax(gpus=1))
    x = backend.random((1000,), "float32", "cuda:0", 9)
    assert backend.location(x) == "cuda:0" and x.dtype == np.float32
    assert np.array_equal(x, backend.random((1000,), "float32", "cuda:0", 9))
    assert -1.0 <= float(x.min()) and float(x.max()) < 1.0
    with pytest.raises(Unsupported):
        backend.random((4,), "float64", "cuda:0", 0)  # x64 off


def test_threads_only_the_count_xla_started_with(monkeypatch):
    backend = JaxBackend(jax_module=FakeJax())
    with backend.threads(None) as in_force:
        assert in_force == xla_cpu_threads()
    with backend.threads(xla_cpu_threads()) as in_force:
        assert in_force == xla_cpu_threads()
    with pytest.raises(Unsupported, match="fixed at start-up"):
        with backend.threads(xla_cpu_threads() + 1):
            pass
    # jax 0.10's matmul ignores this flag (tests/cli/test_jax_threads.py): the count is not read from it
    every_core = xla_cpu_threads()
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    assert xla_cpu_threads() == every_core
