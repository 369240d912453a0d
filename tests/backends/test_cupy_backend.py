"""CupyBackend: availability here (cupy absent), and its logic against a fake cupy built on numpy.

The fake replays what cupy does without a driver (getDeviceCount raises
cudaErrorInsufficientDriver) and, with fake GPUs, runs the ops on numpy arrays that remember
their device; its ElementwiseKernel executes the kernel body, so the fused formulas are checked.
"""
from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest

from accelbench.backends.cupy_backend import CupyBackend
from accelbench.errors import Unsupported, UsageError

SCALAR = 3.0
ELEMENT_TOL = {"float64": 1e-14, "float32": 1e-6, "float16": 2e-3}
NO_DRIVER = "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"


class CUDARuntimeError(RuntimeError):
    pass


class FakeCupyArray(np.ndarray):
    def __new__(cls, values, index: int, log: list) -> "FakeCupyArray":
        array = np.array(values).view(cls)
        array.index, array.log = index, log
        return array

    def __array_finalize__(self, obj) -> None:
        self.index, self.log = getattr(obj, "index", None), getattr(obj, "log", None)

    @property
    def device(self):
        return SimpleNamespace(id=self.index)

    def get(self, stream=None, out=None):
        if out is None:
            return np.array(self, copy=True)
        out[...] = self
        return out

    def set(self, array, stream=None):
        self.log.append(("set", stream))
        self[...] = array


