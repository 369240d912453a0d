"""The GPU of an Apple silicon Mac, from two sysctl values (no framework needed).

Which frameworks reach it is the backends' to say (Backend.reach_id, backends/device_reach.py).

`sysctl -n machdep.cpu.brand_string` names the chip ("Apple M2"), `hw.memsize` gives the
memory, which the GPU shares with the CPU. The GPU core count is not in sysctl, so datasheet
figures that depend on it say which configuration they are for.
"""
from __future__ import annotations

import platform
import subprocess
from typing import Callable

from accelbench.devices import datasheets
from accelbench.devices.model import ERROR, NOT_SUPPORTED, Device
from accelbench.devices.probing import ProbeFailure

SYSCTL_TIMEOUT_S = 5.0


def run_sysctl(name: str) -> str:
    """`sysctl -n NAME`'s output, stripped."""
    done = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True,
                          timeout=SYSCTL_TIMEOUT_S, check=True)
    return done.stdout.strip()


def probe(sysctl: Callable[[str], str] | None = None,
          platform_info: tuple[str, str] | None = None) -> list[Device]:
    """[Device("mps")] on macOS on Apple silicon; ProbeFailure(NOT_SUPPORTED) elsewhere."""
    read = sysctl or run_sysctl
    system, machine = platform_info or (platform.system(), platform.machine())
    warnings: list[str] = []
    if system != "Darwin":
        raise ProbeFailure(NOT_SUPPORTED, "Apple GPUs exist only on macOS on Apple silicon")
    if machine != "arm64":
        if not _translated(read):
            raise ProbeFailure(NOT_SUPPORTED, "Apple GPUs exist only on macOS on Apple silicon (this Mac is Intel)")
        warnings.append("this Python runs under Rosetta (x86_64): frameworks here may not reach the GPU; "
                        "use an arm64 Python")
    try:
        chip = read("machdep.cpu.brand_string")
        memory_bytes = int(read("hw.memsize"))
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        raise ProbeFailure(ERROR, f"sysctl could not name the chip: {exc}") from exc
    name = f"{chip} GPU"
    properties = {"chip_name": chip, "unified_memory": True, "memory_total_bytes": memory_bytes,
                  "memory_note": "unified: shared with the CPU, not all of it usable by the GPU"}
    return [Device(id="mps", kind="gpu", vendor="Apple", name=name, source="sysctl", memory_bytes=memory_bytes,
                   properties=properties, peaks=datasheets.table_peaks(name),
                   warnings=tuple(warnings))]


def _translated(read: Callable[[str], str]) -> bool:
    """True when an x86_64 process runs under Rosetta on Apple silicon."""
    try:
        return read("sysctl.proc_translated") == "1"
    except (OSError, subprocess.SubprocessError):
        return False

