"""Finding a runtime to answer deviceQuery, and adding its answers to the devices a probe found.

Only the NVIDIA and AMD probes call this, and only where a driver is present: they then run in the
isolated child (devices/isolated.py), so a runtime that aborts while it initialises costs that probe,
never the command.
"""
from __future__ import annotations

import ctypes
import importlib
from dataclasses import replace
from typing import Any, Callable, Sequence

from accelbench.devices.device_query import (
    AttributeSource, CtypesSource, CupySource, QueryError, by_pci_bus_id, read_devices,
)
from accelbench.devices.model import Device

CUDART_NAMES = ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0")
CUDA_DRIVER_NAMES = ("libcuda.so.1", "libcuda.so")
HIP_NAMES = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.7", "libamdhip64.so.5")


def _open_first(names: Sequence[str], opener: Callable[[str], Any]) -> tuple[Any, str] | None:
    for name in names:
        try:
            return opener(name), name
        except OSError:
            continue
    return None


def cuda_source(importer: Callable[[str], Any] = importlib.import_module,
                opener: Callable[[str], Any] = ctypes.CDLL) -> AttributeSource:
    """CuPy's runtime module, else libcudart, else the driver's libcuda; QueryError names what was tried."""
    for module in ("cupy_backends.cuda.api.runtime", "cupy.cuda.runtime"):  # the first skips importing all of CuPy
        try:
            runtime = importer(module)
        except ImportError:
            continue
        version = getattr(_quiet_import(importer, "cupy"), "__version__", "")
        return CupySource(runtime, version)
    found = _open_first(CUDART_NAMES, opener)
    if found:
        return CtypesSource(found[0], f"{found[1]} (cudaDeviceGetAttribute)", "cudaGetDeviceCount",
                            "cudaDeviceGetAttribute", "cuda_ids")
    found = _open_first(CUDA_DRIVER_NAMES, opener)
    if found:
        return CtypesSource(found[0], f"{found[1]} (cuDeviceGetAttribute)", "cuDeviceGetCount",
                            "cuDeviceGetAttribute", "cuda_ids", device_handle="cuDeviceGet", init="cuInit")
    raise QueryError("no CUDA runtime to ask: CuPy is not installed and neither libcudart nor libcuda loads")


def hip_source(opener: Callable[[str], Any] = ctypes.CDLL) -> AttributeSource:
    found = _open_first(HIP_NAMES, opener)
    if not found:
        raise QueryError("no HIP runtime to ask: libamdhip64 does not load (ROCm's HIP runtime is not installed)")
    return CtypesSource(found[0], f"{found[1]} (hipDeviceGetAttribute)", "hipGetDeviceCount",
                        "hipDeviceGetAttribute", "hip_ids")


def _quiet_import(importer: Callable[[str], Any], name: str) -> Any:
    try:
        return importer(name)
    except ImportError:
        return None


def with_device_query(devices: list[Device], load: Callable[[], AttributeSource]) -> list[Device]:
    """`devices` with `device_query` (the runtime's limits) and `device_query_source` added, matched by
    PCI address; where no runtime answers, each device says why instead (a reason, not a warning:
    the inventory is complete without it)."""
    try:
        source = load()
        queried, problems = read_devices(source)
    except QueryError as exc:
        return [_with(d, {"device_query_source": f"unavailable: {exc}"}) for d in devices]
    found = by_pci_bus_id(queried)
    out = []
    for device in devices:
        fields = found.get(str(device.properties.get("pci_bus_id", "")))
        if fields is None:  # hidden by *_VISIBLE_DEVICES, or the runtime counted it differently
            out.append(_with(device, {"device_query_source": f"unavailable: {source.label} did not list "
                                                             "this PCI address (hidden from this process?)"}))
            continue
        extra: dict[str, Any] = {"device_query": fields, "device_query_source": source.label}
        if problems:
            extra["device_query_problems"] = problems
        out.append(_with(device, extra))
    return out


def _with(device: Device, extra: dict[str, Any]) -> Device:
    return replace(device, properties={**device.properties, **extra})
