"""JAX (XLA) on the CPU and on NVIDIA / AMD GPUs.

Two things differ from the other array backends:

* jax arrays are immutable, so the ops ignore `out` and return a new array.
* jax has no device-wide "wait for everything". Dispatch is asynchronous, so the backend keeps the
  most recent array it produced on each device and `synchronize(device)` blocks on that one. XLA
  runs a device's computations in order on one compute stream, so when the last one is ready all
  earlier ones are too.

The ops are jitted once each, so a + s*b and a*a + a are single fused kernels (the first call
compiles; the harness times it apart). float32 matmul asks for "highest" precision: XLA's default
on Ampere and later is TF32, which is not float32. float64 exists only when jax_enable_x64 is on.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Iterator

import numpy as np

from accelbench.backends.arrays import ArrayNamespace, DeviceRandom
from accelbench.backends.base import Availability, Backend, framework_of
from accelbench.backends.framework_ops import LazyFramework
from accelbench.errors import Unsupported, UsageError
from accelbench.vocabulary import usable_cpus

INSTALL_HINT = "pip install accelbench[jax]"
INSTALL_URL = "https://docs.jax.dev/en/latest/installation.html"
_GPU_PLATFORMS = ("cuda", "rocm")


def _safely(probe: Callable[[], Any], default: Any) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return probe()
    except Exception:  # noqa: BLE001 - a platform jax was not built for raises RuntimeError
        return default


def xla_cpu_threads() -> int:
    """Threads XLA's CPU client starts with, fixed for the life of the process: one per core open to
    it. Not read from `XLA_FLAGS=--xla_cpu_multi_thread_eigen=false`: jax 0.10's matmul ignores it
    (1.9 cores busy on 2, measured). What a result really ran is measured (runner/execute.py)."""
    return usable_cpus()


def _gpu_vendor(device: Any) -> str:
    version = str(_safely(lambda: device.client.platform_version, "")).lower()
    return "rocm" if "rocm" in version else "cuda"


class JaxBackend(LazyFramework, Backend):
    name = "jax"
    framework, install_hint = "jax", INSTALL_HINT
    framework_packages = ('jaxlib',)
    asynchronous = True  # dispatch returns before the work is done, on the CPU too

    def __init__(self, jax_module: Any = None) -> None:
        self._init_framework(jax_module)
        self._devices: dict[str, Any] | None = None   # accelbench id -> jax Device
        self._last: dict[str, Any] = {}               # accelbench id -> newest array made there
        self._kernels: dict[str, Callable] | None = None

    # -- loading -------------------------------------------------------------------------------
    def _jax(self) -> Any:
        return self._load_framework()

    # -- discovery -------------------------------------------------------------------------------
    def availability(self) -> Availability:
        failure = self._import_failure()
        if failure:
            return Availability(False, failure)
        if not self._discover():
            return Availability(False, "jax reports no device")
        if not any(d.startswith(_GPU_PLATFORMS) for d in self._discover()):
            return Availability(True, f"cpu only: {self._no_gpu_reason('cuda')}")
        return Availability(True)

    def reach_id(self, device) -> str | None:
        from accelbench.devices import frameworks

        index = device.visible_index
        if device.id == "cpu":
            return "cpu:0" if frameworks.installed("jax") else None
        if device.id == "mps":  # Apple GPUs: through the jax-metal package's plugin
            return "METAL:0" if frameworks.installed("jax_plugins.metal_plugin") else None
        if index is not None and device.vendor == "NVIDIA" and frameworks.jax_has_gpu_plugin():
            return f"cuda:{index}"
        rocm = any(frameworks.installed(p) for p in ("jax_rocm60_plugin", "jax_rocm7_plugin"))
        return f"rocm:{index}" if index is not None and device.vendor == "AMD" and rocm else None

    def _no_gpu_reason(self, platform: str) -> str:
        """Why jax lists no GPU of `platform` ("cuda" or "rocm"), with the fix."""
        from accelbench.devices.frameworks import jax_has_gpu_plugin

        jax, vendor = self._jax(), "CUDA" if platform == "cuda" else "ROCm"
        if not jax_has_gpu_plugin():
            fix = 'pip install -U "jax[cuda12]"' if platform == "cuda" else f"install jax's ROCm plugin ({INSTALL_URL})"
            return f"jax {jax.__version__} has no {vendor} plugin: {fix}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                jax.devices(platform)
        except Exception as error:  # noqa: BLE001 - "Unknown backend cuda", a plugin that failed to start
            text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            return f"jax {jax.__version__} has a GPU plugin but cannot start {vendor}: {text}"
        return f"jax {jax.__version__} lists no {vendor} GPU"

    def unreached_reason(self, device) -> str | None:
        """Why jax does not measure inventory `device`, with the fix; None for ids it has nothing to do with."""
        platform = device.id.partition(":")[0]
        if platform not in _GPU_PLATFORMS:
            return None
        failure = self._import_failure()
        if failure:
            return failure
        if device.id in self._discover() or device.reach.get("jax") in self._discover():
            return None
        return self._no_gpu_reason(platform)

    def _discover(self) -> dict[str, Any]:
        if self._devices is not None:
            return self._devices
        if self._import_failure():
            return {}
        jax, found = self._jax(), {}
        cpus = _safely(lambda: jax.devices("cpu"), [])
        if cpus:
            found["cpu"] = cpus[0]  # several host "devices" (forced for testing) are one CPU
        gpus = [(p, d) for p in _GPU_PLATFORMS for d in _safely(lambda: jax.devices(p), [])]
        if not gpus:  # older jax knows both vendors only as "gpu"
            gpus = [(_gpu_vendor(d), d) for d in _safely(lambda: jax.devices("gpu"), [])]
        for platform, device in gpus:
            index = getattr(device, "local_hardware_id", None)  # the CUDA/HIP ordinal
            found[f"{platform}:{device.id if index is None else index}"] = device
        self._devices = found
        return found

    def device_ids(self) -> list[str]:
        return list(self._discover())

    def _device(self, device: str) -> Any:
        found = self._discover()
        if device not in found:
            raise UsageError(f"jax cannot reach {device!r}; reachable here: {', '.join(found) or 'none'}",
                             refused_devices=(device,))
        return found[device]

    def x64_enabled(self) -> bool:
        config = self._jax().config
        for probe in (lambda: config.read("jax_enable_x64"), lambda: config.jax_enable_x64):
            value = _safely(probe, None)
            if value is not None:
                return bool(value)
        return False

    def dtypes(self, device: str) -> tuple[str, ...]:
        jax_device = self._device(device)
        wide = ("float64",) if self.x64_enabled() else ()
        if device == "cpu":
            # XLA's CPU halves are converted to float32 to compute: not offered as fp16/bf16
            return wide + ("float32",)
        capability = _safely(lambda: float(jax_device.compute_capability), None)
        bf16 = device.startswith("rocm") or (capability is not None and capability >= 8.0)
        return wide + ("float32", "float16") + (("bfloat16",) if bf16 else ())

    def versions(self) -> dict[str, str]:
        if self._import_failure():
            return {}
        import importlib.metadata

        found = {"jax": str(self._jax().__version__), "jax_enable_x64": str(self.x64_enabled())}
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found["jaxlib"] = importlib.metadata.version("jaxlib")
        return found

    # -- data movement -------------------------------------------------------------------------
    def _remember(self, array: Any) -> Any:
        """Keep the newest array per device: synchronize() waits on it."""
        self._last[self.location(array)] = array
        return array

    def from_host(self, array: np.ndarray, device: str, pinned: bool = False) -> Any:
        if pinned:
            raise Unsupported("the jax backend has no pinned host memory")
        target = self._device(device)
        # on the CPU jax may alias an aligned numpy buffer: copy, so a "transfer" is a real memcpy
        host = np.array(array, copy=True) if device == "cpu" else np.ascontiguousarray(array)
        return self._remember(self._jax().device_put(host, target))

    def to_host(self, array: Any) -> np.ndarray:
        host = np.array(array, copy=True)  # blocks until the array is ready
        return host.astype(np.float32) if host.dtype.name == "bfloat16" else host

    def location(self, array: Any) -> str:
        (device,) = tuple(array.devices())
        for device_id, known in self._discover().items():
            if known == device:
                return device_id
        return f"{device.platform}:{device.id}"

    def observe_placement(self, array: object) -> str | None:
        if framework_of(array) not in ("jax", "jaxlib"):
            return None
        devices = tuple(getattr(array, "devices")())
        if len(devices) != 1:
            raise ValueError(f"spread over {len(devices)} devices")
        device = devices[0]
        if device.platform == "cpu":
            return "cpu"
        kind = {"gpu": "cuda", "cuda": "cuda", "rocm": "rocm", "METAL": "mps"}.get(device.platform, device.platform)
        return "mps" if kind == "mps" else f"{kind}:{getattr(device, 'local_hardware_id', None) or device.id}"

    def wait_for(self, output: Any) -> None:
        if output is not None:
            self._jax().block_until_ready(output)

    def synchronize(self, device: str) -> None:
        last = self._last.pop(device, None)
        if last is not None:
            last.block_until_ready()

    # -- arrays on the device ------------------------------------------------------------------
    def namespace(self, device: str) -> Any:
        return self._jax().numpy

    def arrays(self, device: str) -> JaxArrays:
        return JaxArrays(self, device)

    def _dtype(self, dtype: str, device: str) -> Any:
        if dtype not in self.dtypes(device):
            raise Unsupported(f"jax has no {dtype} on {device} (it has {', '.join(self.dtypes(device))})")
        return getattr(self._jax().numpy, dtype)

    def random(self, shape: tuple[int, ...], dtype: str, device: str, seed: int) -> Any:
        jax, target, wanted = self._jax(), self._device(device), self._dtype(dtype, device)
        make_key = getattr(jax.random, "key", None) or jax.random.PRNGKey  # key() from jax 0.4.16
        with jax.default_device(target):
            values = jax.random.uniform(make_key(seed), shape, dtype=wanted, minval=-1.0, maxval=1.0)
        return self._remember(values)

    def empty(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        jax, target, wanted = self._jax(), self._device(device), self._dtype(dtype, device)
        with jax.default_device(target):
            return self._remember(jax.numpy.zeros(shape, dtype=wanted))  # jax has no uninitialised memory

    def astype(self, array: Any, dtype: str) -> Any:
        return self._remember(array.astype(self._dtype(dtype, self.location(array))))

    # -- ops: jitted once each; `out` is ignored (jax arrays are immutable) ---------------------
    def _kernel(self, name: str) -> Callable:
        if self._kernels is None:
            jax = self._jax()
            jnp = jax.numpy
            self._kernels = {
                "matmul": jax.jit(lambda a, b: jnp.matmul(a, b, precision="highest")),
                "scale": jax.jit(lambda a, s: a * s),        # s traced: no recompile per value
                "add": jax.jit(lambda a, b: a + b),
                "triad": jax.jit(lambda a, b, s: a + s * b),
                "total": jax.jit(jnp.sum),
                "elementwise": jax.jit(lambda a: a * a + a),
            }
        return self._kernels[name]

    def matmul(self, a, b, out=None):
        return self._remember(self._kernel("matmul")(a, b))

    def copy(self, a, out=None):
        # not jitted: XLA would forward an identity's input instead of copying it
        return self._remember(self._jax().numpy.copy(a))

    def scale(self, a, scalar, out=None):
        return self._remember(self._kernel("scale")(a, scalar))

    def add(self, a, b, out=None):
        return self._remember(self._kernel("add")(a, b))

    def triad(self, a, b, scalar, out=None):
        return self._remember(self._kernel("triad")(a, b, scalar))

    def total(self, a):
        return self._remember(self._kernel("total")(a))

    def elementwise(self, a, out=None):
        return self._remember(self._kernel("elementwise")(a))

    # -- CPU threads -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def threads(self, count: int | None) -> Iterator[int | None]:
        """XLA sizes its CPU thread pool once, at start-up: only that count can be honoured."""
        in_force = xla_cpu_threads()
        if count is not None and count != in_force:
            raise Unsupported(
                f"jax's CPU thread pool is fixed at start-up, one thread per core open to the process "
                f"({in_force} here), cannot run with {count}; for fewer, start accelbench under `taskset` "
                "(which limits every backend)")
        yield in_force


class JaxRandom(DeviceRandom):
    name = "jax.random (threefry)"

    def __init__(self, ops, seed):
        super().__init__(ops, seed)
        import jax

        self.random = jax.random
        make_key = getattr(jax.random, "key", None) or jax.random.PRNGKey
        with ops.on_device():
            self.key = make_key(self.seed)

    def _next(self):
        self.key, sub = self.random.split(self.key)
        return sub

    def normal(self, shape, dtype):
        with self.ops.on_device():
            return self.random.normal(self._next(), shape, dtype=self.ops.dtype(dtype))

    def uniform(self, shape, dtype):
        with self.ops.on_device():
            return self.random.uniform(self._next(), shape, dtype=self.ops.dtype(dtype))

    def integers(self, high, shape):
        with self.ops.on_device():
            return self.random.randint(self._next(), shape, 0, high)


class JaxArrays(ArrayNamespace):
    """jax.numpy: arrays made under the device as default, functions jitted, results waited on."""

    generator = JaxRandom
    compiles_functions = True

    @contextlib.contextmanager
    def on_device(self) -> Iterator[None]:
        import jax  # imported already: the backend gave us jax.numpy

        (device,) = tuple(self.probe.devices())
        with jax.default_device(device):
            yield

    @property
    def index_dtype(self) -> str:
        """int32 without x64 (enough below 2³¹ elements), else int64."""
        return "int64" if "float64" in self.backend.dtypes(self.device) else "int32"

    def median_rows(self, array: Any) -> Any:
        return self.xp.sort(array, axis=1)[:, array.shape[1] // 2]  # the middle of each sorted row

    def jit(self, function: Any) -> Any:
        import jax

        return jax.jit(function)

    def ready(self, *arrays: Any) -> Any:
        # the backend's synchronize() waits only on arrays it made itself: these are waited on here
        for array in arrays:
            array.block_until_ready()
        return super().ready(*arrays)
