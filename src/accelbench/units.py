"""Numbers with their units, for people: bytes in binary prefixes, rates in SI prefixes.

Property names end in their unit (`memory_total_bytes`, `max_sm_clock_mhz`, `power_limit_w`):
`format_property` reads the suffix, so every number shown carries its unit.
"""
from __future__ import annotations

import math
from typing import Any

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_SI = ("", "k", "M", "G", "T", "P", "E")


def format_bytes(value: float | None) -> str:
    if value is None:
        return "—"
    value = float(value)
    index = 0
    while abs(value) >= 1024 and index < len(_BINARY) - 1:
        value /= 1024
        index += 1
    return f"{value:.0f} {_BINARY[index]}" if index == 0 or value >= 100 else f"{value:.1f} {_BINARY[index]}"


def format_si(value: float | None, unit: str, digits: int = 3) -> str:
    """1.234e12, 'FLOP/s' -> '1.23 TFLOP/s'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    value = float(value)
    index = 0
    while abs(value) >= 1000 and index < len(_SI) - 1:
        value /= 1000
        index += 1
    return f"{_significant(value, digits)} {_SI[index]}{unit}"


def format_seconds(value_s: float | None) -> str:
    if value_s is None:
        return "—"
    for factor, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if abs(value_s) >= factor or unit == "ns":
            return f"{_significant(value_s / factor, 3)} {unit}"
    return f"{value_s} s"


def _significant(value: float, digits: int) -> str:
    if value == 0:
        return "0"
    magnitude = int(math.floor(math.log10(abs(value))))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:.{decimals}f}"


_SUFFIXES = (
    ("_bytes_per_s", lambda v: format_si(v, "B/s")),
    ("_bytes", format_bytes),
    ("_mhz", lambda v: f"{v:,.0f} MHz"),
    ("_ghz", lambda v: f"{v:.2f} GHz"),
    ("_khz", lambda v: f"{v:,.0f} kHz"),
    ("_mw", lambda v: f"{v / 1000:.1f} W"),
    ("_w", lambda v: f"{v:.1f} W"),
    ("_bits", lambda v: f"{v:,.0f} bit"),
    ("_c", lambda v: f"{v:.0f} °C"),
    ("_percent", lambda v: f"{v:.1f} %"),
    ("_s", format_seconds),
    ("_flops", lambda v: format_si(v, "FLOP/s")),
)


def format_property(name: str, value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        for suffix, formatter in _SUFFIXES:
            if name.endswith(suffix):
                return formatter(value)
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) if value else "none"
    return str(value)


def label(name: str) -> str:
    """'max_sm_clock_mhz' -> 'Max SM clock' (the unit moves to the value)."""
    for suffix, _ in _SUFFIXES:
        if name.endswith(suffix) and name != suffix.lstrip("_"):
            name = name[: -len(suffix)]
            break
    words = name.split("_")
    acronyms = {"sm": "SM", "pci": "PCI", "pcie": "PCIe", "ecc": "ECC", "mig": "MIG", "uuid": "UUID",
                "cuda": "CUDA", "l1d": "L1d", "l1i": "L1i", "l2": "L2", "l3": "L3", "numa": "NUMA",
                "blas": "BLAS", "id": "id", "fp64": "fp64", "fp16": "fp16", "opencl": "OpenCL", "vram": "VRAM"}
    shown = [acronyms.get(w, w) for w in words]
    if shown and shown[0] == words[0]:
        shown[0] = shown[0].capitalize()
    return " ".join(shown)
