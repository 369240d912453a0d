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

from typing import Any

import numpy as np

from accelbench.backends.raw_access import framework_name

_MUTABLE = ("numpy", "torch", "cupy", "pyopencl")


def scale_in_place(array: Any, factor: float) -> bool:
    """array *= factor through its framework; False where it cannot (immutable, unknown, read-only)."""
    framework = framework_name(array)
    if framework not in _MUTABLE:
        return False
    try:
        if framework == "numpy":
            if not array.flags.writeable:
                return False
            np.multiply(array, array.dtype.type(factor), out=array)
        elif framework == "torch":
            array.mul_(factor)
        elif framework == "pyopencl":
            return _opencl_scale(array, factor)
        else:
            array *= factor
    except Exception:  # noqa: BLE001 - an array it cannot write: the caller makes a new one
        return False
    return True


def scaled_copy(array: Any, factor: float) -> Any | None:
    """A new array of the same framework, device and dtype holding array × factor; None where unknown."""
    framework = framework_name(array)
    try:
        if framework in ("numpy", "cupy", "jax", "jaxlib"):
            return (array * array.dtype.type(factor)) if framework == "numpy" else array * factor
        if framework in ("torch", "pyopencl"):
            return array * factor
    except Exception:  # noqa: BLE001 - the caller uploads one instead
        return None
    return None


def gather(array: Any, flat: np.ndarray) -> np.ndarray | None:
    """float64 values of `array` at flat positions `flat`, read through its framework; None where it
    cannot read them (an array type no framework we know describes)."""
    framework = framework_name(array)
    try:
        if framework == "numpy" or isinstance(array, np.generic):
            return np.asarray(array, dtype=np.float64).reshape(-1)[flat]
        if framework == "torch":
            import torch

            values = array.detach().reshape(-1)[torch.as_tensor(flat, device=array.device)]
            return values.to("cpu", torch.float64).numpy()
        if framework == "cupy":
            import cupy

            return cupy.asnumpy(array.reshape(-1)[cupy.asarray(flat)]).astype(np.float64)
        if framework in ("jax", "jaxlib"):
            return np.asarray(np.asarray(array).reshape(-1)[flat], dtype=np.float64)
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
_opencl_programs: dict[tuple[int, str], Any] = {}


def _opencl_scale(array: Any, factor: float) -> bool:
    """array *= factor with a one-line kernel, one work-item an element: PoCL vectorises it
    (pyopencl's `*=`, a strided loop, ran 15× slower on 64 MiB on a CPU device)."""
    import pyopencl as cl

    type_name = _OPENCL_TYPES.get(array.dtype.name)
    if type_name is None or not array.flags.c_contiguous:
        return False
    key = (id(array.context), type_name)
    if key not in _opencl_programs:
        if type_name == "double":
            source = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
        else:
            source = ""
        source += (f"__kernel void scale(__global {type_name} *a, {type_name} f) "
                   "{ a[get_global_id(0)] *= f; }")
        _opencl_programs[key] = cl.Kernel(cl.Program(array.context, source).build(), "scale")
    if array.size:
        _opencl_programs[key](array.queue, (int(array.size),), None, array.base_data, array.dtype.type(factor))
    return True
