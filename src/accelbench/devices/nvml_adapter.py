"""The few NVML calls the NVIDIA probe makes, behind one small interface.

`PynvmlAdapter` calls the real library (nvidia-ml-py, imported when `load()` runs);
`RecordedNvml` replays a JSON recording of one machine, failures included, so the probe is
tested without a GPU. Both raise `NvmlError` with a symbolic code ("not_supported",
"driver_not_loaded", "no_permission", ...), so the probe never sees pynvml's own classes.

Recording format (tests/data/nvml/*.json):
    {"description": ..., "init": null | {"error": CODE, "message": ...},
     "driver_version": "384.90", "cuda_driver_version": 9000,
     "devices": [{"name": ..., "uuid": ..., "pci_bus_id": ..., "compute_capability": [3, 5],
                  "num_gpu_cores": 2880, "max_sm_clock_mhz": 745, "max_memory_clock_mhz": 3004,
                  "memory_total_bytes": ..., "memory_free_bytes": ..., "memory_bus_width_bits": 384,
                  "pcie_generation_current": 3, "pcie_generation_max": 3,
                  "pcie_width_current": 16, "pcie_width_max": 16,
                  "ecc_mode": [true, true], "mig_mode": {"error": "not_supported"},
                  "power_limit_mw": 235000}]}
Any value may be {"error": CODE, "message": ...}: the call raises instead of answering. A field
left out of a device answers "not_supported", as NVML does for a query a board lacks.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Protocol


# the NVML error codes that say a device or driver does not offer a value (no fault)
NOT_OFFERED = ("not_supported", "function_not_found")


class NvmlError(Exception):
    """An NVML call failed; `code` is NVML's error name in lower case ("not_supported")."""

    def __init__(self, code: str, message: str = ""):
        super().__init__(message or code.replace("_", " "))
        self.code = code
        self.message = message or code.replace("_", " ")


class Nvml(Protocol):
    def init(self) -> None: ...
    def shutdown(self) -> None: ...
    def driver_version(self) -> str: ...
    def cuda_driver_version(self) -> int: ...
    def device_count(self) -> int: ...
    def name(self, index: int) -> str: ...
    def uuid(self, index: int) -> str: ...
    def pci_bus_id(self, index: int) -> str: ...
    def compute_capability(self, index: int) -> tuple[int, int]: ...
    def num_gpu_cores(self, index: int) -> int: ...
    def max_clock_mhz(self, index: int, domain: str) -> int: ...
    def memory_info(self, index: int) -> tuple[int, int]: ...
    def memory_bus_width_bits(self, index: int) -> int: ...
    def pcie_generation(self, index: int, which: str) -> int: ...
    def pcie_width(self, index: int, which: str) -> int: ...
    def ecc_mode(self, index: int) -> tuple[bool, bool]: ...
    def mig_mode(self, index: int) -> tuple[bool, bool]: ...
    def power_limit_mw(self, index: int) -> int: ...


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class PynvmlAdapter:
    """The real NVML, through the pynvml module given (see `load`)."""

    def __init__(self, pynvml: Any):
        self._nv = pynvml
        self._codes = {getattr(pynvml, n): n[len("NVML_ERROR_"):].lower()
                       for n in dir(pynvml) if n.startswith("NVML_ERROR_")}
        self._handles: dict[int, Any] = {}

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except self._nv.NVMLError as exc:
            raise NvmlError(self._codes.get(getattr(exc, "value", None), "unknown"), str(exc)) from exc

    def _handle(self, index: int) -> Any:
        if index not in self._handles:
            self._handles[index] = self._call(self._nv.nvmlDeviceGetHandleByIndex, index)
        return self._handles[index]

    def _device_call(self, fn_name: str, index: int, *args: Any) -> Any:
        fn = getattr(self._nv, fn_name, None)
        if fn is None:  # an nvidia-ml-py older than the call
            raise NvmlError("function_not_found", f"this nvidia-ml-py has no {fn_name}")
        return self._call(fn, self._handle(index), *args)

    def init(self) -> None:
        self._call(self._nv.nvmlInit)

    def shutdown(self) -> None:
        self._handles.clear()
        self._call(self._nv.nvmlShutdown)

    def driver_version(self) -> str:
        return _text(self._call(self._nv.nvmlSystemGetDriverVersion))

    def cuda_driver_version(self) -> int:
        return int(self._call(self._nv.nvmlSystemGetCudaDriverVersion))

    def device_count(self) -> int:
        return int(self._call(self._nv.nvmlDeviceGetCount))

    def name(self, index: int) -> str:
        return _text(self._device_call("nvmlDeviceGetName", index))

    def uuid(self, index: int) -> str:
        return _text(self._device_call("nvmlDeviceGetUUID", index))

    def pci_bus_id(self, index: int) -> str:
        return _text(self._device_call("nvmlDeviceGetPciInfo", index).busId)

    def compute_capability(self, index: int) -> tuple[int, int]:
        major, minor = self._device_call("nvmlDeviceGetCudaComputeCapability", index)
        return int(major), int(minor)

    def num_gpu_cores(self, index: int) -> int:
        return int(self._device_call("nvmlDeviceGetNumGpuCores", index))

    def max_clock_mhz(self, index: int, domain: str) -> int:
        clock = {"sm": self._nv.NVML_CLOCK_SM, "memory": self._nv.NVML_CLOCK_MEM}[domain]
        return int(self._device_call("nvmlDeviceGetMaxClockInfo", index, clock))

    def memory_info(self, index: int) -> tuple[int, int]:
        info = self._device_call("nvmlDeviceGetMemoryInfo", index)
        return int(info.total), int(info.free)

    def memory_bus_width_bits(self, index: int) -> int:
        return int(self._device_call("nvmlDeviceGetMemoryBusWidth", index))

    def pcie_generation(self, index: int, which: str) -> int:
        name = {"current": "nvmlDeviceGetCurrPcieLinkGeneration", "max": "nvmlDeviceGetMaxPcieLinkGeneration"}
        return int(self._device_call(name[which], index))

    def pcie_width(self, index: int, which: str) -> int:
        name = {"current": "nvmlDeviceGetCurrPcieLinkWidth", "max": "nvmlDeviceGetMaxPcieLinkWidth"}
        return int(self._device_call(name[which], index))

    def ecc_mode(self, index: int) -> tuple[bool, bool]:
        current, pending = self._device_call("nvmlDeviceGetEccMode", index)
        return bool(current), bool(pending)

    def mig_mode(self, index: int) -> tuple[bool, bool]:
        current, pending = self._device_call("nvmlDeviceGetMigMode", index)
        return bool(current), bool(pending)

    def power_limit_mw(self, index: int) -> int:
        return int(self._device_call("nvmlDeviceGetPowerManagementLimit", index))


