"""Writing and reading a device array through its framework, never through the backend.

The check poisons output buffers and reads them back; were that done with the backend's own
helpers (fill_nan), a backend could see the check coming and do the full work only then. Here the
array's framework (numpy, torch, CuPy, PyOpenCL), recognised by the array's type as in
placement.py, is asked directly. JAX arrays are immutable: nothing to poison. An array of a type
none of these know can only be written through the backend, and the result says so.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

SCATTER_EVERY = 512  # poison_scattered: one element in this many (at least one) ...
# ... and at most this many: a backend that samples k of its n outputs finds m poisoned ones with
# chance ~k*m/n (8 samples against 1 in 512: 1.6% a round, and a peeking partial writer passed 1.5-3.3% of
# audits), while 256 left standing by a call that skips a tenth of its work escape with 0.9^256 < 1e-11
SCATTER_MAX = 256

_FILLERS = {
    "numpy": lambda a: a.__setitem__(Ellipsis, float("nan")),
    "torch": lambda a: a.fill_(float("nan")),
    "cupy": lambda a: a.fill(float("nan")),
    "pyopencl": lambda a: a.fill(float("nan")),
}


def framework_name(array: Any) -> str:
    return type(array).__module__.split(".")[0]


def known(array: Any) -> bool:
    """Whether accelbench can write and read `array` through its framework."""
    return framework_name(array) in _FILLERS or framework_name(array) in ("jax", "jaxlib")


def poison(array: Any) -> bool:
    """Fill `array` with NaN through its framework; False where it cannot (immutable, unknown, integer)."""
    filler = _FILLERS.get(framework_name(array))
    if filler is None:
        return False
    try:
        if not str(getattr(array, "dtype", "")).replace("torch.", "").startswith(("float", "bfloat")):
            return False
        filler(array)
    except Exception:  # noqa: BLE001 - read-only or odd arrays are simply not poisoned
        return False
    return True


def poison_scattered(array: Any, draw: Callable[[int, int], Any]) -> bool:
    """NaN into a few elements drawn at random (`draw(size, count)`: flat indices), through the
    framework; False where it cannot (then `poison` fills it all).

    A backend that rewrites part of its output can sample a few elements to see a whole-buffer
    poison coming and do the full work only then; it cannot sample its way to a few elements in a
    thousand: a call that leaves any of them unwritten fails the check."""
    framework = framework_name(array)
    if framework not in ("numpy", "torch", "cupy") or not getattr(array, "ndim", 0):
        return False
    size = int(getattr(array, "size", 0) if framework != "torch" else array.numel())
    if size == 0 or not str(getattr(array, "dtype", "")).replace("torch.", "").startswith(("float", "bfloat")):
        return False
    count = max(1, min(size, -(-size // SCATTER_EVERY), SCATTER_MAX))
    where = tuple(np.unravel_index(np.asarray(draw(size, count), dtype=np.int64), tuple(array.shape)))
    try:
        if framework == "numpy":
            array[where] = np.nan
        elif framework == "torch":
            import torch

            array[tuple(torch.as_tensor(w, device=array.device) for w in where)] = float("nan")
        else:
            import cupy

            array[tuple(cupy.asarray(w) for w in where)] = float("nan")
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
    framework = framework_name(array)
    if framework not in ("numpy", "torch", "cupy", "jax", "jaxlib", "pyopencl"):
        return array
    try:
        if framework in ("jax", "jaxlib") and _on_jax_cpu(array):
            # jax's own host view: it waits for the array and shares its memory. Slicing instead
            # dispatches two more computations, each woken by the last: an honest output read back
            # 100-600 µs later than synchronize() ends it (2^20 float32, 2 cores), like a sync that lags
            array = np.asarray(array)
        flat = array.reshape(-1) if getattr(array, "ndim", 1) else array
        return flat[:1] if getattr(flat, "ndim", 0) else flat
    except Exception:  # noqa: BLE001 - a view it cannot make: read the whole array back
        return array


def _on_jax_cpu(array: Any) -> bool:
    try:
        return all(device.platform == "cpu" for device in array.devices())
    except Exception:  # noqa: BLE001 - an array that cannot say: read it as any other
        return False
