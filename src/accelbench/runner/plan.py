"""Turn a selection (workloads, sizes, dtypes, devices, backends) into the list of things to measure.

The CPU is measured twice where threads can be limited: one thread and all threads, so speed-ups
against "one core" and against "the whole CPU" can both be shown, each labelled.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Mapping

from accelbench.backends.base import DTYPES
from accelbench.backends.base import Backend
from accelbench.backends.registry import BrokenBackend, Listed
from accelbench.errors import UsageError
from accelbench.results import Params, Skip, Spec
from accelbench.vocabulary import BASELINE_DEVICE, is_cpu_baseline, usable_cpus
from accelbench.workloads.base import Workload
from accelbench.workloads.registry import QUICK_SUITE, get_workload, workload_names

# 64, 1.5K, 64M, 1GiB, 2kb, 4096B: a binary prefix, then optionally B (bytes) with or without i
_SIZE = re.compile(r"\s*([0-9]{1,30}(?:\.[0-9]{1,30})?)\s*(?:([kmgt])(?:i?b)?|b)?\s*", re.IGNORECASE)
_FACTORS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
MAX_SIZE = 2**50  # far beyond any memory: larger is a typo, and would overflow the int64 shapes
_SIZES_ACCEPTED = ("accepted: comma-separated whole sizes from 1 to 2**50, optionally with a binary "
                   "suffix (K, M, G, T, e.g. 64M or 1GiB)")
MAX_HOST_FRACTION = 0.8  # refuse sizes whose inputs alone would not fit in most of the memory


@dataclass(frozen=True)
class PlanItem:
    spec: Spec
    threads: int | None  # CPU threads to run with (None: as the backend has them)

    @property
    def params(self) -> Params:
        return {k: v for k, v in self.spec.params if k != "threads"}


@dataclass
class Plan:
    items: list[PlanItem] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)


def parse_sizes(text: str | None) -> list[int] | None:
    """'1000,2000' or '1MiB,64M' -> integers; None -> None (the workloads' grids).

    Anything else that is not a list of whole sizes from 1 to MAX_SIZE, the empty text included,
    is a usage error: an empty --sizes must not quietly mean the full default grid.
    """
    if text is None:
        return None
    sizes = []
    for part in text.split(","):
        match = _SIZE.fullmatch(part)
        if not match:
            where = f" in {text!r}" if part != text else ""
            raise UsageError(f"--sizes: cannot read {part.strip()!r}{where}; {_SIZES_ACCEPTED}")
        value = Decimal(match.group(1)) * _FACTORS[(match.group(2) or "").lower()]  # exact
        if value < 1 or value != value.to_integral_value() or value > MAX_SIZE:
            raise UsageError(f"--sizes: {part.strip()!r} is not a whole size from 1 to 2**50; "
                             f"{_SIZES_ACCEPTED}")
        sizes.append(int(value))
    return sizes


def parse_list(text: str | None, accepted: tuple[str, ...] | list[str], option: str) -> list[str] | None:
    if not text:
        return None
    values = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in values if v not in accepted]
    if unknown:
        raise UsageError(f"{option}: unknown {', '.join(map(repr, unknown))}; accepted: {', '.join(accepted)}")
    return values


def build_plan(workloads: list[str] | None, *, sizes: list[int] | None = None, dtypes: list[str] | None = None,
               devices: list[str] | None = None, backends: Listed | None = None, quick: bool = True,
               cpu_threads: int | None = None, host_memory_bytes: int | None = None,
               known_devices: set[str] | None = None, repeated: Mapping[str, str] | None = None) -> Plan:
    """`backends`: name -> Backend instance (available or not) to plan across.

    `repeated`: a device id -> an earlier one on the same processor (devices.model.repeated_host_cpus);
    without `devices` asked for, each processor is measured once and the repeats become skips.

    `known_devices`: the inventory's device ids. A backend may only measure a device the
    inventory found (a plugin that brings a new kind of device brings a probe for it); the others
    are recorded as skips with the reason. None (tests with fake devices) accepts every id.
    """
    names = workloads or list(QUICK_SUITE)
    for name in names:
        if name not in workload_names():
            raise UsageError(f"unknown workload {name!r}; accepted: {', '.join(workload_names())}")
    if dtypes:
        parse_list(",".join(dtypes), DTYPES, "--dtype")
    targets, plan = _targets(backends or {}, devices), Plan()
    if known_devices is not None:
        unknown = [(b, d) for b, d in targets if d not in known_devices]
        targets = [(b, d) for b, d in targets if d in known_devices]
        plan.skips += [Skip(Spec.make(name, b, d), f"{b} declares device {d}, which the inventory did not find: "
                                                 "no probe reports it, so nothing it measures could be attributed "
                                                 "to it (a plugin that adds a kind of device must add a probe)")
                       for name in names for b, d in unknown]
    if not devices and repeated:
        again = [(b, d) for b, d in targets if d in repeated]
        targets = [(b, d) for b, d in targets if d not in repeated]
        plan.skips += [Skip(Spec.make(name, b, d), f"another OpenCL implementation on this same CPU, measured as "
                                                 f"{repeated[d]}: a run without --device measures each processor "
                                                 f"once (`--device {d}` measures this one)")
                       for name in names for b, d in again]
    all_threads = cpu_threads or usable_cpus()
    for name in names:
        workload = get_workload(name)
        chosen = [d for d in dtypes if d in workload.dtypes] if dtypes else None
        if dtypes and not chosen:
            raise UsageError(f"--dtype: {name} runs in {', '.join(workload.dtypes)}, not {', '.join(dtypes)}")
        for params in workload.grid(sizes, chosen, quick):
            _check_size(workload, params, host_memory_bytes)
            for backend_name, device in targets:
                why = _cannot_run(workload, (backends or {}).get(backend_name), device, params)
                for threads in _thread_counts(backend_name, device, all_threads, workload):
                    extra = {"threads": threads} if threads else {}
                    spec = Spec.make(name, backend_name, device, **params, **extra)
                    if why is None:
                        plan.items.append(PlanItem(spec, threads))
                    else:  # never runs: left out of the plan, kept as a skip with its reason
                        plan.skips.append(Skip(spec, why))
    return plan


def _cannot_run(workload: Workload, backend: Backend | BrokenBackend | None, device: str, params: Params) -> str | None:
    """The workload's reason this combination never runs (Workload.cannot_run); None where it may,
    or where asking fails (prepare then decides, as it always did)."""
    if not isinstance(backend, Backend):  # a broken backend plans nothing anyway
        return None
    try:
        return workload.cannot_run(backend, device, params)
    except Exception:  # noqa: BLE001 - a plugin's broken answer: the measurement says what is wrong
        return None


def _targets(backends: Listed, devices: list[str] | None) -> list[tuple[str, str]]:
    reachable = [(name, device) for name, backend in backends.items()
                 if backend.availability().ok for device in backend.device_ids()]
    if not devices:
        return reachable
    known = sorted({d for _, d in reachable})
    missing = [d for d in devices if d not in known]
    if missing:
        raise UsageError(f"--device: {', '.join(map(repr, missing))} not reachable by any available backend; "
                         f"accepted here: {', '.join(known) or 'none'} (see `accelbench list`)",
                         refused_devices=tuple(missing))
    return [(name, device) for name, device in reachable if device in devices]


def _thread_counts(backend: str, device: str, all_threads: int, workload: Workload | None = None) -> list[int | None]:
    if device != "cpu":
        return [None]
    # the baseline on one core, and on all: numpy, or the framework itself where the workload says so
    framework = getattr(workload, "cpu_baseline", "numpy") == "framework" and device == BASELINE_DEVICE
    if (framework or is_cpu_baseline(backend, device)) and all_threads > 1:
        return [1, all_threads]
    return [all_threads]


def _check_size(workload: Workload, params: Params, host_memory_bytes: int | None) -> None:
    if host_memory_bytes is None:
        return
    need = workload.footprint_bytes(params)
    if need > MAX_HOST_FRACTION * host_memory_bytes:
        raise UsageError(
            f"--sizes: {workload.name} with {workload.size_param}={params[workload.size_param]} needs "
            f"{need / 2**30:.1f} GiB, more than {MAX_HOST_FRACTION:.0%} of this machine's "
            f"{host_memory_bytes / 2**30:.1f} GiB; choose a smaller {workload.size_unit}")
