"""The CPU probe: model, topology, ISA, caches, clocks, memory, NUMA, BLAS, and formula peaks.

Reads /proc and /sys directly (py-cpuinfo takes over a second; it is only a fallback where there
is no /proc/cpuinfo). Everything goes through a SysReader so a recorded machine can be replayed.
"""
from __future__ import annotations

import os
import platform
import re

from accelbench.devices import blas, cpu_isa
from accelbench.devices.cpu_clock import estimate_running_clock
from accelbench.devices.model import Device, PeakFigure
from accelbench.devices.sysfs import SysReader, parse_cpu_list, parse_size_bytes
from accelbench.vocabulary import usable_cpus

CPU_ROOT = "sys/devices/system/cpu"


def probe(reader: SysReader | None = None, measure_clock: bool = True, live: bool = True) -> list[Device]:
    """`live` adds what only the running process can know: BLAS libraries, affinity."""
    reader = reader or SysReader("/")
    cpuinfo = parse_cpuinfo(reader.text("proc/cpuinfo") or "")
    if not cpuinfo and live:
        cpuinfo = _py_cpuinfo_fallback()
    props = describe(reader, cpuinfo)
    warnings: list[str] = []
    if measure_clock:
        estimate = estimate_running_clock()
        props["running_clock_mhz"] = round(estimate.ghz * 1000) if estimate.ghz else None
        props["running_clock_method"] = estimate.method if estimate.ghz else f"unavailable: {estimate.reason}"
    if live:
        props.update(_live_properties())
    rates, basis_warning = flop_rates(props, cpuinfo)
    if basis_warning:
        warnings.append(basis_warning)
    peaks = formula_peaks(props, rates)
    return [Device(
        id="cpu", kind="cpu", vendor=props.get("vendor") or "unknown", name=props.get("model") or "unknown CPU",
        source="procfs" if cpuinfo.get("_source") == "procfs" else cpuinfo.get("_source", "procfs"),
        memory_bytes=props.get("memory_total_bytes"), properties=props, peaks=peaks,
        warnings=tuple(warnings),
    )]


def parse_cpuinfo(text: str) -> dict:
    """The first processor block of /proc/cpuinfo, plus counts over all blocks."""
    blocks = [b for b in text.strip().split("\n\n") if b.strip()]
    if not blocks:
        return {}
    fields: dict[str, str] = {}
    for line in blocks[0].splitlines():
        if ":" in line:
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    packages, cores = set(), set()
    for block in blocks:
        entry = dict((k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in block.splitlines()))
        packages.add(entry.get("physical id"))
        cores.add((entry.get("physical id"), entry.get("core id")))
    fields["_blocks"] = str(len(blocks))
    fields["_packages"] = str(len(packages - {None}) or "")
    fields["_cores"] = str(len({c for c in cores if c[1] is not None}) or "")
    fields["_source"] = "procfs"
    return fields


def describe(reader: SysReader, cpuinfo: dict) -> dict:
    arm = "CPU implementer" in cpuinfo
    flags = set((cpuinfo.get("flags") or cpuinfo.get("Features") or "").split())
    props: dict = {
        "model": _model_name(cpuinfo, arm),
        "vendor": _vendor(cpuinfo, arm),
        "architecture": "aarch64" if arm else (cpuinfo.get("_arch") or ("x86_64" if "flags" in cpuinfo else platform.machine())),
        "features": cpu_isa.shown_features(flags, arm),
        "hypervisor": "hypervisor" in flags,
    }
    if not arm:
        props["family"] = _int(cpuinfo.get("cpu family"))
        props["model_number"] = _int(cpuinfo.get("model"))
    else:
        props["implementer"] = cpuinfo.get("CPU implementer")
        props["part"] = cpuinfo.get("CPU part")
    props.update(_topology(reader, cpuinfo))
    props.update(_caches(reader))
    props.update(_clocks(reader, cpuinfo, props["model"]))
    props.update(_memory(reader))
    props["numa_nodes"] = len(reader.children("sys/devices/system/node", "node")) or None
    return props


