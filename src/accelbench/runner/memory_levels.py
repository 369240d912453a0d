"""The bandwidth of the memory level a working set lives in: what bounds a memory-bound rate.

A CPU streams from L1 what fits in its L2s (bounded by every core loading and storing a full
vector per cycle), from the last-level cache what fits there, and from main memory a working set
well above it. Main memory's figure is the device's own (datasheet or formula) where known, else
Little's law: no core has more than 64 cache-line misses in flight, and none returns from DRAM
in under 60 ns, so a core moves at most 64 × 64 B / 60 ns (68 GB/s; real ones 10-30). A figure
measured here would be tighter, but a busy machine measures it low and would refuse honest
results. An accelerator whose working set is far above its cache is bounded by its memory
bandwidth. Every bound says where it came from.
"""
from __future__ import annotations

from dataclasses import dataclass

from accelbench.devices.model import Device
from accelbench.results import Measurement
from accelbench.units import format_si
from accelbench.workloads.registry import crosses_host_link, role_of

MARGIN = 1.25                  # clock and datasheet uncertainty
MISSES_IN_FLIGHT = 64          # per core: more than any core's miss buffers hold
DRAM_LATENCY_S = 60e-9         # less than any DRAM round trip
LINE_BYTES = 64
CPU_L1_BYTES_PER_CYCLE = 256   # two 64-byte loads and a 64-byte store per cycle, with room to spare
CPU_LLC_BYTES_PER_CYCLE = 64   # per core from the last-level cache (real parts: 16-32)
ABOVE_CACHE = 2.0              # a working set this many times the cache streams from the level below
ROTATED_SETS = 2               # input sets the timed calls take in turn (workloads/rotation.py)
MEMORY_BOUND = ("memory-bound", "transfer")  # the roles (Workload.role) whose rate memory bounds


@dataclass(frozen=True)
class Level:
    name: str
    peak_bytes_s: float
    bound_bytes_s: float   # the peak with its margin or factor
    basis: str


def working_set_bytes(m: Measurement) -> int | None:
    """Bytes the timed calls touch in turn (None: not a memory-bound workload)."""
    if role_of(m) not in MEMORY_BOUND or not m.work.bytes_moved:
        return None
    per_call = m.work.bytes_moved
    if crosses_host_link(m):
        per_call *= 2  # the host side reads its source and writes its destination
    return int(per_call * ROTATED_SETS)


def _cache_bytes(device: Device, level: str) -> int | None:
    size = device.properties.get(f"{level}_cache_bytes")
    count = device.properties.get(f"{level}_cache_instances") or 1
    return int(size) * int(count) if isinstance(size, int) and size > 0 else None


def memory_bound(device: Device, working_set: int) -> Level | None:
    """The bound for a rate whose working set is `working_set` bytes (None: no figure applies)."""
    if device.kind != "cpu":
        return _accelerator(device, working_set)
    cores = device.properties.get("physical_cores") or device.properties.get("logical_cores")
    mhz = (device.properties.get("running_clock_mhz") or device.properties.get("max_clock_mhz")
           or device.properties.get("nominal_clock_mhz"))
    if not isinstance(cores, int) or not isinstance(mhz, (int, float)) or mhz <= 0:
        return None
    l2, llc = _cache_bytes(device, "l2"), _cache_bytes(device, "l3") or _cache_bytes(device, "l2")
    where = f"working set {format_si(working_set, 'B')}"
    if l2 is None or working_set <= l2:
        peak = cores * mhz * 1e6 * CPU_L1_BYTES_PER_CYCLE
        return Level("L1", peak, peak * MARGIN, f"L1 bandwidth ({where}): {cores} cores × {mhz / 1000:.2f} GHz × "
                                               f"{CPU_L1_BYTES_PER_CYCLE} B/cycle")
    if llc is None or working_set <= ABOVE_CACHE * llc:
        peak = cores * mhz * 1e6 * CPU_LLC_BYTES_PER_CYCLE
        return Level("cache", peak, peak * MARGIN, f"last-level cache bandwidth ({where}, cache "
                                                   f"{format_si(llc or 0, 'B')}): {cores} cores × {mhz / 1000:.2f} "
                                                   f"GHz × {CPU_LLC_BYTES_PER_CYCLE} B/cycle")
    return _main_memory(device, where, cores)


def _main_memory(device: Device, where: str, cores: int) -> Level:
    sheet = device.peak("memory_bandwidth", "table") or device.peak("memory_bandwidth", "formula")
    if sheet is not None:
        return Level("memory", sheet.value, sheet.value * MARGIN,
                     f"main memory bandwidth ({where}, far above the cache): {format_si(sheet.value, 'B/s')} "
                     f"({sheet.provenance})")
    peak = cores * MISSES_IN_FLIGHT * LINE_BYTES / DRAM_LATENCY_S  # reads and write-backs share the misses
    return Level("memory", peak, peak * MARGIN,
                 f"main memory bandwidth ({where}, far above the cache), Little's law: {cores} cores × "
                 f"{MISSES_IN_FLIGHT} misses in flight × {LINE_BYTES} B / {DRAM_LATENCY_S * 1e9:.0f} ns")


def _accelerator(device: Device, working_set: int) -> Level | None:
    cache = _cache_bytes(device, "l2")
    memory = device.peak("memory_bandwidth", "table") or device.peak("memory_bandwidth", "formula")
    if cache is None or memory is None or working_set <= 4 * cache:
        return None
    return Level("memory", memory.value, memory.value * MARGIN,
                 f"memory bandwidth (working set {format_si(working_set, 'B')}, far above its "
                 f"{format_si(cache, 'B')} cache): {format_si(memory.value, 'B/s')} ({memory.provenance})")
