"""Every speed-up a run shows, timed again in interleaved, paired rounds.

After the plan has run, the measurements whose speed-ups the tables show (runner/speedups.py
`wanted_speedups`) are prepared again, grouped by workload and parameters (a group holds the CPU
baselines, the device, its end-to-end trip and the other dtypes of one problem), and timed in
rounds: each round runs one block of every side, forward in even rounds and backward in odd ones
(A B | B A | A B ...), so a load that comes and goes, or drifts, hits both sides of a pair alike.
A group whose instances would not fit in memory together is timed in parts that each repeat its
baseline (runner/pairing_parts.py): only a part's instances are prepared at once.
A block is the harness's block (timing/harness.py `_Run.block_s`): synchronise, read the clock,
the calls, synchronise, read the clock; the same number of calls the measurement settled on.
Before a block whose thread pool differs from the previous block's, this process's other threads
are let go idle (timing/quiesce.py): a pool still spinning from the other side of a pair would
otherwise slow every block that follows it. A pool that will not go idle is cross-talk, recorded
in the speed-up's note; runner/speedups.py then shows the speed-up without a verdict.

Each round gives every speed-up one paired ratio; the run stores the raw per-round times
(store/speedups.py), one speed-up per transaction. The outputs of the paired blocks are checked
as the audit checks them (buffers poisoned before, the last outputs judged after), so broken work
cannot count. A group whose rounds would not fit the rigor's budget is stored as "not paired",
with the reason; its speed-ups are then shown unpaired.
"""
from __future__ import annotations

import dataclasses
import math
import os
from collections import defaultdict
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable, ContextManager, Sequence

from accelbench.backends.base import Backend
from accelbench.errors import Unsupported
from accelbench.results import Measurement, PairedSamples
from accelbench.runner import deadline, memory_release
from accelbench.runner.audit import Capture
from accelbench.runner.block_audit import BlockAudit, block_audit_for
from accelbench.runner.sinks import SpeedupSink
from accelbench.runner.pairing_parts import group_params, instance_key, parts
from accelbench.runner import answer_scope
from accelbench.runner.speedups import (CPU_ALL_CORES, CPU_ONE_THREAD, CROSS_TALK, CROSS_TALK_KIND, END_TO_END,
                                        MIN_PAIRS, REPAIRED, REPAIRED_KIND, Speedups, Wanted, scattered_rounds,
                                        wanted_speedups)
from accelbench.runner.cpu_baseline import framework_is_cpu_baseline
from accelbench.timing import quiesce, stats
from accelbench.timing.checkpoint import TimedOut, checkpoint
from accelbench.timing.clock import Clock, PerfCounterClock
from accelbench.timing.rigor import QUICK, Rigor
from accelbench.units import format_seconds
from accelbench.workloads import host_side
from accelbench.workloads.base import Prepared
from accelbench.workloads.registry import get_workload

PAIRS = {"quick": 8, "standard": 16, "rigorous": 32}   # rounds per group, by rigor
# seconds of paired blocks per side (a group's budget: this × its sides): about a third of the
# measurement's own budget, so pairing adds little to a run
SIDE_BUDGET_S = {"quick": 0.25, "standard": 1.0, "rigorous": 5.0}
# a group whose rounds would pass the budget still gets MIN_PAIRS rounds if they fit in this many budgets
STRETCH = 4.0
WARM_S = 0.03    # untimed calls before a block fill at least this long (one call where a call is longer)
WARM_S_QUICK = 0.01  # ... at quick rigor (the rounds of a one-minute answer)
MEMORY_FRACTION = 0.4  # a part's inputs together must fit in this share of the host's memory
ANSWER_KINDS = (CPU_ALL_CORES, CPU_ONE_THREAD, END_TO_END)  # what the answer states of a result


