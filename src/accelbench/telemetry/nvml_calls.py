"""The NVML calls telemetry needs, added to the inventory's adapter (devices.nvml_adapter).

`PynvmlTelemetry` extends `PynvmlAdapter` (real nvidia-ml-py, imported lazily); `RecordedTelemetryNvml`
extends `RecordedNvml` so a recording can also hold time series and sample buffers, replayed against
a clock the test controls. Recording additions, per device:
    "utilization": [gpu_percent, memory_percent], "power_mw": 61000, "temperature_c": 34,
    "sm_clock_mhz": 1980, "memory_clock_mhz": 2619, "throttle_reasons": 1, "total_energy_mj": 123,
    "memory_free_bytes": ...,            # any of these may be {"series": [[t_s, value], ...]}
    "samples": {"gpu_utilization": [[t_us, value], ...], "total_power": [[t_us, mW], ...], ...},
    "sample_buffer_size": 120,           # NVML keeps only the newest samples: a ring buffer
    "processes": [[pid, used_memory_bytes or null], ...]   # compute and graphics contexts on the GPU
A series answers the last value at or before the clock (an error value raises, as elsewhere).
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

from accelbench.devices.nvml_adapter import Nvml, NvmlError, PynvmlAdapter, RecordedNvml

# our sample-buffer names -> pynvml's nvmlSamplingType_t constant names
SAMPLE_TYPES = {
    "total_power": "NVML_TOTAL_POWER_SAMPLES",
    "gpu_utilization": "NVML_GPU_UTILIZATION_SAMPLES",
    "memory_utilization": "NVML_MEMORY_UTILIZATION_SAMPLES",
    "processor_clock": "NVML_PROCESSOR_CLK_SAMPLES",
    "memory_clock": "NVML_MEMORY_CLK_SAMPLES",
}
# nvmlValueType_t -> the field of the c_nvmlValue_t union that holds it
_VALUE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


class TelemetryNvml(Nvml, Protocol):
    def utilization_percent(self, index: int) -> tuple[int, int]: ...
    def power_mw(self, index: int) -> int: ...
    def temperature_c(self, index: int) -> int: ...
    def clock_mhz(self, index: int, domain: str) -> int: ...
    def throttle_reasons(self, index: int) -> int: ...
    def total_energy_mj(self, index: int) -> int: ...
    def samples(self, index: int, kind: str, last_seen_us: int) -> list[tuple[int, float]]: ...
    def running_processes(self, index: int) -> list[tuple[int, int | None]]: ...


class PynvmlTelemetry(PynvmlAdapter):
    """The real NVML with the telemetry calls."""

    def utilization_percent(self, index: int) -> tuple[int, int]:
        rates = self._device_call("nvmlDeviceGetUtilizationRates", index)
        return int(rates.gpu), int(rates.memory)

    def power_mw(self, index: int) -> int:
        return int(self._device_call("nvmlDeviceGetPowerUsage", index))

    def temperature_c(self, index: int) -> int:
        return int(self._device_call("nvmlDeviceGetTemperature", index, self._nv.NVML_TEMPERATURE_GPU))

    def clock_mhz(self, index: int, domain: str) -> int:
        clock = {"sm": self._nv.NVML_CLOCK_SM, "memory": self._nv.NVML_CLOCK_MEM}[domain]
        return int(self._device_call("nvmlDeviceGetClockInfo", index, clock))

    def throttle_reasons(self, index: int) -> int:
        try:  # the newer name; drivers before 535 only know the "throttle" one
            return int(self._device_call("nvmlDeviceGetCurrentClocksEventReasons", index))
        except NvmlError as exc:
            if exc.code != "function_not_found":
                raise
        return int(self._device_call("nvmlDeviceGetCurrentClocksThrottleReasons", index))

    def total_energy_mj(self, index: int) -> int:
        return int(self._device_call("nvmlDeviceGetTotalEnergyConsumption", index))

    def running_processes(self, index: int) -> list[tuple[int, int | None]]:
        """(pid, GPU memory bytes or None) of every compute and graphics context on the GPU."""
        found: dict[int, int | None] = {}
        for call in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            try:
                for process in self._device_call(call, index):
                    used = getattr(process, "usedGpuMemory", None)
                    found[int(process.pid)] = int(used) if isinstance(used, int) else None
            except NvmlError as exc:
                if exc.code not in ("function_not_found", "not_supported") or call.endswith("ComputeRunningProcesses"):
                    raise
        return sorted(found.items())

    def samples(self, index: int, kind: str, last_seen_us: int) -> list[tuple[int, float]]:
        """Buffered samples newer than last_seen_us; NvmlError("not_found") when there are none."""
        constant = getattr(self._nv, SAMPLE_TYPES[kind], None)
        if constant is None:
            raise NvmlError("function_not_found", f"this nvidia-ml-py has no {SAMPLE_TYPES[kind]}")
        value_type, raw = self._device_call("nvmlDeviceGetSamples", index, constant, int(last_seen_us))
        field = _VALUE_FIELDS.get(int(value_type), "uiVal")
        return [(int(s.timeStamp), float(getattr(s.sampleValue, field))) for s in raw]


def load() -> PynvmlTelemetry:
    """The real NVML. Raises ModuleNotFoundError when nvidia-ml-py is not installed."""
    import pynvml  # lazily: only a sampler that watches NVIDIA GPUs pays for it

    return PynvmlTelemetry(pynvml)


class RecordedTelemetryNvml(RecordedNvml):
    """A recording replayed at the time `clock()` says (seconds on the sampler's clock)."""

    def __init__(self, recording: dict[str, Any], clock: Callable[[], float]):
        super().__init__(recording)
        self.clock = clock
        self.sample_calls: list[tuple[int, str, int]] = []

    def _answer(self, value: Any) -> Any:  # resolves a series to the value at clock() first
        if isinstance(value, dict) and "series" in value:
            now_s = self.clock()
            past = [v for t, v in value["series"] if t <= now_s]
            if not past:
                raise NvmlError("not_found", "no recorded value yet at this time")
            value = past[-1]
        return super()._answer(value)

    def utilization_percent(self, index: int) -> tuple[int, int]:
        gpu, memory = self._device(index, "utilization")
        return int(gpu), int(memory)

    def power_mw(self, index: int) -> int:
        return int(self._device(index, "power_mw"))

    def temperature_c(self, index: int) -> int:
        return int(self._device(index, "temperature_c"))

    def clock_mhz(self, index: int, domain: str) -> int:
        return int(self._device(index, f"{domain}_clock_mhz"))

    def throttle_reasons(self, index: int) -> int:
        return int(self._device(index, "throttle_reasons"))

    def total_energy_mj(self, index: int) -> int:
        return int(self._device(index, "total_energy_mj"))

    def running_processes(self, index: int) -> list[tuple[int, int | None]]:
        return [(int(pid), used) for pid, used in self._device(index, "processes")]

    def samples(self, index: int, kind: str, last_seen_us: int) -> list[tuple[int, float]]:
        self.sample_calls.append((index, kind, last_seen_us))
        buffers = self._device(index, "samples")
        if kind not in buffers:
            raise NvmlError("not_supported", f"no {kind} samples recorded")
        size = int(self.recording["devices"][index].get("sample_buffer_size", 120))
        now_us = self.clock() * 1e6
        held = [(int(t), float(v)) for t, v in buffers[kind] if t <= now_us][-size:]
        fresh = [(t, v) for t, v in held if t > last_seen_us]
        if not fresh:
            raise NvmlError("not_found", "no samples newer than the timestamp given")
        return fresh
