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
from accelbench.results import Check, Measurement, Skip, cores_demanded, cores_used, uses_claimed_threads
from accelbench.runner import deadline
from accelbench.runner.audit import Capture, audit
from accelbench.runner.plan import Plan, PlanItem
from accelbench.runner.plausibility import judge_rate
from accelbench.runner.sync_check import UNTESTED, probe_backend
from accelbench.timing import contention, quiesce, stats
from accelbench.timing.checkpoint import TimedOut, checkpoint
from accelbench.timing.clock import PerfCounterClock
from accelbench.timing.harness import Timing, measure
from accelbench.timing.rigor import Rigor, get_rigor
from accelbench.timing.sync_probe import SyncProbe
from accelbench.units import format_seconds
from accelbench.vocabulary import DEFAULT_SEED
from accelbench.verdict import INVALID, NOISY, VALID, Finding, combine
from accelbench.workloads.registry import get_workload

# transfers and end-to-end are timed with a third of the compute budget: they matter, but the
# compute time is what ceilings and speed-ups rest on
PHASE_BUDGET_FRACTION = 1 / 3
# end-to-end against its parts, each timed apart: beyond 3× (and slack for tiny phases) the figures
# disagree (noisy: e.g. the first use of freshly uploaded buffers costs more); beyond 10× a phase
# cannot have waited for the device (invalid)
PHASES_FACTOR = 3.0
PHASES_INVALID_FACTOR = 10.0
PHASES_SLACK_S = 5e-4


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


@dataclass
class TrustContext:
    """What judging a result needs beyond the result: the inventory's devices (their peaks bound
    the rates) and the synchronisation probe of each backend and device, made once per run."""

    devices: dict = field(default_factory=dict)
    sync_probes: dict = field(default_factory=dict)   # (backend name, device) -> SyncProbe
    probe_sync: bool = True

    def sync_probe(self, backend, device: str, clock=None) -> SyncProbe | None:
        if not self.probe_sync:
            return None
        key = (backend.name, device)
        if key not in self.sync_probes:
            self.sync_probes[key] = probe_backend(backend, device, clock)
        return self.sync_probes[key]


def measure_item(item: PlanItem, backend, rigor: Rigor | str, seed: int, clock=None, sampler=None,
                 trust: TrustContext | None = None) -> Measurement:
    """`sampler` (a telemetry.TelemetrySampler, started) records telemetry over the timed window."""
    rigor = get_rigor(rigor)
    spec = item.spec
    trust = trust or TrustContext()
    workload = get_workload(spec.workload)
    probe = trust.sync_probe(backend, spec.device, clock)  # before the workload takes memory
    if probe is not None and not probe.ok:
        return refused(item, workload, probe)
    sync = [Finding(VALID, probe.detail)] if probe is not None and probe.detail.startswith(UNTESTED) else []
    prepared = workload.prepare(backend, spec.device, item.params, seed)
    try:
        measurement, findings = _timed(item, backend, workload, prepared, rigor, clock, sampler)
    finally:
        if prepared.release:
            prepared.release()
    return judged(measurement, findings + sync, trust.devices)


def refused(item: PlanItem, workload, probe: SyncProbe) -> Measurement:
    """A backend whose synchronize() does not wait is not timed: the result records what the probe
    saw, invalid, so the refusal shows wherever results do."""
    return Measurement(
        spec=item.spec, phases_s={"compute": (probe.with_sync_s,)}, first_call_s=0.0,
        work=workload.work(item.params), threads=item.threads, target_met=False,
        check=Check(False, float("nan"), 0.0, "not checked: refused for timing"),
        warnings=(f"invalid, refused for timing: {probe.detail}",),
        verdict=INVALID, verdict_reasons=(f"refused for timing: {probe.detail}",))


def judged(m: Measurement, findings: list[Finding], devices: dict) -> Measurement:
    """The measurement with its verdict: its own findings, phases that must add up, a plausible rate."""
    findings = findings + phase_findings(m) + (judge_rate(m, devices) if m.check.passed else [])
    verdict = combine(findings)
    warnings = list(m.warnings)
    if not verdict.counts:
        warnings.insert(0, f"invalid, time not counted: {verdict.reasons[0]}")
    return dataclasses.replace(m, verdict=verdict.status, verdict_reasons=verdict.reasons, warnings=tuple(warnings))


