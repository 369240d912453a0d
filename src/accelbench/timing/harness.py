"""Measure one callable honestly (DESIGN.md, "Timing"); standard library only.

The harness knows nothing about devices: it is given `call` (the work), `synchronize` (block
until queued work is done) and a clock. Every clock read that bounds a timed interval follows a
`synchronize()`, so an asynchronous backend cannot be timed without synchronising:

    sync(); t0 = clock.now(); [call() x k]; sync(); t1 = clock.now();  sample = (t1 - t0) / k

Steps: (1) the first call alone, kept apart as `first_call_s`; (2) the cost of an empty block
(clock read + sync), so blocks can be made long enough that it is under 0.1%; (3) warm-up until
the per-call time stops falling, then the final block size; (4) samples until the 95% CI of the
median is within the rigor's target or its budget is spent; (5) warnings for what a reader of the
number must know.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Mapping, Protocol

from accelbench.timing import bursts, stats, steady_state
from accelbench.timing.checkpoint import checkpoint
from accelbench.timing.clock import Clock, PerfCounterClock, clock_resolution_s
from accelbench.timing.rigor import DEFAULT_RIGOR, RIGORS, Rigor
from accelbench.units import format_seconds
from accelbench.verdict import (DRIFT, OVERHEAD, RESOLUTION, SETTLED_LATE, STATE_CHANGED, STATE_UNREAD, TARGET,
                               UNSTABLE, WARMUP, Caveat)

MAX_OVERHEAD_FRACTION = 0.001   # clock read + sync under 0.1% of a block
RESOLUTION_FACTOR = 1000        # a block spans >= 1000 clock steps: quantisation under 0.1%
UNSTABLE_IQR_FRACTION = 0.10    # IQR above 10% of the median: the number moves run to run
STATE_CHANGE_FRACTION = 0.05    # a state reading (MHz, temperature) moving > 5% is reported
SETTLED_FRACTION = 0.01         # warm-up is over once a block is no longer 1% faster than all before
FALLING_RUN = 3                 # ... and the last 3 steps were not all down
FALLING_STEP_FRACTION = 0.001   # by more than 0.1% each
DRIFT_FRACTION = 0.03           # last third of the samples vs the first: a drift worth reporting,
DRIFT_P_VALUE = 0.001           # if Mann-Whitney says it is no accident (checked once per run)
DRIFT_MIN_SAMPLES = 5           # per third
BLOCK_HEADROOM = 1.1            # aim 10% past the target block, so noise does not dip under it
MAX_CALLS_PER_BLOCK = 10_000_000
MIN_SAMPLES_ON_BUDGET = 3       # never stop on the budget before a median means something
AUDITED_MIN_BLOCK_S = 0.005     # audited blocks at least this long: the untimed work between them leaves the
                                # first call cold (~0.1-0.3 ms), which a block of many calls spreads thin
AUDITED_MAX_BUDGETS = 3.0       # an audit that wants more blocks may extend sampling this far ...
AUDITED_MAX_BLOCKS = 20_000     # ... and over at most this many blocks
_OVERHEAD_PROBES = 15
_CALIBRATION_STEPS = 30         # block-size growth steps allowed on top of the warm-up samples

StateReader = Callable[[], Mapping[str, Any]]


class BlockHooks(Protocol):
    """What audits every block alike (runner/block_audit.py): called around each block with calls."""

    overhead_s: float

    def before(self, calls: int) -> None: ...

    def after(self, calls: int, start_s: float, end_s: float) -> float: ...

    def length(self, calls: int) -> int: ...

    def short(self, calls: int, calibrated: int) -> bool: ...

    def more_wanted(self, calibrated: int) -> bool: ...

    def finished(self) -> bool: ...

    def sampling_limit_s(self, budgets_s: float) -> float: ...


@dataclass(frozen=True)
class Timing:
    """One callable measured: raw samples in seconds per call, and how far they can be trusted."""

    samples_s: tuple[float, ...]
    first_call_s: float
    calls_per_sample: int
    target_met: bool
    warnings: tuple[Caveat, ...]   # each with its kind (accelbench.verdict): what a verdict reads
    total_wall_s: float          # clock time for everything, first call included
    overhead_s: float = 0.0      # one empty block (clock read + sync), measured
    warmup_samples: int = 0      # blocks run before sampling, block-size calibration included
    stop_reason: str = ""        # "target" | "budget" | "max_samples"

    @cached_property
    def summary(self) -> stats.Summary:
        return stats.summarize(self.samples_s)


class _Run:
    """The state one measurement shares between its steps: what to call, the clock, the budget."""

    def __init__(self, call: Callable[[], object], synchronize: Callable[[], object], clock: Clock,
                 rigor: Rigor, hooks: BlockHooks | None = None) -> None:
        self.call, self.sync, self.clock, self.rigor, self.hooks = call, synchronize, clock, rigor, hooks
        self.budget_start_s = 0.0

    def block_s(self, calls: int) -> float:
        """Seconds for `calls` calls, synchronised before each clock read; every block with calls goes
        through the same hooks (their work before the first clock read and after the last)."""
        call, sync, clock, hooks = self.call, self.sync, self.clock, self.hooks
        checkpoint()  # a stop asked for by a signal, or the spec's deadline, ends the run here
        if hooks is not None and calls:
            hooks.before(calls)
        sync()
        start_s = clock.now()
        for _ in range(calls):
            call()
        sync()
        end_s = clock.now()
        if hooks is not None and calls:
            return hooks.after(calls, start_s, end_s)
        return end_s - start_s

    def elapsed_s(self) -> float:
        return self.clock.now() - self.budget_start_s

    def overhead_s(self) -> float:
        """An empty block: what each sample carries on top of the calls (median of probes)."""
        return stats.median([self.block_s(0) for _ in range(_OVERHEAD_PROBES)])


def _target_block_s(overhead_s: float, resolution_s: float, rigor: Rigor) -> float:
    """Long enough for overhead and clock steps to be < 0.1%, short enough for min_samples."""
    wanted_s = max(rigor.min_block_s, overhead_s / MAX_OVERHEAD_FRACTION, resolution_s * RESOLUTION_FACTOR)
    ceiling_s = max(rigor.budget_s / (2 * rigor.min_samples), rigor.min_block_s)
    return min(wanted_s, ceiling_s)


def _grown(calls: int, block_s: float, target_s: float) -> int:
    """More calls per block, aiming past the target (a zero-length block grows 100-fold)."""
    factor = 100.0 if block_s <= 0 else min(100.0, max(2.0, 1.2 * target_s / block_s))
    return min(MAX_CALLS_PER_BLOCK, math.ceil(calls * factor))


def _still_falling(per_call_s: list[float]) -> bool:
    """The newest block is clearly faster than all before, or ends a steadily falling run.

    The first test catches fast warm-up (JIT, caches); the second a slow drift that falls by
    less than 1% a block but steadily (e.g. a clock ramping up), which iid noise mimics only
    once in 24 checks.
    """
    if len(per_call_s) >= 2 and per_call_s[-1] < (1 - SETTLED_FRACTION) * min(per_call_s[:-1]):
        return True
    recent = per_call_s[-(FALLING_RUN + 1):]
    return len(recent) == FALLING_RUN + 1 and all(
        later < (1 - FALLING_STEP_FRACTION) * earlier for earlier, later in zip(recent, recent[1:]))


def _still_falling_in(samples_s: list[float]) -> bool:
    """Whether the samples themselves still fall (first half over 1% slower than the second): a warm-up
    phase cut short by its clock budget says "still falling", and the samples after it say whether
    it was."""
    half = len(samples_s) // 2
    if half < FALLING_RUN:
        return True  # too few samples to tell: the warm-up phase's word stands
    return stats.median(samples_s[:half]) > (1 + SETTLED_FRACTION) * stats.median(samples_s[half:])


def _settled(per_call_s: list[float]) -> bool:
    return len(per_call_s) > FALLING_RUN and not _still_falling(per_call_s)


def _warm_up(run: _Run, target_s: float, overhead_s: float, fixed_calls: int | None = None
             ) -> tuple[int, int, list[Caveat]]:
    """Grow the block to the target length and run blocks until times stop trending down.

    Returns (calls per block, warm-up blocks run, warnings). Per-call estimates subtract the
    overhead so that growing the block does not itself look like a downward trend; only blocks
    at least half the target long are trusted for the trend. `fixed_calls`: the block size is
    given (one training step or inference batch per sample) and never grown.
    """
    rigor, calls, blocks, per_call_s = run.rigor, fixed_calls or 1, 0, []
    for _ in range(rigor.max_warmup_samples + _CALIBRATION_STEPS):
        block_s = run.block_s(calls)
        blocks += 1
        long_enough = fixed_calls is not None or block_s >= target_s / 2 or calls >= MAX_CALLS_PER_BLOCK
        if long_enough:
            per_call_s.append(max(block_s - overhead_s, 0.0) / calls)
            if (_settled(per_call_s) or len(per_call_s) >= rigor.max_warmup_samples
                    or run.elapsed_s() >= rigor.max_warmup_s):
                break
        if block_s < target_s and calls < MAX_CALLS_PER_BLOCK:
            calls = _grown(calls, block_s, target_s)
    warnings: list[Caveat] = []
    if _still_falling(per_call_s):
        warnings.append(Caveat(f"still getting faster after {blocks} warm-up blocks: warm-up may be incomplete",
                               WARMUP, {"warmup_blocks": blocks}))
    recent_s = stats.median(per_call_s[-3:]) if per_call_s else 0.0
    if fixed_calls is not None:
        return fixed_calls, blocks, warnings
    if recent_s > 0:  # the final block size, from warmed-up per-call times
        calls = min(MAX_CALLS_PER_BLOCK, max(1, math.ceil(BLOCK_HEADROOM * target_s / recent_s)))
    return calls, blocks, warnings


def _sample(run: _Run, calls: int, min_samples: int = MIN_SAMPLES_ON_BUDGET) -> tuple[list[float], str, int]:
    """Blocks until the CI target is met, the budget is spent (after `min_samples` at least), or
    max_samples is reached: (every sample, why sampling stopped, how many first samples were still
    warm-up, to be left out: steady_state.settled_start, checked at every 10% more samples)."""
    rigor, samples_s, ordered_s, hooks = run.rigor, list[float](), list[float](), run.hooks
    start, next_batch_check, next_settle_check = 0, 0, rigor.min_samples
    min_samples = max(MIN_SAMPLES_ON_BUDGET, min(min_samples, rigor.max_samples))
    stop_reason = "max_samples"
    blocks, target_met = 0, False
    while len(samples_s) < rigor.max_samples:
        blocks += 1
        if hooks is not None:
            if blocks > AUDITED_MAX_BLOCKS or (len(samples_s) >= min_samples and (
                    hooks.finished() or run.elapsed_s() >= hooks.sampling_limit_s(AUDITED_MAX_BUDGETS * rigor.budget_s))):
                stop_reason = "budget"
                break
            drawn = hooks.length(calls)
            sample_s = max(run.block_s(drawn) - hooks.overhead_s, 0.0) / drawn
            if hooks.short(drawn, calls):
                continue  # judged and kept by the audit; the figure comes from blocks of its calibrated size
        else:
            sample_s = run.block_s(calls) / calls
        samples_s.append(sample_s)
        bisect.insort(ordered_s, sample_s)  # kept sorted: the CI is then a lookup per sample
        count = len(samples_s)
        if count >= next_settle_check:
            next_settle_check = count + max(1, count // 10)
            found = steady_state.settled_start(samples_s)
            if found != start:
                start, ordered_s, next_batch_check = found, sorted(samples_s[found:]), 0
        steady = count - start
        if (steady >= rigor.min_samples and count >= next_batch_check
                and stats.rel_ci_halfwidth_presorted(ordered_s) <= rigor.target_rel_ci):
            # the reported interval (summarize: the wider of this one and the batch medians') must meet
            # it too, computed exactly as reported (checked every 10% more samples: it costs a pass)
            if stats.summarize(samples_s[start:]).rel_ci_halfwidth <= rigor.target_rel_ci:
                if hooks is None or not hooks.more_wanted(calls):
                    return samples_s, "target", start
                target_met = True  # the audit still wants blocks: the figure is ready
            next_batch_check = count + max(1, count // 10)
        if target_met and hooks is not None and not hooks.more_wanted(calls):
            return samples_s, "target", start
        if steady >= min_samples and run.elapsed_s() >= rigor.budget_s and (
                hooks is None or not hooks.more_wanted(calls)):
            stop_reason = "budget"
            break
    final = steady_state.settled_start(samples_s)  # the last samples may show a start not seen before
    return samples_s, stop_reason, final if len(samples_s) - final >= min_samples else start


def measure(call: Callable[[], object], synchronize: Callable[[], object], *, clock: Clock | None = None,
            rigor: Rigor = RIGORS[DEFAULT_RIGOR], state: StateReader | None = None,
            calls_per_block: int | None = None, min_samples: int = MIN_SAMPLES_ON_BUDGET,
            hooks: BlockHooks | None = None) -> Timing:
    """Time `call` (seconds per call) under `rigor`; see the module docstring for the method.

    `synchronize` blocks until the device is idle (a no-op for synchronous backends). `state`,
    if given, returns readings such as {"cpu_mhz": 3400.0}; they are read before and after, and
    a change over 5% becomes a warning. `calls_per_block` fixes the block size (1: each sample is
    one training step or inference batch, so its percentiles are real per-call latencies);
    `min_samples` are taken even when the budget runs out first (a workload's own minimum). `hooks`
    audit every block alike (runner/block_audit.py): then each sampling block's length is drawn
    around the calibrated one (its per-call time net of the measured overhead), and sampling goes on
    until the hooks want no more blocks, within AUDITED_MAX_BUDGETS budgets (or the longer time a
    statistic's hooks ask for: hooks.sampling_limit_s).
    """
    clock = clock if clock is not None else PerfCounterClock()
    run, warnings = _Run(call, synchronize, clock, rigor, hooks), list[Caveat]()
    before = _read_state(state, warnings)
    synchronize()  # work queued before the measurement is not ours to count
    start_s = clock.now()
    first_call_s = run.block_s(1)
    run.budget_start_s = clock.now()
    overhead_s = run.overhead_s()
    if hooks is not None:
        hooks.overhead_s = overhead_s
    target_s = _target_block_s(overhead_s, clock_resolution_s(clock), rigor)
    if hooks is not None:
        target_s = max(target_s, min(AUDITED_MIN_BLOCK_S, rigor.budget_s / (2 * rigor.min_samples)))
    calls, warmup_blocks, warmup_warnings = _warm_up(run, target_s, overhead_s, calls_per_block)
    all_samples_s, stop_reason, settled_late = _sample(run, calls, min_samples)
    samples_s = all_samples_s[settled_late:]
    total_wall_s = clock.now() - start_s
    summary = stats.summarize(samples_s)
    target_met = stop_reason == "target"
    warnings += [w for w in warmup_warnings if _still_falling_in(samples_s)]
    if settled_late:
        slower = steady_state.slower_by(all_samples_s, settled_late)
        warnings.append(Caveat(f"warm-up outlasted its phase: the first {settled_late} samples ({slower:.0%} slower "
                               f"than the rest) were counted as warm-up", SETTLED_LATE,
                               {"samples": settled_late, "slower": slower}))
    warnings += _quality_warnings(summary, rigor, stop_reason, calls, overhead_s, clock_resolution_s(clock))
    warnings += _drift_warnings(samples_s) + bursts.burst_warnings(summary, samples_s)
    after = _read_state(state, warnings)
    warnings += state_warnings(before, after)
    return Timing(tuple(samples_s), first_call_s, calls, target_met, tuple(warnings), total_wall_s,
                  overhead_s, warmup_blocks + settled_late, stop_reason)


# -- warnings ----------------------------------------------------------------------------------

def _quality_warnings(summary: stats.Summary, rigor: Rigor, stop_reason: str, calls: int,
                      overhead_s: float, resolution_s: float) -> list[Caveat]:
    warnings: list[Caveat] = []
    if stop_reason != "target":
        warnings.append(_target_warning(summary, rigor, stop_reason))
    if summary.median_s > 0 and summary.rel_iqr > UNSTABLE_IQR_FRACTION:
        warnings.append(Caveat(f"unstable: IQR is {summary.rel_iqr:.0%} of median", UNSTABLE,
                               {"rel_iqr": summary.rel_iqr}))
    block_s = summary.median_s * calls
    if math.isfinite(resolution_s) and block_s < resolution_s * RESOLUTION_FACTOR:
        steps = block_s / resolution_s
        warnings.append(Caveat(f"block of {format_seconds(block_s)} is only {steps:.0f}x the clock resolution "
                               f"({format_seconds(resolution_s)}); want >= {RESOLUTION_FACTOR}x", RESOLUTION,
                               {"block_s": block_s, "resolution_s": resolution_s}))
    if overhead_s > MAX_OVERHEAD_FRACTION * block_s:
        share = overhead_s / block_s if block_s > 0 else math.inf
        warnings.append(Caveat(f"clock read + sync overhead ({format_seconds(overhead_s)}) is {share:.2%} "
                               f"of a block; want < {MAX_OVERHEAD_FRACTION:.1%}", OVERHEAD,
                               {"overhead_s": overhead_s, "block_s": block_s}))
    return warnings


def _drift_warnings(samples_s: list[float]) -> list[Caveat]:
    """Samples that trend during the run (throttling, a neighbour's load): the median hides it."""
    third = len(samples_s) // 3
    if third < DRIFT_MIN_SAMPLES:
        return []
    first_s, last_s = samples_s[:third], samples_s[-third:]
    first_median_s = stats.median(first_s)
    if first_median_s <= 0:
        return []
    change = stats.median(last_s) / first_median_s - 1
    if abs(change) <= DRIFT_FRACTION or stats.mann_whitney(first_s, last_s).p_value >= DRIFT_P_VALUE:
        return []
    direction = "faster" if change < 0 else "slower"
    return [Caveat(f"drift: the last third of the samples is {abs(change):.0%} {direction} than the first",
                   DRIFT, {"change": change})]


def _target_warning(summary: stats.Summary, rigor: Rigor, stop_reason: str) -> Caveat:
    why = (f"budget of {rigor.budget_s:g} s spent" if stop_reason == "budget"
           else f"maximum of {rigor.max_samples} samples reached")
    target = f"target ±{rigor.target_rel_ci * 100:g}%"
    figures = {"rel_ci_halfwidth": summary.rel_ci_halfwidth, "target_rel_ci": rigor.target_rel_ci,
               "samples": summary.n, "stop_reason": stop_reason}
    if math.isinf(summary.rel_ci_halfwidth):
        return Caveat(f"95% CI of the median undefined with {summary.n} samples, {target}: {why}", TARGET, figures)
    return Caveat(f"95% CI ±{summary.rel_ci_halfwidth:.1%} of median, {target}: {why}", TARGET, figures)


def _read_state(state: StateReader | None, warnings: list[Caveat]) -> dict[str, Any] | None:
    """Telemetry must never stop a measurement: a failing reader becomes a warning."""
    if state is None:
        return None
    try:
        return dict(state())
    except Exception as exc:  # noqa: BLE001 - any reader failure is reported, not raised
        warnings.append(Caveat(f"state reader failed: {exc!r}", STATE_UNREAD))
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def state_warnings(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[Caveat]:
    """A warning per reading that moved more than 5% (numbers) or changed at all (anything else)."""
    if not before or not after:
        return []
    warnings: list[Caveat] = []
    for key, old in before.items():
        new = after.get(key)
        if _missing(old) or _missing(new):
            continue  # not available at one end: nothing to compare
        if _is_number(old) and _is_number(new):
            if abs(new - old) > STATE_CHANGE_FRACTION * abs(old):
                change = f" ({(new - old) / old:+.0%})" if old else ""
                warnings.append(Caveat(f"{key} changed during the measurement: {old:g} -> {new:g}{change}",
                                       STATE_CHANGED, {"reading": key, "before": old, "after": new}))
        elif old != new:
            warnings.append(Caveat(f"{key} changed during the measurement: {old!r} -> {new!r}", STATE_CHANGED,
                                   {"reading": key, "before": old, "after": new}))
    return warnings
