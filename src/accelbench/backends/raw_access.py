"""Writing and reading a device array through its framework, never through the backend.

The check poisons output buffers and reads them back; were that done with the backend's own
helpers (fill_nan), a backend could see the check coming and do the full work only then. Here the
array's framework (numpy, torch, CuPy, PyOpenCL), recognised by the array's type as in
placement.py, is asked directly. JAX arrays are immutable: nothing to poison. An array of a type
none of these know can only be written through the backend, and the result says so.
"""
from __future__ import annotations

from typing import Any

_FILLERS = {
    "numpy": lambda a: a.__setitem__(Ellipsis, float("nan")),
    "torch": lambda a: a.fill_(float("nan")),
    "cupy": lambda a: a.fill(float("nan")),
    "pyopencl": lambda a: a.fill(float("nan")),
}


def _framework(array: Any) -> str:
    return type(array).__module__.split(".")[0]


def known(array: Any) -> bool:
    """Whether accelbench can write and read `array` through its framework."""
    return _framework(array) in _FILLERS or _framework(array) in ("jax", "jaxlib")


def poison(array: Any) -> bool:
    """Fill `array` with NaN through its framework; False where it cannot (immutable, unknown, integer)."""
    filler = _FILLERS.get(_framework(array))
    if filler is None:
        return False
    try:
        if not str(getattr(array, "dtype", "")).replace("torch.", "").startswith(("float", "bfloat")):
            return False
        filler(array)
    except Exception:  # noqa: BLE001 - read-only or odd arrays are simply not poisoned
        return False
    return True


def dtype_name(array: Any) -> str | None:
    """The element type as accelbench names it ("float32", "bfloat16"), read from the array."""
    if not known(array):
        return None
    dtype = getattr(array, "dtype", None)
    if dtype is None:
        return None
    name = str(dtype).replace("torch.", "")
    return {"half": "float16", "float": "float32", "double": "float64"}.get(name, name)


def first_element(array: Any) -> Any:
    """A one-element view of `array` (reading it back waits only for the work that made it)."""
    if _framework(array) not in ("numpy", "torch", "cupy", "jax", "jaxlib", "pyopencl"):
        return array
    try:
        flat = array.reshape(-1) if getattr(array, "ndim", 1) else array
        return flat[:1] if getattr(flat, "ndim", 0) else flat
    except Exception:  # noqa: BLE001 - a view it cannot make: read the whole array back
        return array
