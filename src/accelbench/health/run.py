"""`accelbench check` from start to end: the inventory, the CPU's configuration and hardware,
its achieved rates, then every GPU; each step bounded in time.
"""
from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from accelbench.devices.sysfs import SysReader
from accelbench.health import cpu_config, cpu_hardware, cpu_perf
from accelbench.health import expected as exp
from accelbench.health.bounded import call_within
from accelbench.health.model import FAIL, SKIP, THEORY, HealthFinding, exit_code, finding, overall

INVENTORY_LIMIT_S = 60.0
PROBES = ("cpu", "nvidia", "amd", "apple", "opencl")


@dataclass
class Report:
    level: str
    host: str
    findings: list[HealthFinding] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def status(self) -> str:
        return overall(self.findings)

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "level": self.level, "status": self.status, "exit_code": self.exit_code,
                "elapsed_s": round(self.elapsed_s, 2), "findings": [f.to_dict() for f in self.findings]}


def inventory_devices(db_path: str | None) -> tuple[list, HealthFinding | None]:
    """The inventory's devices with this host's measured ceilings; a hung probe is a FAIL."""
    from accelbench.store.ceilings import measured_inventory

    outcome = call_within(lambda: measured_inventory(PROBES, db_path=db_path), INVENTORY_LIMIT_S)
    if outcome.timed_out:
        return [], finding("inventory", "host", FAIL, f"the device inventory did not finish within "
                           f"{INVENTORY_LIMIT_S:.0f} s: a driver hangs")
    if outcome.error is not None:
        return [], finding("inventory", "host", FAIL, f"the device inventory failed: {outcome.error}")
    return list(outcome.value.devices), None


def cpu_findings(level: str, device, reader: SysReader, environ: Mapping[str, str], affinity: set[int],
                 db_path: str | None, hostname: str) -> list[HealthFinding]:
    cpu_count = len(_online(reader)) or os.cpu_count() or 1
    found = cpu_config.config_findings(reader, environ, affinity, cpu_count)
    dimms = cpu_hardware.read_dimms(reader)
    found += [cpu_hardware.edac_finding(reader), cpu_hardware.numa_finding(reader), cpu_hardware.dimm_finding(dimms)]
    before = cpu_hardware.throttle_counts(reader)
    logical = (device.properties.get("logical_cores") if device is not None else None) or cpu_count
    usable, note = usable_cpus(environ, affinity, logical)
    scale = min(1.0, usable / logical)
    theory = (exp.Expected(dimms.theory_bytes_s, THEORY, "populated DIMMs × speed × 8 B")
              if dimms is not None and dimms.theory_bytes_s and scale == 1.0 else None)
    found += cpu_perf.perf_findings(level, device, usable, scale, note, db_path, hostname, theory)
    found.append(cpu_hardware.throttle_finding(before, cpu_hardware.throttle_counts(reader)))
    return found


def usable_cpus(environ: Mapping[str, str], affinity: set[int], logical: int) -> tuple[int, str]:
    """The CPUs the measurements may use, and why: the affinity, but no more than Slurm gave the
    job on this node (where Slurm binds no tasks, a job of 1 CPU still sees every core: measuring
    on all of them would take other jobs' cores, and expecting all of them would be unfair)."""
    slurm = cpu_config.slurm_cpus(environ)
    if slurm and slurm[0] < len(affinity):
        return slurm[0], f"{slurm[0]} of {logical} CPUs given ({slurm[1]})"
    return len(affinity), f"{len(affinity)} of {logical} CPUs usable"


def _online(reader: SysReader) -> list[int]:
    from accelbench.devices.sysfs import parse_cpu_list

    return parse_cpu_list(reader.line("sys/devices/system/cpu/online"))


def gpu_findings(devices: list, level: str, nvml=None, amdsmi=None) -> list[HealthFinding]:
    from accelbench.health.amd_health import amd_findings
    from accelbench.health.gpu_checks import nvidia_findings

    nvidia = [d for d in devices if d.id.startswith("cuda:")]
    amd = [d for d in devices if d.id.startswith("rocm:")]
    other = [d for d in devices if d.kind != "cpu" and d not in nvidia and d not in amd]
    found = nvidia_findings(nvidia, level, nvml) + amd_findings(amd, amdsmi)
    return found + [finding(f"{d.id}.health", d.id, SKIP, f"no health checks for {d.vendor} {d.kind} devices "
                            "through this interface yet") for d in other]


def run_check(level: str = "standard", db_path: str | None = None, *, root: str = "/",
              environ: Mapping[str, str] | None = None, affinity: set[int] | None = None,
              devices: list | None = None, nvml=None, amdsmi=None) -> Report:
    """The whole check; `devices`, `nvml`, `amdsmi`, `root` replace the live machine in tests."""
    start_s = time.monotonic()
    hostname = socket.gethostname()
    report = Report(level, hostname)
    if devices is None:
        devices, failed = inventory_devices(db_path)
        report.findings += [failed] if failed else []
    cpu = next((d for d in devices if d.id == "cpu"), None)
    report.findings += cpu_findings(level, cpu, SysReader(root), os.environ if environ is None else environ,
                                    affinity if affinity is not None else cpu_config.live_affinity(), db_path, hostname)
    report.findings += gpu_findings(devices, level, nvml, amdsmi)
    report.elapsed_s = time.monotonic() - start_s
    return report