@dataclass
class TimedSide:
    """One thing a round times: `calls` calls of `call` in one synchronised block."""

    call: Callable[[], object]
    synchronize: Callable[[], object]
    calls: int
    threads: Callable[[], ContextManager] = nullcontext
    pool: object = None   # sides with the same pool (backend, threads) follow each other without settling
    warm_calls: int = 1   # untimed calls before the block (warm_calls_for)
    hooks: BlockAudit | None = None  # the audit of every timed block (runner/block_audit.py), where the workload has one

    def block_s(self, clock: Clock) -> float:
        with self.threads():
            checkpoint()  # Ctrl-C, SIGTERM or the deadline between blocks
            # untimed calls first: every block starts with its pool awake and its own data in the
            # caches, as its own measurement's blocks did, whether it follows a settle (pools asleep:
            # waking one costs ~0.2 ms, on a VM up to ~10 ms) or its own block. They run in blocks of
            # the timed block's length, each waited for, as its own measurement ran them: one burst of
            # queued calls (jax dispatches without waiting) left its runtime busy beside the timed call,
            # which ran 1.27-2× slow (jax matmul n=1000 on a 2-core Zen 5: 33% of blocks, against 5%)
            for index in range(self.warm_calls):
                self.call()
                if (index + 1) % self.calls == 0 or index + 1 == self.warm_calls:
                    self.synchronize()
            if self.hooks is not None:
                self.hooks.before(self.calls)  # new input values, poisoned outputs: as every timed block
                self.synchronize()
            start_s = clock.now()
            for _ in range(self.calls):
                self.call()
            self.synchronize()
            end_s = clock.now()
            if self.hooks is not None:
                return self.hooks.after(self.calls, start_s, end_s)
            return end_s - start_s


@dataclass
class CrossTalk:
    """Blocks that started while other threads of ours were still busy, per side."""

    unsettled: list[list[quiesce.Settled]]

    def note(self, position: int) -> str:
        """'' when every block of the side started with our other threads idle."""
        found = self.unsettled[position]
        if not found:
            return ""
        worst = max(found, key=lambda s: s.busy_threads)
        return f"{len(found)} of its blocks started while {worst.text()}"


def run_rounds(sides: Sequence[TimedSide], rounds: int, clock: Clock | None = None,
               settle: Callable[[], quiesce.Settled] | None = quiesce.settle,
               cross_talk: CrossTalk | None = None) -> list[list[float]]:
    """Seconds per call of each side in each round; sides forward in even rounds, backward in odd.

    Before a side whose pool differs from the previous block's, `settle` waits for our other
    threads to go idle; blocks that started beside busy threads are listed in `cross_talk`."""
    clock = clock or PerfCounterClock()
    per_call_s: list[list[float]] = [[] for _ in sides]
    previous_pool: object = None
    for index in range(rounds):
        order = range(len(sides)) if index % 2 == 0 else range(len(sides) - 1, -1, -1)
        for position in order:
            side = sides[position]
            if settle is not None and (previous_pool is None or side.pool is None or side.pool != previous_pool):
                settled = settle()
                if not settled.settled and cross_talk is not None:
                    cross_talk.unsettled[position].append(settled)
            previous_pool = side.pool
            per_call_s[position].append(side.block_s(clock) / side.calls)
    return per_call_s


def block_calls(m: Measurement, phase: str) -> int:
    """The measurement's own block: its calls per sample for compute; for another phase, the
    calls that last as long as a compute block."""
    if phase == "compute":
        return max(1, m.calls_per_sample)
    block_s = m.calls_per_sample * stats.median(m.samples_s)
    return max(1, round(block_s / max(stats.median(m.phases_s[phase]), 1e-12)))


def warm_calls_for(per_call_s: float, warm_s: float = WARM_S) -> int:
    """Untimed calls before a paired block: as many as fill WARM_S, whatever the block's own length. A block after a settle otherwise carries the wake-up: numpy on 2
    threads, n=256, 12 calls of 185 µs, ran 1.5× its own time after one warm call on a quiet Zen 4 VM;
    on a Zen 5 VM jax at n=1000 (3 calls of 4.7 ms) after a numpy block ran 1.3-2× its own time in 5-14
    of 32 blocks after 5-9 ms of warm calls, in 0-4 of 32 after 19-28 ms (tests/unit/test_pairing.py)."""
    if per_call_s <= 0 or not math.isfinite(per_call_s):
        return 1
    return max(1, math.ceil(warm_s / per_call_s))


