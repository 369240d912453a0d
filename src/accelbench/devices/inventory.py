"""The device inventory: run the probes, merge what they say about each device, add measured ceilings.

Probes are plugins (entry-point group `accelbench.probes`, accelbench/plugins.py): a target is a
function returning a list of Devices. Light probes run by default and keep `accelbench info` under
a second; a probe whose module sets `ON_DEMAND = True` (torch, jax: they import their framework)
runs only when asked for.
"""
from __future__ import annotations

import importlib
import os
import platform
import socket
import sys
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from accelbench._version import __version__
from accelbench.devices import isolated
from accelbench.devices.model import Device, PeakFigure, ProbeReport
from accelbench.devices.probing import run_probe
from accelbench.errors import UsageError
from accelbench.plugins import PROBES_GROUP, load_target, plugin_targets, builtin_targets

SCHEMA_VERSION = 1

# name -> "module:attribute" of accelbench's own, as pyproject.toml declares them (listed there only)
BUILTIN_PROBES: dict[str, str] = builtin_targets(PROBES_GROUP)

# environment variables that decide which devices a framework sees, or how it runs
DEVICE_ENV_VARS = (
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK", "PYOPENCL_CTX", "POCL_DEVICES", "OCL_ICD_VENDORS", "JAX_PLATFORMS",
    "XLA_FLAGS", "PYTORCH_ENABLE_MPS_FALLBACK", "ACCELBENCH_DEVICE", "ACCELBENCH_DB",
)


@dataclass(frozen=True)
class Inventory:
    host: dict[str, Any]
    probes: tuple[ProbeReport, ...]
    devices: tuple[Device, ...]
    environment: dict[str, str] = field(default_factory=dict)

    def device(self, device_id: str) -> Device | None:
        return next((d for d in self.devices if d.id == device_id), None)

    def to_dict(self, include_debug: bool = False) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "host": dict(self.host),
            "environment": dict(self.environment),
            "probes": [p.to_dict(include_debug) for p in self.probes],
            "devices": [d.to_dict() for d in self.devices],
        }


def probe_targets() -> dict[str, str]:
    """Every probe: name -> "module:function", built-ins first."""
    return plugin_targets(PROBES_GROUP, BUILTIN_PROBES)


def probe_names() -> tuple[str, ...]:
    return tuple(probe_targets())


def default_probes() -> tuple[str, ...]:
    """The probes `accelbench info` runs unasked: all but those whose module is ON_DEMAND."""
    return tuple(name for name, target in probe_targets().items() if not _on_demand(target))


def _on_demand(target: str) -> bool:
    try:
        module = importlib.import_module(target.partition(":")[0])
    except Exception:  # noqa: BLE001 - a broken probe runs by default, so its failure is shown
        return False
    return bool(getattr(module, "ON_DEMAND", False))


def parse_probe_names(text: str | None) -> tuple[str, ...]:
    """'cpu,torch' -> ('cpu', 'torch'); 'all' -> every probe; None -> the light defaults."""
    if not text:
        return default_probes()
    known = probe_names()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if names == ("all",):
        return known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown probe {', '.join(map(repr, unknown))}; accepted: {', '.join(known)}, all")
    return names


def collect_inventory(probes: Iterable[str] | None = None) -> Inventory:
    """What the probes find. Measured ceilings are the results store's to give (with_measured_peaks;
    store/ceilings.py measured_inventory reads them): the inventory never opens the store.
    `probes`: names (None: the defaults)."""
    reports = [run_probe(name, _loader(name)) for name in (default_probes() if probes is None else probes)]
    devices = merge_devices(d for report in reports for d in report.devices)
    return Inventory(host=host_info(), probes=tuple(reports), devices=tuple(devices),
                     environment={k: os.environ[k] for k in DEVICE_ENV_VARS if k in os.environ})


def _loader(name: str) -> Callable[[], list[Device]]:
    def load_and_probe() -> list[Device]:
        target = probe_targets()[name]
        # a driver's native library may abort its process: such a probe runs in a child (isolated.py)
        if isolated.wants_child(importlib.import_module(target.partition(":")[0])):
            return isolated.probe_in_child(name, target)
        return load_target(target)()
    return load_and_probe


def merge_devices(devices: Iterable[Device]) -> list[Device]:
    """One Device per id: later probes fill what earlier ones left out, never overwrite it."""
    merged: dict[str, Device] = {}
    for device in devices:
        merged[device.id] = merge_pair(merged[device.id], device) if device.id in merged else device
    return list(merged.values())


def merge_pair(first: Device, second: Device) -> Device:
    properties = {**second.properties, **{k: v for k, v in first.properties.items() if v is not None}}
    seen = {(p.metric, p.provenance) for p in first.peaks}
    peaks = first.peaks + tuple(p for p in second.peaks if (p.metric, p.provenance) not in seen)
    return replace(
        first,
        name=first.name if first.name and "unknown" not in first.name else second.name,
        vendor=first.vendor if first.vendor and first.vendor != "unknown" else second.vendor,
        memory_bytes=first.memory_bytes or second.memory_bytes,
        properties=properties, peaks=peaks,
        reach={**second.reach, **first.reach},
        warnings=first.warnings + tuple(w for w in second.warnings if w not in first.warnings),
        source=first.source if second.source in first.source else f"{first.source}+{second.source}",
    )


def with_measured_peaks(inventory: Inventory, ceilings: dict) -> Inventory:
    """The inventory with measured ceilings ((device id, metric) -> MeasuredCeiling) as peaks."""
    return replace(inventory, devices=tuple(add_measured_peaks(d, ceilings) for d in inventory.devices))


def add_measured_peaks(device: Device, ceilings: dict) -> Device:
    """`device` with its measured ceilings (store/ceilings.py: (device id, metric) -> MeasuredCeiling)
    as "measured" peak figures, replacing any it had."""
    mine = {metric: c for (device_id, metric), c in ceilings.items() if device_id == device.id}
    if not mine:
        return device
    figures, warnings = list(device.peaks), list(device.warnings)
    for metric, ceiling in mine.items():
        measured = PeakFigure(metric, ceiling.value, "measured", f"{ceiling.spec.label()} in run {ceiling.run_id}",
                              {"run_id": ceiling.run_id, "workload": ceiling.spec.workload,
                               **{k: v for k, v in ceiling.spec.params if k in ("dtype", "kernel")}})
        figures = [f for f in figures if not (f.metric == metric and f.provenance == "measured")] + [measured]
        formula = device.peak(metric, "formula")
        if formula and measured.value > 1.1 * formula.value:
            warnings.append(
                f"measured {metric} {measured.value / 1e9:.0f} G{measured.unit} exceeds the formula "
                f"{formula.value / 1e9:.0f} G{formula.unit} by {measured.value / formula.value - 1:.0%}: "
                "the formula's clock is below the one the chip runs at (turbo)")
    return replace(device, peaks=tuple(figures), warnings=tuple(warnings))


def host_info() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "os": platform.system(),
        "os_release": platform.release(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "accelbench": __version__,
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
