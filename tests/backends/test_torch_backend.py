"""TorchBackend: real ops on the CPU against float64 references; GPU logic against a fake torch.

The fake replays what torch reports on GPU machines (device counts, capabilities, the CUDA
runtime's error without a driver) so id mapping, dtype choice, pinned copies and synchronisation
are checked here; tests/gpu runs the same ops on a real GPU.
"""
from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from accelbench.backends.torch_backend import TorchBackend, bfloat16_bits_to_float32  # noqa: E402
from accelbench.errors import Unsupported, UsageError  # noqa: E402

SCALAR = 3.0
ELEMENT_TOL = {"float64": 1e-14, "float32": 1e-6, "float16": 2e-3, "bfloat16": 1e-2}
MATMUL_TOL = {"float64": 1e-12, "float32": 1e-5, "float16": 5e-3, "bfloat16": 1e-2}


@pytest.fixture(scope="module")
def backend() -> TorchBackend:
    return TorchBackend()


def _worst(got, reference, magnitude) -> float:
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == np.shape(reference)
    return float((np.abs(got - reference) / np.maximum(magnitude, 1e-300)).max(initial=0.0))


def _host64(backend, tensor) -> np.ndarray:
    return backend.to_host(tensor).astype(np.float64)


# -- the real CPU ------------------------------------------------------------------------------

def test_cpu_is_available_and_says_why_there_is_no_gpu(backend):
    availability = backend.availability()
    assert availability.ok and "cpu" in backend.device_ids()
    if backend.device_ids() == ["cpu"]:
        assert availability.reason.startswith("cpu only: ")
    versions = backend.versions()
    assert versions["torch"] == torch.__version__ and "cpu_capability" in versions


def test_cpu_dtypes(backend):
    dtypes = backend.dtypes("cpu")
    assert dtypes[:3] == ("float64", "float32", "bfloat16")
    # float16 only with a native fp16 matmul (AMX-FP16): elsewhere it is a slow scalar fallback
    assert ("float16" in dtypes) == bool(torch.cpu._is_amx_fp16_supported())


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16", "float16"])
def test_matmul_matches_float64_reference(backend, dtype):
    if dtype not in backend.dtypes("cpu"):
        pytest.skip(f"torch offers no {dtype} on this CPU")
    a, b = backend.random((96, 80), dtype, "cpu", 1), backend.random((80, 64), dtype, "cpu", 2)
    out = backend.empty((96, 64), dtype, "cpu")
    result = backend.matmul(a, b, out=out)
    assert result.data_ptr() == out.data_ptr() and result.dtype == getattr(torch, dtype)
    reference = _host64(backend, a) @ _host64(backend, b)
    error = np.linalg.norm(_host64(backend, result) - reference) / np.linalg.norm(reference)
    assert error <= MATMUL_TOL[dtype], error


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16", "float16"])
def test_memory_ops_match_float64_reference(backend, dtype):
    if dtype not in backend.dtypes("cpu"):
        pytest.skip(f"torch offers no {dtype} on this CPU")
    n, tol = 100_003, ELEMENT_TOL[dtype]
    a, b = backend.random((n,), dtype, "cpu", 11), backend.random((n,), dtype, "cpu", 12)
    a64, b64 = _host64(backend, a), _host64(backend, b)
    out = backend.empty((n,), dtype, "cpu")
    assert np.array_equal(_host64(backend, backend.copy(a, out)), a64)
    checks = {  # op -> (call, reference, size of the terms); each call overwrites `out`
        "scale": (lambda: backend.scale(a, SCALAR, out), SCALAR * a64, np.abs(SCALAR * a64)),
        "add": (lambda: backend.add(a, b, out), a64 + b64, np.abs(a64) + np.abs(b64)),
        "triad": (lambda: backend.triad(a, b, SCALAR, out), a64 + SCALAR * b64, np.abs(a64) + np.abs(SCALAR * b64)),
        "elementwise": (lambda: backend.elementwise(a, out), a64 * a64 + a64, a64 * a64 + np.abs(a64)),
    }
    for op, (call, reference, magnitude) in checks.items():
        result = call()
        assert result.data_ptr() == out.data_ptr(), op
        assert _worst(_host64(backend, result), reference, magnitude) <= tol, op
    total = backend.total(a)
    assert backend.location(total) == "cpu"
    assert abs(float(backend.to_host(total)) - a64.sum()) <= tol * np.abs(a64).sum()


def test_random_is_made_on_the_device_uniform_and_seeded(backend):
    for dtype in backend.dtypes("cpu"):
        x = backend.random((50_000,), dtype, "cpu", 5)
        host = backend.to_host(x)
        assert x.dtype == getattr(torch, dtype) and backend.location(x) == "cpu"
        assert host.min() >= -1.0 and host.max() <= 1.0 and 0.3 < float(host.var()) < 0.36
        assert torch.equal(x, backend.random((50_000,), dtype, "cpu", 5))
        assert not torch.equal(x, backend.random((50_000,), dtype, "cpu", 6))


