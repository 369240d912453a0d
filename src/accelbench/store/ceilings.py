"""Measured ceilings, computed one way for `info`, the run summary, the report, `compare` and `project`.

A measured ceiling is the best rate a device reached on the workload that measures it (each
workload declares `judged_against` and `measures_ceiling`: matmul measures the matrix unit of its
dtype, stream the memory bandwidth). Only results that can be trusted qualify: verdict `valid`
(not noisy, unverified or invalid), a built-in workload on a built-in backend (a plugin cannot set
this machine's ceiling), and a rate the device can physically reach (checked again here, so an
old result stored before that check cannot slip through). For this machine's history, only runs
measured here count, never imported ones, and `accelbench ceilings --forget` sets results aside.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Iterable, Sequence

from accelbench.devices.model import Device
from accelbench.results import Measurement, Spec
from accelbench.timing import stats
from accelbench.vocabulary import PEAK_METRIC

BANDWIDTH = "memory_bandwidth"


@dataclass(frozen=True)
class MeasuredCeiling:
    device: str
    metric: str          # "fp32", "bf16_matrix", "memory_bandwidth"
    value: float         # FLOP/s or B/s
    spec: Spec
    run_id: str = ""

    @property
    def unit(self) -> str:
        return "B/s" if self.metric == BANDWIDTH else "FLOP/s"


@functools.lru_cache(maxsize=256)
def _declaration(workload: str) -> tuple[str | None, bool]:
    """(judged_against, measures_ceiling) of a built-in workload; (None, False) for any other.
    Built-ins are fixed for the life of a process, and a report asks once per result."""
    from accelbench.workloads.registry import builtin_workload_class

    cls = builtin_workload_class(workload)
    return (cls.judged_against, cls.measures_ceiling) if cls is not None else (None, False)


def judged_against(workload: str) -> str | None:
    """The peak a built-in workload's rate is read against (Workload.judged_against); None for others."""
    return _declaration(workload)[0]


def measures_bandwidth(workload: str) -> bool:
    """Whether `workload` is the built-in that measures memory bandwidth (stream), by its declaration."""
    return _declaration(workload) == (BANDWIDTH, True)


def ceiling_metric(spec: Spec, device: Device | None) -> str | None:
    """The peak metric a result of `spec` is read against on `device`, or None where none applies."""
    against, _ = _declaration(spec.workload)
    if against == BANDWIDTH:
        return BANDWIDTH
    vector = PEAK_METRIC.get(str(spec.param("dtype")))
    if against is None or vector is None:
        return None
    if against == "matrix" and device is not None and any(p.metric == f"{vector}_matrix" for p in device.peaks):
        return f"{vector}_matrix"
    return vector


def rate_of(m: Measurement, metric: str, median_s: float | None = None) -> float | None:
    """`metric`'s amount per second at the median (`median_s`: the samples' median, where known)."""
    if median_s is None:
        median_s = stats.median(m.samples_s) if m.samples_s else 0.0
    amount = m.work.bytes_moved if metric == BANDWIDTH else m.work.flops
    return amount / median_s if median_s > 0 and amount > 0 else None


def why_not_a_ceiling(m: Measurement, devices: dict[str, Device]) -> str | None:
    """None if `m` may set its device's ceiling, else the reason it may not."""
    from accelbench.backends.registry import BUILTIN_BACKENDS
    from accelbench.runner.plausibility import judge_rate

    if not m.trusted:
        return f"its verdict is {m.verdict}"
    if not _declaration(m.spec.workload)[1]:
        return f"{m.spec.workload} does not measure a ceiling"
    if m.spec.backend not in BUILTIN_BACKENDS:
        return f"{m.spec.backend} is not a built-in backend"
    if any(f.status == "invalid" for f in judge_rate(m, devices)):
        return "its rate is beyond what the device can do"
    return None


def best_ceilings(results: Iterable[tuple[Measurement, str]], devices: dict[str, Device],
                  medians_s: Sequence[float] | None = None) -> dict[tuple[str, str], MeasuredCeiling]:
    """(device id, metric) -> the best qualifying rate among (measurement, run id) pairs
    (`medians_s`: their samples' medians, in order, where the caller has them)."""
    best: dict[tuple[str, str], MeasuredCeiling] = {}
    for index, (m, run_id) in enumerate(results):
        if why_not_a_ceiling(m, devices) is not None:
            continue
        metric = ceiling_metric(m.spec, devices.get(m.spec.device))
        rate = rate_of(m, metric, None if medians_s is None else medians_s[index]) if metric else None
        if metric is None or rate is None:
            continue
        key = (m.spec.device, metric)
        if key not in best or rate > best[key].value:
            best[key] = MeasuredCeiling(m.spec.device, metric, rate, m.spec, run_id)
    return best


def measured_inventory(probes: Iterable[str] | None = None, db_path: str | None = None):
    """The inventory a run, `accelbench info` and `accelbench.inventory()` see: what the probes find
    (devices/inventory.collect_inventory), with what each installed backend reaches and this host's
    measured ceilings (from the results database at `db_path`, or the default one) as "measured"
    peaks; none where there is no database yet. The one builder of the whole inventory."""
    from accelbench.backends.device_reach import with_backend_reach
    from accelbench.devices import inventory as inventory_module

    found = inventory_module.collect_inventory(None if probes is None else tuple(probes))
    found = dataclasses.replace(found, devices=with_backend_reach(found.devices))
    ceilings, pairs = _ceilings_at(db_path, found.devices)
    return _with_peak_pairs(inventory_module.with_measured_peaks(found, ceilings), pairs)


def _ceilings_at(db_path: str | None, devices) -> tuple[dict, dict]:
    """This host's measured ceilings and `accelbench peak` pairs in the database at `db_path`
    (both empty without one: never created)."""
    import socket

    from accelbench.runner.peak_results import peak_pairs
    from accelbench.store.db import Store
    from accelbench.store.paths import resolve_db_path

    path = resolve_db_path(db_path)
    if not path.is_file():
        return {}, {}
    try:
        with Store(path, create=False) as store:
            candidates = store.ceiling_candidates(socket.gethostname())
            return best_ceilings(candidates, {d.id: d for d in devices}), peak_pairs(candidates)
    except Exception:  # noqa: BLE001 - a broken or foreign store must not break the inventory
        return {}, {}


def _with_peak_pairs(inventory, pairs: dict):
    """Each device with its stored maximum/sustained pairs ({dtype: pair}) as a property."""
    from accelbench.runner.peak_results import PAIR_PROPERTY

    if not pairs:
        return inventory
    devices = []
    for device in inventory.devices:
        mine = {dtype: pair for (device_id, dtype), pair in sorted(pairs.items()) if device_id == device.id}
        devices.append(dataclasses.replace(device, properties={**device.properties, PAIR_PROPERTY: mine})
                       if mine else device)
    return dataclasses.replace(inventory, devices=tuple(devices))


def stored_ceilings(store, hostname: str, devices: dict[str, Device]) -> dict[tuple[str, str], MeasuredCeiling]:
    """This machine's measured ceilings from its stored history (runs measured here only)."""
    return best_ceilings(store.ceiling_candidates(hostname), devices)
