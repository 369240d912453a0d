"""Measure each planned spec: prepare on the device, time every phase, verify, store at once.

Each finished result is committed before the next starts, so Ctrl-C or a kill loses at most the
one in flight. A spec that cannot run is stored as a skip with its reason; it never stops the run.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from accelbench.backends.base import Backend
from accelbench.errors import Unsupported
from accelbench.results import Check, Measurement, Skip, cores_demanded, cores_used, uses_claimed_threads
from accelbench.runner import deadline, memory_release
from accelbench.runner.audit import Capture, audit
from accelbench.runner.block_audit import BlockAudit, block_audit_for
from accelbench.runner.plan import Plan, PlanItem
from accelbench.runner.plausibility import judge_rate
from accelbench.runner.sinks import ResultSink
from accelbench.runner.sync_check import probe_backend
from accelbench.timing import all_cores_probe, contention, quiesce, stats
from accelbench.timing.checkpoint import TimedOut, checkpoint
from accelbench.timing.clock import Clock, PerfCounterClock
from accelbench.timing.harness import Timing, measure
from accelbench.timing.rigor import QUICK, Rigor
from accelbench.timing.sync_probe import SyncProbe
from accelbench.units import format_seconds
from accelbench.vocabulary import DEFAULT_SEED
from accelbench.verdict import (CHECK_FAILED, DISTURBING, INVALID, NOISY, NOT_COUNTED, PHASES, REFUSED, REMEASURED,
                               SYNC_UNTESTED, TARGET, THREADS_BEYOND, THREADS_CLAIM, VALID, Caveat, VerdictReason, combine,
                               kind_of)
from accelbench.workloads.base import Prepared, SelfTimed, Workload
from accelbench.workloads.registry import get_workload

if TYPE_CHECKING:
    from accelbench.telemetry.sampler import TelemetrySampler

# transfers and end-to-end are timed with a third of the compute budget: they matter, but the
# compute time is what ceilings and speed-ups rest on
PHASE_BUDGET_FRACTION = 1 / 3
# end-to-end against its parts, each timed apart: beyond 3× (and slack for tiny phases) the figures
# disagree (noisy: e.g. the first use of freshly uploaded buffers costs more); beyond 10× a phase
# cannot have waited for the device (invalid)
PHASES_FACTOR = 3.0
PHASES_INVALID_FACTOR = 10.0
PHASES_SLACK_S = 5e-4
# a CPU result's threads ran beyond its recorded count when runnable time / wall time exceeds both
THREADS_BEYOND_FACTOR = 1.5
THREADS_BEYOND_SLACK = 0.5
# a compute timing the harness calls disturbed (drift, bursts, a missed target) is taken once more,
# where the first took at most this many budgets and no load was in view: a quiet machine's passing
# transient (a VM's core slow to wake, a page-cache flush) should not make the result noisy; a load the
# contention monitor saw keeps the result noisy, named, without the cost of a second attempt
RETRY_MAX_BUDGETS = 2.0  # (not at quick rigor: a quick answer takes its one attempt, noisy or not)


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

    def sync_probe(self, backend: Backend, device: str, clock: Clock | None = None) -> SyncProbe | None:
        if not self.probe_sync:
            return None
        key = (backend.name, device)
        if key not in self.sync_probes:
            self.sync_probes[key] = probe_backend(backend, device, clock)
        return self.sync_probes[key]


def measure_item(item: PlanItem, backend: Backend, rigor: Rigor, seed: int, clock: Clock | None = None,
                 sampler: TelemetrySampler | None = None, trust: TrustContext | None = None) -> Measurement:
    """`sampler` (a telemetry.TelemetrySampler, started) records telemetry over the timed window.
    `rigor` is resolved where the run starts (timing.rigor.get_rigor turns a name into one)."""
    spec = item.spec
    trust = trust or TrustContext()
    workload = get_workload(spec.workload)
    probe = trust.sync_probe(backend, spec.device, clock)  # before the workload takes memory
    if probe is not None and not probe.ok:
        return refused(item, workload, probe)
    sync = [VerdictReason(VALID, probe.detail, SYNC_UNTESTED)] if probe is not None and not probe.tested else []
    prepared = workload.prepare(backend, spec.device, item.params, seed)
    try:
        on_host = spec.device == "cpu" or bool(getattr(trust.devices.get(spec.device), "on_host_cpu", False))
        probe_threads = all_cores_probe.wanted(on_host, item.threads)
        before_s = all_cores_probe.safely(probe_threads)  # the host's all-core speed now (compare reads it)
        measurement, findings = _timed(item, backend, workload, prepared, rigor, clock, sampler, on_host)
        measurement = _with_probe(measurement, all_cores_probe.reading(
            probe_threads, before_s, all_cores_probe.safely(probe_threads)))
    finally:
        if prepared.release:
            prepared.release()
    # the version of the code that made it (`compare` names a change of it as a difference), and its
    # role, so readers where this workload is not installed still know what its figures say
    made = dataclasses.replace(measurement, workload_version=str(workload.version), role=workload.role)
    return judged(made, findings + sync, trust.devices)


def _with_probe(m: Measurement, probe: dict | None) -> Measurement:
    if probe is None:
        return m
    return dataclasses.replace(m, telemetry={**m.telemetry, all_cores_probe.KEY: probe})


def refused(item: PlanItem, workload: Workload, probe: SyncProbe) -> Measurement:
    """A backend whose synchronize() does not wait is not timed: the result records what the probe
    saw, invalid, so the refusal shows wherever results do."""
    return Measurement(
        spec=item.spec, phases_s={"compute": (probe.with_sync_s,)}, first_call_s=0.0,
        work=workload.work(item.params), threads=item.threads, target_met=False,
        check=Check(False, float("nan"), 0.0, "not checked: refused for timing"),
        warnings=(Caveat(f"invalid, refused for timing: {probe.detail}", REFUSED),),
        verdict=INVALID, verdict_reasons=(Caveat(f"refused for timing: {probe.detail}", REFUSED),),
        workload_version=str(workload.version), role=workload.role)


def judged(m: Measurement, findings: list[VerdictReason], devices: dict) -> Measurement:
    """The measurement with its verdict: its own findings, phases that must add up, a plausible rate."""
    findings = findings + phase_findings(m) + (judge_rate(m, devices) if m.check.passed else [])
    verdict = combine(findings)
    warnings = list(m.warnings)
    if not verdict.counts:
        warnings.insert(0, Caveat(f"invalid, time not counted: {verdict.reasons[0]}", NOT_COUNTED))
    return dataclasses.replace(m, verdict=verdict.status, verdict_reasons=verdict.reasons, warnings=tuple(warnings))


def phase_findings(m: Measurement) -> list[VerdictReason]:
    """to_device + compute + to_host must be consistent with end_to_end (each timed apart)."""
    medians = {phase: stats.median(samples) for phase, samples in m.phases_s.items() if samples}
    if "end_to_end" not in medians:
        return []
    parts_s = sum(medians.get(p, 0.0) for p in ("to_device", "compute", "to_host"))
    whole_s = medians["end_to_end"]
    figures = {"parts_s": parts_s, "end_to_end_s": whole_s}
    text = (f"to_device + compute + to_host take {format_seconds(parts_s)} apart but "
            f"{format_seconds(whole_s)} end to end")
    if whole_s > PHASES_INVALID_FACTOR * parts_s + PHASES_SLACK_S:
        if _disturbed(m):  # a busy machine can part the phases' medians this far: not proof of a missing wait
            return [VerdictReason(NOISY, f"the phases do not add up: {text}, measured while the timings were disturbed",
                            PHASES, figures)]
        return [VerdictReason(INVALID, f"the phases do not add up: {text}; a phase does not wait for the device", PHASES,
                        figures)]
    if whole_s > PHASES_FACTOR * parts_s + PHASES_SLACK_S or parts_s > PHASES_FACTOR * whole_s + PHASES_SLACK_S:
        return [VerdictReason(NOISY, f"the phases do not add up: {text}", PHASES, figures)]
    return []


def _disturbed(m: Measurement) -> bool:
    """Whether any phase's timing was disturbed: harness warnings, or interference measured around it."""
    windows = (m.telemetry or {}).get("interference", {}) or {}
    return (any(_disturbs(w) for w in m.warnings)
            or any(isinstance(w, dict) and w.get("disturbed") for w in windows.values()))


