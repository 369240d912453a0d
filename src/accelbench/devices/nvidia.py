"""NVIDIA GPUs through NVML: what each board is, and the peaks its numbers imply.

Ids are `cuda:N` with N counted in PCI bus order over every GPU NVML sees, whatever
CUDA_VISIBLE_DEVICES says; the `cuda_visible_index` property gives the index a framework in
this process uses, which is relative to the visible list (which frameworks reach the GPU is the
backends' to say: backends/device_reach.py). Formula peaks use only what NVML reported plus the
compute-capability table: where an input is missing, the peak is missing, with a warning.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from accelbench.devices import cuda_arch, datasheets, device_query_load, nvml_adapter
from accelbench.devices.device_query import AttributeSource
from accelbench.devices.model import (
    ERROR, NO_DRIVER, NO_PERMISSION, NOT_INSTALLED, VERSION_MISMATCH, Device, PeakFigure,
)
from accelbench.devices.nvml_adapter import Nvml, NvmlError
from accelbench.devices.probing import ProbeFailure
from accelbench.verdict import HIDDEN, Caveat

INSTALL_HINT = "pip install accelbench[nvidia]"
PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"
# NVML answers these for a query the board or driver simply lacks: no warning unless needed.
_QUIET_CODES = ("not_supported", "function_not_found")

INIT_FAILURES = {
    "driver_not_loaded": (NO_DRIVER, "the NVIDIA kernel driver is not loaded: check `nvidia-smi`; "
                                     "install the driver or load it (`sudo modprobe nvidia`)"),
    "library_not_found": (NO_DRIVER, "libnvidia-ml.so was not found: the NVIDIA driver is not installed "
                                     "(in a container, start it with the GPU runtime, e.g. --gpus all)"),
    "no_permission": (NO_PERMISSION, "no permission to open the NVIDIA devices: check the permissions of "
                                     "/dev/nvidia* (or the container's device access)"),
    "lib_rm_version_mismatch": (VERSION_MISMATCH, "the NVML library and the loaded kernel driver differ in "
                                                  "version: reboot (or reload the driver) after the upgrade"),
    "function_not_found": (VERSION_MISMATCH, "libnvidia-ml.so lacks a function nvidia-ml-py needs: the driver "
                                             "is older than the library; upgrade the driver"),
    "argument_version_mismatch": (VERSION_MISMATCH, "nvidia-ml-py and the driver disagree on structure "
                                                    "versions: upgrade the driver or match nvidia-ml-py to it"),
}


# NVML is a driver library: it may end its process, so the probe runs in a child (devices/isolated.py)
NATIVE = True


def needs_isolation() -> bool:
    """A driver is here to load (without one, pynvml fails in Python at once)."""
    return Path(PROC_DRIVER_VERSION).exists() or Path("/dev/nvidiactl").exists()


def probe(nvml: Nvml | None = None, environ: Mapping[str, str] | None = None,
          proc_driver_version: str = PROC_DRIVER_VERSION,
          runtime: Callable[[], AttributeSource] | None = None) -> list[Device]:
    """Every NVIDIA GPU NVML can see, in PCI bus order, with the CUDA runtime's deviceQuery where one answers.

    `runtime`: the deviceQuery source (device_query_load.cuda_source); by default asked only of a real
    NVML on a machine with a driver, where this probe runs in its isolated child."""
    env = os.environ if environ is None else environ
    if runtime is None and nvml is None and needs_isolation():
        runtime = device_query_load.cuda_source
    nvml = nvml if nvml is not None else _load(proc_driver_version)
    _expect(nvml.init)
    try:
        count = _expect(nvml.device_count)
        system = _system_properties(nvml)
        readings = sorted((_read(nvml, index) for index in range(count)), key=_pci_sort_key)
        devices = _devices(readings, system, env)
    finally:
        try:
            nvml.shutdown()
        except NvmlError:
            pass  # nothing left to release that matters to the inventory
    return device_query_load.with_device_query(devices, runtime) if runtime is not None else devices


def _load(proc_driver_version: str) -> Nvml:
    try:
        return nvml_adapter.load()
    except ModuleNotFoundError as exc:
        if exc.name != "pynvml":
            raise
        driver = driver_version_from_proc(proc_driver_version)
        if driver:
            raise ProbeFailure(NOT_INSTALLED, f"an NVIDIA driver is loaded ({driver}, from {proc_driver_version}) "
                                              f"but the Python NVML library is missing: {INSTALL_HINT}") from exc
        raise ProbeFailure(NOT_INSTALLED, "nvidia-ml-py (pynvml) is not installed and no NVIDIA driver was "
                                          f"found at {proc_driver_version}; on a machine with an NVIDIA GPU: "
                                          f"{INSTALL_HINT}") from exc


def driver_version_from_proc(path: str = PROC_DRIVER_VERSION) -> str | None:
    """The kernel module's version from /proc/driver/nvidia/version, None when absent."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return None
    match = (re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+(?:\.\d+)+)", text)
             or re.search(r"\b(\d+\.\d+(?:\.\d+)?)\b", text))
    return match.group(1) if match else "version unknown"


