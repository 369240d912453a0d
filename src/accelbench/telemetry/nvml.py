"""NVIDIA GPUs through NVML: utilisation, memory, power, temperature, clocks, throttling, energy.

NVML keeps its own sample buffers (utilisation, power, clocks), filled between our polls at the
driver's rate. Each poll asks `nvmlDeviceGetSamples` for what is newer than the newest sample it
has already seen, so no sample is lost between polls (while the buffer still holds them) and none
is counted twice. Metrics without a buffer on this board are read once per poll instead, and so is a
buffered metric that has delivered nothing new for BUFFER_STALE_S: on an H200 (driver 580) a whole
matmul run's telemetry held no SM clock while its buffer was said to be supported.

Energy comes from `nvmlDeviceGetTotalEnergyConsumption` (millijoules since the driver loaded, Volta
and later). How often the board refreshes that counter decides how short a window it can measure:
it is timed at open (watching the counter tick for a moment) rather than assumed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from accelbench.devices.nvml_adapter import NOT_OFFERED, NvmlError
from accelbench.telemetry import nvml_calls
from accelbench.telemetry.energy import rate_w, time_refresh
from accelbench.telemetry.model import (
    ERROR, NOT_INSTALLED, CounterReading, DeviceInfo, Sample, Source, SourceUnavailable,
)

# buffer -> (metric, scale from NVML's unit)
BUFFERS = {
    "gpu_utilization": ("utilization_percent", 1.0),
    "memory_utilization": ("memory_utilization_percent", 1.0),
    "total_power": ("power_w", 1e-3),
    "processor_clock": ("sm_clock_mhz", 1.0),
    "memory_clock": ("memory_clock_mhz", 1.0),
}
NVML_METRICS = ("utilization_percent", "memory_utilization_percent", "memory_used_bytes", "memory_total_bytes",
                "power_w", "power_from_energy_w", "temperature_c", "sm_clock_mhz", "memory_clock_mhz",
                "throttle_reasons", "other_processes")
THROTTLE_BITS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
# used when the counter could not be timed at open: a conservative refresh period (boards refresh
# it every 10-100 ms; A100/H100 power is known to be sampled in 100 ms windows)
DEFAULT_ENERGY_UPDATE_S = 0.1
# a buffer that gave nothing new for this long is read directly (NVML fills some only on change,
# every 1/6 s for utilisation: a shorter wait would read each period twice)
BUFFER_STALE_S = 1.0
CALIBRATE_S = 0.25
POWER_ACCURACY = 0.05  # NVML documents power readings as accurate to ±5% of the draw
_QUIET = NOT_OFFERED


def throttle_names(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]


def other_process_count(pids: list[int], own_pids: set[int]) -> int:
    """Processes on the GPU besides ours. Inside a container NVML lists host pids, so ours may not
    be recognised: then one of those listed is taken to be us (we hold a context while measuring)."""
    listed = set(pids)
    if listed & own_pids:
        return len(listed - own_pids)
    return max(0, len(listed) - 1)


@dataclass
class _Gpu:
    index: int
    buffered: set[str] = field(default_factory=set)
    last_seen_us: dict[str, int] = field(default_factory=dict)
    last_fresh_s: dict[str, float] = field(default_factory=dict)  # poll time a buffer last gave something
    unreadable: set[str] = field(default_factory=set)
    energy_update_s: float | None = None
    last_energy: CounterReading | None = None


def _init_failure(exc: Any) -> SourceUnavailable:
    from accelbench.devices import nvidia  # the inventory's wording for the same failures

    status, advice = nvidia.INIT_FAILURES.get(exc.code, (ERROR, ""))
    return SourceUnavailable(status, f"NVML: {exc.message}" + (f"; {advice}" if advice else f" ({exc.code})"))


class NvmlSource(Source):
    name = "nvml"
    vendor = "NVIDIA"
    families = ("cuda",)
    takes_device_ids = True

    def __init__(self, wanted: Sequence[str] | None = None, nvml: Any = None, calibrate_s: float = CALIBRATE_S):
        super().__init__()
        self.wanted = list(wanted) if wanted else None
        self._nvml = nvml
        self.calibrate_s = calibrate_s
        self._gpus: dict[str, _Gpu] = {}

    def open(self, now_s: float) -> None:
        nvml = self._nvml if self._nvml is not None else self._load()
        try:
            nvml.init()
        except NvmlError as exc:
            raise _init_failure(exc) from exc
        try:
            order = self._pci_order(nvml, nvml.device_count())
        except NvmlError as exc:
            nvml.shutdown()
            raise _init_failure(exc) from exc
        self._nvml = nvml
        ids = {f"cuda:{pci}": index for pci, index in enumerate(order)}
        for device_id in self.wanted or ids:
            if device_id not in ids:
                self.absent[device_id] = (f"NVML sees {len(ids)} GPU(s)"
                                          + (f" ({', '.join(ids)})" if ids else "") + f": no {device_id}")
                continue
            gpu = self._gpus[device_id] = _Gpu(ids[device_id])
            self.devices[device_id] = self._describe(device_id, gpu)
            gpu.last_fresh_s = dict.fromkeys(gpu.buffered, now_s)
        self._calibrate()

    @staticmethod
    def _load() -> Any:
        try:
            return nvml_calls.load()
        except ModuleNotFoundError as exc:
            if exc.name != "pynvml":
                raise
            from accelbench.devices.nvidia import PROC_DRIVER_VERSION, driver_version_from_proc

            driver = driver_version_from_proc()
            where = (f"an NVIDIA driver is loaded ({driver})" if driver else
                     f"no NVIDIA driver either ({PROC_DRIVER_VERSION} is absent)")
            raise SourceUnavailable(NOT_INSTALLED, f"nvidia-ml-py (pynvml) is not installed, {where}: "
                                                   "pip install accelbench[nvidia]") from exc

    @staticmethod
    def _pci_order(nvml: Any, count: int) -> list[int]:
        """NVML indices in PCI bus order: the order the inventory numbers cuda:N in."""
        from accelbench.devices.nvidia import normalize_pci_bus_id
        def key(index: int) -> tuple[int, str, int]:
            try:
                bus = normalize_pci_bus_id(nvml.pci_bus_id(index))
            except NvmlError:
                bus = None
            return (0, bus, index) if bus else (1, "", index)
        return sorted(range(count), key=key)

    def _describe(self, device_id: str, gpu: _Gpu) -> DeviceInfo:
        info = DeviceInfo(device_id, self.name, metrics=NVML_METRICS, power_accuracy=POWER_ACCURACY)
        try:
            info.name = self._nvml.name(gpu.index)
        except NvmlError:
            info.name = "NVIDIA GPU"
        for kind in BUFFERS:  # drain once: what the buffers held before we started is not ours
            try:
                gpu.last_seen_us[kind] = max(t for t, _ in self._nvml.samples(gpu.index, kind, 0))
                gpu.buffered.add(kind)
            except NvmlError as exc:
                if exc.code == "not_found":  # supported, only empty so far
                    gpu.buffered.add(kind)
                    gpu.last_seen_us[kind] = 0
        covered = {BUFFERS[kind][0] for kind in gpu.buffered}
        for metric, (reader, _) in self._point_reads(gpu, stale=set(BUFFERS)).items():
            try:
                reader()
            except NvmlError as exc:
                gpu.unreadable.add(metric)
                shown = "memory_used_bytes" if metric == "memory" else metric
                if shown not in covered:  # a buffer may still deliver it
                    info.missing[shown] = f"NVML: {exc.message} ({exc.code})"
        if "total_energy" in gpu.unreadable:
            info.missing.pop("total_energy", None)
            info.energy_note = ("no NVML energy counter on this board (Volta and later have one): "
                                "energy is integrated from power samples")
        return info

    def _point_reads(self, gpu: _Gpu, stale: set[str] | frozenset[str] = frozenset(),
                     ) -> dict[str, tuple[Callable[[], Any], Callable[[Any], dict]]]:
        """metric -> (NVML read, how to turn it into values), for what no buffer covers and for the
        buffered kinds in `stale` (nothing new in this poll)."""
        nv, i = self._nvml, gpu.index
        unbuffered = (set(BUFFERS) - gpu.buffered) | set(stale)
        reads: dict[str, tuple[Callable[[], Any], Callable[[Any], dict]]] = {
            "memory": (lambda: nv.memory_info(i),
                       lambda m: {"memory_total_bytes": m[0], "memory_used_bytes": m[0] - m[1]}),
            "temperature_c": (lambda: nv.temperature_c(i), lambda v: {"temperature_c": float(v)}),
            "throttle_reasons": (lambda: nv.throttle_reasons(i), lambda v: {"throttle_reasons": throttle_names(v)}),
            "total_energy": (lambda: nv.total_energy_mj(i), lambda v: {}),
            "other_processes": (lambda: nv.running_processes(i), lambda procs: {
                "other_processes": other_process_count([pid for pid, _ in procs], {os.getpid()})}),
        }
        if {"gpu_utilization", "memory_utilization"} & unbuffered:
            reads["utilization_percent"] = (lambda: nv.utilization_percent(i), lambda v: {
                "utilization_percent": float(v[0]), "memory_utilization_percent": float(v[1])})
        if "total_power" in unbuffered:
            reads["power_w"] = (lambda: nv.power_mw(i), lambda v: {"power_w": v / 1000})
        if "processor_clock" in unbuffered:
            reads["sm_clock_mhz"] = (lambda: nv.clock_mhz(i, "sm"), lambda v: {"sm_clock_mhz": float(v)})
        if "memory_clock" in unbuffered:
            reads["memory_clock_mhz"] = (lambda: nv.clock_mhz(i, "memory"), lambda v: {"memory_clock_mhz": float(v)})
        return reads

    def _calibrate(self) -> None:
        """Time the energy counters' refresh by watching them tick (real time, all GPUs at once)."""
        readers = {d: (lambda i=g.index: self._nvml.total_energy_mj(i))
                   for d, g in self._gpus.items() if "total_energy" not in g.unreadable}
        for device_id, refresh_s in time_refresh(readers, self.calibrate_s).items():
            self._gpus[device_id].energy_update_s = refresh_s
            self.devices[device_id].notes.append(
                f"energy counter refreshes about every {refresh_s * 1e3:.3g} ms (timed)" if refresh_s else
                f"energy counter refresh not timed: assumed {DEFAULT_ENERGY_UPDATE_S * 1e3:.0f} ms")

    def counters(self, now_s: float) -> list[CounterReading]:
        readings = []
        for device_id, gpu in self._gpus.items():
            if "total_energy" in gpu.unreadable:
                continue
            try:
                millijoules = self._nvml.total_energy_mj(gpu.index)
            except NvmlError:
                continue
            readings.append(CounterReading(device_id, "NVML total energy", now_s, millijoules / 1000, None,
                                           gpu.energy_update_s or DEFAULT_ENERGY_UPDATE_S))
        return readings

    def poll(self, now_s: float) -> list[Sample]:
        samples: list[Sample] = []
        for device_id, gpu in self._gpus.items():
            drained = self._drain(device_id, gpu)
            fresh = {metric for s in drained for metric in s.values}
            for kind in gpu.buffered:
                if BUFFERS[kind][0] in fresh:
                    gpu.last_fresh_s[kind] = now_s
            stale = {kind for kind in gpu.buffered if now_s - gpu.last_fresh_s.get(kind, now_s) >= BUFFER_STALE_S}
            samples += drained
            samples.append(Sample(device_id, now_s, self._read_points(device_id, gpu, stale)))
        for reading in self.counters(now_s):  # a rate from two samples of the counter
            gpu = self._gpus[reading.device_id]
            if gpu.last_energy is not None:
                power = rate_w(gpu.last_energy, reading)
                if power is not None and reading.t_s > gpu.last_energy.t_s:
                    samples.append(Sample(reading.device_id, now_s, {"power_from_energy_w": power}))
            gpu.last_energy = reading
        return [s for s in samples if s.values]

    def _drain(self, device_id: str, gpu: _Gpu) -> list[Sample]:
        """Every buffered sample newer than the newest seen; each sample at its own time stamp."""
        samples = []
        for kind in sorted(gpu.buffered):
            metric, scale = BUFFERS[kind]
            try:
                fresh = self._nvml.samples(gpu.index, kind, gpu.last_seen_us[kind])
            except NvmlError as exc:
                if exc.code != "not_found":  # not_found: nothing new since the last poll
                    self.devices[device_id].missing.setdefault(metric, f"NVML: {exc.message} ({exc.code})")
                continue
            fresh = sorted((t, v) for t, v in fresh if t > gpu.last_seen_us[kind])  # never count one twice
            if fresh:
                self._check_gap(device_id, kind, gpu.last_seen_us[kind], [t for t, _ in fresh])
                gpu.last_seen_us[kind] = fresh[-1][0]
            samples += [Sample(device_id, t / 1e6, {metric: v * scale}) for t, v in fresh]
        return samples

    def _check_gap(self, device_id: str, kind: str, last_seen_us: int, times_us: list[int]) -> None:
        """Note when the oldest new sample is far newer than the last one seen: the ring buffer overflowed."""
        if last_seen_us <= 0 or len(times_us) < 3:
            return
        spacing_us = sorted(b - a for a, b in zip(times_us, times_us[1:]))[len(times_us) // 2 - 1]
        if spacing_us > 0 and times_us[0] - last_seen_us > 5 * spacing_us:
            note = (f"NVML's {kind} buffer overflowed between polls (about {(times_us[0] - last_seen_us) / 1e6:.2g} s "
                    "of samples lost): poll more often")
            notes = self.devices[device_id].notes
            if note.split(" (")[0] not in " ".join(notes):
                notes.append(note)

    def _read_points(self, device_id: str, gpu: _Gpu, stale: set[str]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for metric, (reader, convert) in self._point_reads(gpu, stale).items():
            if metric in gpu.unreadable:
                continue
            try:
                values.update(convert(reader()))
            except NvmlError as exc:
                note = f"NVML {metric}: {exc.message} ({exc.code})"
                if exc.code not in _QUIET and note not in self.devices[device_id].notes:
                    self.devices[device_id].notes.append(note)
        return values

    def close(self) -> None:
        if self._nvml is None:
            return
        try:
            self._nvml.shutdown()
        except Exception:  # noqa: BLE001 - nothing left that matters once sampling is over
            pass