def _timed(item: PlanItem, backend: Backend, workload: Workload, prepared: Prepared, rigor: Rigor,
           clock: Clock | None, sampler: TelemetrySampler | None = None,
           on_host: bool = True) -> tuple[Measurement, list[VerdictReason]]:
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

    def timed_compute() -> tuple[Timing, dict, contention.Interference | None, BlockAudit | None]:
        hooks = block_audit_for(prepared, capture, backend, clock, rigor, on_host, device)
        with (sampler.window() if sampler else contextlib.nullcontext()) as window, contention.watch() as busy:
            timing = measure(capture, synchronize, clock=clock, rigor=rigor, state=cpu_state,
                             calls_per_block=prepared.calls_per_block, min_samples=prepared.min_samples,
                             hooks=hooks)
        return timing, (window.summary_for(watched) if window is not None else {}), busy.result, hooks

    compute, telemetry, compute_window, blocks = timed_compute()
    first_disturbed = [w for w in compute.warnings if _disturbs(w)]
    load_seen = compute_window is not None and compute_window.disturbed  # a load in view: it shows, named
    first_failed = blocks is not None and blocks.failed is not None  # a wrong output: nothing to retry for
    if (first_disturbed and not load_seen and not first_failed and rigor.name != QUICK
            and compute.total_wall_s <= RETRY_MAX_BUDGETS * rigor.budget_s):
        compute, telemetry, compute_window, blocks = timed_compute()
        compute = dataclasses.replace(compute, warnings=(*compute.warnings, _remeasured(first_disturbed)))
    timings: dict[str, Timing] = {"compute": compute}
    windows = {"compute": compute_window}  # what other processes did during each phase's timing
    others = {"to_device": prepared.to_device, "to_host": prepared.to_host, "end_to_end": prepared.end_to_end()}
    for phase, call in others.items():
        if call is not None:
            with contention.watch() as busy:
                timings[phase] = measure(call, synchronize, clock=clock, rigor=phase_rigor(rigor))
            windows[phase] = busy.result
    audited = audit(prepared, capture, synchronize, clock, device, calls_per_sample=compute.calls_per_sample,
                    median_s=compute.summary.median_s, overhead_s=compute.overhead_s, to_host=backend.to_host,
                    blocks=blocks)
    warnings = list(compute.warnings)
    for phase, timing in timings.items():
        if phase != "compute":
            warnings += [Caveat(w).in_phase(phase) for w in timing.warnings if kind_of(w) != TARGET]
    findings = audited.findings + [VerdictReason(NOISY, w) for w in compute.warnings if _disturbs(w)]
    if prepared.record_samples:
        prepared.record_samples({k: t.samples_s for k, t in timings.items()})
    extra = prepared.metrics() if prepared.metrics else {}
    if blocks is not None:
        extra = {**extra, "audit": blocks.summary()}
    if audited.fresh_call_s is not None:
        extra = {**extra, "fresh_input_call_s": audited.fresh_call_s}
    measurement, findings = contention.attach(Measurement(
        spec=item.spec, phases_s={k: t.samples_s for k, t in timings.items()},
        first_call_s=compute.first_call_s, work=workload.work(item.params), check=audited.check,
        warnings=tuple(warnings), calls_per_sample=compute.calls_per_sample,
        target_met=compute.target_met, threads=item.threads, telemetry=telemetry, extra=extra,
    ), findings, windows, device)
    return _threads_observed((_timed_blocks_cores(measurement, blocks), findings), backend)


