"""Which telemetry source watches which device id, and what is said for devices nothing watches."""
from __future__ import annotations

from typing import Sequence

from accelbench.telemetry.model import NO_TELEMETRY_API, NOT_SUPPORTED, NoData, Source

OPENCL_REASON = ("OpenCL has no API for utilisation, power, clocks or temperature; the vendor's own "
                 "interface covers the same chip (NVML for NVIDIA, amdsmi for AMD; a PoCL device is the CPU, "
                 "shown under cpu)")


def family(device_id: str) -> str:
    """"cpu", "cuda", "rocm", "mps", "opencl", or the id's prefix for anything else."""
    return device_id.split(":", 1)[0]


def default_sources(device_ids: Sequence[str] | None) -> tuple[list[Source], list[NoData]]:
    """The sources to open for these device ids (None: every device any source can find)."""
    from accelbench.telemetry.amd import AmdsmiSource
    from accelbench.telemetry.apple import IoregSource
    from accelbench.telemetry.cpu import PsutilSource
    from accelbench.telemetry.nvml import NvmlSource
    from accelbench.telemetry.rapl import RaplSource

    wanted = list(device_ids) if device_ids is not None else None
    families = {family(d) for d in wanted} if wanted is not None else {"cpu", "cuda", "rocm", "mps"}
    sources: list[Source] = []
    if "cpu" in families:
        sources += [PsutilSource(), RaplSource()]
    if "cuda" in families:
        sources.append(NvmlSource([d for d in wanted if family(d) == "cuda"] if wanted else None))
    if "rocm" in families:
        sources.append(AmdsmiSource([d for d in wanted if family(d) == "rocm"] if wanted else None))
    if "mps" in families:
        sources.append(IoregSource())
    no_data = unwatched(wanted or [])
    if wanted is None:  # said once for every OpenCL device there may be
        no_data.append(NoData("opencl", "OpenCL", NO_TELEMETRY_API, OPENCL_REASON))
    return sources, no_data


def unwatched(device_ids: Sequence[str]) -> list[NoData]:
    """What is said for asked-for devices that no source covers."""
    no_data = []
    for device_id in device_ids:
        kind = family(device_id)
        if kind == "opencl":
            no_data.append(NoData("opencl", "OpenCL", NO_TELEMETRY_API, OPENCL_REASON, (device_id,)))
        elif kind not in ("cpu", "cuda", "rocm", "mps"):
            no_data.append(NoData(kind, kind, NOT_SUPPORTED, f"no telemetry source knows {kind!r} devices",
                                  (device_id,)))
    return no_data
