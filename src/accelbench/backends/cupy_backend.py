"""CuPy on NVIDIA (cuda:N) and AMD (rocm:N, a ROCm build of CuPy) GPUs.

Thin: the shared namespace ops, except triad and elementwise, which are one fused elementwise
kernel each (two cupy calls would make an extra pass over memory). CuPy has no bfloat16.
cupy imports without a GPU; the first CUDA call then raises (cudaErrorInsufficientDriver with no
driver, cudaErrorNoDevice with no GPU), and that message is the availability reason.
The framework can be injected (`CupyBackend(cupy_module=fake)`) so the logic is tested without one.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator

import numpy as np

from accelbench.backends.arrays import ArrayNamespace, DeviceRandom
from accelbench.backends.base import Availability, framework_of
from accelbench.backends.framework_ops import ArrayNamespaceOps, LazyFramework
from accelbench.errors import Unsupported, UsageError

INSTALL_HINT = "pip install accelbench[cupy]"
_HOST_DTYPES = ("float64", "float32", "float16")


class CupyBackend(LazyFramework, ArrayNamespaceOps):
    name = "cupy"
    framework, install_hint = "cupy", INSTALL_HINT
    asynchronous = True

    def __init__(self, cupy_module: Any = None, cupyx_module: Any = None) -> None:
        self._init_framework(cupy_module)
        self._cupyx = cupyx_module
        self._ids: list[str] | None = None
        self._kernels: dict[str, Any] = {}

    # -- loading -------------------------------------------------------------------------------
    def _cupy(self) -> Any:
        return self._load_framework()

    def _device_count(self) -> tuple[int, str]:
        """(count, "") or (0, why): the CUDA runtime's own error when it cannot start."""
        try:
            count = int(self._cupy().cuda.runtime.getDeviceCount())
        except Exception as error:  # noqa: BLE001 - CUDARuntimeError and friends
            return 0, f"cupy found no usable GPU: {error}"
        return count, "" if count else "cupy found no GPU (device count is 0)"

    # -- discovery -------------------------------------------------------------------------------
    def availability(self) -> Availability:
        failure = self._import_failure()
        if failure:
            return Availability(False, failure)
        count, why = self._device_count()
        return Availability(count > 0, why)

    def unreached_reason(self, device) -> str | None:
        """Why cupy does not measure inventory `device`, with the fix; None for ids it has nothing to do with."""
        kind = device.id.partition(":")[0]
        if kind not in ("cuda", "rocm"):
            return None
        failure = self._import_failure()
        if failure:
            return failure
        if self._kind() != kind:
            package = "cupy-cuda12x" if kind == "cuda" else "cupy-rocm-6-0"
            built = "ROCm" if self._kind() == "rocm" else "CUDA"
            return f"cupy {self._cupy().__version__} is a {built} build: pip install {package}"
        if device.id in self.device_ids() or device.reach.get("cupy") in self.device_ids():
            return None
        count, why = self._device_count()
        return why or f"cupy lists {count} GPU(s), not {device.id}: check *_VISIBLE_DEVICES"

    def _kind(self) -> str:
        return "rocm" if getattr(self._cupy().cuda.runtime, "is_hip", False) else "cuda"

    def device_ids(self) -> list[str]:
        if self._ids is None:
            count = 0 if self._import_failure() else self._device_count()[0]
            self._ids = [f"{self._kind()}:{index}" for index in range(count)] if count else []
        return list(self._ids)

    def _index(self, device: str) -> int:
        if device not in self.device_ids():
            raise UsageError(f"cupy cannot reach {device!r}; reachable here: {', '.join(self.device_ids()) or 'none'}",
                             refused_devices=(device,))
        return int(device.partition(":")[2])

    def dtypes(self, device: str) -> tuple[str, ...]:
        index = self._index(device)
        if self._kind() == "cuda":
            capability = int(self._cupy().cuda.Device(index).compute_capability)  # "90" for sm_90
            if capability < 53:
                return ("float64", "float32")  # no fp16 arithmetic before sm_53
        return ("float64", "float32", "float16")

    def versions(self) -> dict[str, str]:
        if self._import_failure():
            return {}
        cupy = self._cupy()
        found = {"cupy": str(cupy.__version__)}
        for key, probe in (("cuda_runtime", cupy.cuda.runtime.runtimeGetVersion),
                           ("cuda_driver", cupy.cuda.runtime.driverGetVersion)):
            try:
                found[key] = str(probe())
            except Exception:  # noqa: BLE001 - no driver: nothing to record
                pass
        return found

    # -- data movement -------------------------------------------------------------------------
    def supports_pinned(self, device: str) -> bool:
        return device in self.device_ids()

    def host_buffer(self, shape: tuple[int, ...], dtype: str, pinned: bool = False) -> Any:
        if not pinned:
            return super().host_buffer(shape, dtype)
        if dtype not in _HOST_DTYPES or not self.device_ids():
            raise Unsupported(f"cupy has no pinned host buffer for {dtype} here")
        if self._cupyx is None:
            import cupyx

            self._cupyx = cupyx
        return self._cupyx.empty_pinned(shape, dtype=dtype)  # a numpy array in page-locked memory

    def from_host(self, array: np.ndarray, device: str, pinned: bool = False) -> Any:
        """A copy on `device`; pinned=True queues it on the current stream (async from pinned memory)."""
        cupy, index = self._cupy(), self._index(device)
        with cupy.cuda.Device(index):
            if not pinned:
                return cupy.asarray(array)  # pageable: the copy is complete on return
            out = cupy.empty(array.shape, dtype=array.dtype)
            out.set(array, stream=cupy.cuda.get_current_stream())
            return out  # the harness synchronises before reading

    def to_host(self, array: Any, out: np.ndarray | None = None) -> np.ndarray:
        """A numpy copy, or into `out` (e.g. a pinned host_buffer)."""
        return array.get(out=out)

    def location(self, array: Any) -> str:
        return f"{self._kind()}:{array.device.id}"

    def observe_placement(self, array: object) -> str | None:
        cupy = sys.modules.get("cupy")
        if framework_of(array) != "cupy" or cupy is None:
            return None
        hip = bool(getattr(cupy.cuda.runtime, "is_hip", False))
        return f"{'rocm' if hip else 'cuda'}:{getattr(array, 'device').id}"

    def synchronize(self, device: str) -> None:
        if self._module is not None:  # never loaded: nothing can have been queued
            self._module.cuda.Device(int(device.partition(":")[2])).synchronize()

    # -- arrays on the device ------------------------------------------------------------------
    def namespace(self, device: str) -> Any:
        return self._cupy()

    def reach_id(self, device) -> str | None:
        from accelbench.devices import frameworks

        index = device.visible_index
        return f"cuda:{index}" if index is not None and device.vendor == "NVIDIA" and frameworks.installed("cupy") else None

    def arrays(self, device: str) -> CupyArrays:
        return CupyArrays(self, device)

    def _xp(self, array: Any) -> Any:
        return self._module

    def _dtype(self, dtype: str, device: str) -> str:
        if dtype not in self.dtypes(device):
            raise Unsupported(f"cupy has no {dtype} on {device} (it has {', '.join(self.dtypes(device))})")
        return dtype

    def random(self, shape: tuple[int, ...], dtype: str, device: str, seed: int) -> Any:
        cupy, index, wanted = self._cupy(), self._index(device), self._dtype(dtype, device)
        with cupy.cuda.Device(index):
            generator = cupy.random.RandomState(seed)  # cuRAND, on the device
            drawn = "float32" if wanted == "float16" else wanted  # cuRAND has no half uniform
            values = generator.uniform(-1.0, 1.0, size=shape, dtype=drawn)
            return values.astype(wanted, copy=False)

    def empty(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        cupy, index = self._cupy(), self._index(device)
        with cupy.cuda.Device(index):
            return cupy.empty(shape, dtype=self._dtype(dtype, device))

    def astype(self, array: Any, dtype: str) -> Any:
        return array.astype(self._dtype(dtype, self.location(array)))

    # -- fused ops -----------------------------------------------------------------------------
    def _kernel(self, name: str, params: str, body: str) -> Any:
        if name not in self._kernels:  # compiled by NVRTC on first call (timed apart)
            self._kernels[name] = self._module.ElementwiseKernel(params, "T out", body, f"accelbench_{name}")
        return self._kernels[name]

    def triad(self, a, b, scalar, out):
        kernel = self._kernel("triad", "T a, T b, T s", "out = a + s * b")
        return kernel(a, b, a.dtype.type(scalar), out)  # scalar as the arrays' type: one T

    def elementwise(self, a, out):
        return self._kernel("elementwise", "T a", "out = a * a + a")(a, out)


class CupyRandom(DeviceRandom):
    name = "cupy Generator"

    def __init__(self, ops, seed):
        super().__init__(ops, seed)
        with ops.on_device():
            self.generator = ops.xp.random.default_rng(self.seed)

    def normal(self, shape, dtype):
        with self.ops.on_device():
            return self.generator.standard_normal(shape, dtype=self.ops.dtype(dtype))

    def uniform(self, shape, dtype):
        with self.ops.on_device():
            return self.generator.random(shape, dtype=self.ops.dtype(dtype))

    def integers(self, high, shape):
        with self.ops.on_device():
            return self.generator.integers(0, high, size=shape)


class CupyArrays(ArrayNamespace):
    """cupy spells the calls as numpy does; creation needs the device made current."""

    generator = CupyRandom

    @contextlib.contextmanager
    def on_device(self) -> Iterator[None]:
        with self.probe.device:
            yield
