"""The pyopencl backend: data in real device buffers, the ops as our own kernels (opencl_kernels).

pyopencl is imported on first use, so importing this module without it installed succeeds and
`availability()` says why it cannot run. One context and one in-order, profiling-enabled queue per
device, made lazily. Ops enqueue their kernels and return at once; the harness calls
`synchronize(device)` (queue.finish()) before it reads the clock. Arrays are pyopencl.array.Array.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from accelbench.backends.base import DTYPES, Availability, Backend
from accelbench.backends.opencl_kernels import (
    KernelCache, MatmulTiling, acc_itemsize, reduce_defines, reduce_group_count, reduce_group_size,
    tiling_candidates, vector_lanes,
)
from accelbench.errors import Unsupported

NOT_INSTALLED_REASON = "pyopencl is not installed: pip install accelbench[opencl]"
_DEVICE_TYPE_CPU = 2


def _cl() -> Any:
    import pyopencl as cl  # on first use only: see the module docstring

    return cl


def _cla() -> Any:
    import pyopencl.array as cla

    return cla


@dataclass
class _DeviceState:
    """What one device needs, built once: context, queue, its limits (read once: each read is a
    driver call), chosen tilings, reduction scratch, and the events still to wait for."""

    device_id: str
    device: Any
    context: Any
    queue: Any
    is_cpu: bool
    compute_units: int
    group_1d: int  # work-group size for 1-d kernels: a power of two up to 256 the device accepts
    tilings: dict[str, MatmulTiling] = field(default_factory=dict)
    partials: dict[tuple[str, int], Any] = field(default_factory=dict)
    pool: Any = None
    last_event: Any = None
    # copies from host memory: pyopencl's event for one waits when dropped, so they are kept
    # until synchronize() and an asynchronous copy stays asynchronous
    pending: list[Any] = field(default_factory=list)


class OpenCLBackend(Backend):
    name = "pyopencl"
    asynchronous = True

    def __init__(self) -> None:
        self._devices: dict[str, Any] | None = None  # accelbench id -> cl.Device
        self._states: dict[str, _DeviceState] = {}
        self._kernels = KernelCache()
        self._id_by_device_ptr: dict[int, str] = {}
        self._dtypes: dict[str, tuple[str, ...]] = {}

    # -- discovery -------------------------------------------------------------------------
    def availability(self) -> Availability:
        try:
            _cl()
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
        cl = _cl()
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
        out = _cla().Array(state.queue, host.shape, host.dtype)
        if out.size == 0:
            return out
        if pinned and not _is_mapped(host):
            staged = self.host_buffer(host.shape, host.dtype.name, pinned=True, device=device)
            staged[...] = host
            host = staged
        event = _cl().enqueue_copy(state.queue, out.base_data, host, is_blocking=not pinned)
        if pinned:
            state.pending.append(event)
            state.last_event = event
        return out

    def to_host(self, array: Any, out: np.ndarray | None = None) -> np.ndarray:
        """A numpy copy of `array`; waits for the work that produces it. `out` may be pinned."""
        return array.get(ary=out) if out is not None else array.get()

    def host_buffer(self, shape: tuple[int, ...], dtype: str, pinned: bool = False,
                    device: str | None = None) -> np.ndarray:
        """A host array; pinned: an ALLOC_HOST_PTR buffer of `device`'s context (the first device
        if None), mapped for its whole life, which drivers can DMA from without a staging copy."""
        if not pinned:
            return np.empty(shape, dtype=dtype)
        cl = _cl()
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
        return _cla().Array(self._state(device).queue, tuple(shape), np.dtype(dtype))

    def astype(self, array: Any, dtype: str) -> Any:
        """A converted copy on the same device, by pyopencl's own conversion kernel."""
        self._check_dtype(self.location(array), dtype)
        return array.astype(np.dtype(dtype))

    def shares_host_memory(self, device: str) -> bool:
        """False even for a CPU device: its buffers are separate allocations that data is copied
        into and out of, so PoCL exercises the real transfer path."""
        return False

    # -- ops -------------------------------------------------------------------------------
    def copy(self, a: Any, out: Any) -> Any:
        return self._elementwise("copy", out, a)

    def scale(self, a: Any, scalar: float, out: Any) -> Any:
        return self._elementwise("scale", out, a, scalar=scalar)

    def add(self, a: Any, b: Any, out: Any) -> Any:
        return self._elementwise("add", out, a, b)

    def triad(self, a: Any, b: Any, scalar: float, out: Any) -> Any:
        return self._elementwise("triad", out, a, b, scalar=scalar)

    def elementwise(self, a: Any, out: Any) -> Any:
        return self._elementwise("square_plus", out, a)

    def total(self, a: Any) -> Any:
        """Sum of all elements as a 0-d device array: per-group partials, then one group over them."""
        state = self._state(self.location(a))
        dtype = a.dtype.name
        group = state.group_1d
        groups = reduce_group_count(state.is_cpu, a.size, group, state.compute_units)
        partials = state.partials.get((dtype, groups))
        if partials is None:  # kept per (dtype, group count): timed calls do not allocate it
            partials = state.partials[(dtype, groups)] = _cla().Array(state.queue, (groups,), a.dtype)
        if state.pool is None:
            import pyopencl.tools as cl_tools

            state.pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(state.queue))
        result = _cla().Array(state.queue, (), a.dtype, allocator=state.pool)
        kernel = self._kernel(state, dtype, "reduce", "sum", reduce_defines(state.is_cpu, dtype, group))
        if a.size == 0:
            result.fill(0)
            return result
        state.last_event = kernel(state.queue, (groups * group,), (group,), np.uint64(a.size), a.data, partials.data)
        state.last_event = kernel(state.queue, (group,), (group,), np.uint64(groups), partials.data, result.data)
        return result

    def matmul(self, a: Any, b: Any, out: Any = None) -> Any:
        """C = A @ B with the tiled, register-blocked kernel (local memory tiles)."""
        return self._matmul(a, b, out, tiled=True)

    def matmul_naive(self, a: Any, b: Any, out: Any = None) -> Any:
        """The one-work-item-per-element kernel, kept to show what tiling buys."""
        return self._matmul(a, b, out, tiled=False)

    def matmul_tiling(self, device: str, dtype: str) -> MatmulTiling:
        """The tiling matmul uses on `device` for `dtype` (chosen, and compiled, on first call)."""
        state = self._state(device)
        tiling = state.tilings.get(dtype)
        if tiling is None:
            tiling = state.tilings[dtype] = self._choose_tiling(state, dtype)
        return tiling

    @contextlib.contextmanager
    def threads(self, count: int | None) -> Iterator[int | None]:
        """PoCL fixes its thread count when it loads (POCL_MAX_PTHREAD_COUNT): nothing in force."""
        yield None

    # -- internals -------------------------------------------------------------------------
    def _matmul(self, a: Any, b: Any, out: Any, tiled: bool) -> Any:
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
            raise ValueError(f"matmul needs (m, k) @ (k, n); got {a.shape} @ {b.shape}")
        if a.dtype != b.dtype:
            raise TypeError(f"matmul operands differ in dtype: {a.dtype} and {b.dtype}")
        device = self.location(a)
        state = self._state(device)
        m, k = a.shape
        n = b.shape[1]
        out = self._checked_out(out, (m, n), a, device)
        if out.size == 0:
            return out
        dtype = a.dtype.name
        if k == 0:
            out.fill(0)
            return out
        sizes = (np.int32(m), np.int32(n), np.int32(k))
        if tiled:
            tiling = self.matmul_tiling(device, dtype)
            kernel = self._kernel(state, dtype, "matmul_tiled", "matmul_tiled", tiling.defines())
            state.last_event = kernel(state.queue, tiling.global_size(m, n), tiling.local_size,
                                      *sizes, a.data, b.data, out.data)
        else:
            kernel = self._kernel(state, dtype, "matmul_naive", "matmul_naive")
            state.last_event = kernel(state.queue, (n, m), None, *sizes, a.data, b.data, out.data)
        return out

    def _choose_tiling(self, state: _DeviceState, dtype: str) -> MatmulTiling:
        """The first candidate the compiled kernel can really launch with (registers may cap the
        group below the device maximum); the 1×1 tiling always fits."""
        cl = _cl()
        device = state.device
        candidates = tiling_candidates(
            state.is_cpu, int(device.max_work_group_size), tuple(device.max_work_item_sizes),
            int(device.local_mem_size), acc_itemsize(dtype))
        for tiling in candidates:
            kernel = self._kernel(state, dtype, "matmul_tiled", "matmul_tiled", tiling.defines())
            limit = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
            if tiling.group_items <= limit:
                return tiling
        return candidates[-1]

    def _elementwise(self, name: str, out: Any, *inputs: Any, scalar: float | None = None) -> Any:
        first = inputs[0]
        device = self.location(first)
        for other in inputs[1:]:
            if other.shape != first.shape or other.dtype != first.dtype:
                raise ValueError(f"{name}: operands differ: {first.shape}/{first.dtype} "
                                 f"and {other.shape}/{other.dtype}")
        out = self._checked_out(out, first.shape, first, device)
        args: list[Any] = [x.data for x in inputs]
        if scalar is not None:  # kernels take S: double for double, float otherwise
            args.append(np.float64(scalar) if first.dtype == np.float64 else np.float32(scalar))
        if first.size:
            state = self._state(device)
            lanes = vector_lanes(state.is_cpu, first.dtype.name)
            self._launch_1d(state, first.dtype.name, "elementwise", name, first.size, *args, out.data,
                            lanes=lanes)
        return out

    def _launch_1d(self, state: _DeviceState, dtype: str, family: str, name: str, size: int,
                   *args: Any, lanes: int = 1) -> None:
        """One work-item per `lanes` elements (the kernel's VW), padded to whole groups; the
        kernels guard the end. Left to pick, drivers choose a group that divides the size, which
        for a prime size is one work-item (6x slower on PoCL)."""
        kernel = self._kernel(state, dtype, family, name, {"VW": lanes} if family == "elementwise" else None)
        group = state.group_1d
        items = -(-int(size) // lanes)
        state.last_event = kernel(state.queue, (-(-items // group) * group,), (group,),
                                  np.uint64(size), *args)

    def _checked_out(self, out: Any, shape: tuple[int, ...], like: Any, device: str) -> Any:
        if not like.flags.c_contiguous:
            raise ValueError("the OpenCL kernels need C-contiguous arrays")
        if out is None:
            return _cla().Array(like.queue, tuple(shape), like.dtype)
        if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype:
            raise ValueError(f"out is {out.shape}/{out.dtype}; needs {tuple(shape)}/{like.dtype}")
        if not out.flags.c_contiguous:
            raise ValueError("the OpenCL kernels need C-contiguous arrays")
        if self.location(out) != device:
            raise ValueError(f"out lives on {self.location(out)}, the inputs on {device}")
        return out

    def _kernel(self, state: _DeviceState, dtype: str, family: str, name: str,
                defines: dict[str, int] | None = None) -> Any:
        self._check_dtype(state.device_id, dtype)
        return self._kernels.kernel(state.context, dtype, family, name, defines)

    def _check_dtype(self, device: str, dtype: str) -> None:
        if dtype not in self.dtypes(device):
            raise Unsupported(f"{self.name} on {device} computes in {', '.join(self.dtypes(device))}, not {dtype}")

    def _state(self, device: str) -> _DeviceState:
        state = self._states.get(device)
        if state is None:
            cl = _cl()
            cl_device = self._cl_device(device)
            context = cl.Context([cl_device])
            queue = cl.CommandQueue(context, cl_device,
                                    properties=cl.command_queue_properties.PROFILING_ENABLE)
            state = self._states[device] = _DeviceState(
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
            cl = _cl()
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
    cl = _cl()
    base = array
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
