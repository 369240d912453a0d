"""Changing an input's values, and reading an output at chosen positions, through the array's framework.

The audited timing (runner/block_audit.py) changes every input set's values before each timed block
and judges a sample of the outputs' elements after it. Both go through the array's own framework
(numpy, torch, CuPy, PyOpenCL, JAX), recognised by its type as in raw_access.py, never through the
backend: a backend that saw these calls could tell a checked block from another.

Values change by an exact factor (a power of two, or its negative): the expected output of a
homogeneous workload is then the same factor (or its power) times the one computed once, with no
rounding, and every element of an output left stale from the block before is wrong.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from accelbench.backends.raw_access import framework_name

_MUTABLE = ("numpy", "torch", "cupy", "pyopencl")


def negate_at(array: Any, flat: np.ndarray) -> bool:
    """array.flat[flat] *= -1 through its framework, in place; False where it cannot (immutable,
    unknown, read-only, not contiguous)."""
    framework = framework_name(array)
    if framework not in _MUTABLE or not len(flat):
        return framework in _MUTABLE
    try:
        if framework == "numpy":
            if not array.flags.writeable or not array.flags.c_contiguous:
                return False
            view = array.reshape(-1)
            view[flat] = -view[flat]
        elif framework == "torch":
            import torch

            if not array.is_contiguous():
                return False
            view = array.view(-1)
            where = torch.as_tensor(flat, device=array.device)
            view[where] = -view[where]
        elif framework == "cupy":
            import cupy

            view = array.reshape(-1)
            where = cupy.asarray(flat)
            view[where] = -view[where]
        else:
            return _opencl_negate(array, flat)
    except Exception:  # noqa: BLE001 - an array it cannot write: the caller makes a new one
        return False
    return True


@functools.cache
def _jax_negated() -> Any:
    """jax's `array` with the elements at `flat` negated, its buffer donated: XLA writes the few
    elements in place instead of copying the array (2^24 float32: 0.06 ms against 50 ms eagerly,
    7.4 s of a 120 s quick suite). The caller drops the old array: it is deleted."""
    import jax

    return jax.jit(lambda array, flat: array.reshape(-1).at[flat].multiply(-1).reshape(array.shape),
                   donate_argnums=0)


def negated_copy(array: Any, flat: np.ndarray) -> Any | None:
    """A new array of the same framework, device and dtype holding `array` with the elements at `flat`
    negated (a jax `array` is consumed: its buffer is the new one's); None where the framework is unknown."""
    framework = framework_name(array)
    try:
        if framework in ("jax", "jaxlib"):
            return _jax_negated()(array, flat)
        if framework in _MUTABLE:
            copy = array.clone() if framework == "torch" else array.copy()
            return copy if negate_at(copy, flat) else None
    except Exception:  # noqa: BLE001 - the caller uploads one instead
        return None
    return None


def itemsize(array: Any) -> int:
    """Bytes per element, read from the array (8 where it cannot say)."""
    size = getattr(array, "itemsize", None)
    if isinstance(size, int):
        return size
    element_size = getattr(array, "element_size", None)
    return int(element_size()) if callable(element_size) else 8


def gather(array: Any, flat: np.ndarray) -> np.ndarray | None:
    """float64 values of `array` at flat positions `flat`, read through its framework; None where it
    cannot read them (an array type no framework we know describes)."""
    framework = framework_name(array)
    try:
        if framework == "numpy" or isinstance(array, np.generic):
            return np.asarray(np.asarray(array).reshape(-1)[flat], dtype=np.float64)  # index, then widen
        if framework == "torch":
            import torch

            values = array.detach().reshape(-1)[torch.as_tensor(flat, device=array.device)]
            return values.to("cpu", torch.float64).numpy()
        if framework == "cupy":
            import cupy

            return cupy.asnumpy(array.reshape(-1)[cupy.asarray(flat)]).astype(np.float64)
        if framework in ("jax", "jaxlib"):
            return np.asarray(np.asarray(array).reshape(-1)[flat], dtype=np.float64)  # jax's host view, indexed
        if framework == "pyopencl":
            import pyopencl.array as cl_array

            where = cl_array.to_device(array.queue, np.asarray(flat, dtype=np.int64))
            return np.asarray(cl_array.take(array.reshape(-1), where).get(), dtype=np.float64)
    except Exception:  # noqa: BLE001 - unreadable: the check says so
        return None
    return None


def element_count(array: Any) -> int | None:
    """How many elements `array` holds, read from the array (None where it cannot say)."""
    if isinstance(array, (int, float, np.generic)):
        return 1
    size = getattr(array, "size", None)
    if callable(size):  # torch: size() is the shape
        numel = getattr(array, "numel", None)
        return int(numel()) if callable(numel) else None
    return int(size) if isinstance(size, (int, np.integer)) else None


def host_pointer_range(array: Any) -> tuple[int, int] | None:
    """The host memory an array occupies (start, end), where it lives in host memory and says so."""
    framework = framework_name(array)
    try:
        if framework == "numpy":
            start = array.__array_interface__["data"][0]
            return start, start + array.nbytes
        if framework == "torch" and array.device.type == "cpu":
            start = array.data_ptr()
            return start, start + array.numel() * array.element_size()
    except Exception:  # noqa: BLE001 - not known: the caller assumes no sharing it cannot see
        return None
    return None


def shares_memory(first: Any, second: Any) -> bool:
    """Whether two arrays overlap in memory, as far as their frameworks say (False where unknown)."""
    if first is second:
        return True
    if framework_name(first) == "pyopencl" and framework_name(second) == "pyopencl":
        return getattr(first, "base_data", None) is getattr(second, "base_data", object())
    a, b = host_pointer_range(first), host_pointer_range(second)
    if a is None or b is None or a[0] == a[1] or b[0] == b[1]:
        return False
    return a[0] < b[1] and b[0] < a[1]


_OPENCL_TYPES = {"float32": "float", "float64": "double"}
_opencl_kernels: dict[tuple[int, str], Any] = {}


def _opencl_negate(array: Any, flat: np.ndarray) -> bool:
    """array[flat] = -array[flat] with a one-line kernel, a work-item per position."""
    import pyopencl as cl
    import pyopencl.array as cl_array

    type_name = _OPENCL_TYPES.get(array.dtype.name)
    if type_name is None or not array.flags.c_contiguous:
        return False
    key = (id(array.context), type_name)
    if key not in _opencl_kernels:
        source = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if type_name == "double" else ""
        source += (f"__kernel void negate_at(__global {type_name} *a, __global const long *at) "
                   "{ size_t i = at[get_global_id(0)]; a[i] = -a[i]; }")
        _opencl_kernels[key] = cl.Kernel(cl.Program(array.context, source).build(), "negate_at")
    where = cl_array.to_device(array.queue, np.asarray(flat, dtype=np.int64))
    _opencl_kernels[key](array.queue, (len(flat),), None, array.base_data, where.data)
    return True
