"""The devices torch can use, as torch itself reports them (opt-in: this imports torch).

Ids match the light probes (`cuda:N` in PCI order, `rocm:N`, `mps`, `xpu:N`, `cpu`) so the
inventory can merge the two views of one device; `reach` holds torch's own index. Torch adds
what NVML may lack — the SM count, the L2 size — so formula peaks the NVIDIA probe could not
compute are computed here, from torch's numbers and the light probe's clocks.
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping, Sequence

from accelbench.devices import datasheets, nvidia
from accelbench.devices.model import NOT_INSTALLED, Device, PeakFigure
from accelbench.devices.probing import ProbeFailure

# it imports its framework: `accelbench info` runs it only when asked for (devices/inventory.py)
ON_DEMAND = True

INSTALL_HINT = "pip install accelbench[torch]"


def probe(torch_module: Any = None, light_devices: Sequence[Device] = (),
          environ: Mapping[str, str] | None = None) -> list[Device]:
    """torch's GPUs (CUDA/ROCm, MPS, XPU), then the CPU; `light_devices` lets ids and peaks line up."""
    torch = torch_module if torch_module is not None else _import_torch()
    env = os.environ if environ is None else environ
    devices: list[Device] = []
    problems: list[str] = []
    for label, lister in (("CUDA/ROCm", lambda: _cuda_devices(torch, light_devices, env)),
                          ("MPS", lambda: _mps_devices(torch)), ("XPU", lambda: _xpu_devices(torch))):
        try:
            devices += lister()
        except Exception as exc:  # noqa: BLE001 - one broken backend must not hide the others
            problems.append(f"torch could not list its {label} devices: {exc}")
    devices.append(_cpu_device(torch, problems))
    return devices


def _import_torch() -> Any:
    try:
        import torch  # opt-in probe: the only place the inventory imports torch
    except ModuleNotFoundError as exc:
        raise ProbeFailure(NOT_INSTALLED, f"torch is not installed: {INSTALL_HINT}") from exc
    return torch


def _bare_uuid(uuid: Any) -> str:
    return re.sub(r"^gpu-", "", str(uuid or "").strip().lower())


def _light_match(prefix: str, uuid: str, light_devices: Sequence[Device]) -> Device | None:
    if not uuid:
        return None
    for device in light_devices:
        if device.id.startswith(prefix + ":") and _bare_uuid(device.properties.get("uuid")) == uuid:
            return device
    return None


def _leading_integers(spec: str) -> list[int]:
    """The integer entries of a *_VISIBLE_DEVICES list up to the first one that is not."""
    found = []
    for entry in spec.split(","):
        if not re.fullmatch(r"\d+", entry.strip()):
            break
        found.append(int(entry))
    return found


