"""Why an accelerator's timed window was disturbed, from the run's telemetry (NVML and the like)."""
from __future__ import annotations

from typing import Any

from accelbench.verdict import DEVICE_SHARED, DEVICE_SLOWED, Caveat

# slowdowns that come from heat or the board, not from our own load: `sw_power_cap` is left out,
# since a GPU held at its power limit by the benchmark itself is its normal steady state
DEVICE_SLOWDOWNS = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")


def device_reasons(telemetry: dict[str, Any], device: str) -> list[Caveat]:
    """Why an accelerator's window was disturbed: other processes on it (NVML), thermal or board slowdowns."""
    section = (telemetry or {}).get("devices", {}).get(device)
    if not section or device == "cpu":
        return []
    reasons = []
    others = section.get("metrics", {}).get("other_processes", {}).get("max")
    if others:
        reasons.append(Caveat(f"{others:.0f} other process{'es' if others != 1 else ''} used {device} during this "
                              f"measurement (NVML process list)", DEVICE_SHARED, {"other_processes": others}))
    slowdowns = [r for r in section.get("throttle_reasons") or () if r in DEVICE_SLOWDOWNS]
    if slowdowns:
        reasons.append(Caveat(f"{device} slowed its clocks during this measurement ({', '.join(slowdowns)})",
                              DEVICE_SLOWED, {"throttle_reasons": slowdowns}))
    return reasons