def test_bfloat16_comes_back_as_exact_float32(backend):
    x = backend.random((7, 3), "bfloat16", "cpu", 3)
    host = backend.to_host(x)
    assert host.dtype == np.float32 and host.shape == (7, 3)
    assert np.array_equal(host, x.float().numpy())
    assert float(backend.to_host(backend.total(x))) == float(torch.sum(x).float())  # 0-d too
    assert bfloat16_bits_to_float32(np.array([0x3F80, 0xC000], dtype=np.uint16).view(np.int16)).tolist() == [1.0, -2.0]


def test_astype_rounds_on_the_device(backend):
    host = np.random.default_rng(0).uniform(-1, 1, 1000).astype(np.float32)
    on_device = backend.from_host(host, "cpu")
    rounded = backend.astype(on_device, "bfloat16")
    assert rounded.dtype == torch.bfloat16
    assert np.array_equal(backend.to_host(rounded), torch.from_numpy(host).to(torch.bfloat16).float().numpy())
    with pytest.raises(Unsupported):
        backend.astype(on_device, "float8")


def test_transfers_copy_and_location_reports_the_device(backend):
    host = np.arange(12.0).reshape(3, 4)
    on_device = backend.from_host(host, "cpu")
    assert backend.location(on_device) == "cpu"
    assert not np.shares_memory(on_device.numpy(), host)
    back = backend.to_host(on_device)
    assert np.array_equal(back, host) and not np.shares_memory(back, on_device.numpy())
    read_only = np.arange(4.0)
    read_only.flags.writeable = False
    assert np.array_equal(backend.to_host(backend.from_host(read_only, "cpu")), read_only)
    into = np.empty((3, 4))
    assert backend.to_host(on_device, out=into) is into and np.array_equal(into, host)


def test_unreachable_device_and_no_pinned_memory_on_a_cpu_build(backend):
    if backend.device_ids() != ["cpu"]:
        pytest.skip("this torch reaches a GPU")
    with pytest.raises(UsageError, match=r"'cuda:0'.*cpu"):
        backend.empty((2,), "float32", "cuda:0")
    assert not backend.supports_pinned("cpu")
    with pytest.raises(Unsupported):
        backend.host_buffer((4,), "float32", pinned=True)
    with pytest.raises(Unsupported):
        backend.host_buffer((4,), "bfloat16", pinned=True)  # numpy cannot hold it
    assert isinstance(backend.host_buffer((4,), "float32"), np.ndarray)
    backend.synchronize("cpu")
    assert not backend.is_asynchronous("cpu") and backend.is_asynchronous("cuda:0")


def test_threads_one_really_gives_one_and_restores(backend):
    before = torch.get_num_threads()
    with backend.threads(1) as in_force:
        assert in_force == 1 and torch.get_num_threads() == 1
        backend.matmul(torch.ones(64, 64), torch.ones(64, 64))
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError):
        with backend.threads(1):
            raise RuntimeError("the block fails")
    assert torch.get_num_threads() == before  # restored after an error too
    with backend.threads(None) as untouched:
        assert untouched == before


def test_torch_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails as if absent
    missing = TorchBackend()
    availability = missing.availability()
    assert not availability.ok and availability.reason == "torch is not installed: pip install accelbench[torch]"
    assert missing.device_ids() == [] and missing.versions() == {}


# -- GPU logic, with a fake torch ----------------------------------------------------------------

class FakeDevice:
    def __init__(self, kind: str, index: int | None = None) -> None:
        self.type, self.index = kind, index

    def __eq__(self, other) -> bool:
        return (self.type, self.index) == (other.type, other.index)

    def __repr__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


class FakeTensor:
    """Records the calls that move it; `log` is shared with the fake module."""

    def __init__(self, log: list, device: FakeDevice, pinned: bool = False) -> None:
        self.log, self.device, self.pinned = log, device, pinned

    def is_pinned(self) -> bool:
        return self.pinned

    def pin_memory(self) -> "FakeTensor":
        self.log.append("pin_memory")
        return FakeTensor(self.log, self.device, pinned=True)

    def to(self, device, non_blocking: bool = False) -> "FakeTensor":
        self.log.append(("to", repr(device), non_blocking))
        return FakeTensor(self.log, device)


def fake_torch(*, gpus: int = 0, capability=(9, 0), cuda: str | None = "12.4", hip: str | None = None,
               init_error: str | None = None, mps: bool = False, pinned_source: bool = False):
    log: list = []

    def init():
        if init_error:
            raise RuntimeError(init_error)

    module = SimpleNamespace(
        __version__="2.5.1", log=log, bfloat16="bf16",
        version=SimpleNamespace(cuda=cuda, hip=hip),
        device=FakeDevice,
        cuda=SimpleNamespace(is_available=lambda: gpus > 0, device_count=lambda: gpus, init=init,
                             get_device_capability=lambda index: capability, is_bf16_supported=lambda: True,
                             synchronize=lambda index=None: log.append(("cuda.synchronize", index))),
        mps=SimpleNamespace(synchronize=lambda: log.append("mps.synchronize")),
        backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps, is_macos_or_newer=lambda *v: True),
                                 cudnn=SimpleNamespace(version=lambda: 90100),
                                 cpu=SimpleNamespace(get_cpu_capability=lambda: "AVX512")),
        cpu=SimpleNamespace(), get_num_threads=lambda: 8,
        from_numpy=lambda array: FakeTensor(log, FakeDevice("cpu"), pinned=pinned_source),
    )
    return module


