"""How the CPU is configured for this process: quota, affinity, frequency governor, turbo, BLAS kernels.

These are the commonest faults of a shared node and need no measurement: a job or container CPU
quota, an affinity narrower than the cores the job was given, a power-saving governor, turbo off.
Every reader takes a SysReader (a root folder), so tests replay recorded trees.
"""
from __future__ import annotations

import os
import re
from typing import Mapping

from accelbench.devices.cpu import parse_cpuinfo
from accelbench.devices.cpu_quota import Quota, read_quota  # noqa: F401 - re-exported: the health check's reader
from accelbench.devices.sysfs import SysReader, parse_cpu_list
from accelbench.health.model import CONFIG, FAIL, PASS, SKIP, WARN, HealthFinding, finding

CPU_ROOT = "sys/devices/system/cpu"
QUOTA_FAIL_SHARE = 0.9   # a quota under 90% of the cores given is a fault; 90-100% a warning
DYNAMIC_PSTATE = ("intel_pstate", "amd-pstate-epp", "intel_cpufreq")  # "powersave" is their normal mode


def slurm_cpus(environ: Mapping[str, str]) -> tuple[int, str] | None:
    """The CPUs Slurm gave this job on this node, and the variable that says so."""
    for name in ("SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE"):
        match = re.match(r"\s*(\d+)", environ.get(name, ""))
        if match:
            return int(match.group(1)), f"{name}={environ[name]}"
    return None


def cores_given(environ: Mapping[str, str], cpu_count: int) -> tuple[int, str]:
    """What this process should be able to use: Slurm's allocation, else the machine."""
    slurm = slurm_cpus(environ)
    return slurm if slurm else (cpu_count, f"os.cpu_count() = {cpu_count}")


def quota_finding(reader: SysReader, given: int, given_source: str) -> HealthFinding:
    quota = read_quota(reader)
    if quota is None:
        return finding("cpu.quota", "cpu", PASS, "no CPU quota on this process's cgroup", measured=None,
                       expected=given, unit="cores", source=CONFIG, detail=f"cores given: {given_source}")
    share = quota.cores / given if given else 1.0
    status = PASS if share >= 1 else (WARN if share >= QUOTA_FAIL_SHARE else FAIL)
    shortfall = max(0.0, given - quota.cores)
    summary = (f"CPU quota {quota.cores:.2f} cores, {given} given: " +
               ("no shortfall" if status == PASS else f"shortfall {shortfall:.2f} cores ({1 - share:.0%})"))
    return finding("cpu.quota", "cpu", status, summary, measured=round(quota.cores, 3), expected=given,
                   unit="cores", source=CONFIG, detail=f"{quota.where}; cores given: {given_source}")


def affinity_finding(environ: Mapping[str, str], affinity: set[int], cpu_count: int) -> HealthFinding:
    allowed = len(affinity)
    shown = _cpu_ranges(affinity)
    slurm = slurm_cpus(environ)
    if slurm and allowed < slurm[0]:
        return finding("cpu.affinity", "cpu", FAIL, f"affinity allows {allowed} CPU(s) ({shown}) but Slurm gave "
                       f"this job {slurm[0]}", measured=allowed, expected=slurm[0], unit="CPUs", source=CONFIG,
                       detail=f"os.sched_getaffinity = {{{shown}}}; {slurm[1]}")
    if not slurm and allowed < cpu_count:
        return finding("cpu.affinity", "cpu", WARN, f"affinity allows {allowed} of the machine's {cpu_count} CPUs "
                       f"({shown}): taskset, numactl or a cpuset; expected rates are scaled to {allowed}",
                       measured=allowed, expected=cpu_count, unit="CPUs", source=CONFIG,
                       detail=f"os.sched_getaffinity = {{{shown}}}; os.cpu_count() = {cpu_count}")
    given = slurm[1] if slurm else f"os.cpu_count() = {cpu_count}"
    return finding("cpu.affinity", "cpu", PASS, f"affinity allows {allowed} CPU(s) ({shown})", measured=allowed,
                   expected=slurm[0] if slurm else cpu_count, unit="CPUs", source=CONFIG, detail=given)


