"""The GPU of an Apple silicon Mac, from what `ioreg` shows any user (no root needed).

The IOAccelerator service publishes "PerformanceStatistics": device, renderer and tiler utilisation
and the memory the GPU has in use. Power and energy need `powermetrics`, which only root may run,
so they are reported as missing with that reason rather than asked for.
"""
from __future__ import annotations

import platform
import re
import subprocess
from typing import Callable

from accelbench.telemetry.model import (
    ERROR, NOT_SUPPORTED, DeviceInfo, Sample, Source, SourceUnavailable,
)

IOREG_COMMAND = ("ioreg", "-r", "-d", "1", "-w", "0", "-c", "IOAccelerator")
IOREG_TIMEOUT_S = 5.0
# PerformanceStatistics key -> our metric
KEYS = {
    "Device Utilization %": "utilization_percent",
    "Renderer Utilization %": "renderer_utilization_percent",
    "Tiler Utilization %": "tiler_utilization_percent",
    "In use system memory": "memory_used_bytes",
}
NO_POWER = ("GPU power and energy on macOS come from `powermetrics`, which needs root "
            "(sudo powermetrics --samplers gpu_power); accelbench does not run it")


def run_ioreg() -> str:
    done = subprocess.run(IOREG_COMMAND, capture_output=True, text=True, timeout=IOREG_TIMEOUT_S, check=True)
    return done.stdout


def parse_performance_statistics(text: str) -> dict[str, float]:
    """Our metrics from ioreg's `"PerformanceStatistics" = {"Device Utilization %"=12,...}`."""
    block = re.search(r'"PerformanceStatistics"\s*=\s*\{([^}]*)\}', text)
    if not block:
        return {}
    values = {}
    for key, number in re.findall(r'"([^"]+)"\s*=\s*(-?\d+(?:\.\d+)?)', block.group(1)):
        if key in KEYS:
            values[KEYS[key]] = float(number)
    return values


class IoregSource(Source):
    name = "ioreg"
    vendor = "Apple"
    families = ("mps",)

    def __init__(self, run: Callable[[], str] | None = None, system: str | None = None):
        super().__init__()
        self._run = run or run_ioreg
        self._system = system or platform.system()

    def open(self, now_s: float) -> None:
        if self._system != "Darwin":
            raise SourceUnavailable(NOT_SUPPORTED, "Apple GPUs exist only on macOS on Apple silicon")
        try:
            first = parse_performance_statistics(self._run())
        except (OSError, subprocess.SubprocessError) as exc:
            raise SourceUnavailable(ERROR, f"ioreg failed: {exc}") from exc
        if not first:
            raise SourceUnavailable(NOT_SUPPORTED, "ioreg shows no IOAccelerator PerformanceStatistics here")
        info = DeviceInfo("mps", self.name, name="Apple GPU", metrics=tuple(KEYS.values()), energy_note=NO_POWER)
        info.missing.update({"power_w": NO_POWER, "temperature_c": "needs root on macOS (powermetrics)"})
        self.devices = {"mps": info}

    def poll(self, now_s: float) -> list[Sample]:
        try:
            values = parse_performance_statistics(self._run())
        except (OSError, subprocess.SubprocessError):
            return []
        return [Sample("mps", now_s, values)] if values else []