def group_key(m: Measurement) -> tuple:
    return (m.spec.workload, tuple((k, v) for k, v in m.spec.params if k not in ("threads", "dtype")))


def pair_speedups(measurements: Sequence[Measurement], backends: Mapping[str, Backend], store: SpeedupSink,
                  run_id: str, rigor: Rigor, *, seed: int, clock: Clock | None = None,
                  on_group: Callable[[str], None] | None = None) -> list[PairedSamples]:
    """Pair every wanted speed-up (at quick rigor: those the answer states, runner/answer_scope.py),
    group by group; each stored as soon as its group is done."""
    groups: dict[tuple, list[Wanted]] = defaultdict(list)
    wanted = wanted_speedups(measurements)
    if rigor.name == QUICK:
        wanted = answer_speedups(wanted)
    for one in wanted:
        groups[group_key(one.candidate)].append(one)
    stored = []
    for items in groups.values():
        checkpoint()
        if on_group:
            on_group(items[0].candidate.spec.workload)
        for paired in paired_once_more_if_contaminated(items, backends, rigor, seed=seed, clock=clock):
            store.add_speedup(run_id, paired)
            stored.append(paired)
    return stored


def answer_speedups(wanted: Sequence[Wanted]) -> list[Wanted]:
    """The speed-ups the answer states: against the CPU on all cores, on one, and end to end, of the
    results runner/answer_scope.py `stated` chooses for each series among those with a comparison."""
    by_series: dict[tuple, list[Measurement]] = defaultdict(list)
    for w in wanted:
        if w.kind in ANSWER_KINDS and w.candidate not in by_series[_series(w.candidate)]:
            by_series[_series(w.candidate)].append(w.candidate)
    chosen = {id(m) for series in by_series.values()
              for _, m in answer_scope.stated(series, {m.spec.workload for m in series
                                                       if framework_is_cpu_baseline(m.spec.workload)})}
    return [w for w in wanted if w.kind in ANSWER_KINDS and id(w.candidate) in chosen]


def _series(m: Measurement) -> tuple:
    return (m.spec.backend, m.spec.device, m.threads)


def paired_once_more_if_contaminated(items: Sequence[Wanted], backends: Mapping[str, Backend], rigor: Rigor, *,
                                     seed: int, clock: Clock | None = None) -> list[PairedSamples]:
    """A group's paired rounds, timed once more where any of its speed-ups came out contaminated, or
    its rounds scattered far more than its plainly valid sides did: a transient that slowed one
    side's rounds (seen on a quiet VM: numpy on 2 threads ran 1.5× its own time in every round of one
    run in six) rarely comes twice, while cross-talk that every block leaves behind does. The second
    rounds count; they keep the first's reason as a note."""
    first = pair_group(items, backends, rigor, seed=seed, clock=clock)
    if rigor.name == QUICK:  # a quick answer times its rounds once: a contaminated figure says so, undecided
        return first
    reasons = [f"were contaminated ({r.contaminated})" for r in Speedups(first).ratios(items)
               if r is not None and r.contaminated]
    reasons += [f"scattered ({why})" for w, p in zip(items, first) if (why := scattered_rounds(w, p))]
    if not reasons:
        return first
    second = pair_group(items, backends, rigor, seed=seed, clock=clock)
    note = f"{REPAIRED} the first rounds {reasons[0]}"
    return [p if not p.baseline_s or p.note else dataclasses.replace(p, note=note, note_kind=REPAIRED_KIND)
            for p in second]


def rounds_within(round_s: float, budget_s: float, rigor: Rigor) -> int:
    """Rounds for a group: the rigor's count, fewer if the budget ends first; MIN_PAIRS even past the
    budget while they fit in STRETCH budgets (slow rounds most often mean a loaded machine, where
    pairing matters most); 0 when not even that fits."""
    rounds = min(PAIRS.get(rigor.name, PAIRS["standard"]), math.floor(budget_s / max(round_s, 1e-12)))
    if rounds >= MIN_PAIRS:
        return rounds
    return MIN_PAIRS if MIN_PAIRS * round_s <= STRETCH * budget_s else 0