def _cpu_ranges(cpus: set[int]) -> str:
    ordered, ranges = sorted(cpus), list[list[int]]()
    for cpu in ordered:
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def governor_finding(reader: SysReader) -> HealthFinding:
    cpus = parse_cpu_list(reader.line(f"{CPU_ROOT}/online")) or [0]
    governors = {cpu: reader.line(f"{CPU_ROOT}/cpu{cpu}/cpufreq/scaling_governor") for cpu in cpus}
    known = {cpu: g for cpu, g in governors.items() if g}
    if not known:
        return finding("cpu.governor", "cpu", SKIP, "no cpufreq in sysfs: the clock is set by the hypervisor or "
                       "the firmware, not by a governor here", source=CONFIG)
    driver = reader.line(f"{CPU_ROOT}/cpu{next(iter(known))}/cpufreq/scaling_driver") or "unknown"
    slow = sorted({g for g in known.values() if g in ("powersave", "userspace")
                   and not (g == "powersave" and driver in DYNAMIC_PSTATE)})
    capped = _capped(reader, list(known))
    names = ", ".join(sorted(set(known.values())))
    if slow or capped:
        why = [f"governor {', '.join(slow)} (driver {driver}) keeps the clock low"] if slow else []
        why += [capped] if capped else []
        return finding("cpu.governor", "cpu", WARN, "; ".join(why), measured=names, expected="performance",
                       source=CONFIG, detail=f"cpufreq scaling_governor on {len(known)} CPUs; driver {driver}")
    return finding("cpu.governor", "cpu", PASS, f"governor {names} (driver {driver})", measured=names,
                   expected="performance or a dynamic governor", source=CONFIG)


def _capped(reader: SysReader, cpus: list[int]) -> str:
    for cpu in cpus:
        limit = reader.integer(f"{CPU_ROOT}/cpu{cpu}/cpufreq/scaling_max_freq")
        top = reader.integer(f"{CPU_ROOT}/cpu{cpu}/cpufreq/cpuinfo_max_freq")
        if limit and top and limit < 0.95 * top:
            return f"cpu{cpu} capped at {limit // 1000} of {top // 1000} MHz (scaling_max_freq)"
    return ""


def turbo_finding(reader: SysReader) -> HealthFinding:
    no_turbo = reader.integer(f"{CPU_ROOT}/intel_pstate/no_turbo")
    boost = reader.integer(f"{CPU_ROOT}/cpufreq/boost")
    if no_turbo is None and boost is None:
        return finding("cpu.turbo", "cpu", SKIP, "turbo state not exposed (no intel_pstate/no_turbo, no "
                       "cpufreq/boost): a VM, or the firmware decides", source=CONFIG)
    off = no_turbo == 1 or boost == 0
    where = "intel_pstate/no_turbo = 1" if no_turbo == 1 else ("cpufreq/boost = 0" if boost == 0 else "enabled")
    return finding("cpu.turbo", "cpu", WARN if off else PASS, "turbo disabled: the cores run at most at their "
                   "base clock" if off else "turbo enabled", measured="off" if off else "on", expected="on",
                   source=CONFIG, detail=where)


# OpenBLAS core types whose kernels use no AVX-512 (OpenBLAS's TargetList.txt, x86_64)
NO_AVX512_CORETYPES = {"prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge", "haswell", "atom",
                       "bulldozer", "piledriver", "steamroller", "excavator", "opteron", "barcelona", "zen", "nano"}


def blas_kernel_finding(environ: Mapping[str, str], cpu_flags: set[str]) -> HealthFinding:
    """OPENBLAS_CORETYPE forcing kernels older than the CPU: on a 2-core Zen 5 VM whose image set
    OPENBLAS_CORETYPE=Haswell, numpy's float32 matmul at n=1000 took 15.6 ms on one thread against
    8.2 ms with OpenBLAS's own choice (SkylakeX), so numpy read 1.9× slower than jax there."""
    forced = environ.get("OPENBLAS_CORETYPE", "").strip()
    if not forced:
        return finding("cpu.blas_kernels", "cpu", PASS, "OpenBLAS picks its kernels for this CPU (no OPENBLAS_CORETYPE)",
                       source=CONFIG)
    if "avx512f" in cpu_flags and forced.lower() in NO_AVX512_CORETYPES:
        return finding("cpu.blas_kernels", "cpu", WARN,
                       f"OPENBLAS_CORETYPE={forced} makes OpenBLAS (numpy's BLAS) use kernels without AVX-512 on a "
                       "CPU that has it: its matmul may run at about half the speed the CPU can reach, and numpy "
                       "reads slower than frameworks with their own kernels; unset it unless this OpenBLAS "
                       "does not know the CPU", measured=forced, expected="unset (OpenBLAS's own choice)",
                       source=CONFIG, detail="OPENBLAS_CORETYPE in the environment; avx512f in /proc/cpuinfo")
    return finding("cpu.blas_kernels", "cpu", PASS, f"OPENBLAS_CORETYPE={forced} (set in the environment)",
                   measured=forced, source=CONFIG)


def live_affinity() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def config_findings(reader: SysReader, environ: Mapping[str, str], affinity: set[int],
                    cpu_count: int) -> list[HealthFinding]:
    given, source = cores_given(environ, cpu_count)
    return [quota_finding(reader, min(given, len(affinity)) if not slurm_cpus(environ) else given, source),
            affinity_finding(environ, affinity, cpu_count), governor_finding(reader), turbo_finding(reader),
            blas_kernel_finding(environ, _cpu_flags(reader))]


def _cpu_flags(reader: SysReader) -> set[str]:
    return set((parse_cpuinfo(reader.text("proc/cpuinfo") or "").get("flags") or "").split())
