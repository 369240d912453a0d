"""Measure each planned spec: prepare on the device, time every phase, verify, store at once.

Each finished result is committed before the next starts, so Ctrl-C or a kill loses at most the
one in flight. A spec that cannot run is stored as a skip with its reason; it never stops the run.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import traceback
from dataclasses import dataclass, field
from typing import Callable

from accelbench.errors import Unsupported
from accelbench.results import Measurement, Skip
from accelbench.runner.plan import Plan, PlanItem
from accelbench.timing.harness import Timing, measure
from accelbench.timing.rigor import Rigor, get_rigor
from accelbench.workloads.registry import get_workload

# transfers and end-to-end are timed with a third of the compute budget: they matter, but the
# compute time is what ceilings and speed-ups rest on
PHASE_BUDGET_FRACTION = 1 / 3


@dataclass
class Outcome:
    measurements: list[Measurement] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    interrupted: bool = False


def cpu_state() -> dict:
    """Readings that, if they change during a measurement, make it suspect."""
    try:
        import psutil
        frequency = psutil.cpu_freq()
        return {"cpu_mhz": frequency.current} if frequency else {}
    except Exception:  # noqa: BLE001 - telemetry must never break a measurement
        return {}


def phase_rigor(rigor: Rigor) -> Rigor:
    return dataclasses.replace(rigor, budget_s=rigor.budget_s * PHASE_BUDGET_FRACTION,
                               min_samples=max(6, rigor.min_samples // 2))  # a 95% CI needs 6


def measure_item(item: PlanItem, backend, rigor: Rigor | str, seed: int, clock=None, sampler=None) -> Measurement:
    """`sampler` (a telemetry.TelemetrySampler, started) records telemetry over the timed window."""
    rigor = get_rigor(rigor)
    spec = item.spec
    workload = get_workload(spec.workload)
    prepared = workload.prepare(backend, spec.device, item.params, seed)
    try:
        return _timed(item, backend, workload, prepared, rigor, clock, sampler)
    finally:
        if prepared.release:
            prepared.release()


def _timed(item: PlanItem, backend, workload, prepared, rigor: Rigor, clock, sampler=None) -> Measurement:
    device = item.spec.device
    watched = sorted({device, "cpu"})
    if prepared.self_timed is not None:
        with (sampler.window() if sampler else contextlib.nullcontext()) as window:
            timed = prepared.self_timed(rigor=rigor)
        return _self_timed(item, workload, prepared, timed, window.summary_for(watched) if sampler else {})

    def synchronize():
        backend.synchronize(device)

    with (sampler.window() if sampler else contextlib.nullcontext()) as window:
        compute = measure(prepared.compute, synchronize, clock=clock, rigor=rigor, state=cpu_state)
    telemetry = window.summary_for(watched) if sampler else {}
    timings: dict[str, Timing] = {"compute": compute}
    others = {"to_device": prepared.to_device, "to_host": prepared.to_host, "end_to_end": prepared.end_to_end()}
    for phase, call in others.items():
        if call is not None:
            timings[phase] = measure(call, synchronize, clock=clock, rigor=phase_rigor(rigor))
    check = prepared.verify()
    warnings = list(compute.warnings)
    for phase, timing in timings.items():
        if phase != "compute":
            warnings += [f"{phase}: {w}" for w in timing.warnings if "target" not in w]
    if not check.passed:
        warnings.insert(0, f"check failed, time not counted: {check.detail}")
    return Measurement(
        spec=item.spec, phases_s={k: t.samples_s for k, t in timings.items()},
        first_call_s=compute.first_call_s, work=workload.work(item.params), check=check,
        warnings=tuple(warnings), calls_per_sample=compute.calls_per_sample,
        target_met=compute.target_met, threads=item.threads, telemetry=telemetry,
        extra=prepared.metrics() if prepared.metrics else {},
    )


def _self_timed(item: PlanItem, workload, prepared, timed, telemetry: dict) -> Measurement:
    check = prepared.verify()
    warnings = list(timed.warnings)
    if not check.passed:
        warnings.insert(0, f"check failed, time not counted: {check.detail}")
    return Measurement(
        spec=item.spec, phases_s=dict(timed.phases_s), first_call_s=timed.first_call_s,
        work=workload.work(item.params), check=check, warnings=tuple(warnings),
        calls_per_sample=timed.calls_per_sample, target_met=timed.target_met, threads=item.threads,
        telemetry=telemetry, extra=prepared.metrics() if prepared.metrics else {},
    )


def execute(plan: Plan, backends: dict, store, run_id: str, rigor: Rigor | str, *, seed: int = 20261202,
            on_start: Callable[[PlanItem], None] | None = None,
            on_done: Callable[[PlanItem, Measurement | Skip], None] | None = None,
            debug: bool = False, sampler=None) -> Outcome:
    rigor = get_rigor(rigor)
    outcome = Outcome(skips=list(plan.skips))
    for skip in plan.skips:
        store.add_skip(run_id, skip)
    try:
        for item in plan.items:
            if on_start:
                on_start(item)
            result = _one(item, backends[item.spec.backend], rigor, seed, debug, sampler)
            if isinstance(result, Measurement):
                store.add_result(run_id, result)
                outcome.measurements.append(result)
            else:
                store.add_skip(run_id, result)
                outcome.skips.append(result)
            if on_done:
                on_done(item, result)
            gc.collect()
    except KeyboardInterrupt:
        outcome.interrupted = True
    return outcome


def _one(item: PlanItem, backend, rigor: Rigor, seed: int, debug: bool, sampler=None) -> Measurement | Skip:
    try:
        with backend.threads(item.threads):
            return measure_item(item, backend, rigor, seed, sampler=sampler)
    except Unsupported as exc:
        return Skip(item.spec, str(exc))
    except MemoryError:
        return Skip(item.spec, "failed: out of memory")
    except Exception as exc:  # noqa: BLE001 - one failing spec is recorded, the run goes on
        reason = f"failed: {type(exc).__name__}: {exc}"
        if debug:
            reason += "\n" + "".join(traceback.format_exception(exc))
        return Skip(item.spec, reason)
