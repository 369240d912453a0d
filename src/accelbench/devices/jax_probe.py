"""The devices jax can use (opt-in: this imports jax).

jax lists one platform at a time, and asking for a platform it has no plugin for raises, so
each known platform is tried in turn. Ids match the light probes: the CPU is "cpu" (however
many host devices jax was told to fake), GPUs are `cuda:N` / `rocm:N`, TPUs `tpu:N`.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from accelbench.devices.model import NOT_INSTALLED, Device
from accelbench.devices.probing import ProbeFailure
from accelbench.devices.torch_probe import accelerator_id

# it imports its framework: `accelbench info` runs it only when asked for (devices/inventory.py)
ON_DEMAND = True

INSTALL_HINT = "pip install accelbench[jax]"
# jax platform name -> (accelbench id prefix, kind, vendor)
_PLATFORMS = {
    "cuda": ("cuda", "gpu", "NVIDIA"),
    "rocm": ("rocm", "gpu", "AMD"),
    "tpu": ("tpu", "accelerator", "Google"),
    "METAL": ("mps", "gpu", "Apple"),
}


def probe(jax_module: Any = None, environ: Mapping[str, str] | None = None) -> list[Device]:
    jax = jax_module if jax_module is not None else _import_jax()
    env = os.environ if environ is None else environ
    version = str(getattr(jax, "__version__", "unknown"))
    devices: list[Device] = []
    for platform, (prefix, kind, vendor) in _PLATFORMS.items():
        for index, jax_device in enumerate(_platform_devices(jax, platform)):
            devices.append(_accelerator(jax_device, index, platform, prefix, kind, vendor, version, env))
    cpus = _platform_devices(jax, "cpu")
    if cpus:
        devices.append(Device(
            id="cpu", kind="cpu", vendor="", name="CPU", source="jax",
            properties={"jax_version": version, "jax_cpu_device_count": len(cpus)}, reach={"jax": "cpu:0"}))
    return devices


def _import_jax() -> Any:
    try:
        import jax  # opt-in probe: the only place the inventory imports jax
    except ModuleNotFoundError as exc:
        raise ProbeFailure(NOT_INSTALLED, f"jax is not installed: {INSTALL_HINT}") from exc
    return jax


def _platform_devices(jax: Any, platform: str) -> list[Any]:
    """This process's devices on `platform`; none when jax has no backend for it."""
    try:
        listed = jax.local_devices(backend=platform) if hasattr(jax, "local_devices") else jax.devices(platform)
    except RuntimeError:  # "Unknown backend" / "Backend 'cuda' failed to initialize"
        return []
    return list(listed)


def _memory_bytes(jax_device: Any) -> int | None:
    try:
        stats = jax_device.memory_stats()
    except Exception:  # noqa: BLE001 - not every backend implements memory_stats
        return None
    limit = (stats or {}).get("bytes_limit")
    return int(limit) if limit else None


def _accelerator(jax_device: Any, index: int, platform: str, prefix: str, kind: str, vendor: str,
                 version: str, env: Mapping[str, str]) -> Device:
    if prefix in ("cuda", "rocm"):
        device_id, warnings = accelerator_id(prefix, index, env)
    else:
        device_id, warnings = ("mps" if prefix == "mps" else f"{prefix}:{index}"), []
    name = str(getattr(jax_device, "device_kind", "") or f"jax {platform} device")
    properties: dict[str, Any] = {"jax_version": version, "jax_platform": platform,
                                  "jax_device_id": getattr(jax_device, "id", index)}
    memory = _memory_bytes(jax_device)
    if memory:
        properties["jax_memory_limit_bytes"] = memory
    return Device(id=device_id, kind=kind, vendor=vendor, name=name, source="jax", properties=properties,
                  reach={"jax": f"{platform}:{index}"}, warnings=tuple(warnings))
