"""What differs between the machines and settings of two runs, for the comparison to state.

A comparison is never refused for differing metadata, but every difference that can move the
numbers (another host, device, driver, library version, BLAS and its threads, thread variables,
rigor, another version of a workload's code) is listed beside the verdicts, and a comparison across
hosts is labelled as such.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from accelbench.report.data import RunData

UNSET = "(unset)"
UNKNOWN_VERSION = "(unknown)"  # a result stored before workloads had versions
# environment variables recorded with a run that cannot change a timing
IGNORED_ENVIRONMENT = frozenset({"ACCELBENCH_DB"})
DEVICE_PROPERTIES = ("driver_version", "cuda_driver_version", "compute_capability", "usable_cpus",
                     "running_clock_mhz", "max_clock_mhz")
CLOCK_TOLERANCE = 0.05  # a clock measured at each run moves a little every time: only a real change counts


@dataclass(frozen=True)
class MetadataDifference:
    field: str        # "hostname", "software.numpy", "environment.OMP_NUM_THREADS", "device cpu.name"
    a: str
    b: str

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "a": self.a, "b": self.b}

    def text(self) -> str:
        return f"{self.field}: {self.a} → {self.b}"


def _text(value: Any) -> str:
    if value is None or value == "":
        return UNSET
    return str(value)


def _differs(name: str, a: Any, b: Any) -> bool:
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    if numbers and name.endswith("_mhz") and max(abs(a), abs(b)) > 0:
        return abs(a - b) / max(abs(a), abs(b)) > CLOCK_TOLERANCE
    return _text(a) != _text(b)


def _mapping_differences(prefix: str, a: dict, b: dict, ignore: Iterable[str] = ()) -> list[MetadataDifference]:
    skipped = set(ignore)
    keys = sorted((set(a) | set(b)) - skipped)
    return [MetadataDifference(f"{prefix}.{k}", _text(a.get(k)), _text(b.get(k)))
            for k in keys if _text(a.get(k)) != _text(b.get(k))]


def _blas_summary(device: dict[str, Any]) -> str | None:
    """"openblas 0.3.31 SkylakeX, 2 threads" from the CPU's recorded BLAS libraries."""
    libraries = (device.get("properties") or {}).get("blas_libraries") or []
    shown = []
    for lib in (x for x in libraries if isinstance(x, dict)):
        words = " ".join(str(lib[k]) for k in ("library", "version", "core_type") if lib.get(k))
        shown.append(f"{words}, {lib.get('threads')} threads")
    return "; ".join(sorted(shown)) or None  # sorted: the load order varies from process to process


def _device_differences(device_ids: Iterable[str], a: RunData, b: RunData) -> list[MetadataDifference]:
    devices_a, devices_b = a.device_records(), b.device_records()
    found = []
    for device_id in sorted(set(device_ids)):
        da, db = devices_a.get(device_id, {}), devices_b.get(device_id, {})
        pairs = [("name", da.get("name"), db.get("name")), ("blas", _blas_summary(da), _blas_summary(db))]
        props_a, props_b = da.get("properties") or {}, db.get("properties") or {}
        pairs += [(p, props_a.get(p), props_b.get(p)) for p in DEVICE_PROPERTIES]
        found += [MetadataDifference(f"device {device_id}.{name}", _text(x), _text(y))
                  for name, x, y in pairs if _differs(name, x, y)]
    return found


def differences(a: RunData, b: RunData, device_ids: Iterable[str] = ()) -> list[MetadataDifference]:
    """Every recorded difference between runs a and b that can change a timing."""
    found = [MetadataDifference(k, _text(x), _text(y)) for k, x, y in (
        ("hostname", a.hostname, b.hostname),
        ("os", a.machine.get("os"), b.machine.get("os")),
        ("python", a.machine.get("python"), b.machine.get("python")),
        ("accelbench", a.accelbench_version, b.accelbench_version),
        ("rigor", a.selection.get("rigor"), b.selection.get("rigor")),
    ) if _text(x) != _text(y)]
    found += _mapping_differences("software", a.machine.get("software") or {}, b.machine.get("software") or {},
                                  ignore=("accelbench", "python"))
    found += _mapping_differences("environment", a.machine.get("environment") or {},
                                  b.machine.get("environment") or {}, ignore=IGNORED_ENVIRONMENT)
    found += _device_differences(device_ids, a, b)
    found += _workload_versions(a, b)
    return found


def _workload_versions(a: RunData, b: RunData) -> list[MetadataDifference]:
    """Each workload both runs measured whose code version differs ("workload matmul.version": 1 → 2):
    its figures may have changed because what it measures changed, not the machine."""
    def versions(run: RunData) -> dict[str, str]:
        found: dict[str, set[str]] = {}
        for m in run.measurements:
            found.setdefault(m.spec.workload, set()).add(m.workload_version or UNKNOWN_VERSION)
        return {name: ", ".join(sorted(v)) for name, v in found.items()}
    in_a, in_b = versions(a), versions(b)
    return [MetadataDifference(f"workload {name}.version", in_a[name], in_b[name])
            for name in sorted(set(in_a) & set(in_b)) if in_a[name] != in_b[name]]


def same_machine(a: RunData, b: RunData) -> bool:
    """Same host name and the same CPU: the runs can be read as a history of one machine."""
    if not a.hostname or a.hostname != b.hostname:
        return False
    return a.device_name("cpu") == b.device_name("cpu")
