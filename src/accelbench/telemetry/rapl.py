"""CPU package and DRAM energy from Linux's powercap interface (RAPL, Intel and AMD Zen alike).

/sys/class/powercap/intel-rapl:N is a package (or "psys", the whole platform, left out: it overlaps
the packages), intel-rapl:N:M its sub-zones; only "dram" is read, since "core" and "uncore" are
parts of the package figure. Each `energy_uj` counts microjoules and restarts from zero after
`max_energy_range_uj`. Since Linux 5.10 `energy_uj` is readable by root only (the PLATYPUS power
side channel, CVE-2020-8694): then the source says so instead of reporting nothing.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from accelbench.telemetry.energy import rate_w
from accelbench.telemetry.model import (
    NO_PERMISSION, NOT_PRESENT, CounterReading, DeviceInfo, Sample, Source, SourceUnavailable,
)

POWERCAP_ROOT = "/sys/class/powercap"
# Intel documents the energy status registers as updated about every millisecond
RAPL_UPDATE_PERIOD_S = 0.001
_ZONE = re.compile(r"intel-rapl:(\d+)(?::(\d+))?")


class _Zone:
    def __init__(self, path: Path, counter: str, wrap_j: float, in_total: bool):
        self.path, self.counter, self.wrap_j, self.in_total = path, counter, wrap_j, in_total


def _read_file(path: Path) -> str:
    return path.read_text().strip()


class RaplSource(Source):
    name = "rapl"
    vendor = "CPU energy (RAPL)"
    families = ("cpu",)

    def __init__(self, root: str = POWERCAP_ROOT, read: Callable[[Path], str] = _read_file):
        super().__init__()
        self.root = Path(root)
        self._read = read
        self._zones: list[_Zone] = []
        self._previous: dict[str, CounterReading] = {}

    def open(self, now_s: float) -> None:
        paths = sorted(p for p in self.root.glob("intel-rapl:*") if _ZONE.fullmatch(p.name))
        if not paths:
            raise SourceUnavailable(NOT_PRESENT, f"no RAPL zones under {self.root} (no powercap/intel_rapl "
                                                 "driver, not Linux, or a VM that does not pass RAPL through)")
        try:
            self._zones = [z for z in (self._zone(p) for p in paths) if z is not None]
            readings = self.counters(now_s)
        except PermissionError as exc:
            raise SourceUnavailable(NO_PERMISSION, (
                f"{exc.filename or self.root} is readable by root only (Linux 5.10+, CVE-2020-8694): run as root "
                "or grant read access, e.g. `sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj`")) from exc
        if not self._zones:
            raise SourceUnavailable(NOT_PRESENT, f"{self.root} has RAPL zones but no package or DRAM zone")
        self._previous = {r.counter: r for r in readings}
        counters = ", ".join(z.counter for z in self._zones)
        self.devices = {"cpu": DeviceInfo("cpu", self.name, metrics=("power_w", "dram_power_w"),
                                          notes=[f"energy from RAPL counters: {counters}"])}

    def _zone(self, path: Path) -> _Zone | None:
        name = self._read(path / "name")
        matched = _ZONE.fullmatch(path.name)
        if matched is None:  # the caller globbed only matching names
            return None
        package, sub = matched.groups()
        if sub is None and name.startswith("package"):
            counter, in_total = f"RAPL {name}", True
        elif sub is not None and name == "dram":
            counter, in_total = f"RAPL package-{package}/dram", False
        else:
            return None  # psys overlaps the packages; core and uncore are inside them
        wrap_j = int(self._read(path / "max_energy_range_uj")) / 1e6
        return _Zone(path, counter, wrap_j, in_total)

    def counters(self, now_s: float) -> list[CounterReading]:
        return [CounterReading("cpu", z.counter, now_s, int(self._read(z.path / "energy_uj")) / 1e6,
                               z.wrap_j, RAPL_UPDATE_PERIOD_S, z.in_total) for z in self._zones]

    def poll(self, now_s: float) -> list[Sample]:
        """Package and DRAM power as rates between this poll's counters and the previous poll's."""
        current = self.counters(now_s)
        package_w = dram_w = None
        for reading in current:
            before = self._previous.get(reading.counter)
            power = rate_w(before, reading) if before is not None else None
            if power is None:
                continue
            if reading.in_total:
                package_w = (package_w or 0.0) + power
            else:
                dram_w = (dram_w or 0.0) + power
        self._previous = {r.counter: r for r in current}
        values = {k: v for k, v in (("power_w", package_w), ("dram_power_w", dram_w)) if v is not None}
        return [Sample("cpu", now_s, values)] if values else []