def pair_group(items: Sequence[Wanted], backends: Mapping[str, Backend], rigor: Rigor, *, seed: int,
               clock: Clock | None = None) -> list[PairedSamples]:
    """The paired rounds of one group's speed-ups, or each with the reason it was not paired; part
    by part (runner/pairing_parts.py), so the instances prepared at once fit in memory together.
    An instance the next part also times (the baseline) stays prepared; the others are released."""
    found: dict[int, PairedSamples] = {}
    # the host inputs the measurements left held are another problem's (the plan's last): 128 MiB of
    # memcpy's beside the paired STREAM instances took the quick suite's peak to 1.54 GB
    host_side.forget_recent()
    prepared = _Prepared(backends, seed)
    try:
        for part in parts(items):
            prepared.keep_only({instance_key(m) for w in part for m in (w.baseline, w.candidate)})
            memory_release.release()  # the last part's instances gone before this one's are made
            found.update(zip(map(id, part), _pair_part(part, prepared, rigor, clock=clock)))
    finally:
        prepared.release()
    return [found[id(w)] for w in items]


def _pair_part(items: Sequence[Wanted], prepared: _Prepared, rigor: Rigor, *,
               clock: Clock | None = None) -> list[PairedSamples]:
    """The paired rounds of one part's speed-ups, its instances prepared together."""
    sides: dict[tuple[int, str], Measurement] = {}
    for w in items:
        sides.setdefault((id(w.baseline), w.baseline_phase), w.baseline)
        sides.setdefault((id(w.candidate), w.candidate_phase), w.candidate)
    round_s = sum(block_calls(m, phase) * stats.median(m.phases_s[phase]) for (_, phase), m in sides.items())
    budget_s = len(sides) * SIDE_BUDGET_S.get(rigor.name, rigor.budget_s / 3)
    rounds = rounds_within(round_s, budget_s, rigor)
    if rounds < MIN_PAIRS:
        return _unpaired(items, f"not paired: a round of its {len(sides)} blocks takes {format_seconds(round_s)}, "
                                f"{MIN_PAIRS} rounds would pass {STRETCH:g}× the budget of {budget_s:.3g} s "
                                f"(rigor {rigor.name})")
    try:
        with deadline.spec_scope():
            times, notes = _timed_rounds(list(sides.items()), prepared, rounds, clock, rigor)
    except TimedOut as exc:
        return _unpaired(items, f"not paired: {exc}")
    except Unsupported as exc:
        return _unpaired(items, f"not paired: {exc}")
    except MemoryError:
        return _unpaired(items, "not paired: out of memory with the part's inputs prepared together")
    except Exception as exc:  # noqa: BLE001 - a failed pairing leaves the unpaired ratio, the run goes on
        return _unpaired(items, f"not paired: {type(exc).__name__}: {exc}")
    found = []
    for w in items:
        keys = (id(w.baseline), w.baseline_phase), (id(w.candidate), w.candidate_phase)
        note = "; ".join(f"{m.spec.label()}: {notes[key]}" for key, m in zip(keys, (w.baseline, w.candidate))
                         if notes[key])
        found.append(PairedSamples(w.kind, w.baseline.spec, w.baseline_phase, w.candidate.spec,
                                   w.candidate_phase, tuple(times[keys[0]]), tuple(times[keys[1]]),
                                   note=f"{CROSS_TALK} {note}" if note else "",
                                   note_kind=CROSS_TALK_KIND if note else ""))
    return found


def _unpaired(items: Sequence[Wanted], note: str) -> list[PairedSamples]:
    return [PairedSamples(w.kind, w.baseline.spec, w.baseline_phase, w.candidate.spec, w.candidate_phase, note=note)
            for w in items]