def _timed_blocks_cores(m: Measurement, blocks: BlockAudit | None) -> Measurement:
    """The compute window's own and demanded cores from the timed blocks alone, where the audit timed
    them (its untimed work between blocks runs on one thread and would dilute a pool's figure): the
    blocks' CPU time over their wall time, and over the share of runnable time the window's threads
    spent on a CPU (what load elsewhere does not lower); the window's figures stay beside them."""
    used = blocks.cores_used() if blocks is not None else None
    interference = dict((m.telemetry or {}).get("interference") or {})
    if used is None or not isinstance(interference.get("compute"), dict):
        return m
    compute = dict(interference["compute"])
    wait = compute.get("run_wait_share")
    running = 1.0 - wait if isinstance(wait, (int, float)) and 0 <= wait < 1 else 1.0
    compute.update({"own_cores_window": compute.get("own_cores"), "own_demand_cores_window":
                    compute.get("own_demand_cores"), "own_cores": used, "own_demand_cores": used / running})
    interference["compute"] = compute
    return dataclasses.replace(m, telemetry={**m.telemetry, "interference": interference})


def _threads_observed(attached: tuple[Measurement, list[VerdictReason]], backend: Backend
                      ) -> tuple[Measurement, list[VerdictReason]]:
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
        claim = Caveat(f"threads: claims {measurement.threads} but ran {ran:.1f} at a time (our threads' runnable "
                       f"time / wall time), so it is no all-cores figure", THREADS_CLAIM,
                       {"threads": measurement.threads, "ran_cores": ran})
        measurement = dataclasses.replace(measurement, warnings=(claim, *measurement.warnings))
    return measurement, findings + _threads_beyond_claim(measurement)


