"""Where an array lives, read from the array itself: placement is observed, never taken on trust.

A backend's own `location()` is what the backend claims; this module asks the array's framework
(numpy, torch, CuPy, JAX, PyOpenCL), recognised by the array's type, without importing any of
them: a framework whose array we are handed is already loaded. An array of a type none of these
know (a plugin's own) cannot be observed, and the result says its placement is only claimed.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Placement:
    device: str | None   # accelbench device id, or None where it could not be observed
    how: str             # "observed from a torch.Tensor" / why it could not be


def observe(array: Any) -> Placement:
    module = type(array).__module__.split(".")[0]
    observer = _OBSERVERS.get(module)
    if observer is None:
        return Placement(None, f"an array of type {type(array).__module__}.{type(array).__qualname__} "
                               "that accelbench cannot inspect")
    try:
        return Placement(observer(array), f"observed from a {module} array")
    except Exception as error:  # noqa: BLE001 - an odd array is "not observed", never a crash
        return Placement(None, f"its {module} array did not say ({type(error).__name__}: {error})")


def _numpy(array: Any) -> str:
    return "cpu"  # numpy arrays and scalars live in host memory


def _gpu_kind_of_torch() -> str:
    torch = sys.modules.get("torch")
    return "rocm" if torch is not None and getattr(torch.version, "hip", None) else "cuda"


def _torch(array: Any) -> str:
    device = array.device
    if device.type in ("cpu", "mps", "meta"):
        return device.type
    kind = _gpu_kind_of_torch() if device.type == "cuda" else device.type
    return f"{kind}:{device.index if device.index is not None else 0}"


def _cupy(array: Any) -> str:
    cupy = sys.modules.get("cupy")
    hip = bool(cupy is not None and getattr(cupy.cuda.runtime, "is_hip", False))
    return f"{'rocm' if hip else 'cuda'}:{array.device.id}"


def _jax(array: Any) -> str:
    devices = tuple(array.devices())
    if len(devices) != 1:
        raise ValueError(f"spread over {len(devices)} devices")
    device = devices[0]
    platform = device.platform
    if platform == "cpu":
        return "cpu"
    kind = {"gpu": "cuda", "cuda": "cuda", "rocm": "rocm", "METAL": "mps"}.get(platform, platform)
    return "mps" if kind == "mps" else f"{kind}:{getattr(device, 'local_hardware_id', None) or device.id}"


def _pyopencl(array: Any) -> str:
    cl = sys.modules["pyopencl"]
    queue = getattr(array, "queue", None)
    target = queue.device if queue is not None else array.context.devices[0]
    for p_index, platform in enumerate(cl.get_platforms()):
        for d_index, device in enumerate(platform.get_devices()):
            if device.int_ptr == target.int_ptr:
                return f"opencl:{p_index}:{d_index}"
    raise LookupError("its device is on no platform the ICD loader lists")


_OBSERVERS = {"numpy": _numpy, "torch": _torch, "cupy": _cupy, "jax": _jax, "jaxlib": _jax,
              "pyopencl": _pyopencl}