def phase_findings(m: Measurement) -> list[Finding]:
    """to_device + compute + to_host must be consistent with end_to_end (each timed apart)."""
    medians = {phase: stats.median(samples) for phase, samples in m.phases_s.items() if samples}
    if "end_to_end" not in medians:
        return []
    parts_s = sum(medians.get(p, 0.0) for p in ("to_device", "compute", "to_host"))
    whole_s = medians["end_to_end"]
    text = (f"to_device + compute + to_host take {format_seconds(parts_s)} apart but "
            f"{format_seconds(whole_s)} end to end")
    if whole_s > PHASES_INVALID_FACTOR * parts_s + PHASES_SLACK_S:
        if _disturbed(m):  # a busy machine can part the phases' medians this far: not proof of a missing wait
            return [Finding(NOISY, f"the phases do not add up: {text}, measured while the timings were disturbed")]
        return [Finding(INVALID, f"the phases do not add up: {text}; a phase does not wait for the device")]
    if whole_s > PHASES_FACTOR * parts_s + PHASES_SLACK_S or parts_s > PHASES_FACTOR * whole_s + PHASES_SLACK_S:
        return [Finding(NOISY, f"the phases do not add up: {text}")]
    return []


def _disturbed(m: Measurement) -> bool:
    """Whether any phase's timing was disturbed: harness warnings, or interference measured around it."""
    windows = (m.telemetry or {}).get("interference", {}) or {}
    return (any(_disturbs(w) for w in m.warnings)
            or any(isinstance(w, dict) and w.get("disturbed") for w in windows.values()))


def _timed(item: PlanItem, backend, workload, prepared, rigor: Rigor, clock, sampler=None
           ) -> tuple[Measurement, list[Finding]]:
    device = item.spec.device
    watched = sorted({device, "cpu"})
    quiesce.settle()  # the previous spec's thread pools, still spinning, would share our cores
    if prepared.self_timed is not None:
        with (sampler.window() if sampler else contextlib.nullcontext()) as window, contention.watch() as busy:
            timed = prepared.self_timed(rigor=rigor)
        measurement, findings = _self_timed(item, workload, prepared, timed,
                                            window.summary_for(watched) if window is not None else {})
        return _threads_observed(contention.attach(measurement, findings, {"compute": busy.result}, device), backend)

    clock = clock or PerfCounterClock()
    capture = Capture(prepared.compute)

    def synchronize():
        backend.synchronize(device)
        backend.wait_for(capture.last)  # arrays the backend's own sync does not know (a user's jax function)

    with (sampler.window() if sampler else contextlib.nullcontext()) as window, contention.watch() as busy:
        compute = measure(capture, synchronize, clock=clock, rigor=rigor, state=cpu_state,
                          calls_per_block=prepared.calls_per_block, min_samples=prepared.min_samples)
    telemetry = window.summary_for(watched) if window is not None else {}
    timings: dict[str, Timing] = {"compute": compute}
    windows = {"compute": busy.result}  # what other processes did during each phase's timing
    others = {"to_device": prepared.to_device, "to_host": prepared.to_host, "end_to_end": prepared.end_to_end()}
    for phase, call in others.items():
        if call is not None:
            with contention.watch() as busy:
                timings[phase] = measure(call, synchronize, clock=clock, rigor=phase_rigor(rigor))
            windows[phase] = busy.result
    audited = audit(prepared, capture, synchronize, clock, device, calls_per_sample=compute.calls_per_sample,
                    median_s=compute.summary.median_s, overhead_s=compute.overhead_s, to_host=backend.to_host)
    warnings = list(compute.warnings)
    for phase, timing in timings.items():
        if phase != "compute":
            warnings += [f"{phase}: {w}" for w in timing.warnings if "target" not in w]
    findings = audited.findings + [Finding(NOISY, w) for w in compute.warnings if _disturbs(w)]
    if prepared.record_samples:
        prepared.record_samples({k: t.samples_s for k, t in timings.items()})
    extra = prepared.metrics() if prepared.metrics else {}
    if audited.fresh_call_s is not None:
        extra = {**extra, "fresh_input_call_s": audited.fresh_call_s}
    return _threads_observed(contention.attach(Measurement(
        spec=item.spec, phases_s={k: t.samples_s for k, t in timings.items()},
        first_call_s=compute.first_call_s, work=workload.work(item.params), check=audited.check,
        warnings=tuple(warnings), calls_per_sample=compute.calls_per_sample,
        target_met=compute.target_met, threads=item.threads, telemetry=telemetry, extra=extra,
    ), findings, windows, device), backend)


