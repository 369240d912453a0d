"""A rate beyond what the device can physically do is invalid, not a ceiling problem.

The bound for arithmetic is the peak of the result's own precision (vector or matrix unit,
whichever is faster; a dtype with no figure falls back to the fastest unit of any precision). The
bound for memory traffic is the bandwidth of the level the working set lives in (memory_levels.py):
for a CPU, L1 for what fits in L2, the last-level cache for what fits there, and main memory for a
working set well above it (its datasheet figure, else measured once here, with a generous
factor); for an accelerator, its memory bandwidth once the working set is far above its cache,
else ten times that. A margin covers clock uncertainty; for the CPU the running-clock estimate
raises the nominal-clock formula. A device with no figure gets no bound, and its results say so.
"""
from __future__ import annotations

from dataclasses import dataclass

from accelbench.devices.cpu_quota import read_quota
from accelbench.devices.model import Device
from accelbench.devices.sysfs import SysReader
from accelbench.results import Measurement
from accelbench.runner.memory_levels import memory_bound, working_set_bytes
from accelbench.timing import stats
from accelbench.units import format_si
from accelbench.verdict import BEYOND_PEAK, INVALID, NO_TIME, RATE_UNBOUNDED, VALID, VerdictReason
from accelbench.vocabulary import usable_cpus
from accelbench.workloads.registry import crosses_host_link

MARGIN = 1.25                # clock and datasheet uncertainty
CPU_BYTES_PER_CYCLE = 256    # two 64-byte loads and a 64-byte store per cycle, with room to spare
CACHE_OVER_MEMORY = 10.0     # no accelerator cache delivers more than this times its memory bandwidth
_FLOP_METRICS = ("fp64", "fp32", "fp16", "bf16", "fp64_matrix", "tf32_matrix", "fp16_matrix", "bf16_matrix")


@dataclass(frozen=True)
class Bound:
    value: float        # FLOP/s or B/s, margin included
    peak: float         # the figure it rests on, without the margin
    basis: str


def _sheet(device: Device, metric: str):
    return device.peak(metric, "table") or device.peak(metric, "formula")


def _clock_factor(device: Device) -> float:
    """Running clock over the clock the CPU formula used (turbo), at least 1."""
    running = device.properties.get("running_clock_mhz")
    nominal = device.properties.get("nominal_clock_mhz") or device.properties.get("max_clock_mhz")
    if device.kind == "cpu" and isinstance(running, (int, float)) and nominal:
        return max(1.0, running / nominal)
    return 1.0


# the peaks a result in each dtype may be read against: its vector unit and its matrix unit
_PRECISION_METRICS = {"float64": ("fp64", "fp64_matrix"), "float32": ("fp32", "tf32_matrix"),
                      "float16": ("fp16", "fp16_matrix"), "bfloat16": ("bf16", "bf16_matrix")}


def flops_bound(device: Device, dtype: str | None = None) -> Bound | None:
    own = [f for f in (_sheet(device, m) for m in _PRECISION_METRICS.get(dtype or "", ())) if f is not None]
    figures = own or [f for f in (_sheet(device, m) for m in _FLOP_METRICS) if f is not None]
    if not figures:
        return None
    best = max(figures, key=lambda f: f.value)
    factor = _clock_factor(device)
    basis = f"{best.metric} peak {format_si(best.value, 'FLOP/s')} ({best.provenance})"
    if dtype and not own:
        basis += f", the fastest unit: no {dtype} peak is known"
    if factor > 1:
        basis += f" at the running clock (×{factor:.2f})"
    return Bound(best.value * factor * MARGIN, best.value * factor, basis)


def bytes_bound(device: Device, working_set: int | None = None) -> Bound | None:
    if working_set is not None:
        level = memory_bound(device, working_set)
        if level is not None:
            return Bound(level.bound_bytes_s, level.peak_bytes_s, level.basis)
    if device.kind == "cpu":
        cores = device.properties.get("physical_cores") or device.properties.get("logical_cores")
        mhz = device.properties.get("running_clock_mhz") or device.properties.get("max_clock_mhz") \
            or device.properties.get("nominal_clock_mhz")
        if isinstance(cores, int) and isinstance(mhz, (int, float)) and mhz > 0:
            peak = cores * mhz * 1e6 * CPU_BYTES_PER_CYCLE
            return Bound(peak * MARGIN, peak, f"L1 bandwidth: {cores} cores × {mhz / 1000:.2f} GHz × "
                                              f"{CPU_BYTES_PER_CYCLE} B/cycle")
    memory = _sheet(device, "memory_bandwidth")
    if memory is None:
        return None
    peak = memory.value * CACHE_OVER_MEMORY
    return Bound(peak * MARGIN, peak, f"{CACHE_OVER_MEMORY:g}× its memory bandwidth "
                                      f"{format_si(memory.value, 'B/s')} ({memory.provenance})")