def _threads_beyond_claim(m: Measurement) -> list[VerdictReason]:
    """A CPU result whose threads ran well beyond the count it records (a backend that widens its
    own affinity, or ignores the limit it was given) is invalid: its time is no N-thread time, so
    no speed-up or baseline may rest on it. Runnable time / wall time counts a thread waiting for
    a CPU too, so load elsewhere does not raise it, and a one-thread run cannot reach 1.5. It is
    capped at the cores open to the process: threads beyond those only queue (jax's caller thread
    spins beside its 2 workers: 3.2 runnable on 2 cores), and queued threads make nothing faster."""
    demanded = cores_demanded(m)
    if m.spec.device != "cpu" or not m.threads or demanded is None:
        return []
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    if usable is not None:
        demanded = min(demanded, float(usable))
    if demanded <= THREADS_BEYOND_FACTOR * m.threads or demanded <= m.threads + THREADS_BEYOND_SLACK:
        return []
    widened = f"; {usable} cores are open to it now" if usable is not None and usable > m.threads else ""
    return [VerdictReason(INVALID, f"threads: claims {m.threads} but its threads ran {demanded:.1f} at a time "
                             f"(runnable time / wall time){widened}: the backend used more cores than it was given",
                    THREADS_BEYOND, {"threads": m.threads, "cores_demanded": demanded})]


def _remeasured(first: list[Caveat]) -> Caveat:
    """The note a retried measurement keeps: what disturbed the attempt whose numbers were dropped."""
    return Caveat(f"measured twice: the first attempt was disturbed ({first[0]}); these are the second's numbers",
                  REMEASURED, {"first_kinds": sorted({kind_of(w) for w in first})})


def _disturbs(warning: str) -> bool:
    """Harness warnings that make a number noisy (missed target, unstable, drift, warm-up, bursts): by kind."""
    return kind_of(warning) in DISTURBING


def _self_timed(item: PlanItem, workload: Workload, prepared: Prepared, timed: SelfTimed, telemetry: dict
                ) -> tuple[Measurement, list[VerdictReason]]:
    if prepared.verify is None:
        raise Unsupported(f"{item.spec.workload} times itself but gives no verify() to check its output")
    check = prepared.verify()
    findings = [] if check.passed else [VerdictReason(INVALID, f"check failed: {check.detail}", CHECK_FAILED)]
    findings += [VerdictReason(NOISY, w) for w in timed.warnings if _disturbs(w)]
    if not timed.target_met:
        findings.append(VerdictReason(NOISY, "the interval missed its target", TARGET))
    return Measurement(
        spec=item.spec, phases_s=dict(timed.phases_s), first_call_s=timed.first_call_s,
        work=workload.work(item.params), check=check, warnings=tuple(timed.warnings),
        calls_per_sample=timed.calls_per_sample, target_met=timed.target_met, threads=item.threads,
        telemetry=telemetry, extra=prepared.metrics() if prepared.metrics else {},
    ), findings


def execute(plan: Plan, backends: Mapping[str, Backend], store: ResultSink, run_id: str, rigor: Rigor, *,
            seed: int = DEFAULT_SEED, on_start: Callable[[PlanItem], None] | None = None,
            on_done: Callable[[PlanItem, Measurement | Skip], None] | None = None,
            debug: bool = False, sampler: TelemetrySampler | None = None,
            trust: TrustContext | None = None) -> Outcome:
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
            memory_release.release()
    except KeyboardInterrupt:
        outcome.interrupted = True
    return outcome


def measure_again(item: PlanItem, backend: Backend, rigor: Rigor, seed: int, sampler: TelemetrySampler | None = None,
                  trust: TrustContext | None = None) -> Measurement | None:
    """A plan item measured once more as the plan measured it; None where that failed or was skipped."""
    again = _one(item, backend, rigor, seed, False, sampler, trust)
    return again if isinstance(again, Measurement) else None


def _one(item: PlanItem, backend: Backend, rigor: Rigor, seed: int, debug: bool,
         sampler: TelemetrySampler | None = None, trust: TrustContext | None = None) -> Measurement | Skip:
    try:
        with deadline.spec_scope(), backend.threads(item.threads):
            return measure_item(item, backend, rigor, seed, sampler=sampler, trust=trust)
    except TimedOut as exc:
        return Skip.failure(item.spec, f"{exc} (the per-spec limit: --timeout, or timeout=)")
    except Unsupported as exc:
        return Skip(item.spec, str(exc))
    except MemoryError:
        return Skip.failure(item.spec, "out of memory")
    except Exception as exc:  # noqa: BLE001 - one failing spec is recorded, the run goes on
        reason = f"{type(exc).__name__}: {exc}"
        if debug:
            reason += "\n" + "".join(traceback.format_exception(exc))
        return Skip.failure(item.spec, reason)