class FakeKernel:
    """Runs an ElementwiseKernel body as Python on numpy arrays ("out = a + s * b" is both)."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str) -> None:
        self.inputs = [p.split()[-1] for p in in_params.split(",")]
        self.output, self.operation, self.name = out_params.split()[-1], operation, name

    def __call__(self, *args):
        scope = dict(zip(self.inputs, args))
        exec(self.operation, {}, scope)  # noqa: S102 - the fake's whole point
        out = args[len(self.inputs)]
        out[...] = scope[self.output]
        return out


def fake_cupy(gpus: int = 2, error: Exception | None = None, hip: bool = False, capability: str = "90"):
    log: list = []
    state = SimpleNamespace(current=0)

    class Device:
        def __init__(self, index: int | None = None) -> None:
            self.id = state.current if index is None else index
            self.compute_capability = capability

        def __enter__(self):
            self.previous, state.current = state.current, self.id
            return self

        def __exit__(self, *exc) -> None:
            state.current = self.previous

        def synchronize(self) -> None:
            log.append(("synchronize", self.id))

    def device_count() -> int:
        if error:
            raise error
        return gpus

    def kernel(*spec):
        log.append(("compile", spec[-1]))
        return FakeKernel(*spec)

    class RandomState:
        def __init__(self, seed: int) -> None:
            self.rng = np.random.default_rng(seed)

        def uniform(self, low, high, size, dtype):
            log.append(("uniform", np.dtype(dtype).name))
            return FakeCupyArray(self.rng.uniform(low, high, size).astype(dtype), state.current, log)

    runtime = SimpleNamespace(getDeviceCount=device_count, is_hip=hip,
                              runtimeGetVersion=lambda: 12040, driverGetVersion=lambda: 12080)
    return SimpleNamespace(
        __version__="13.3.0", log=log,
        cuda=SimpleNamespace(runtime=runtime, Device=Device, get_current_stream=lambda: "current-stream"),
        asarray=lambda a: FakeCupyArray(a, state.current, log),
        empty=lambda shape, dtype: FakeCupyArray(np.empty(shape, dtype), state.current, log),
        matmul=np.matmul, multiply=np.multiply, add=np.add, sum=np.sum,
        ElementwiseKernel=kernel, random=SimpleNamespace(RandomState=RandomState))


def test_not_installed_here_says_how_to_install():
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("cupy is installed here")
    backend = CupyBackend()
    assert backend.availability().ok is False
    assert backend.availability().reason == "cupy is not installed: pip install accelbench[cupy]"
    assert backend.device_ids() == [] and backend.versions() == {}


def test_no_driver_is_unavailable_with_the_runtime_error():
    backend = CupyBackend(cupy_module=fake_cupy(error=CUDARuntimeError(NO_DRIVER)))
    availability = backend.availability()
    assert availability.ok is False and availability.reason == f"cupy found no usable GPU: {NO_DRIVER}"
    assert backend.device_ids() == []
    assert backend.versions()["cupy"] == "13.3.0"
    no_gpu = CupyBackend(cupy_module=fake_cupy(gpus=0))
    assert no_gpu.availability().ok is False and "device count is 0" in no_gpu.availability().reason


def test_devices_dtypes_and_versions():
    backend = CupyBackend(cupy_module=fake_cupy(gpus=2))
    assert backend.availability().ok and backend.device_ids() == ["cuda:0", "cuda:1"]
    assert backend.dtypes("cuda:1") == ("float64", "float32", "float16")  # no bfloat16 in cupy
    assert backend.versions() == {"cupy": "13.3.0", "cuda_runtime": "12040", "cuda_driver": "12080"}
    assert CupyBackend(cupy_module=fake_cupy(capability="52")).dtypes("cuda:0") == ("float64", "float32")
    assert CupyBackend(cupy_module=fake_cupy(hip=True)).device_ids() == ["rocm:0", "rocm:1"]
    with pytest.raises(UsageError, match=r"'cuda:2'.*cuda:0, cuda:1"):
        backend.empty((2,), "float32", "cuda:2")
    with pytest.raises(Unsupported):
        backend.empty((2,), "bfloat16", "cuda:0")


def _check(result, reference, magnitude, dtype):
    error = np.abs(np.asarray(result, np.float64) - reference) / np.maximum(magnitude, 1e-300)
    assert float(error.max(initial=0.0)) <= ELEMENT_TOL[dtype]


def test_every_op_matches_the_reference_on_every_dtype_and_stays_on_the_device():
    fake = fake_cupy(gpus=2)
    backend, device = CupyBackend(cupy_module=fake), "cuda:1"
    for dtype in backend.dtypes(device):
        a, b = backend.random((64, 48), dtype, device, 1), backend.random((48, 32), dtype, device, 2)
        x, y = backend.random((1000,), dtype, device, 3), backend.random((1000,), dtype, device, 4)
        a64, b64, x64, y64 = (backend.to_host(v).astype(np.float64) for v in (a, b, x, y))
        c = backend.empty((64, 32), dtype, device)
        reference = a64 @ b64
        assert backend.matmul(a, b, out=c) is c
        assert np.linalg.norm(backend.to_host(c) - reference) / np.linalg.norm(reference) <= 5e-3
        out = backend.empty((1000,), dtype, device)
        calls = {
            "copy": (lambda: backend.copy(x, out), x64, np.abs(x64)),
            "scale": (lambda: backend.scale(x, SCALAR, out), SCALAR * x64, np.abs(SCALAR * x64)),
            "add": (lambda: backend.add(x, y, out), x64 + y64, np.abs(x64) + np.abs(y64)),
            "triad": (lambda: backend.triad(x, y, SCALAR, out), x64 + SCALAR * y64, np.abs(x64) + 3 * np.abs(y64)),
            "elementwise": (lambda: backend.elementwise(x, out), x64 * x64 + x64, x64 * x64 + np.abs(x64)),
        }
        for op, (call, ref, magnitude) in calls.items():
            result = call()
            assert result is out and result.dtype == np.dtype(dtype), op
            _check(result, ref, magnitude, dtype)
        total = backend.total(x)
        assert backend.location(total) == device
        _check(total, x64.sum(), np.abs(x64).sum(), dtype)
    assert [e for e in fake.log if e[0] == "compile"] == [("compile", "accelbench_triad"),
                                                            ("compile", "accelbench_elementwise")]
    assert ("uniform", "float32") in fake.log and ("uniform", "float16") not in fake.log  # no half cuRAND


def test_random_is_seeded_on_the_device():
    backend = CupyBackend(cupy_module=fake_cupy())
    x = backend.random((500,), "float32", "cuda:1", 4)
    assert backend.location(x) == "cuda:1"
    assert np.array_equal(x, backend.random((500,), "float32", "cuda:1", 4))
    assert -1.0 <= float(x.min()) and float(x.max()) < 1.0


def test_transfers_pinned_and_pageable():
    fake = fake_cupy()
    pinned_allocations = []
    cupyx = SimpleNamespace(empty_pinned=lambda shape, dtype: pinned_allocations.append(shape) or np.empty(shape, dtype))
    backend = CupyBackend(cupy_module=fake, cupyx_module=cupyx)
    host = backend.host_buffer((8,), "float32", pinned=True)
    assert pinned_allocations == [(8,)] and isinstance(host, np.ndarray)
    host[...] = np.arange(8)
    assert backend.supports_pinned("cuda:0") and not backend.supports_pinned("cpu")
    placed = backend.from_host(host, "cuda:1", pinned=True)
    assert ("set", "current-stream") in fake.log  # queued on the stream: asynchronous
    assert backend.location(placed) == "cuda:1" and np.array_equal(backend.to_host(placed), host)
    pageable = backend.from_host(host, "cuda:0")
    assert backend.location(pageable) == "cuda:0"
    into = np.zeros(8, np.float32)
    assert backend.to_host(pageable, out=into) is into and np.array_equal(into, host)
    with pytest.raises(Unsupported):
        backend.host_buffer((2,), "bfloat16", pinned=True)


def test_synchronize_waits_on_that_device():
    fake = fake_cupy()
    backend = CupyBackend(cupy_module=fake)
    backend.device_ids()
    backend.synchronize("cuda:1")
    assert fake.log == [("synchronize", 1)]