def bounding_device(m: Measurement, devices: dict[str, Device]) -> Device | None:
    """The device whose physics bounds the rate: the one measured, except that an OpenCL device
    of CPU type (PoCL) runs on the host CPU, and host↔device copies are bounded by the host (a
    device-to-device copy by the device's own memory)."""
    device = devices.get(m.spec.device)
    host_link = crosses_host_link(m)
    if host_link or (device is not None and device.kind == "cpu" and device.id != "cpu"):
        return devices.get("cpu") or device
    return device


def usable_share(device: Device, threads: int | None) -> tuple[float, str]:
    """The share of a CPU's cores a result could use: its threads (where it records them), the cores
    open to this process (affinity) and the cgroup quota, whichever is fewest, over the cores the peak
    counts; 1 for other devices. With the words saying so ('' where it is the whole)."""
    if device.kind != "cpu":
        return 1.0, ""
    total = device.properties.get("logical_cores") or device.properties.get("physical_cores")
    if not isinstance(total, int) or total <= 0:
        return 1.0, ""
    limits = {"cores open to this process": float(usable_cpus())}
    quota = read_quota(SysReader("/"))
    if quota is not None:
        limits["its CPU quota"] = quota.cores
    if threads and device.id == "cpu":
        limits[f"its {threads} thread{'s' if threads != 1 else ''}"] = float(threads)
    why, cores = min(limits.items(), key=lambda kv: kv[1])
    physical = device.properties.get("physical_cores")
    per_thread = (physical / total) if isinstance(physical, int) and physical < total else 1.0
    share = min(1.0, max(cores, 1.0) / total)
    if share >= 1.0:
        return 1.0, ""
    # on SMT, one hardware thread per core may reach the whole core's peak: never scale below a core's share
    share = min(1.0, share / per_thread) if per_thread < 1.0 else share
    return share, f"scaled to {cores:g} of {total} cores ({why})"


def judge_rate(m: Measurement, devices: dict[str, Device]) -> list[VerdictReason]:
    """INVALID where FLOP/s or B/s exceed the bound; a note where the rate cannot be bounded. On a
    CPU the bound is scaled to the cores the result could use (usable_share)."""
    median_s = stats.median(m.samples_s) if m.samples_s else 0.0
    if median_s <= 0:
        return [VerdictReason(INVALID, "no time was measured (median 0 s): nothing can be that fast", NO_TIME)]
    device = bounding_device(m, devices)
    if device is None:
        return [VerdictReason(VALID, f"rate unbounded: {m.spec.device} is not in the inventory, so no peak bounds it",
                         RATE_UNBOUNDED)]
    findings, checked = [], False
    dtype = m.spec.param("dtype")
    share, scaled = usable_share(device, m.threads if m.spec.device == device.id else None)
    for amount, unit, bound in ((m.work.flops, "FLOP/s", flops_bound(device, dtype if isinstance(dtype, str) else None)),
                                (m.work.bytes_moved, "B/s", bytes_bound(device, working_set_bytes(m)))):
        if not amount:
            continue
        if bound is None:
            continue
        if scaled and unit == "FLOP/s":  # arithmetic scales with cores; one core can draw most of the memory bandwidth
            bound = Bound(bound.value * share, bound.peak * share, f"{bound.basis}, {scaled}")
        checked = True
        rate = amount / median_s
        if rate > bound.value:
            findings.append(VerdictReason(INVALID, f"faster than this device can compute: {format_si(rate, unit)} is "
                                             f"{rate / bound.peak:,.0%} of its peak ({bound.basis}); the backend "
                                             "may skip work or not wait for the device", BEYOND_PEAK,
                                    {"rate": rate, "unit": unit, "peak": bound.peak}))
    if not checked and (m.work.flops or m.work.bytes_moved):
        findings.append(VerdictReason(VALID, f"rate unbounded: no peak is known for {device.id}, so the rate "
                                       "cannot be checked for plausibility", RATE_UNBOUNDED))
    return findings