def load() -> PynvmlAdapter:
    """The real NVML. Raises ModuleNotFoundError when nvidia-ml-py is not installed."""
    import pynvml  # lazily: `accelbench info` must not pay for it unless probing NVIDIA

    return PynvmlAdapter(pynvml)


class RecordedNvml:
    """Replays a recording (see the module docstring) through the `Nvml` interface."""

    def __init__(self, recording: dict[str, Any]):
        self.recording = recording
        self.initialized = False
        self.shutdown_calls = 0

    @classmethod
    def from_file(cls, path: str | Path) -> "RecordedNvml":
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def _answer(self, value: Any) -> Any:
        if isinstance(value, dict) and "error" in value:
            raise NvmlError(value["error"], value.get("message", ""))
        return value

    def _device(self, index: int, field: str) -> Any:
        self._require_init()
        devices = self.recording.get("devices", [])
        if not 0 <= index < len(devices):
            raise NvmlError("invalid_argument", f"no device {index} in the recording")
        if field not in devices[index]:
            raise NvmlError("not_supported", f"{field} not recorded")
        return self._answer(devices[index][field])

    def init(self) -> None:
        self._answer(self.recording.get("init"))
        self.initialized = True

    def shutdown(self) -> None:
        self.shutdown_calls += 1
        self.initialized = False

    def _require_init(self) -> None:
        if not self.initialized:
            raise NvmlError("uninitialized", "NVML used before init")

    def driver_version(self) -> str:
        self._require_init()
        return str(self._answer(self.recording.get("driver_version", {"error": "not_supported"})))

    def cuda_driver_version(self) -> int:
        self._require_init()
        return int(self._answer(self.recording.get("cuda_driver_version", {"error": "not_supported"})))

    def device_count(self) -> int:
        self._require_init()
        return int(self._answer(self.recording.get("device_count", len(self.recording.get("devices", [])))))

    def name(self, index: int) -> str:
        return str(self._device(index, "name"))

    def uuid(self, index: int) -> str:
        return str(self._device(index, "uuid"))

    def pci_bus_id(self, index: int) -> str:
        return str(self._device(index, "pci_bus_id"))

    def compute_capability(self, index: int) -> tuple[int, int]:
        major, minor = self._device(index, "compute_capability")
        return int(major), int(minor)

    def num_gpu_cores(self, index: int) -> int:
        return int(self._device(index, "num_gpu_cores"))

    def max_clock_mhz(self, index: int, domain: str) -> int:
        return int(self._device(index, {"sm": "max_sm_clock_mhz", "memory": "max_memory_clock_mhz"}[domain]))

    def memory_info(self, index: int) -> tuple[int, int]:
        return int(self._device(index, "memory_total_bytes")), int(self._device(index, "memory_free_bytes"))

    def memory_bus_width_bits(self, index: int) -> int:
        return int(self._device(index, "memory_bus_width_bits"))

    def pcie_generation(self, index: int, which: str) -> int:
        return int(self._device(index, f"pcie_generation_{which}"))

    def pcie_width(self, index: int, which: str) -> int:
        return int(self._device(index, f"pcie_width_{which}"))

    def ecc_mode(self, index: int) -> tuple[bool, bool]:
        current, pending = self._device(index, "ecc_mode")
        return bool(current), bool(pending)

    def mig_mode(self, index: int) -> tuple[bool, bool]:
        current, pending = self._device(index, "mig_mode")
        return bool(current), bool(pending)

    def power_limit_mw(self, index: int) -> int:
        return int(self._device(index, "power_limit_mw"))
