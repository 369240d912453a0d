"""The CPU's hardware health from sysfs: thermal throttling, memory errors, NUMA layout, DIMMs.

Every reader takes a SysReader (a root folder), so tests replay recorded trees; a counter the
kernel does not expose is a SKIP that says why, never a pass.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from accelbench.devices.sysfs import SysReader, parse_cpu_list
from accelbench.health.model import CONFIG, FAIL, PASS, SKIP, THEORY, WARN, HealthFinding, finding

CPU_ROOT = "sys/devices/system/cpu"
EDAC_ROOT = "sys/devices/system/edac/mc"
NODE_ROOT = "sys/devices/system/node"
DMI_ROOT = "sys/firmware/dmi/entries"
NUMA_IMBALANCE = 0.5   # a node with under half the memory of the largest: a DIMM missing or failed


def throttle_counts(reader: SysReader) -> dict[str, int] | None:
    """Core and package throttle events since boot, summed over the online CPUs; None if absent."""
    totals = {"core": 0, "package": 0}
    seen = False
    for cpu in parse_cpu_list(reader.line(f"{CPU_ROOT}/online")):
        for kind in totals:
            count = reader.integer(f"{CPU_ROOT}/cpu{cpu}/thermal_throttle/{kind}_throttle_count")
            if count is not None:
                totals[kind] += count
                seen = True
    return totals if seen else None


def throttle_finding(before: dict[str, int] | None, after: dict[str, int] | None) -> HealthFinding:
    if after is None:
        return finding("cpu.thermal", "cpu", SKIP, "no thermal_throttle counters in sysfs (not an Intel CPU, "
                       "or a VM): throttling cannot be read", source=CONFIG)
    grew = {k: after[k] - before[k] for k in after if before and after[k] > before[k]}
    shown = f"core {after['core']}, package {after['package']} events since boot"
    if grew:
        return finding("cpu.thermal", "cpu", WARN, f"thermal throttling during this check ({', '.join(f'{k} +{v}' for k, v in grew.items())})",
                       measured=after, expected=0, unit="events", source=CONFIG, detail=shown)
    status = WARN if after["core"] or after["package"] else PASS
    summary = f"throttled since boot ({shown}), not during this check" if status == WARN else "never throttled"
    return finding("cpu.thermal", "cpu", status, summary, measured=after, expected=0, unit="events",
                   source=CONFIG, detail=f"{CPU_ROOT}/cpu*/thermal_throttle")


def edac_finding(reader: SysReader) -> HealthFinding:
    controllers = reader.children(EDAC_ROOT, "mc")
    if not controllers:
        return finding("cpu.memory_errors", "cpu", SKIP, "no EDAC memory controllers in sysfs (a VM, or the "
                       "EDAC driver not loaded): memory errors cannot be read", source=CONFIG)
    counts = {mc: (reader.integer(f"{EDAC_ROOT}/{mc}/ce_count") or 0, reader.integer(f"{EDAC_ROOT}/{mc}/ue_count") or 0)
              for mc in controllers}
    corrected, uncorrected = sum(c for c, _ in counts.values()), sum(u for _, u in counts.values())
    where = ", ".join(f"{mc} ce {c} ue {u}" for mc, (c, u) in counts.items() if c or u)
    measured = {"corrected": corrected, "uncorrected": uncorrected}
    if uncorrected:
        return finding("cpu.memory_errors", "cpu", FAIL, f"{uncorrected} uncorrected memory error(s): replace "
                       "the DIMM", measured=measured, expected=0, source=CONFIG, detail=where)
    if corrected:
        return finding("cpu.memory_errors", "cpu", WARN, f"{corrected} corrected memory error(s): a DIMM is "
                       "failing", measured=measured, expected=0, source=CONFIG, detail=where)
    return finding("cpu.memory_errors", "cpu", PASS, f"no memory errors on {len(controllers)} controller(s)",
                   measured=measured, expected=0, source=CONFIG)


def numa_finding(reader: SysReader) -> HealthFinding:
    nodes = reader.children(NODE_ROOT, "node")
    if not nodes:
        return finding("cpu.numa", "cpu", SKIP, "no NUMA nodes in sysfs", source=CONFIG)
    memory = {n: _node_memory_bytes(reader, n) for n in nodes}
    cpus = {n: parse_cpu_list(reader.line(f"{NODE_ROOT}/{n}/cpulist")) for n in nodes}
    layout = "; ".join(f"{n}: {len(cpus[n])} CPUs, {(memory[n] or 0) / 2**30:.0f} GiB" for n in nodes)
    bare = [n for n in nodes if cpus[n] and not memory[n]]
    largest = max((m or 0) for m in memory.values())
    short = [n for n in nodes if cpus[n] and (memory[n] or 0) and (memory[n] or 0) < NUMA_IMBALANCE * largest]
    if bare or short:
        what = [f"{', '.join(bare)} has CPUs but no memory"] if bare else []
        what += [f"{', '.join(short)} has under half the memory of the largest node"] if short else []
        return finding("cpu.numa", "cpu", WARN, f"{'; '.join(what)}: a DIMM missing or failed, or unpopulated "
                       "channels", measured=len(nodes), unit="nodes", source=CONFIG, detail=layout)
    return finding("cpu.numa", "cpu", PASS, f"{len(nodes)} NUMA node(s), memory balanced", measured=len(nodes),
                   unit="nodes", source=CONFIG, detail=layout)


def _node_memory_bytes(reader: SysReader, node: str) -> int | None:
    for line in (reader.text(f"{NODE_ROOT}/{node}/meminfo") or "").splitlines():
        if "MemTotal:" in line:
            return int(line.split()[-2]) * 1024
    return None


@dataclass(frozen=True)
class Dimms:
    slots: int
    populated: int
    speed_mts: int | None     # the configured speed of the populated DIMMs (slowest)

    @property
    def theory_bytes_s(self) -> float | None:
        """Populated DIMMs × speed × 8 bytes: one DIMM per channel assumed (a 64-bit channel)."""
        return self.populated * self.speed_mts * 1e6 * 8 if self.speed_mts else None


def read_dimms(reader: SysReader) -> Dimms | None:
    """SMBIOS type 17 (memory device) entries; None where the firmware tables are not readable."""
    entries = reader.children(DMI_ROOT, "17-")
    slots, populated, speeds = 0, 0, []
    for entry in entries:
        try:
            raw = (reader.root / DMI_ROOT.lstrip("/") / entry / "raw").read_bytes()
        except OSError:
            continue
        if len(raw) < 0x17:
            continue
        slots += 1
        size = struct.unpack_from("<H", raw, 0x0C)[0]
        if size in (0, 0xFFFF):
            continue
        populated += 1
        speed = struct.unpack_from("<H", raw, 0x20)[0] if len(raw) >= 0x22 else 0
        speeds.append(speed or struct.unpack_from("<H", raw, 0x15)[0])
    if not slots:
        return None
    known = [s for s in speeds if s]
    return Dimms(slots, populated, min(known) if known else None)


def dimm_finding(dimms: Dimms | None) -> HealthFinding:
    if dimms is None:
        return finding("cpu.memory_channels", "cpu", SKIP, f"memory slots unknown: no SMBIOS type 17 entries in "
                       f"/{DMI_ROOT} (a VM, or not root): no channel bandwidth to expect", source=THEORY)
    theory = dimms.theory_bytes_s
    shown = f"{dimms.populated} of {dimms.slots} slots populated" + (f" at {dimms.speed_mts} MT/s" if dimms.speed_mts else "")
    status = WARN if dimms.populated < dimms.slots / 2 else PASS
    summary = f"{shown}: fewer than half the slots, likely unpopulated channels" if status == WARN else shown
    return finding("cpu.memory_channels", "cpu", status, summary, measured=dimms.populated, expected=dimms.slots,
                   unit="DIMMs", source=THEORY, detail=(f"theory {theory / 1e9:.0f} GB/s = {dimms.populated} × "
                   f"{dimms.speed_mts} MT/s × 8 B (one DIMM per channel assumed)" if theory else "speed unknown"),
                   extra={"theory_bytes_s": theory} if theory else {})