def _expect(call: Callable[[], Any]) -> Any:
    """Run an NVML call that must work, turning its failure into the probe's status."""
    try:
        return call()
    except NvmlError as exc:
        status, advice = INIT_FAILURES.get(exc.code, (ERROR, ""))
        text = f"NVML: {exc.message}"
        raise ProbeFailure(status, f"{text}; {advice}" if advice else f"{text} ({exc.code})") from exc


def _system_properties(nvml: Nvml) -> dict[str, Any]:
    props: dict[str, Any] = {}
    try:
        props["driver_version"] = nvml.driver_version()
    except NvmlError:
        pass
    try:
        props["cuda_driver_version"] = cuda_version_text(nvml.cuda_driver_version())
    except NvmlError:
        pass
    return props


def cuda_version_text(encoded: int) -> str:
    """"12.4" from NVML's 12040."""
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def normalize_pci_bus_id(bus_id: str) -> str | None:
    """"0000:1b:00.0" from "00000000:1B:00.0": the form sysfs and the other probes use."""
    match = re.fullmatch(r"(?:([0-9a-fA-F]+):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])", bus_id.strip())
    if not match:
        return None
    domain, bus, dev, fn = match.groups()
    return f"{int(domain or '0', 16):04x}:{int(bus, 16):02x}:{int(dev, 16):02x}.{fn}"


@dataclass
class _Reading:
    """What NVML answered for one GPU, and why the rest is missing."""

    nvml_index: int
    values: dict[str, Any] = field(default_factory=dict)
    missing: dict[str, NvmlError] = field(default_factory=dict)

    def ask(self, key: str, call: Callable[..., Any], *args: Any) -> Any:
        try:
            self.values[key] = call(*args)
        except NvmlError as exc:
            self.missing[key] = exc
        return self.values.get(key)

    def warnings(self) -> list[str]:
        return [f"NVML could not read {key}: {exc.message} ({exc.code})"
                for key, exc in self.missing.items() if exc.code not in _QUIET_CODES]


def _read(nvml: Nvml, index: int) -> _Reading:
    r = _Reading(index)
    for key, call in (("name", nvml.name), ("uuid", nvml.uuid), ("pci_bus_id", nvml.pci_bus_id),
                      ("compute_capability", nvml.compute_capability), ("cuda_cores", nvml.num_gpu_cores),
                      ("memory", nvml.memory_info), ("memory_bus_width_bits", nvml.memory_bus_width_bits),
                      ("ecc", nvml.ecc_mode), ("mig", nvml.mig_mode), ("power_limit_mw", nvml.power_limit_mw)):
        r.ask(key, call, index)
    r.ask("max_sm_clock_mhz", nvml.max_clock_mhz, index, "sm")
    r.ask("max_memory_clock_mhz", nvml.max_clock_mhz, index, "memory")
    for which in ("current", "max"):
        r.ask(f"pcie_generation_{which}", nvml.pcie_generation, index, which)
        r.ask(f"pcie_width_{which}_lanes", nvml.pcie_width, index, which)
    return r


def _pci_sort_key(reading: _Reading) -> tuple[int, str, int]:
    bus_id = normalize_pci_bus_id(str(reading.values.get("pci_bus_id", "")))
    # A board whose bus id NVML cannot give goes last, in NVML's order.
    return (0, bus_id, reading.nvml_index) if bus_id else (1, "", reading.nvml_index)


@dataclass(frozen=True)
class FormulaResult:
    peaks: tuple[PeakFigure, ...]
    warnings: tuple[str, ...]
    arch: cuda_arch.CudaArch | None
    sm_count: int | None
    cuda_cores: int | None


