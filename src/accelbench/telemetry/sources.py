"""Which telemetry source watches which device id, and what is said for devices nothing watches.

Sources are plugins (entry-point group `accelbench.telemetry`, accelbench/plugins.py): a target is
a Source class that names the device-id `families` it watches and is made by `for_devices`.
"""
from __future__ import annotations

from typing import Any, Sequence

from accelbench.plugins import TELEMETRY_GROUP, load_target, plugin_targets, builtin_targets
from accelbench.telemetry.model import ERROR, NO_TELEMETRY_API, NOT_SUPPORTED, NoData, Source

# name -> "module:attribute" of accelbench's own, as pyproject.toml declares them (listed there only)
BUILTIN_SOURCES: dict[str, str] = builtin_targets(TELEMETRY_GROUP)

OPENCL_REASON = ("OpenCL has no API for utilisation, power, clocks or temperature; the vendor's own "
                 "interface covers the same chip (NVML for NVIDIA, amdsmi for AMD; a PoCL device is the CPU, "
                 "shown under cpu)")


def family(device_id: str) -> str:
    """"cpu", "cuda", "rocm", "mps", "opencl", or the id's prefix for anything else."""
    return device_id.split(":", 1)[0]


def source_targets() -> dict[str, str]:
    """Every telemetry source: name -> "module:Class", built-ins first."""
    return plugin_targets(TELEMETRY_GROUP, BUILTIN_SOURCES)


def source_classes() -> tuple[dict[str, Any], list[NoData]]:
    """name -> Source class for every source that loads; a NoData each for those that do not."""
    classes: dict[str, Any] = {}
    broken: list[NoData] = []
    for name, target in source_targets().items():
        try:
            classes[name] = load_target(target)
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the measurement
            broken.append(NoData(name, name, ERROR, f"{target} could not be loaded: {type(exc).__name__}: {exc}"))
    return classes, broken


def default_sources(device_ids: Sequence[str] | None) -> tuple[list[Source], list[NoData]]:
    """The sources to open for these device ids (None: every device any source can find)."""
    wanted = list(device_ids) if device_ids is not None else None
    classes, no_data = source_classes()
    sources: list[Source] = []
    for cls in classes.values():
        mine = None if wanted is None else [d for d in wanted if family(d) in cls.families]
        if mine is None or mine:
            sources.append(cls.for_devices(mine or None))
    watched = {f for cls in classes.values() for f in cls.families}
    no_data += unwatched(wanted or [], watched)
    if wanted is None:  # said once for every OpenCL device there may be
        no_data.append(NoData("opencl", "OpenCL", NO_TELEMETRY_API, OPENCL_REASON))
    return sources, no_data


def unwatched(device_ids: Sequence[str], watched: set[str] | None = None) -> list[NoData]:
    """What is said for asked-for devices that no source covers (`watched`: the families some
    source watches; None: ask the installed sources)."""
    if watched is None:
        watched = {f for cls in source_classes()[0].values() for f in cls.families}
    no_data = []
    for device_id in device_ids:
        kind = family(device_id)
        if kind == "opencl":
            no_data.append(NoData("opencl", "OpenCL", NO_TELEMETRY_API, OPENCL_REASON, (device_id,)))
        elif kind not in watched:
            no_data.append(NoData(kind, kind, NOT_SUPPORTED, f"no telemetry source knows {kind!r} devices",
                                  (device_id,)))
    return no_data
