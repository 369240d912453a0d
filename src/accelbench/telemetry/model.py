"""What telemetry sources produce: timestamped samples, energy-counter readings, and reasons.

Every metric name ends in its unit (`utilization_percent`, `memory_used_bytes`, `power_w`,
`sm_clock_mhz`, `temperature_c`), as in the inventory, so JSON readers never guess. Timestamps are
seconds on the sampler's clock (wall time by default, the timeline NVML stamps its samples on).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Why a source gives nothing, in the inventory's words (devices.model), plus "not_present".
NOT_INSTALLED = "not_installed"
NO_DRIVER = "no_driver"
NO_PERMISSION = "no_permission"
NOT_SUPPORTED = "not_supported"
NOT_PRESENT = "not_present"
NO_TELEMETRY_API = "no_telemetry_api"
ERROR = "error"

# metric -> what it is (the unit is in the name)
METRICS: dict[str, str] = {
    "utilization_percent": "share of time the device was busy (CPU: all cores; GPU: a kernel was running)",
    "max_core_utilization_percent": "the busiest CPU core",
    "memory_utilization_percent": "GPU: share of time device memory was being read or written",
    "memory_used_bytes": "device memory in use (CPU: system RAM in use)",
    "memory_total_bytes": "device memory in total",
    "process_rss_bytes": "resident memory of this Python process",
    "frequency_mhz": "mean CPU core clock",
    "min_core_frequency_mhz": "slowest CPU core clock",
    "sm_clock_mhz": "NVIDIA SM (shader) clock",
    "gfx_clock_mhz": "AMD graphics (compute) clock",
    "memory_clock_mhz": "GPU memory clock",
    "power_w": "power draw as the sensor reports it",
    "power_from_energy_w": "mean power between two polls, from the energy counter",
    "dram_power_w": "CPU DRAM power (RAPL)",
    "temperature_c": "device temperature (GPU core or hottest CPU package sensor)",
    "hotspot_temperature_c": "AMD junction (hotspot) temperature",
    "renderer_utilization_percent": "Apple GPU renderer busy share",
    "tiler_utilization_percent": "Apple GPU tiler busy share",
    "throttle_reasons": "why the clocks are held below their maximum (names, NVML)",
}

# NVML reasons that mean the device is being slowed, as opposed to idle or set by the user
SLOWDOWN_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                    "hw_power_brake_slowdown")


class SourceUnavailable(Exception):
    """A source cannot give data here; `status` is one of the constants above."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Sample:
    """Readings of one device at one instant (a source may stamp each metric at its own time)."""

    device_id: str
    t_s: float
    values: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device_id, "t_s": self.t_s, **self.values}


@dataclass(frozen=True)
class CounterReading:
    """One read of a hardware energy counter, converted to joules.

    wrap_j: the counter restarts from zero after this many joules (RAPL's max_energy_range_uj);
    None for counters too wide to wrap in practice (NVML's 64-bit millijoules).
    update_period_s: how often the hardware refreshes the counter, which bounds how short a
    window it can measure. in_total: counts towards the device's energy (a RAPL DRAM zone does
    not: it is reported on its own).
    """

    device_id: str
    counter: str
    t_s: float
    energy_j: float
    wrap_j: float | None
    update_period_s: float
    in_total: bool = True


@dataclass
class DeviceInfo:
    """What a source knows about one device it covers, beyond the samples."""

    device_id: str
    source: str
    name: str = ""
    metrics: tuple[str, ...] = ()
    missing: dict[str, str] = field(default_factory=dict)   # metric -> why it has no data
    hints: dict[str, str] = field(default_factory=dict)     # metric -> why a short window may lack it
    notes: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)    # metric -> its name where the usual one misleads
    energy_note: str | None = None          # why there is no energy figure, when known up front
    power_sampling_s: float | None = None   # the power sensor's own update period, when known
    power_accuracy: float | None = None     # relative accuracy of the power sensor, when stated


@dataclass(frozen=True)
class NoData:
    """A source (or device) that gave no telemetry, and why."""

    source: str
    vendor: str
    status: str
    reason: str
    devices: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "vendor": self.vendor, "status": self.status,
                "reason": self.reason, "devices": list(self.devices)}


class Source:
    """The interface every telemetry source implements; the defaults suit a source without counters.

    open() raises SourceUnavailable; poll() returns what is new since the previous poll, never the
    same sample twice; counters() reads energy counters now.
    """

    name = "source"
    vendor = "unknown"
    #: the device-id families it watches ("cpu" for "cpu", "cuda" for "cuda:0" ...)
    families: tuple[str, ...] = ()
    #: True where the constructor's first argument is the device ids asked for (None: all found)
    takes_device_ids = False

    def __init__(self) -> None:
        self.devices: dict[str, DeviceInfo] = {}
        self.absent: dict[str, str] = {}   # device id asked for -> why this source does not cover it

    @classmethod
    def for_devices(cls, wanted: list[str] | None) -> "Source":
        """A source for the asked-for device ids of its families (None: every one it finds).
        Sources that watch the whole of their family (the CPU's) ignore the list."""
        return cls(wanted) if cls.takes_device_ids else cls()  # type: ignore[call-arg]

    def open(self, now_s: float) -> None:
        raise NotImplementedError

    def poll(self, now_s: float) -> list[Sample]:
        raise NotImplementedError

    def counters(self, now_s: float) -> list[CounterReading]:
        return []

    def close(self) -> None:
        pass