def accelerator_id(prefix: str, index: int, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """accelbench's id for framework device `index` when no light probe could say (no NVML)."""
    variable = "CUDA_VISIBLE_DEVICES" if prefix == "cuda" else "HIP_VISIBLE_DEVICES"
    spec = env.get(variable)
    if prefix != "cuda" and spec is None:
        spec = env.get("ROCR_VISIBLE_DEVICES", env.get("CUDA_VISIBLE_DEVICES"))
    if spec is None:
        return f"{prefix}:{index}", []
    visible = _leading_integers(spec)
    if index < len(visible):
        return f"{prefix}:{visible[index]}", []
    return f"{prefix}:{index}", [
        f"{variable}={spec!r} cannot be mapped without the light probe; "
        f"{prefix}:{index} is torch's own index and may not be the physical device's"]


def _cuda_devices(torch: Any, light_devices: Sequence[Device], env: Mapping[str, str]) -> list[Device]:
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available():
        return []
    hip = getattr(getattr(torch, "version", None), "hip", None)
    prefix = "rocm" if hip else "cuda"
    devices = []
    for index in range(cuda.device_count()):
        props = cuda.get_device_properties(index)
        light = _light_match(prefix, _bare_uuid(getattr(props, "uuid", "")), light_devices)
        if light is not None:
            device_id, warnings = light.id, list[str]()
        else:
            device_id, warnings = accelerator_id(prefix, index, env)
        devices.append(_gpu_device(torch, index, props, device_id, light, warnings, hip))
    return devices


def _positive(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and value > 0 else None


def cuda_properties(props: Any, hip: str | None) -> dict[str, Any]:
    """The properties torch.cuda.get_device_properties gives, under accelbench's names."""
    out: dict[str, Any] = {"memory_total_bytes": int(props.total_memory)}
    if hip:
        out["gcn_arch_name"] = getattr(props, "gcnArchName", None)
        out["compute_unit_count"] = props.multi_processor_count
    else:
        out["compute_capability"] = f"{props.major}.{props.minor}"
        out["sm_count"] = props.multi_processor_count
    uuid = _bare_uuid(getattr(props, "uuid", ""))
    if uuid:
        out["uuid"] = uuid if hip else f"GPU-{uuid}"
    optional = (("L2_cache_size", "l2_cache_bytes", 1), ("clock_rate", "max_sm_clock_mhz", 1000),
                ("memory_clock_rate", "max_memory_clock_mhz", 1000), ("memory_bus_width", "memory_bus_width_bits", 1))
    for attribute, name, divisor in optional:  # kHz for the clocks; absent or 0 on newer CUDA
        value = _positive(getattr(props, attribute, None))
        if value is not None:
            out[name] = value / divisor if divisor != 1 else value
    return {k: v for k, v in out.items() if v is not None}


def _gpu_device(torch: Any, index: int, props: Any, device_id: str, light: Device | None,
                warnings: list[str], hip: str | None) -> Device:
    properties = {**cuda_properties(props, hip), "torch_index": index, "torch_version": str(torch.__version__)}
    peaks: tuple[PeakFigure, ...] = ()
    if not hip:
        peaks, formula_warnings = _missing_formula_peaks(properties, light)
        warnings = warnings + formula_warnings
        if light is None:
            peaks += datasheets.table_peaks(props.name)
    return Device(
        id=device_id, kind="gpu", vendor="AMD" if hip else "NVIDIA", name=props.name, source="torch",
        memory_bytes=properties["memory_total_bytes"], properties=properties, peaks=peaks,
        reach={"torch": f"cuda:{index}"}, warnings=tuple(warnings),
    )


def _missing_formula_peaks(properties: dict[str, Any],
                           light: Device | None) -> tuple[tuple[PeakFigure, ...], list[str]]:
    """Formula peaks the light probe lacks; its clocks (NVML's maxima) win over torch's."""
    light_props = light.properties if light is not None else {}
    have = {p.metric for p in (light.peaks if light is not None else ()) if p.provenance == "formula"}
    if {"fp32", "fp64", "memory_bandwidth"} <= have:
        return (), []

    def pick(name: str) -> Any:
        return light_props.get(name, properties.get(name))

    result = nvidia.formula_peaks(
        properties.get("compute_capability"), sm_count=properties.get("sm_count"),
        max_sm_clock_mhz=pick("max_sm_clock_mhz"), max_memory_clock_mhz=pick("max_memory_clock_mhz"),
        memory_bus_width_bits=pick("memory_bus_width_bits"))
    fresh = tuple(p for p in result.peaks if p.metric not in have)
    wanted = {"fp32", "fp64", "memory_bandwidth"} - have
    still_missing = wanted - {p.metric for p in fresh}
    return fresh, list(result.warnings) if still_missing else []


def _mps_devices(torch: Any) -> list[Device]:
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if mps is None or not mps.is_available():
        return []
    properties: dict[str, Any] = {"torch_version": str(torch.__version__), "unified_memory": True}
    recommended = getattr(getattr(torch, "mps", None), "recommended_max_memory", None)
    if callable(recommended):
        properties["mps_recommended_max_memory_bytes"] = int(recommended())
    return [Device(id="mps", kind="gpu", vendor="Apple", name="Apple GPU (MPS)", source="torch",
                   properties=properties, reach={"torch": "mps"})]


def _xpu_devices(torch: Any) -> list[Device]:
    xpu = getattr(torch, "xpu", None)
    if xpu is None or not xpu.is_available():
        return []
    devices = []
    for index in range(xpu.device_count()):
        props = xpu.get_device_properties(index)
        properties: dict[str, Any] = {"memory_total_bytes": int(props.total_memory), "torch_index": index,
                      "torch_version": str(torch.__version__)}
        for attribute, name in (("max_compute_units", "compute_unit_count"), ("gpu_eu_count", "eu_count"),
                                ("driver_version", "driver_version"), ("platform_name", "platform_name")):
            if getattr(props, attribute, None) not in (None, ""):
                properties[name] = getattr(props, attribute)
        devices.append(Device(
            id=f"xpu:{index}", kind="gpu", vendor=str(getattr(props, "vendor", "Intel") or "Intel"),
            name=props.name, source="torch", memory_bytes=properties["memory_total_bytes"],
            properties=properties, peaks=datasheets.table_peaks(props.name), reach={"torch": f"xpu:{index}"}))
    return devices


def _cpu_device(torch: Any, problems: list[str]) -> Device:
    """The CPU as torch sees it; vendor and name are left to the CPU probe."""
    properties = {"torch_version": str(torch.__version__), "torch_num_threads": int(torch.get_num_threads())}
    interop = getattr(torch, "get_num_interop_threads", None)
    if callable(interop):
        properties["torch_num_interop_threads"] = int(interop())
    return Device(id="cpu", kind="cpu", vendor="", name="CPU", source="torch", properties=properties,
                  reach={"torch": "cpu"}, warnings=tuple(problems))
