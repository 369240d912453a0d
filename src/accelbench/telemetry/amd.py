"""AMD GPUs through amdsmi: activity, VRAM, power, temperatures, clocks and the energy accumulator.

`AmdTelemetryAdapter` extends the inventory's `AmdsmiAdapter` with the telemetry calls;
`RecordedAmdTelemetry` extends `RecordedAmdsmi` so a recording can hold time series
({"series": [[t_s, value], ...]}) replayed against a test's clock. amdsmi answers "N/A" for what a
board does not report; those metrics are simply absent. The energy accumulator counts ticks of
`counter_resolution` microjoules (the key is "energy_accumulator", "power" in amdsmi before 6.2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from accelbench.devices.amd import AmdsmiAdapter, AmdsmiError, RecordedAmdsmi
from accelbench.telemetry.energy import rate_w, time_refresh
from accelbench.telemetry.model import (
    ERROR, NO_DRIVER, NO_PERMISSION, NOT_INSTALLED, CounterReading, DeviceInfo, Sample, Source,
    SourceUnavailable,
)

AMD_METRICS = ("utilization_percent", "memory_utilization_percent", "memory_used_bytes", "memory_total_bytes",
               "power_w", "power_from_energy_w", "temperature_c", "hotspot_temperature_c", "gfx_clock_mhz",
               "memory_clock_mhz")
DEFAULT_ENERGY_UPDATE_S = 0.05  # not documented by AMD; used only when timing it at open failed
CALIBRATE_S = 0.25
MIB = 1024 ** 2


class AmdTelemetryAdapter(AmdsmiAdapter):
    """The real amdsmi with the telemetry calls."""

    def gpu_activity(self, index: int) -> dict[str, Any]:
        return dict(self._call(self._a.amdsmi_get_gpu_activity, self._handle(index)))

    def vram_usage(self, index: int) -> dict[str, Any]:
        return dict(self._call(self._a.amdsmi_get_gpu_vram_usage, self._handle(index)))

    def power_info(self, index: int) -> dict[str, Any]:
        return dict(self._call(self._a.amdsmi_get_power_info, self._handle(index)))

    def temperature_c(self, index: int, sensor: str) -> float:
        kinds = self._a.AmdSmiTemperatureType
        kind = kinds.EDGE if sensor == "edge" else getattr(kinds, "HOTSPOT", None) or kinds.JUNCTION
        metric = self._a.AmdSmiTemperatureMetric.CURRENT
        return float(self._call(self._a.amdsmi_get_temp_metric, self._handle(index), kind, metric))

    def clock_info(self, index: int, domain: str) -> dict[str, Any]:
        kind = {"gfx": self._a.AmdSmiClkType.GFX, "mem": self._a.AmdSmiClkType.MEM}[domain]
        return dict(self._call(self._a.amdsmi_get_clock_info, self._handle(index), kind))

    def energy_count(self, index: int) -> dict[str, Any]:
        return dict(self._call(self._a.amdsmi_get_energy_count, self._handle(index)))


def load() -> AmdTelemetryAdapter:
    import amdsmi  # lazily: loading it opens the ROCm library

    return AmdTelemetryAdapter(amdsmi)


class RecordedAmdTelemetry(RecordedAmdsmi):
    """Processor fields added: gpu_activity, vram_usage, power_info, temperature_edge_c,
    temperature_hotspot_c, gfx_clock_info, mem_clock_info, energy_count."""

    def __init__(self, recording: dict[str, Any], clock: Callable[[], float]):
        super().__init__(recording)
        self.clock = clock

    def _answer(self, value: Any) -> Any:
        if isinstance(value, dict) and "series" in value:
            past = [v for t, v in value["series"] if t <= self.clock()]
            if not past:
                raise AmdsmiError("not_supported", "no recorded value yet at this time")
            value = past[-1]
        return super()._answer(value)

    def gpu_activity(self, index: int) -> dict[str, Any]:
        return dict(self._field(index, "gpu_activity"))

    def vram_usage(self, index: int) -> dict[str, Any]:
        return dict(self._field(index, "vram_usage"))

    def power_info(self, index: int) -> dict[str, Any]:
        return dict(self._field(index, "power_info"))

    def temperature_c(self, index: int, sensor: str) -> float:
        return float(self._field(index, f"temperature_{sensor}_c"))

    def clock_info(self, index: int, domain: str) -> dict[str, Any]:
        return dict(self._field(index, f"{domain}_clock_info"))

    def energy_count(self, index: int) -> dict[str, Any]:
        return dict(self._field(index, "energy_count"))


def _number(*candidates: Any) -> float | None:
    """The first candidate that is a number (amdsmi writes "N/A" for what a board lacks)."""
    for value in candidates:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def energy_joules(count: dict[str, Any]) -> tuple[float, float] | None:
    """(energy_j, wrap_j) from amdsmi_get_energy_count's answer."""
    ticks = _number(count.get("energy_accumulator"), count.get("power"))
    resolution_uj = _number(count.get("counter_resolution"))
    if ticks is None or not resolution_uj:
        return None
    return ticks * resolution_uj / 1e6, 2 ** 64 * resolution_uj / 1e6


@dataclass
class _Gpu:
    index: int
    energy_update_s: float | None = None
    has_energy: bool = True
    last_energy: CounterReading | None = None


_INIT_FAILURES = {
    "no_perm": (NO_PERMISSION, "add the user to the 'render' and 'video' groups (or give the container "
                               "/dev/kfd and /dev/dri)"),
    "no_permission": (NO_PERMISSION, "add the user to the 'render' and 'video' groups"),
    "driver_not_loaded": (NO_DRIVER, "the amdgpu driver is not loaded: check `amd-smi list` and `dmesg`"),
}


