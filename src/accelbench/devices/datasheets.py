"""Datasheet peaks: the vendor's own figures for known accelerators, with the document they are from.

The table lives in accelbench/data/datasheets.json. A row is found from a device name as the
drivers report it ("Tesla K40m", "NVIDIA H100 80GB HBM3", "Apple M2"); a name that matches no
row, or more than one, gets no table figures — a wrong datasheet is worse than none.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from accelbench.devices.model import PEAK_METRICS, PeakFigure

TERA = 1e12
GIB_BYTES = 1024 ** 3


@dataclass(frozen=True)
class DatasheetRow:
    key: str
    name: str
    vendor: str
    source: str
    peaks: dict[str, float]  # per package, in FLOP/s, OP/s or B/s
    match: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...] = ()
    notes: str = ""
    memory_bytes: int | None = None
    memory_options_bytes: tuple[int, ...] = ()
    devices_per_package: int = 1

    def matches(self, normalized_name: str) -> bool:
        if not any(p.search(normalized_name) for p in self.match):
            return False
        return not any(p.search(normalized_name) for p in self.exclude)

    def memory_bytes_for(self, name: str) -> int | None:
        """The board's memory: the single size, or the option the name spells out ("32GB")."""
        if self.memory_bytes is not None:
            return self.memory_bytes
        sizes = {int(m) * GIB_BYTES for m in re.findall(r"(\d+)\s*gb\b", name.lower())}
        chosen = [b for b in self.memory_options_bytes if b in sizes]
        return chosen[0] if len(chosen) == 1 else None


def normalize_name(name: str) -> str:
    """"nvidia h100 80gb hbm3" from "NVIDIA H100 80GB HBM3"; trademarks and punctuation dropped."""
    text = name.lower()
    for mark in ("(r)", "(tm)", "®", "™"):
        text = text.replace(mark, " ")
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text).split())


def _row(raw: dict[str, Any]) -> DatasheetRow:
    unknown = set(raw["peaks_tera"]) - set(PEAK_METRICS)
    if unknown:
        raise ValueError(f"datasheet row {raw['key']!r}: unknown metrics {sorted(unknown)}")
    memory_gib = raw.get("memory_gib")
    return DatasheetRow(
        key=raw["key"], name=raw["name"], vendor=raw["vendor"], source=raw["source"],
        peaks={metric: float(value) * TERA for metric, value in raw["peaks_tera"].items()},
        match=tuple(re.compile(p) for p in raw["match"]),
        exclude=tuple(re.compile(p) for p in raw.get("exclude", ())),
        notes=raw.get("notes", ""),
        memory_bytes=int(memory_gib * GIB_BYTES) if memory_gib is not None else None,
        memory_options_bytes=tuple(int(g * GIB_BYTES) for g in raw.get("memory_gib_options", ())),
        devices_per_package=int(raw.get("devices_per_package", 1)),
    )


@lru_cache(maxsize=None)
def rows() -> tuple[DatasheetRow, ...]:
    text = resources.files("accelbench").joinpath("data", "datasheets.json").read_text(encoding="utf-8")
    return tuple(_row(raw) for raw in json.loads(text)["rows"])


def candidates(name: str) -> tuple[DatasheetRow, ...]:
    normalized = normalize_name(name)
    return tuple(row for row in rows() if row.matches(normalized))


def lookup(name: str) -> DatasheetRow | None:
    """The one row whose patterns match `name`; None when none or several do."""
    found = candidates(name) if name else ()
    return found[0] if len(found) == 1 else None


def _detail(row: DatasheetRow) -> str:
    detail = f"{row.name}: {row.source}"
    if row.devices_per_package > 1:
        detail += f"; package figure ÷ {row.devices_per_package} devices per package"
    if row.notes:
        detail += f" ({row.notes})"
    return detail


def table_peaks(name: str) -> tuple[PeakFigure, ...]:
    """Datasheet figures for the device called `name`, per device, in PEAK_METRICS order."""
    row = lookup(name)
    if row is None:
        return ()
    detail = _detail(row)
    figures = []
    for metric in PEAK_METRICS:
        if metric not in row.peaks:
            continue
        package_value = row.peaks[metric]
        inputs = {"row": row.key, "source": row.source, "package_value": package_value,
                  "devices_per_package": row.devices_per_package}
        figures.append(PeakFigure(metric, package_value / row.devices_per_package, "table", detail, inputs))
    return tuple(figures)


def table_memory_bytes(name: str) -> int | None:
    """The datasheet memory size of one device called `name` (package size ÷ devices per package)."""
    row = lookup(name)
    if row is None:
        return None
    package_bytes = row.memory_bytes_for(name)
    return None if package_bytes is None else package_bytes // row.devices_per_package