def _threads_observed(attached: tuple[Measurement, list[Finding]], backend) -> tuple[Measurement, list[Finding]]:
    """A CPU result names how its backend ran (`implementation`: "numpy, 2 threads, blocked"), and
    warns where it claims N threads but its threads ran well under N at a time (runnable time / wall
    time, which load elsewhere does not lower). The time stays right, so the verdict stands; such a
    result is no "all cores" baseline (results.uses_claimed_threads)."""
    measurement, findings = attached
    describe = getattr(backend, "implementation", None)
    if measurement.spec.device == "cpu" and callable(describe):
        measurement = dataclasses.replace(measurement, extra={**measurement.extra, "implementation": describe()})
    if not uses_claimed_threads(measurement):
        ran = cores_demanded(measurement) or cores_used(measurement) or 0.0
        claim = (f"threads: claims {measurement.threads} but ran {ran:.1f} at a time (our threads' runnable "
                 f"time / wall time), so it is no all-cores figure")
        measurement = dataclasses.replace(measurement, warnings=(claim, *measurement.warnings))
    return measurement, findings


def _disturbs(warning: str) -> bool:
    """Harness warnings that make a number noisy (missed target, unstable, drift, warm-up)."""
    return any(word in warning for word in ("target", "unstable", "drift", "still getting faster", "changed during",
                                            "bursts"))


def _self_timed(item: PlanItem, workload, prepared, timed, telemetry: dict) -> tuple[Measurement, list[Finding]]:
    check = prepared.verify()
    findings = [] if check.passed else [Finding(INVALID, f"check failed: {check.detail}")]
    findings += [Finding(NOISY, w) for w in timed.warnings if _disturbs(w)]
    if not timed.target_met:
        findings.append(Finding(NOISY, "the interval missed its target"))
    return Measurement(
        spec=item.spec, phases_s=dict(timed.phases_s), first_call_s=timed.first_call_s,
        work=workload.work(item.params), check=check, warnings=tuple(timed.warnings),
        calls_per_sample=timed.calls_per_sample, target_met=timed.target_met, threads=item.threads,
        telemetry=telemetry, extra=prepared.metrics() if prepared.metrics else {},
    ), findings


def execute(plan: Plan, backends: dict, store, run_id: str, rigor: Rigor | str, *, seed: int = DEFAULT_SEED,
            on_start: Callable[[PlanItem], None] | None = None,
            on_done: Callable[[PlanItem, Measurement | Skip], None] | None = None,
            debug: bool = False, sampler=None, trust: TrustContext | None = None) -> Outcome:
    rigor = get_rigor(rigor)
    trust = trust or TrustContext()
    outcome = Outcome(skips=list(plan.skips))
    for skip in plan.skips:
        store.add_skip(run_id, skip)
    try:
        for item in plan.items:
            checkpoint()  # a SIGINT / SIGTERM since the last spec stops the run here
            if on_start:
                on_start(item)
            result = _one(item, backends[item.spec.backend], rigor, seed, debug, sampler, trust)
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


def _one(item: PlanItem, backend, rigor: Rigor, seed: int, debug: bool, sampler=None,
         trust: TrustContext | None = None) -> Measurement | Skip:
    try:
        with deadline.spec_scope(), backend.threads(item.threads):
            return measure_item(item, backend, rigor, seed, sampler=sampler, trust=trust)
    except TimedOut as exc:
        return Skip(item.spec, f"failed: {exc} (the per-spec limit: --timeout, or timeout=)")
    except Unsupported as exc:
        return Skip(item.spec, str(exc))
    except MemoryError:
        return Skip(item.spec, "failed: out of memory")
    except Exception as exc:  # noqa: BLE001 - one failing spec is recorded, the run goes on
        reason = f"failed: {type(exc).__name__}: {exc}"
        if debug:
            reason += "\n" + "".join(traceback.format_exception(exc))
        return Skip(item.spec, reason)
