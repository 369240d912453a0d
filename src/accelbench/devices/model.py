"""The inventory's data types: devices, their theoretical peaks, and probe outcomes.

Property names carry their unit as a suffix (`memory_total_bytes`, `max_sm_clock_mhz`), so every
number can be rendered with its unit and a JSON reader never has to guess.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

# Probe outcomes. A probe never raises to the inventory: it reports one of these.
OK = "ok"
NOT_INSTALLED = "not_installed"
NO_DRIVER = "no_driver"
VERSION_MISMATCH = "version_mismatch"
NO_PERMISSION = "no_permission"
NOT_SUPPORTED = "not_supported"
ERROR = "error"
PROBE_STATUSES = (OK, NOT_INSTALLED, NO_DRIVER, VERSION_MISMATCH, NO_PERMISSION, NOT_SUPPORTED, ERROR)

# Peak metrics: FLOP/s for arithmetic, bytes/s for memory.
PEAK_METRICS = (
    "fp64", "fp32", "fp16", "bf16",
    "fp64_matrix", "tf32_matrix", "fp16_matrix", "bf16_matrix", "int8_matrix",
    "memory_bandwidth",
)
PROVENANCES = ("formula", "table", "measured")
DEVICE_KINDS = ("cpu", "gpu", "accelerator")


def peak_unit(metric: str) -> str:
    if metric == "memory_bandwidth":
        return "B/s"
    if metric.startswith("int8"):
        return "OP/s"
    return "FLOP/s"


@dataclass(frozen=True)
class PeakFigure:
    """One theoretical or measured ceiling of a device, with where it came from.

    provenance "formula": `detail` shows the inputs ("2880 cores × 0.745 GHz × 2 FLOP/cycle");
    "table": `detail` names the datasheet; "measured": `detail` names the run and workload.
    """

    metric: str
    value: float
    provenance: str
    detail: str
    inputs: dict[str, Any] = field(default_factory=dict)

    @property
    def unit(self) -> str:
        return peak_unit(self.metric)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "value": self.value,
            "unit": self.unit,
            "provenance": self.provenance,
            "detail": self.detail,
            "inputs": dict(self.inputs),
        }


@dataclass(frozen=True)
class Device:
    """A snapshot of one device as a probe saw it.

    `id` is accelbench's own name ("cpu", "cuda:0", "rocm:0", "mps", "xpu:0", "opencl:0:0");
    `reach` maps each installed backend that can use the device to the id it knows it by.
    """

    id: str
    kind: str
    vendor: str
    name: str
    source: str
    memory_bytes: int | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    peaks: tuple[PeakFigure, ...] = ()
    reach: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def peak(self, metric: str, provenance: str | None = None) -> PeakFigure | None:
        """The figure for `metric`: of that provenance, else the best-founded one present."""
        order = (provenance,) if provenance else ("measured", "table", "formula")
        for wanted in order:
            for figure in self.peaks:
                if figure.metric == metric and figure.provenance == wanted:
                    return figure
        return None

    @property
    def visible_index(self) -> int | None:
        """The index frameworks in this process number this GPU by (CUDA_/HIP_VISIBLE_DEVICES
        applied); None where the variable hides it, or for a device that is not a numbered GPU."""
        for key in ("cuda_visible_index", "hip_visible_index"):
            value = self.properties.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    @property
    def on_host_cpu(self) -> bool:
        """An OpenCL device of type CPU (PoCL, Intel's CPU runtime): the host's own cores."""
        return str(self.properties.get("device_type", "")).upper() == "CPU"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "vendor": self.vendor,
            "name": self.name,
            "source": self.source,
            "memory_bytes": self.memory_bytes,
            "properties": dict(self.properties),
            "peaks": [p.to_dict() for p in self.peaks],
            "reach": dict(self.reach),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class ProbeReport:
    """What one probe (cpu, nvidia, opencl, ...) found, or why it found nothing."""

    probe: str
    status: str
    message: str = ""
    devices: tuple[Device, ...] = ()
    elapsed_s: float = 0.0
    debug: str | None = None  # the raw exception, shown with --debug only

    def to_dict(self, include_debug: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "probe": self.probe,
            "status": self.status,
            "message": self.message,
            "elapsed_s": round(self.elapsed_s, 6),
            "device_ids": [d.id for d in self.devices],
        }
        if include_debug and self.debug:
            data["debug"] = self.debug
        return data


def device_from_dict(data: dict[str, Any]) -> Device:
    """A Device from its to_dict() form (a stored inventory, a probe run in a child process)."""
    peaks = tuple(PeakFigure(p["metric"], float(p["value"]), p.get("provenance", "table"),
                             str(p.get("detail", "")), dict(p.get("inputs") or {}))
                  for p in data.get("peaks", ()))
    return Device(id=str(data["id"]), kind=str(data.get("kind", "")), vendor=str(data.get("vendor", "")),
                  name=str(data.get("name", data["id"])), source=str(data.get("source", "")),
                  memory_bytes=data.get("memory_bytes"), properties=dict(data.get("properties") or {}),
                  peaks=peaks, reach=dict(data.get("reach") or {}),
                  warnings=tuple(str(w) for w in data.get("warnings", ())))


def repeated_host_cpus(devices: Iterable[Device]) -> dict[str, str]:
    """Each OpenCL device on the host CPU after the first, mapped to that first one: two OpenCL
    implementations (apt's PoCL and pip's, say) of the same processor are one processor."""
    hosted = [d.id for d in devices if d.on_host_cpu]
    return {later: hosted[0] for later in hosted[1:]}
