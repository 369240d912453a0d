"""The CPU through psutil: per-core utilisation, clocks, memory, this process's memory, temperature.

Utilisation is computed from `cpu_times` differences between two polls (not `cpu_percent`, whose
state is global to the process and would be disturbed by any other caller). /proc/stat counts in
ticks of 10 ms, so an interval shorter than a tick has no utilisation sample, and says so.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from accelbench.telemetry.model import NOT_INSTALLED, DeviceInfo, Sample, Source, SourceUnavailable

CPU_METRICS = ("utilization_percent", "max_core_utilization_percent", "frequency_mhz",
               "min_core_frequency_mhz", "memory_used_bytes", "memory_total_bytes", "process_rss_bytes",
               "temperature_c")
# psutil.sensors_temperatures() chips that measure the CPU itself
CPU_SENSOR_CHIPS = ("coretemp", "k10temp", "zenpower", "cpu_thermal", "cpu-thermal", "acpitz")
CPUFREQ_DIR = "/sys/devices/system/cpu/cpu0/cpufreq"


def busy_percent(before: Any, after: Any) -> float | None:
    """Busy share between two psutil cpu_times readings of one core; None if no tick elapsed."""
    fields = after._fields
    total = sum(getattr(after, f) - getattr(before, f) for f in fields)
    # guest time is already counted in user and nice on Linux
    total -= sum(getattr(after, f) - getattr(before, f) for f in ("guest", "guest_nice") if f in fields)
    idle = sum(getattr(after, f) - getattr(before, f) for f in ("idle", "iowait") if f in fields)
    if total <= 0:
        return None
    return max(0.0, min(100.0, 100.0 * (total - idle) / total))


def cpu_name(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The processor's model name (Linux /proc/cpuinfo, else what the platform module says)."""
    try:
        for line in Path(cpuinfo).read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "CPU"


def _label_nominal_clock(info: DeviceInfo) -> None:
    """Without cpufreq (a VM) /proc/cpuinfo gives the nominal clock, not the running one: say so,
    and give the running clock `accelbench info` estimates (a 10 ms multiply chain, once)."""
    from accelbench.devices.cpu_clock import estimate_running_clock

    info.labels.update({"frequency_mhz": "Nominal clock", "min_core_frequency_mhz": "Min core nominal clock"})
    estimate = estimate_running_clock()
    running = (f"the cores ran at about {estimate.ghz * 1000:,.0f} MHz when this started ({estimate.method} "
               "estimate, as `accelbench info` shows)" if estimate.ghz else
               f"no running-clock estimate ({estimate.reason})")
    info.notes.append(f"no cpufreq driver here (usual in a VM): the nominal clock is /proc/cpuinfo's; {running}")


class PsutilSource(Source):
    name = "psutil"
    vendor = "CPU"
    families = ("cpu",)

    def __init__(self, psutil_module: Any = None, cpufreq_dir: str = CPUFREQ_DIR):
        super().__init__()
        self._psutil = psutil_module
        self._cpufreq_dir = cpufreq_dir
        self._times: list[Any] = []
        self._process: Any = None
        self._has_temperature = False

    def open(self, now_s: float) -> None:
        if self._psutil is None:
            try:
                import psutil  # a declared dependency, but imported here to keep `import accelbench` light
            except ModuleNotFoundError as exc:
                raise SourceUnavailable(NOT_INSTALLED, "psutil is not installed: pip install psutil") from exc
            self._psutil = psutil
        ps = self._psutil
        self._times = list(ps.cpu_times(percpu=True))
        self._process = ps.Process(os.getpid())
        info = DeviceInfo("cpu", self.name, name=cpu_name(), metrics=CPU_METRICS)
        for metric in ("utilization_percent", "max_core_utilization_percent"):
            info.hints[metric] = "the kernel counts CPU time in 10 ms ticks"
        self._has_temperature = self._cpu_temperature() is not None
        if not self._has_temperature:
            info.missing["temperature_c"] = ("no CPU temperature sensor is exposed (psutil found no coretemp/"
                                             "k10temp sensor; usual in a VM or container)")
        if sys.platform.startswith("linux") and not Path(self._cpufreq_dir).exists():
            _label_nominal_clock(info)
        self.devices = {"cpu": info}

    def _cpu_temperature(self) -> float | None:
        reader = getattr(self._psutil, "sensors_temperatures", None)
        if reader is None:
            return None
        try:
            sensors = reader()
        except Exception:  # noqa: BLE001 - a broken hwmon entry must not stop the sampler
            return None
        readings = [entry.current for chip, entries in sensors.items() if chip in CPU_SENSOR_CHIPS
                    for entry in entries if entry.current is not None]
        return max(readings) if readings else None

    def poll(self, now_s: float) -> list[Sample]:
        ps = self._psutil
        times = list(ps.cpu_times(percpu=True))
        busy = [busy_percent(a, b) for a, b in zip(self._times, times)]
        self._times = times
        values: dict[str, Any] = {}
        cores = [b for b in busy if b is not None]
        if cores:
            values["utilization_percent"] = sum(cores) / len(cores)
            values["max_core_utilization_percent"] = max(cores)
            values["core_utilization_percent"] = busy
        values.update(self._frequencies())
        memory = ps.virtual_memory()
        values["memory_total_bytes"] = int(memory.total)
        values["memory_used_bytes"] = int(memory.total - memory.available)
        try:
            values["process_rss_bytes"] = int(self._process.memory_info().rss)
        except Exception:  # noqa: BLE001 - the process table can refuse; the rest still counts
            pass
        if self._has_temperature:
            temperature = self._cpu_temperature()
            if temperature is not None:
                values["temperature_c"] = float(temperature)
        return [Sample("cpu", now_s, values)]

    def _frequencies(self) -> dict[str, float]:
        try:
            per_core = self._psutil.cpu_freq(percpu=True) or []
        except Exception:  # noqa: BLE001 - some platforms have no frequency interface at all
            return {}
        mhz = [f.current for f in per_core if f and f.current]
        if not mhz:
            return {}
        return {"frequency_mhz": sum(mhz) / len(mhz), "min_core_frequency_mhz": min(mhz)}