class _Prepared:
    """One workload instance per spec without its thread count (numpy on 1 and on all threads
    share it): prepared once for the group's parts that time it, released after the last."""

    def __init__(self, backends: Mapping[str, Backend], seed: int) -> None:
        self.backends, self.seed = backends, seed
        self.by_spec: dict[tuple, tuple[Prepared, Capture, Backend]] = {}   # key -> (prepared, capture, backend)

    def get(self, m: Measurement) -> tuple[Prepared, Capture, Backend]:
        key = instance_key(m)
        if key not in self.by_spec:
            backend = self.backends[m.spec.backend]
            prepared = get_workload(m.spec.workload).prepare(backend, m.spec.device, dict(group_params(m)), self.seed)
            self.by_spec[key] = (prepared, Capture(prepared.compute), backend)
            if prepared.self_timed is not None:
                raise Unsupported(f"{m.spec.workload} times itself (one synchronised batch per sample)")
        return self.by_spec[key]

    def keep_only(self, keys: set) -> None:
        """Release the instances not under `keys`."""
        for key in [k for k in self.by_spec if k not in keys]:
            prepared, _, _ = self.by_spec.pop(key)
            if prepared.release:
                prepared.release()

    def release(self) -> None:
        self.keep_only(set())


def _timed_rounds(sides: list[tuple[tuple[int, str], Measurement]], prepared: _Prepared, rounds: int,
                  clock: Clock | None, rigor: Rigor) -> tuple[dict[tuple[int, str], list[float]], dict[tuple[int, str], str]]:
    """Each side's seconds per call per round, and each side's cross-talk note ('' for none)."""
    _check_memory([m for _, m in sides])
    cross_talk = CrossTalk([[] for _ in sides])
    timed = [_timed_side(m, phase, *prepared.get(m), rigor) for (_, phase), m in sides]
    for instance, _, _ in prepared.by_spec.values():
        if instance.poison and instance.before_block is None:  # audited blocks poison their own
            instance.poison()
    run_rounds(timed, 1, clock)  # warm-up: first calls, caches, thread pools
    per_call_s = run_rounds(timed, rounds, clock, cross_talk=cross_talk)
    for side in timed:
        if side.hooks is not None:  # audited blocks: their outputs were read as they ran, judged now
            check = side.hooks.check()
            if not check.passed:
                raise Unsupported(f"the output of a paired block failed its check: {check.detail}")
    for instance, capture, _ in prepared.by_spec.values():
        if instance.before_block is None:
            _check(instance, capture)
    keys = [key for key, _ in sides]
    return dict(zip(keys, per_call_s)), {key: cross_talk.note(i) for i, key in enumerate(keys)}


def _timed_side(m: Measurement, phase: str, prepared: Prepared, capture: Capture, backend: Backend,
                rigor: Rigor) -> TimedSide:
    device = m.spec.device
    call = capture if phase == "compute" else prepared.end_to_end()
    if call is None:
        raise Unsupported(f"{m.spec.label()} has no {phase} phase to time")

    def synchronize() -> None:
        backend.synchronize(device)
        backend.wait_for(capture.last)

    calls = block_calls(m, phase)
    hooks = (block_audit_for(prepared, capture, backend, None, rigor, on_host=True, device=device)
             if phase == "compute" else None)
    warm_s = WARM_S_QUICK if rigor.name == QUICK else WARM_S
    return TimedSide(call, synchronize, calls, lambda: backend.threads(m.threads),
                     pool=(m.spec.backend, m.spec.device, m.threads),
                     warm_calls=warm_calls_for(stats.median(m.phases_s[phase]), warm_s), hooks=hooks)


def _check(prepared: Prepared, capture: Capture) -> None:
    """The paired blocks' outputs, judged as runner/audit.py judges the timed block's."""
    if prepared.check_output is not None:
        check = prepared.check_output(capture.last)
    elif prepared.verify is not None:
        check = prepared.verify()
    else:
        return
    if not check.passed:
        raise Unsupported(f"the output of a paired block failed its check: {check.detail}")


def _check_memory(measurements: list[Measurement]) -> None:
    try:
        host_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    specs = {instance_key(m) for m in measurements}
    need = sum(get_workload(w).footprint_bytes(dict(p)) for w, _, _, p in specs)
    if need > MEMORY_FRACTION * host_bytes:
        raise Unsupported(f"the part's inputs together need {need / 2**30:.1f} GiB, over "
                          f"{MEMORY_FRACTION:.0%} of this machine's memory")
