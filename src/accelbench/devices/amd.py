"""AMD GPUs: through amdsmi when it is installed, else from what the amdgpu driver puts in sysfs.

Ids are `rocm:N` in PCI bus order. `AmdsmiAdapter` wraps the real amdsmi module (imported in
`load()`); `RecordedAmdsmi` replays a JSON recording (tests/data/amd/*.json) through the same
interface. The sysfs fallback reads /sys/class/drm/card*/device: vendor 0x1002, the VRAM size,
the product name where the board has one — enough to list the device, not to compute peaks.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from accelbench.devices import datasheets, device_query_load
from accelbench.devices.device_query import AttributeSource
from accelbench.devices.model import NO_DRIVER, NO_PERMISSION, NOT_INSTALLED, Device
from accelbench.devices.nvidia import normalize_pci_bus_id, visible_order
from accelbench.devices.probing import ProbeFailure
from accelbench.verdict import HIDDEN, Caveat

INSTALL_HINT = "pip install accelbench[amd]"
AMD_VENDOR_ID = 0x1002
_NO_PERMISSION_CODES = ("no_perm", "no_permission")


class AmdsmiError(Exception):
    """An amdsmi call failed; `code` is the status name in lower case ("not_supported", "no_perm")."""

    def __init__(self, code: str, message: str = ""):
        super().__init__(message or code)
        self.code = code
        self.message = message or code.replace("_", " ")


class Amdsmi(Protocol):
    def init(self) -> None: ...
    def shutdown(self) -> None: ...
    def processor_count(self) -> int: ...
    def asic_info(self, index: int) -> dict[str, Any]: ...
    def vram_info(self, index: int) -> dict[str, Any]: ...
    def vram_total_bytes(self, index: int) -> int: ...
    def bdf(self, index: int) -> str: ...
    def uuid(self, index: int) -> str: ...
    def gfx_max_clock_mhz(self, index: int) -> int: ...
    def driver_version(self, index: int) -> str: ...


class AmdsmiAdapter:
    """The real amdsmi module, reduced to the calls the probe makes."""

    def __init__(self, amdsmi: Any):
        self._a = amdsmi
        self._handles: list[Any] | None = None

    def _code(self, exc: BaseException) -> str:
        code = getattr(exc, "err_code", None)
        try:
            name = self._a.AmdSmiRetCode(code).name
        except Exception:  # noqa: BLE001 - an amdsmi without the enum, or an unknown value
            return "unknown"
        return re.sub(r"^(amdsmi_)?(status_)?", "", name.lower())

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except self._a.AmdSmiException as exc:
            raise AmdsmiError(self._code(exc), str(exc)) from exc

    def _handle(self, index: int) -> Any:
        if self._handles is None:
            self._handles = list(self._call(self._a.amdsmi_get_processor_handles))
        return self._handles[index]

    def init(self) -> None:
        self._call(self._a.amdsmi_init)

    def shutdown(self) -> None:
        self._handles = None
        self._call(self._a.amdsmi_shut_down)

    def processor_count(self) -> int:
        self._handles = list(self._call(self._a.amdsmi_get_processor_handles))
        return len(self._handles)

    def asic_info(self, index: int) -> dict[str, Any]:
        return dict(self._call(self._a.amdsmi_get_gpu_asic_info, self._handle(index)))

    def vram_info(self, index: int) -> dict[str, Any]:
        return dict(self._call(self._a.amdsmi_get_gpu_vram_info, self._handle(index)))

    def vram_total_bytes(self, index: int) -> int:
        vram = self._a.AmdSmiMemoryType.VRAM
        return int(self._call(self._a.amdsmi_get_gpu_memory_total, self._handle(index), vram))

    def bdf(self, index: int) -> str:
        return str(self._call(self._a.amdsmi_get_gpu_device_bdf, self._handle(index)))

    def uuid(self, index: int) -> str:
        return str(self._call(self._a.amdsmi_get_gpu_device_uuid, self._handle(index)))

    def gfx_max_clock_mhz(self, index: int) -> int:
        info = self._call(self._a.amdsmi_get_clock_info, self._handle(index), self._a.AmdSmiClkType.GFX)
        return int(info["max_clk"])

    def driver_version(self, index: int) -> str:
        return str(self._call(self._a.amdsmi_get_gpu_driver_info, self._handle(index))["driver_version"])


def load() -> AmdsmiAdapter:
    """The real amdsmi. ModuleNotFoundError when not installed; OSError when libamd_smi is missing."""
    import amdsmi  # lazily: loading it opens the ROCm library

    return AmdsmiAdapter(amdsmi)


class RecordedAmdsmi:
    """Replays {"init": null | {"error": ...}, "processors": [{"asic_info": {...}, ...}]}."""

    def __init__(self, recording: dict[str, Any]):
        self.recording = recording
        self.shutdown_calls = 0

    @classmethod
    def from_file(cls, path: str | Path) -> "RecordedAmdsmi":
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def _answer(self, value: Any) -> Any:
        if isinstance(value, dict) and "error" in value:
            raise AmdsmiError(value["error"], value.get("message", ""))
        return value

    def _field(self, index: int, name: str) -> Any:
        processor = self.recording.get("processors", [])[index]
        if name not in processor:
            raise AmdsmiError("not_supported", f"{name} not recorded")
        return self._answer(processor[name])

    def init(self) -> None:
        self._answer(self.recording.get("init"))

    def shutdown(self) -> None:
        self.shutdown_calls += 1

    def processor_count(self) -> int:
        return len(self.recording.get("processors", []))

    def asic_info(self, index: int) -> dict[str, Any]:
        return dict(self._field(index, "asic_info"))

    def vram_info(self, index: int) -> dict[str, Any]:
        return dict(self._field(index, "vram_info"))

    def vram_total_bytes(self, index: int) -> int:
        return int(self._field(index, "vram_total_bytes"))

    def bdf(self, index: int) -> str:
        return str(self._field(index, "bdf"))

    def uuid(self, index: int) -> str:
        return str(self._field(index, "uuid"))

    def gfx_max_clock_mhz(self, index: int) -> int:
        return int(self._field(index, "gfx_max_clock_mhz"))

    def driver_version(self, index: int) -> str:
        return str(self._field(index, "driver_version"))


# amdsmi loads libamd_smi: it may end its process, so the probe runs in a child (devices/isolated.py)
NATIVE = True


def needs_isolation() -> bool:
    """The ROCm driver is here for amdsmi to load (without it, sysfs alone is read, in Python)."""
    return Path("/dev/kfd").exists()


def probe(amdsmi: Amdsmi | None = None, sysfs_root: str = "/",
          environ: Mapping[str, str] | None = None,
          runtime: Callable[[], AttributeSource] | None = None) -> list[Device]:
    """AMD GPUs in PCI bus order, from amdsmi when it works, else from sysfs; HIP's deviceQuery where
    `runtime` answers (by default asked only of the real machine's driver, in the isolated child)."""
    env = os.environ if environ is None else environ
    if runtime is None and amdsmi is None and sysfs_root == "/" and needs_isolation():
        runtime = device_query_load.hip_source
    notes: list[str] = []
    records: list[dict[str, Any]] | None = None
    init_error: AmdsmiError | None = None
    adapter = amdsmi if amdsmi is not None else _try_load(notes)
    if adapter is not None:
        try:
            records = _read_amdsmi(adapter)
        except AmdsmiError as exc:
            init_error = exc
            notes.append(f"amdsmi could not start ({exc.code}: {exc.message}); read from sysfs instead")
    if records is None:
        records = read_sysfs(sysfs_root)
    if not records:
        _fail(init_error, sysfs_root, amdsmi_answered=adapter is not None and init_error is None)
    records.sort(key=lambda r: (r.get("pci_bus_id") is None, r.get("pci_bus_id") or ""))
    devices = _devices(records, notes, env)
    return device_query_load.with_device_query(devices, runtime) if runtime is not None else devices


def _try_load(notes: list[str]) -> Amdsmi | None:
    try:
        return load()
    except ModuleNotFoundError as exc:
        if exc.name != "amdsmi":
            raise
        notes.append("amdsmi is not installed, so only sysfs was read (no compute units, bus width or "
                     f"driver version): {INSTALL_HINT}")
    except (ImportError, OSError) as exc:  # the package is there but libamd_smi.so is not
        notes.append(f"amdsmi is installed but could not load its library ({exc}); read from sysfs instead")
    return None


def _fail(init_error: AmdsmiError | None, sysfs_root: str, amdsmi_answered: bool) -> None:
    if init_error is not None and init_error.code in _NO_PERMISSION_CODES:
        raise ProbeFailure(NO_PERMISSION, f"amdsmi: {init_error.message}; add the user to the 'render' and 'video' "
                                          "groups (or give the container /dev/kfd and /dev/dri)")
    if amdsmi_answered:
        raise ProbeFailure(NO_DRIVER, "amdsmi started but reports no AMD GPU: check `amd-smi list` "
                                      "and the amdgpu driver")
    if Path(sysfs_root, "dev", "kfd").exists():
        raise ProbeFailure(NOT_INSTALLED, "the ROCm driver is loaded (/dev/kfd exists) but no AMD GPU could be read "
                                          f"from sysfs; install amdsmi to query it: {INSTALL_HINT}")
    why = f" (amdsmi: {init_error.message})" if init_error is not None else ""
    raise ProbeFailure(NO_DRIVER, f"no AMD GPU found: no amdgpu device in /sys/class/drm and no /dev/kfd{why}")


def _optional(call: Callable[[int], Any], index: int) -> Any:
    try:
        value = call(index)
    except AmdsmiError:
        return None
    return None if value in ("N/A", "", None) else value


def _read_amdsmi(adapter: Amdsmi) -> list[dict[str, Any]]:
    adapter.init()
    try:
        return [_amdsmi_record(adapter, index) for index in range(adapter.processor_count())]
    finally:
        try:
            adapter.shutdown()
        except AmdsmiError:
            pass


def _amdsmi_record(adapter: Amdsmi, index: int) -> dict[str, Any]:
    asic = _optional(adapter.asic_info, index) or {}
    vram = _optional(adapter.vram_info, index) or {}
    bdf = _optional(adapter.bdf, index)
    record = {
        "source": "amdsmi", "name": asic.get("market_name"), "pci_bus_id": normalize_pci_bus_id(bdf) if bdf else None,
        "uuid": _optional(adapter.uuid, index), "pci_device_id": asic.get("device_id"),
        "gfx_target": asic.get("target_graphics_version"), "compute_unit_count": asic.get("num_compute_units"),
        "max_gfx_clock_mhz": _optional(adapter.gfx_max_clock_mhz, index),
        "memory_total_bytes": _optional(adapter.vram_total_bytes, index),
        "memory_type": vram.get("vram_type"), "memory_bus_width_bits": vram.get("vram_bit_width"),
        "driver_version": _optional(adapter.driver_version, index),
    }
    return {k: v for k, v in record.items() if v not in (None, "N/A", "")}


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def _max_dpm_clock_mhz(table: str | None) -> int | None:
    """The highest level of a pp_dpm_sclk table ("0: 500Mhz\\n1: 2100Mhz *")."""
    levels = [int(m) for m in re.findall(r"(\d+)\s*mhz", table or "", re.IGNORECASE)]
    return max(levels) if levels else None


def read_sysfs(root: str = "/") -> list[dict[str, Any]]:
    """One record per AMD GPU under <root>/sys/class/drm (connectors like card0-DP-1 skipped)."""
    records = []
    for card in sorted(Path(root, "sys", "class", "drm").glob("card*")):
        device = card / "device"
        vendor = _read_text(device / "vendor")
        if not re.fullmatch(r"card\d+", card.name) or vendor is None or int(vendor, 16) != AMD_VENDOR_ID:
            continue
        slot = re.search(r"^PCI_SLOT_NAME=(\S+)", _read_text(device / "uevent") or "", re.MULTILINE)
        vram = _read_text(device / "mem_info_vram_total")
        record = {
            "source": "sysfs", "name": _read_text(device / "product_name"),
            "pci_bus_id": normalize_pci_bus_id(slot.group(1)) if slot else None,
            "pci_device_id": _read_text(device / "device"),
            "memory_total_bytes": int(vram) if vram and vram.isdigit() else None,
            "max_gfx_clock_mhz": _max_dpm_clock_mhz(_read_text(device / "pp_dpm_sclk")),
            "drm_card": card.name,
        }
        records.append({k: v for k, v in record.items() if v not in (None, "")})
    return records


def _visible(env: Mapping[str, str], count: int) -> tuple[list[int], list[str]]:
    """ROCR_VISIBLE_DEVICES filters first, then HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES) within it."""
    order, warnings = list(range(count)), list[str]()
    hip_variable = "HIP_VISIBLE_DEVICES" if "HIP_VISIBLE_DEVICES" in env else "CUDA_VISIBLE_DEVICES"
    for variable in ("ROCR_VISIBLE_DEVICES", hip_variable):
        if variable in env:
            chosen, found = visible_order(env[variable], [None] * len(order), variable)
            order, warnings = [order[i] for i in chosen], warnings + found
    return order, warnings


def _devices(records: list[dict[str, Any]], notes: list[str], env: Mapping[str, str]) -> list[Device]:
    order, visibility_warnings = _visible(env, len(records))
    devices = []
    for index, record in enumerate(records):
        warnings = notes + visibility_warnings
        visible_index = order.index(index) if index in order else None
        if visible_index is None:
            warnings.append(Caveat("hidden by ROCR_/HIP_VISIBLE_DEVICES: no framework in this process can reach it",
                                   HIDDEN, {"setting": "ROCR_/HIP_VISIBLE_DEVICES"}))
        source = record.pop("source")
        name = record.pop("name", None) or f"AMD GPU (PCI device {record.get('pci_device_id', 'unknown')})"
        properties = {**record, "hip_visible_index": visible_index}
        devices.append(Device(
            id=f"rocm:{index}", kind="gpu", vendor="AMD", name=name, source=source,
            memory_bytes=record.get("memory_total_bytes"), properties=properties,
            peaks=datasheets.table_peaks(name), warnings=tuple(warnings)))
    return devices