def formula_peaks(compute_capability: str | Sequence[int] | None, *, sm_count: int | None = None,
                  cuda_cores: int | None = None, max_sm_clock_mhz: float | None = None,
                  max_memory_clock_mhz: float | None = None, memory_bus_width_bits: int | None = None,
                  cores_missing_reason: str = "") -> FormulaResult:
    """FP32/FP64 peaks from cores × clock × 2 and the arch's FP64 rate; bandwidth from clock × 2 × bus/8."""
    warnings: list[str] = []
    arch, arch_warning = cuda_arch.lookup(compute_capability) if compute_capability else (
        None, "compute capability unknown: no FP32/FP64 formula peak")
    if arch_warning:
        warnings.append(arch_warning)
    sm_count, cuda_cores = _cores(arch, sm_count, cuda_cores, warnings, cores_missing_reason)
    peaks: list[PeakFigure] = []
    if arch and cuda_cores and max_sm_clock_mhz:
        fp32 = _fp32_peak(cuda_cores, sm_count, arch, max_sm_clock_mhz)
        peaks += [fp32, _fp64_peak(fp32, arch)]
    elif arch and cuda_cores:
        warnings.append("max SM clock unknown: no FP32/FP64 formula peak")
    if max_memory_clock_mhz and memory_bus_width_bits:
        peaks.append(_bandwidth_peak(max_memory_clock_mhz, memory_bus_width_bits))
    else:
        warnings.append("memory clock or bus width unknown: no memory bandwidth formula peak")
    return FormulaResult(tuple(peaks), tuple(warnings), arch, sm_count, cuda_cores)


def _cores(arch: cuda_arch.CudaArch | None, sm_count: int | None, cuda_cores: int | None,
           warnings: list[str], missing_reason: str) -> tuple[int | None, int | None]:
    """(SMs, cores) from whichever the caller knows; nothing is derived without the arch table."""
    if arch is None:
        return sm_count, cuda_cores
    per_sm = arch.fp32_cores_per_sm
    if cuda_cores and not sm_count:
        if cuda_cores % per_sm:
            warnings.append(f"{cuda_cores} CUDA cores is not a multiple of {per_sm} per SM "
                            f"({arch.architecture}): SM count not derived")
            return None, cuda_cores
        return cuda_cores // per_sm, cuda_cores
    if sm_count and not cuda_cores:
        return sm_count, sm_count * per_sm
    if not sm_count and not cuda_cores:
        reason = f" ({missing_reason})" if missing_reason else ""
        warnings.append(f"SM count and CUDA core count unknown{reason}: no FP32/FP64 formula peak; "
                        "the torch probe can supply the SM count")
    return sm_count, cuda_cores


def _fp32_peak(cores: int, sm_count: int | None, arch: cuda_arch.CudaArch, clock_mhz: float) -> PeakFigure:
    shape = f" ({sm_count} SMs × {arch.fp32_cores_per_sm})" if sm_count else ""
    inputs = {"cuda_cores": cores, "sm_count": sm_count, "cuda_cores_per_sm": arch.fp32_cores_per_sm,
              "max_sm_clock_mhz": clock_mhz, "flop_per_cycle_per_core": 2}
    return PeakFigure("fp32", cores * clock_mhz * 1e6 * 2, "formula",
                      f"{cores} cores{shape} × {clock_mhz / 1000:g} GHz × 2 FLOP/cycle (FMA)", inputs)


def _fp64_peak(fp32: PeakFigure, arch: cuda_arch.CudaArch) -> PeakFigure:
    detail = (f"FP32 {fp32.value / 1e12:.4g} TFLOP/s × {arch.fp64_ratio_text} "
              f"({arch.architecture} {arch.compute_capability} FP64:FP32 rate)")
    if arch.note:
        detail += f"; note: {arch.note}"
    inputs = {**fp32.inputs, "fp64_per_fp32": arch.fp64_ratio_text, "arch_source": arch.source}
    return PeakFigure("fp64", fp32.value * float(arch.fp64_per_fp32), "formula", detail, inputs)


def _bandwidth_peak(clock_mhz: float, bus_bits: int) -> PeakFigure:
    # NVML's memory clock for GDDR5/6/6X/7 and HBM is half the per-pin data rate, hence × 2.
    inputs = {"max_memory_clock_mhz": clock_mhz, "memory_bus_width_bits": bus_bits, "transfers_per_clock": 2}
    return PeakFigure("memory_bandwidth", clock_mhz * 1e6 * 2 * bus_bits / 8, "formula",
                      f"{clock_mhz:g} MHz × 2 transfers/clock × {bus_bits} bits ÷ 8", inputs)


def visible_order(spec: str | None, uuids: Sequence[str | None],
                  variable: str = "CUDA_VISIBLE_DEVICES") -> tuple[list[int], list[str]]:
    """Which devices CUDA exposes, as indices into `uuids` (PCI order), in the order it numbers them.

    Follows CUDA's rules for CUDA_VISIBLE_DEVICES: integers or GPU-UUID prefixes, comma-separated;
    the first entry that matches nothing (or repeats) hides it and every entry after it.
    """
    if spec is None:
        return list(range(len(uuids))), []
    order: list[int] = []
    for raw in spec.split(","):
        entry = raw.strip()
        index = _resolve_visible_entry(entry, uuids)
        if index is None or index in order:
            if entry:
                why = "names a MIG instance, which accelbench does not map" if entry.upper().startswith("MIG-") \
                    else "repeats an earlier one" if index is not None else "matches no GPU"
                return order, [f"{variable} entry {entry!r} {why}; it and every entry after it are ignored"]
            break
        order.append(index)
    return order, []