class AmdsmiSource(Source):
    name = "amdsmi"
    vendor = "AMD"
    families = ("rocm",)
    takes_device_ids = True

    def __init__(self, wanted: Sequence[str] | None = None, amdsmi: Any = None, calibrate_s: float = CALIBRATE_S):
        super().__init__()
        self.wanted = list(wanted) if wanted else None
        self._a = amdsmi
        self.calibrate_s = calibrate_s
        self._gpus: dict[str, _Gpu] = {}

    def open(self, now_s: float) -> None:
        adapter = self._a if self._a is not None else self._load()
        try:
            adapter.init()
            count = adapter.processor_count()
        except AmdsmiError as exc:
            status, advice = _INIT_FAILURES.get(exc.code, (ERROR, ""))
            raise SourceUnavailable(status, f"amdsmi: {exc.message}" + (f"; {advice}" if advice else "")) from exc
        self._a = adapter
        ids = {f"rocm:{n}": index for n, index in enumerate(self._pci_order(count))}
        for device_id in self.wanted or ids:
            if device_id not in ids:
                self.absent[device_id] = f"amdsmi sees {len(ids)} AMD GPU(s): no {device_id}"
                continue
            gpu = self._gpus[device_id] = _Gpu(ids[device_id])
            self.devices[device_id] = self._describe(device_id, gpu)
        readers = {d: (lambda i=g.index: energy_joules(self._a.energy_count(i))) for d, g in self._gpus.items()
                   if g.has_energy}
        for device_id, refresh_s in time_refresh(readers, self.calibrate_s).items():
            self._gpus[device_id].energy_update_s = refresh_s

    @staticmethod
    def _load() -> Any:
        try:
            return load()
        except ModuleNotFoundError as exc:
            if exc.name != "amdsmi":
                raise
            raise SourceUnavailable(NOT_INSTALLED, "amdsmi is not installed (it comes with ROCm): "
                                                   "pip install accelbench[amd]") from exc
        except (ImportError, OSError) as exc:
            raise SourceUnavailable(NO_DRIVER, f"amdsmi is installed but could not load libamd_smi: {exc}") from exc

    def _pci_order(self, count: int) -> list[int]:
        from accelbench.devices.nvidia import normalize_pci_bus_id

        def key(index: int) -> tuple[int, str, int]:
            try:
                bus = normalize_pci_bus_id(self._a.bdf(index))
            except AmdsmiError:
                bus = None
            return (0, bus, index) if bus else (1, "", index)
        return sorted(range(count), key=key)

    def _describe(self, device_id: str, gpu: _Gpu) -> DeviceInfo:
        info = DeviceInfo(device_id, self.name, metrics=AMD_METRICS)
        try:
            info.name = str(self._a.asic_info(gpu.index).get("market_name") or "AMD GPU")
        except AmdsmiError:
            info.name = "AMD GPU"
        try:
            gpu.has_energy = energy_joules(self._a.energy_count(gpu.index)) is not None
        except AmdsmiError as exc:
            gpu.has_energy = False
            info.energy_note = f"amdsmi has no energy counter here ({exc.message}): energy is integrated from power"
        return info

    def counters(self, now_s: float) -> list[CounterReading]:
        readings = []
        for device_id, gpu in self._gpus.items():
            if not gpu.has_energy:
                continue
            try:
                energy = energy_joules(self._a.energy_count(gpu.index))
            except AmdsmiError:
                continue
            if energy is not None:
                readings.append(CounterReading(device_id, "amdsmi energy accumulator", now_s, energy[0], energy[1],
                                               gpu.energy_update_s or DEFAULT_ENERGY_UPDATE_S))
        return readings

    def poll(self, now_s: float) -> list[Sample]:
        samples = [Sample(device_id, now_s, self._read(gpu)) for device_id, gpu in self._gpus.items()]
        for reading in self.counters(now_s):
            gpu = self._gpus[reading.device_id]
            if gpu.last_energy is not None:
                power = rate_w(gpu.last_energy, reading)
                if power is not None and reading.t_s > gpu.last_energy.t_s:
                    samples.append(Sample(reading.device_id, now_s, {"power_from_energy_w": power}))
            gpu.last_energy = reading
        return [s for s in samples if s.values]

    def _ask(self, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except AmdsmiError:
            return None

    def _read(self, gpu: _Gpu) -> dict[str, Any]:
        a, i = self._a, gpu.index
        activity = self._ask(a.gpu_activity, i) or {}
        vram = self._ask(a.vram_usage, i) or {}
        power = self._ask(a.power_info, i) or {}
        gfx, mem = self._ask(a.clock_info, i, "gfx") or {}, self._ask(a.clock_info, i, "mem") or {}
        used_mib, total_mib = _number(vram.get("vram_used")), _number(vram.get("vram_total"))
        values = {
            "utilization_percent": _number(activity.get("gfx_activity")),
            "memory_utilization_percent": _number(activity.get("umc_activity")),
            "memory_used_bytes": int(used_mib * MIB) if used_mib is not None else None,
            "memory_total_bytes": int(total_mib * MIB) if total_mib is not None else None,
            "power_w": _number(power.get("socket_power"), power.get("current_socket_power"),
                               power.get("average_socket_power")),
            "temperature_c": _number(self._ask(a.temperature_c, i, "edge")),
            "hotspot_temperature_c": _number(self._ask(a.temperature_c, i, "hotspot")),
            "gfx_clock_mhz": _number(gfx.get("clk"), gfx.get("cur_clk")),
            "memory_clock_mhz": _number(mem.get("clk"), mem.get("cur_clk")),
        }
        return {k: v for k, v in values.items() if v is not None}
