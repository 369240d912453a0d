"""The pyopencl backend's operations: each one our own kernel (opencl_kernels), enqueued on the
device's in-order queue and returned at once (the harness synchronises before reading the clock).

A mixin of OpenCLBackend, which owns the devices: it gives `_state(device)` (context, queue,
limits), `_kernel(...)` (compiled and cached) and `location(array)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accelbench.backends.opencl_kernels import (
    MatmulTiling, acc_itemsize, reduce_defines, reduce_group_count, tiling_candidates, vector_lanes,
)


def pyopencl() -> Any:
    import pyopencl as cl  # on first use only: see the module docstring

    return cl


def pyopencl_array() -> Any:
    import pyopencl.array as cla

    return cla


@dataclass
class DeviceState:
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


class OpenCLKernelOps:
    """copy, scale, add, triad, elementwise, total and matmul as OpenCL kernels."""

    _state: Any
    _kernel: Any
    location: Any

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
            partials = state.partials[(dtype, groups)] = pyopencl_array().Array(state.queue, (groups,), a.dtype)
        if state.pool is None:
            import pyopencl.tools as cl_tools

            state.pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(state.queue))
        result = pyopencl_array().Array(state.queue, (), a.dtype, allocator=state.pool)
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

    # -- launching ---------------------------------------------------------------------------
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

    def _choose_tiling(self, state: DeviceState, dtype: str) -> MatmulTiling:
        """The first candidate the compiled kernel can really launch with (registers may cap the
        group below the device maximum); the 1×1 tiling always fits."""
        cl = pyopencl()
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

    def _launch_1d(self, state: DeviceState, dtype: str, family: str, name: str, size: int,
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
            return pyopencl_array().Array(like.queue, tuple(shape), like.dtype)
        if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype:
            raise ValueError(f"out is {out.shape}/{out.dtype}; needs {tuple(shape)}/{like.dtype}")
        if not out.flags.c_contiguous:
            raise ValueError("the OpenCL kernels need C-contiguous arrays")
        if self.location(out) != device:
            raise ValueError(f"out lives on {self.location(out)}, the inputs on {device}")
        return out