def _model_name(cpuinfo: dict, arm: bool) -> str | None:
    if not arm:
        return cpuinfo.get("model name")
    name, _ = cpu_isa.arm_flop_rates(_int(cpuinfo.get("CPU implementer")), _int(cpuinfo.get("CPU part")))
    return cpuinfo.get("model name") or name or f"Arm part {cpuinfo.get('CPU part', '?')}"


def _vendor(cpuinfo: dict, arm: bool) -> str | None:
    if arm:
        return {0x41: "Arm", 0x61: "Apple", 0x51: "Qualcomm", 0x46: "Fujitsu", 0xC0: "Ampere",
                0x48: "HiSilicon", 0x4E: "NVIDIA"}.get(_int(cpuinfo.get("CPU implementer")) or -1, "Arm")
    vendor = cpuinfo.get("vendor_id") or ""
    return {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(vendor, vendor or None)


def _topology(reader: SysReader, cpuinfo: dict) -> dict:
    online = parse_cpu_list(reader.line(f"{CPU_ROOT}/online"))
    logical = len(online) or _int(cpuinfo.get("_blocks")) or os.cpu_count()
    packages, cores = set(), set()
    for cpu in online:
        package = reader.integer(f"{CPU_ROOT}/cpu{cpu}/topology/physical_package_id")
        core = reader.integer(f"{CPU_ROOT}/cpu{cpu}/topology/core_id")
        packages.add(package)
        cores.add((package, core))
    sockets = len(packages - {None}) or _int(cpuinfo.get("_packages")) or 1
    physical = len({c for c in cores if c[1] is not None}) or _int(cpuinfo.get("_cores")) or logical
    return {"sockets": sockets, "physical_cores": physical, "logical_cores": logical}


def _caches(reader: SysReader) -> dict:
    base = f"{CPU_ROOT}/cpu0/cache"
    result: dict = {}
    logical = len(parse_cpu_list(reader.line(f"{CPU_ROOT}/online"))) or 1
    for index in reader.children(base, "index"):
        level = reader.line(f"{base}/{index}/level")
        kind = (reader.line(f"{base}/{index}/type") or "").lower()
        size = parse_size_bytes(reader.line(f"{base}/{index}/size"))
        if not level or size is None:
            continue
        name = f"l{level}" + {"data": "d", "instruction": "i"}.get(kind, "")
        sharing = len(parse_cpu_list(reader.line(f"{base}/{index}/shared_cpu_list"))) or 1
        result[f"{name}_cache_bytes"] = size
        result[f"{name}_cache_instances"] = max(1, logical // sharing)
    return result


def _clocks(reader: SysReader, cpuinfo: dict, model: str | None) -> dict:
    freq = f"{CPU_ROOT}/cpu0/cpufreq"
    nominal_mhz = None
    match = re.search(r"@\s*([\d.]+)\s*GHz", model or "")
    if match:
        nominal_mhz = round(float(match.group(1)) * 1000)
    base_khz = reader.integer(f"{freq}/base_frequency")
    nominal_mhz = nominal_mhz or (base_khz // 1000 if base_khz else None)
    max_khz = reader.integer(f"{freq}/cpuinfo_max_freq")
    current = cpuinfo.get("cpu MHz")
    current_khz = reader.integer(f"{freq}/scaling_cur_freq")
    clock_source = "model name" if match else ("cpufreq base_frequency" if base_khz else None)
    if nominal_mhz is None and max_khz is None and current:
        # no cpufreq (typical in a VM): the kernel's "cpu MHz" is then the nominal (TSC) clock
        nominal_mhz, clock_source = round(float(current)), "cpuinfo 'cpu MHz' (no cpufreq)"
    return {
        "nominal_clock_mhz": nominal_mhz,
        "nominal_clock_source": clock_source,
        "max_clock_mhz": max_khz // 1000 if max_khz else None,
        "current_clock_mhz": round(float(current)) if current else (current_khz // 1000 if current_khz else None),
    }


def _memory(reader: SysReader) -> dict:
    text = reader.text("proc/meminfo") or ""
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[key] = int(parts[0]) * 1024  # meminfo counts kB
    if not values:
        try:
            import psutil
            memory = psutil.virtual_memory()
            return {"memory_total_bytes": memory.total, "memory_available_bytes": memory.available}
        except ImportError:
            return {}
    return {"memory_total_bytes": values.get("MemTotal"), "memory_available_bytes": values.get("MemAvailable")}


def _live_properties() -> dict:
    props: dict = {}
    props["usable_cpus"] = usable_cpus()
    props["blas_libraries"] = blas.loaded_libraries()
    props["thread_environment"] = blas.thread_environment()
    return props


def flop_rates(props: dict, cpuinfo: dict) -> tuple[cpu_isa.FlopRates | None, str]:
    if props.get("architecture") == "aarch64":
        _, rates = cpu_isa.arm_flop_rates(_int(cpuinfo.get("CPU implementer")), _int(cpuinfo.get("CPU part")))
    else:
        flags = set((cpuinfo.get("flags") or "").split())
        rates = cpu_isa.x86_flop_rates(props.get("vendor") or "", props.get("family"), props.get("model_number"), flags)
    if rates is None:
        return None, (f"FLOP per cycle unknown for {props.get('model') or 'this CPU'}: "
                      "no formula peak (a measured one appears after `accelbench run`)")
    return rates, ""


def formula_peaks(props: dict, rates: cpu_isa.FlopRates | None) -> tuple[PeakFigure, ...]:
    clock_mhz = props.get("nominal_clock_mhz") or props.get("max_clock_mhz")
    cores = props.get("physical_cores")
    if rates is None or not clock_mhz or not cores:
        return ()
    clock_ghz = clock_mhz / 1000
    figures = []
    for metric, per_cycle in (("fp64", rates.fp64), ("fp32", rates.fp32), ("bf16", rates.bf16),
                              ("fp16", rates.fp16), ("bf16_matrix", rates.bf16_matrix),
                              ("int8_matrix", rates.int8_matrix)):
        if not per_cycle:
            continue
        detail = f"{cores} cores × {clock_ghz:g} GHz × {per_cycle} FLOP/cycle ({rates.basis})"
        if rates.assumption:
            detail += f"; {rates.assumption}"
        running_mhz = props.get("running_clock_mhz")
        if running_mhz and abs(running_mhz - clock_mhz) > 0.1 * clock_mhz:
            at_running = cores * running_mhz / 1000 * per_cycle
            detail += f"; at the running clock ({running_mhz / 1000:.2f} GHz): {at_running:.0f} G{_unit(metric)}"
        figures.append(PeakFigure(metric, cores * clock_ghz * 1e9 * per_cycle, "formula", detail,
                                  {"cores": cores, "clock_ghz": clock_ghz, "flop_per_cycle": per_cycle,
                                   "clock": "nominal" if props.get("nominal_clock_mhz") else "max"}))
    return tuple(figures)


def _unit(metric: str) -> str:
    return "OP/s" if metric.startswith("int8") else "FLOP/s"


def _py_cpuinfo_fallback() -> dict:
    try:
        import cpuinfo  # py-cpuinfo: slow (about a second), used only without /proc/cpuinfo
    except ImportError:
        return {"_source": "platform", "model name": platform.processor() or None}
    info = cpuinfo.get_cpu_info()
    return {"_source": "py-cpuinfo", "model name": info.get("brand_raw"), "vendor_id": info.get("vendor_id_raw", ""),
            "flags": " ".join(info.get("flags", [])), "_arch": info.get("arch_string_raw")}


def _int(value) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(str(value), 0)
    except ValueError:
        return None