def test_two_h100s_are_cuda_0_and_1_with_bfloat16():
    fake = fake_torch(gpus=2, capability=(9, 0))
    backend = TorchBackend(torch_module=fake)
    assert backend.availability().ok and backend.availability().reason == ""
    assert backend.device_ids() == ["cpu", "cuda:0", "cuda:1"]
    assert backend.dtypes("cuda:1") == ("float64", "float32", "float16", "bfloat16")
    assert backend.versions() == {"torch": "2.5.1", "cuda": "12.4", "cudnn": "90100",
                                  "cpu_capability": "AVX512", "cpu_threads": "8"}
    assert backend.supports_pinned("cuda:0") and not backend.supports_pinned("cpu")
    assert backend.location(FakeTensor([], FakeDevice("cuda", 1))) == "cuda:1"
    backend.synchronize("cuda:1")
    assert fake.log == [("cuda.synchronize", 1)]


def test_bfloat16_needs_ampere():
    backend = TorchBackend(torch_module=fake_torch(gpus=1, capability=(7, 5)))  # a T4
    assert backend.dtypes("cuda:0") == ("float64", "float32", "float16")


def test_rocm_gpus_are_rocm_ids_mapped_to_torch_cuda():
    fake = fake_torch(gpus=2, cuda=None, hip="6.2.41133")
    backend = TorchBackend(torch_module=fake)
    assert backend.device_ids() == ["cpu", "rocm:0", "rocm:1"]
    assert backend._device("rocm:1") == FakeDevice("cuda", 1)
    assert backend.location(FakeTensor([], FakeDevice("cuda", 0))) == "rocm:0"
    assert backend.versions()["hip"] == "6.2.41133" and "cuda" not in backend.versions()
    backend.synchronize("rocm:1")
    assert fake.log == [("cuda.synchronize", 1)]
    with pytest.raises(UsageError, match=r"'cuda:0'.*rocm:0"):
        backend.dtypes("cuda:0")


def test_cuda_build_without_a_driver_says_so():
    message = ("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
               "installed a driver from http://www.nvidia.com/Download/index.aspx\nmore detail")
    backend = TorchBackend(torch_module=fake_torch(gpus=0, init_error=message))
    availability = backend.availability()
    assert availability.ok and backend.device_ids() == ["cpu"]
    assert availability.reason == "cpu only: " + message.splitlines()[0]


def test_cpu_only_build_says_so():
    backend = TorchBackend(torch_module=fake_torch(cuda=None))
    assert backend.availability().reason == "cpu only: torch 2.5.1 is built without CUDA or ROCm"


def test_mps_has_no_float64_and_synchronises_through_torch_mps():
    fake = fake_torch(cuda=None, mps=True)
    backend = TorchBackend(torch_module=fake)
    assert backend.device_ids() == ["cpu", "mps"] and backend.availability().reason == ""
    assert "float64" not in backend.dtypes("mps")
    assert backend.location(FakeTensor([], FakeDevice("mps"))) == "mps"
    backend.synchronize("mps")
    backend.synchronize("cpu")
    assert fake.log == ["mps.synchronize"]
    assert not backend.supports_pinned("mps")


def test_pinned_upload_pins_pageable_memory_then_copies_without_blocking():
    fake = fake_torch(gpus=1)
    backend = TorchBackend(torch_module=fake)
    placed = backend.from_host(np.zeros(4, np.float32), "cuda:0", pinned=True)
    assert fake.log == ["pin_memory", ("to", "cuda:0", True)]
    assert placed.device == FakeDevice("cuda", 0)
    fake.log.clear()
    backend.from_host(np.zeros(4, np.float32), "cuda:0")
    assert fake.log == [("to", "cuda:0", False)]  # pageable: a plain, blocking copy


def test_pinned_upload_from_a_pinned_buffer_is_only_the_dma():
    fake = fake_torch(gpus=1, pinned_source=True)
    TorchBackend(torch_module=fake).from_host(np.zeros(4, np.float32), "cuda:0", pinned=True)
    assert fake.log == [("to", "cuda:0", True)]


def test_pinned_is_refused_where_torch_has_none():
    backend = TorchBackend(torch_module=fake_torch(cuda=None, mps=True))
    with pytest.raises(Unsupported):
        backend.from_host(np.zeros(4, np.float32), "mps", pinned=True)
