"""The pyopencl backend: data in real device buffers, the ops as our own kernels (opencl_kernels).

pyopencl is imported on first use, so importing this module without it installed succeeds and
`availability()` says why it cannot run. One context and one in-order, profiling-enabled queue per
device, made lazily. Ops enqueue their kernels and return at once; the harness calls
`synchronize(device)` (queue.finish()) before it reads the clock. Arrays are pyopencl.array.Array.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator

import numpy as np

from accelbench.backends.base import DTYPES, Availability, Backend, framework_of
from accelbench.backends.opencl_kernels import KernelCache, reduce_group_size
from accelbench.backends.opencl_ops import DeviceState, OpenCLKernelOps, pyopencl, pyopencl_array
from accelbench.errors import Unsupported

NOT_INSTALLED_REASON = "pyopencl is not installed: pip install accelbench[opencl]"
_DEVICE_TYPE_CPU = 2


class OpenCLBackend(OpenCLKernelOps, Backend):
    name = "pyopencl"
    asynchronous = True
    kernel_language = "opencl-c"

    def __init__(self) -> None:
        self._devices: dict[str, Any] | None = None  # accelbench id -> cl.Device
        self._states: dict[str, DeviceState] = {}
        self._kernels = KernelCache()
        self._source_kernels: dict[tuple, Any] = {}  # (context, source, name) -> kernel
        self._id_by_device_ptr: dict[int, str] = {}
        self._dtypes: dict[str, tuple[str, ...]] = {}

    # -- discovery -------------------------------------------------------------------------
    def availability(self) -> Availability:
        try:
            pyopencl()
        except ModuleNotFoundError:
            return Availability(False, NOT_INSTALLED_REASON)
        except ImportError as exc:
            return Availability(False, f"pyopencl could not load the OpenCL ICD loader: {exc}")
        try:
            ids = self.device_ids()
        except Exception as exc:  # noqa: BLE001 - PLATFORM_NOT_FOUND_KHR and friends
            return Availability(False, f"no OpenCL platform: {exc}")
        broken = {i: self._build_failure(i) for i in self._discover() if i not in ids}
        unusable = "; ".join(f"{i}: {why}" for i, why in broken.items())
        if not ids:
            return Availability(False, f"no OpenCL device can build a kernel: {unusable}" if broken
                                else "no OpenCL platform or device found by the ICD loader")
        return Availability(True, f"not usable: {unusable}" if broken else "")

    def device_ids(self) -> list[str]:
        """The listed devices whose compiler builds a kernel (a broken one would fail every spec)."""
        return [i for i in self._discover() if not self._build_failure(i)]

    def _build_failure(self, device: str) -> str | None:
        from accelbench.devices.opencl_build import build_failure

        return build_failure(self._discover()[device])

    def unreached_reason(self, device) -> str | None:
        if not device.id.startswith("opencl:"):
            return None
        availability = self.availability()
        if not availability.ok and not self._devices:
            return availability.reason
        listed = self._discover()
        if device.id not in listed:
            return f"pyopencl does not list {device.id} (the OpenCL platforms changed since the inventory)"
        return self._build_failure(device.id)

    def dtypes(self, device: str) -> tuple[str, ...]:
        if device in self._dtypes:
            return self._dtypes[device]
        cl_device = self._cl_device(device)
        extensions = set(_safe(lambda: cl_device.extensions, "").split())
        supported = {"float32"}
        if _safe(lambda: cl_device.double_fp_config, 0) or "cl_khr_fp64" in extensions:
            supported.add("float64")
        if "cl_khr_fp16" in extensions:
            supported.add("float16")
        found = self._dtypes[device] = tuple(d for d in DTYPES if d in supported)
        return found

    def versions(self) -> dict[str, str]:
        cl = pyopencl()
        found = {"pyopencl": cl.VERSION_TEXT}
        for device_id, cl_device in self._discover().items():
            found[f"opencl_platform:{device_id}"] = cl_device.platform.version.strip()
            found[f"opencl_driver:{device_id}"] = cl_device.driver_version.strip()
        return found

    # -- data movement ---------------------------------------------------------------------
    def from_host(self, array: np.ndarray, device: str, pinned: bool = False) -> Any:
        """A copy of `array` in a fresh device buffer.

        Pageable sources copy synchronously (the caller may reuse its array at once). Pinned ones
        (from host_buffer(pinned=True); others are staged into one first) copy asynchronously,
        as a DMA engine would: the harness synchronises before reading the clock.
        """
        state = self._state(device)
        host = np.ascontiguousarray(array)  # any dtype travels; only computing needs support
        out = pyopencl_array().Array(state.queue, host.shape, host.dtype)
        if out.size == 0:
            return out
        if pinned and not _is_mapped(host):
            staged = self.host_buffer(host.shape, host.dtype.name, pinned=True, device=device)
            staged[...] = host
            host = staged
        event = pyopencl().enqueue_copy(state.queue, out.base_data, host, is_blocking=not pinned)
        if pinned:
            state.pending.append(event)
            state.last_event = event
        return out

    def to_host(self, array: Any, out: np.ndarray | None = None) -> np.ndarray:
        """A numpy copy of `array`; waits for the work that produces it. `out` may be pinned."""
        copy = array.get(ary=out) if out is not None else array.get()
        # get() leaves its copy's event in array.events, and the event holds the host copy: up to 12
        # of them stayed alive per array (12 × 64 MiB after a STREAM end-to-end block). Done: let go.
        array.finish()
        return copy

    def host_buffer(self, shape: tuple[int, ...], dtype: str, pinned: bool = False,
                    device: str | None = None) -> np.ndarray:
        """A host array; pinned: an ALLOC_HOST_PTR buffer of `device`'s context (the first device
        if None), mapped for its whole life, which drivers can DMA from without a staging copy."""
        if not pinned:
            return np.empty(shape, dtype=dtype)
        cl = pyopencl()
        state = self._state(device or self.device_ids()[0])
        nbytes = max(1, int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize)
        buffer = cl.Buffer(state.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
        # the returned array's base is the MemoryMap, which keeps the buffer mapped and alive
        mapped, _ = cl.enqueue_map_buffer(state.queue, buffer, cl.map_flags.READ | cl.map_flags.WRITE,
                                          0, shape, dtype, is_blocking=True)
        return mapped

    def supports_pinned(self, device: str) -> bool:
        """Only where host and device memory are apart: on a CPU device it is the same memory."""
        cl_device = self._cl_device(device)
        unified = _safe(lambda: bool(cl_device.host_unified_memory), False)
        return not (int(cl_device.type) & _DEVICE_TYPE_CPU) and not unified

    def location(self, array: Any) -> str:
        queue = getattr(array, "queue", None)
        cl_device = queue.device if queue is not None else array.context.devices[0]
        found = self._id_by_device_ptr.get(cl_device.int_ptr)
        if found is not None:
            return found
        for device_id, known in self._discover().items():
            if known.int_ptr == cl_device.int_ptr:
                self._id_by_device_ptr[cl_device.int_ptr] = device_id
                return device_id
        raise ValueError(f"array lives on an OpenCL device this backend did not enumerate: {cl_device.name}")

    def observe_placement(self, array: object) -> str | None:
        cl = sys.modules.get("pyopencl")
        if framework_of(array) != "pyopencl" or cl is None:
            return None
        queue = getattr(array, "queue", None)
        target = queue.device if queue is not None else getattr(array, "context").devices[0]
        for p_index, platform in enumerate(cl.get_platforms()):  # numbered as `accelbench info` does
            for d_index, device in enumerate(platform.get_devices()):
                if device.int_ptr == target.int_ptr:
                    return f"opencl:{p_index}:{d_index}"
        raise LookupError("its device is on no platform the ICD loader lists")

    def fill_nan(self, array: Any) -> bool:
        if isinstance(array, np.ndarray):
            return super().fill_nan(array)
        if not hasattr(array, "fill") or array.dtype.kind != "f":
            return False
        array.fill(np.nan)
        return True

    def synchronize(self, device: str) -> None:
        state = self._states.get(device)
        if state is not None:  # no state: nothing was ever queued there
            state.queue.finish()
            state.pending.clear()

    def last_event(self, device: str) -> Any:
        """The event of the last kernel enqueued on `device` (profiling is on: device timing)."""
        state = self._states.get(device)
        return state.last_event if state else None

    # -- arrays on the device --------------------------------------------------------------
    def random(self, shape: tuple[int, ...], dtype: str, device: str, seed: int) -> Any:
        out = self.empty(shape, dtype, device)
        if out.size:
            self._launch_1d(self._state(device), dtype, "random", "uniform", out.size,
                            np.uint64(seed % 2**64), out.data)
        return out

    def empty(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        self._check_dtype(device, dtype)
        return pyopencl_array().Array(self._state(device).queue, tuple(shape), np.dtype(dtype))

    def astype(self, array: Any, dtype: str) -> Any:
        """A converted copy on the same device, by pyopencl's own conversion kernel."""
        self._check_dtype(self.location(array), dtype)
        return array.astype(np.dtype(dtype))

    def shares_host_memory(self, device: str) -> bool:
        """False even for a CPU device: its buffers are separate allocations that data is copied
        into and out of, so PoCL exercises the real transfer path."""
        return False

    @contextlib.contextmanager
    def threads(self, count: int | None) -> Iterator[int | None]:
        """PoCL fixes its thread count when it loads (POCL_MAX_PTHREAD_COUNT): nothing in force."""
        yield None

    # -- a workload's own kernels (workloads/stats/opencl_runner.py) ----------------------------
    def work_group_size(self, device: str) -> int:
        """The 1-d work-group size to launch with: a power of two up to 256 the device accepts."""
        return self._state(device).group_1d

    def compute_units(self, device: str) -> int:
        return self._state(device).compute_units

    def buffer(self, shape: tuple[int, ...], dtype: Any, device: str) -> Any:
        """An uninitialised device array of any numpy dtype (indices and counts too, unlike empty())."""
        return pyopencl_array().Array(self._state(device).queue, tuple(shape), np.dtype(dtype))

    def build_kernel(self, device: str, source: str, name: str) -> Any:
        """Kernel `name` of the OpenCL C `source`, built for `device` once per backend.

        Kernels are kept, not only programs: pyopencl makes a new kernel object on every retrieval."""
        context = self._state(device).context
        key = (context.int_ptr, source, name)
        found = self._source_kernels.get(key)
        if found is None:
            found = self._source_kernels[key] = getattr(pyopencl().Program(context, source).build(), name)
        return found

    def launch(self, device: str, kernel: Any, global_size: tuple[int, ...], local_size: tuple[int, ...] | None,
               *args: Any) -> None:
        """Enqueue `kernel` on `device`'s in-order queue (so synchronize() waits for it); device
        arrays among `args` are passed as their buffers, numpy scalars as they are."""
        state = self._state(device)
        array_type = pyopencl_array().Array
        state.last_event = kernel(state.queue, global_size, local_size,
                                  *(a.data if isinstance(a, array_type) else a for a in args))

    # -- internals -------------------------------------------------------------------------
    def _kernel(self, state: DeviceState, dtype: str, family: str, name: str,
                defines: dict[str, int] | None = None) -> Any:
        self._check_dtype(state.device_id, dtype)
        return self._kernels.kernel(state.context, dtype, family, name, defines)

    def _check_dtype(self, device: str, dtype: str) -> None:
        if dtype not in self.dtypes(device):
            raise Unsupported(f"{self.name} on {device} computes in {', '.join(self.dtypes(device))}, not {dtype}")

    def _state(self, device: str) -> DeviceState:
        state = self._states.get(device)
        if state is None:
            cl = pyopencl()
            cl_device = self._cl_device(device)
            context = cl.Context([cl_device])
            queue = cl.CommandQueue(context, cl_device,
                                    properties=cl.command_queue_properties.PROFILING_ENABLE)
            state = self._states[device] = DeviceState(
                device, cl_device, context, queue, is_cpu=bool(int(cl_device.type) & _DEVICE_TYPE_CPU),
                compute_units=int(cl_device.max_compute_units),
                group_1d=reduce_group_size(int(cl_device.max_work_group_size)))
        return state

    def _cl_device(self, device: str) -> Any:
        devices = self._discover()
        if device not in devices:
            raise ValueError(f"unknown OpenCL device {device!r}; this machine has: {', '.join(devices) or 'none'}")
        return devices[device]

    def _discover(self) -> dict[str, Any]:
        """opencl:P:D -> cl.Device in the ICD loader's order (as the probe numbers them); a broken
        platform keeps its index, so the ids of the others do not shift."""
        if self._devices is None:
            cl = pyopencl()
            try:
                platforms = cl.get_platforms()
            except cl.Error as exc:
                if "PLATFORM_NOT_FOUND" in str(exc) or getattr(exc, "code", None) == -1001:
                    platforms = []
                else:
                    raise
            found: dict[str, Any] = {}
            for p_index, platform in enumerate(platforms):
                for d_index, cl_device in enumerate(_safe(platform.get_devices, [])):
                    found[f"opencl:{p_index}:{d_index}"] = cl_device
            self._devices = found
        return self._devices


def _is_mapped(array: np.ndarray) -> bool:
    """Whether `array` (or what it views) is a mapped OpenCL buffer, i.e. already pinned."""
    cl = pyopencl()
    base: Any = array
    while base is not None:
        if isinstance(base, cl.MemoryMap):
            return True
        base = getattr(base, "base", None)
    return False


def _safe(read: Any, default: Any) -> Any:
    try:
        return read()
    except Exception:  # noqa: BLE001 - a driver refusing one query must not break the rest
        return default