def _resolve_visible_entry(entry: str, uuids: Sequence[str | None]) -> int | None:
    if re.fullmatch(r"\d+", entry):
        index = int(entry)
        return index if index < len(uuids) else None
    if entry.upper().startswith("GPU-"):
        wanted = entry.lower()
        hits = [i for i, uuid in enumerate(uuids) if uuid and uuid.lower().startswith(wanted)]
        return hits[0] if len(hits) == 1 else None
    return None


def _devices(readings: list[_Reading], system: dict[str, Any], env: Mapping[str, str]) -> list[Device]:
    spec = env.get("CUDA_VISIBLE_DEVICES")
    order, visibility_warnings = visible_order(spec, [r.values.get("uuid") for r in readings])
    names = {readings[i].values.get("name") for i in order}
    order_warning = None
    if len(names) > 1 and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        order_warning = ("CUDA_DEVICE_ORDER is not PCI_BUS_ID and the GPUs differ, so CUDA numbers the fastest "
                         "first and framework indices may not follow cuda:N; set CUDA_DEVICE_ORDER=PCI_BUS_ID")
    devices = []
    for pci_index, reading in enumerate(readings):
        warnings = list(visibility_warnings)
        visible_index = order.index(pci_index) if pci_index in order else None
        if visible_index is None:
            warnings.append(Caveat(f"hidden by CUDA_VISIBLE_DEVICES={spec!r}: no framework in this process can reach it",
                                   HIDDEN, {"setting": f"CUDA_VISIBLE_DEVICES={spec!r}"}))
        elif order_warning:
            warnings.append(order_warning)
        devices.append(_device(pci_index, reading, system, visible_index, warnings))
    return devices


def _device(pci_index: int, reading: _Reading, system: dict[str, Any], visible_index: int | None,
            warnings: list[str]) -> Device:
    v = reading.values
    cores_error = reading.missing.get("cuda_cores")
    result = formula_peaks(
        v.get("compute_capability"), cuda_cores=v.get("cuda_cores"),
        max_sm_clock_mhz=v.get("max_sm_clock_mhz"), max_memory_clock_mhz=v.get("max_memory_clock_mhz"),
        memory_bus_width_bits=v.get("memory_bus_width_bits"),
        cores_missing_reason=f"NVML: {cores_error.message}" if cores_error else "")
    name = v.get("name") or "NVIDIA GPU (name unavailable)"
    props = {**_properties(reading, result), **system, "cuda_visible_index": visible_index}
    return Device(
        id=f"cuda:{pci_index}", kind="gpu", vendor="NVIDIA", name=name, source="nvml",
        memory_bytes=props.get("memory_total_bytes"), properties=props,
        peaks=result.peaks + datasheets.table_peaks(name),
        warnings=tuple(reading.warnings() + list(result.warnings) + warnings),
    )


def _properties(reading: _Reading, result: FormulaResult) -> dict[str, Any]:
    v = reading.values
    props: dict[str, Any] = {"nvml_index": reading.nvml_index}
    for key in ("uuid", "max_sm_clock_mhz", "max_memory_clock_mhz", "memory_bus_width_bits",
                "pcie_generation_current", "pcie_generation_max", "pcie_width_current_lanes", "pcie_width_max_lanes"):
        if key in v:
            props[key] = v[key]
    if "pci_bus_id" in v:
        props["pci_bus_id"] = normalize_pci_bus_id(v["pci_bus_id"]) or v["pci_bus_id"]
    if "compute_capability" in v:
        props["compute_capability"] = cuda_arch.normalize(v["compute_capability"])
    if result.arch is not None:
        props["architecture"] = result.arch.architecture
        props["cuda_cores_per_sm"] = result.arch.fp32_cores_per_sm
    if result.cuda_cores:
        props["cuda_cores"] = result.cuda_cores
    if result.sm_count:
        props["sm_count"] = result.sm_count
    if "memory" in v:
        props["memory_total_bytes"], props["memory_free_bytes"] = v["memory"]
    if "ecc" in v:
        props["ecc_enabled"], props["ecc_enabled_pending"] = v["ecc"]
    if "mig" in v:
        props["mig_enabled"], props["mig_enabled_pending"] = v["mig"]
    if "power_limit_mw" in v:
        props["power_limit_w"] = v["power_limit_mw"] / 1000
    return props
