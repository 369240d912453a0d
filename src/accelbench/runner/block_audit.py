"""The audit is the timing: every timed block is made the same way, and any of them may be judged.

Checks made beside the timing (rounds of their own, before or after it) judge calls a backend can
tell apart from the timed ones: by their stack, their buffers, their pacing or their count. Here
the timed blocks themselves are audited (issue 41), through one path that treats every block alike:

1. before each block (untimed): the input sets its calls will use get new values (an exact factor,
   in place or in new objects: workloads/rotation.py `before_block`), and their output buffers are
   poisoned through the framework;
2. the block: synchronise, read the clock, the calls, synchronise, read the clock (timing/harness.py);
3. after it (untimed): one element of the last output is read back twice. The first read waits
   for whatever synchronize() left running; the second costs only the read. Their difference is
   the work the sync did not wait for, measured on every block, at the queue depth it ended on;
4. then, drawn privately *after* the block ran, whether this block's outputs are judged (a sample
   of elements against their float64 values: workloads/sampled_check.py).

The sampling phase draws each block's length (timing/harness.py): most of a range around the
calibrated length, so any call may be the last one whose output survives, and a share of short
blocks of 1 to (input sets) calls, in which every call runs on freshly changed inputs and every
output survives. Work that a backend skips or caches on repeated inputs, or drops when a buffer is
written again, makes long blocks faster per call than short ones: that gap is a verdict.
"""
from __future__ import annotations

import math
import random

import numpy as np
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from accelbench.backends import raw_access
from accelbench.results import Check
from accelbench.runner.sync_lateness import (LATE_BLOCK_SHARE, LATE_BLOCKS_SHARE, LATE_CALL_SHARE,
                                            LATE_MIN_BLOCKS, LATE_MIN_S, late_up_to)
from accelbench.timing import contention, stats
from accelbench.timing.clock import Clock
from accelbench.units import format_seconds
from accelbench.verdict import CACHED, INVALID, NOISY, SYNC_FAILED, SYNC_UNPROVEN, VALID, VerdictReason

CHECK_SHARE = 0.9                 # a block's outputs are judged with this chance, drawn after it ran
# judged calls a measurement needs at each rigor (a judged block judges the last call on each input
# set it used: min(calls, input sets)): a backend wrong in a share f of its calls, whichever they are,
# survives k judged calls with chance (1 - f)^k: 16 catch f = 0.25 with 1 - 0.75^16 = 99.0%
JUDGED_CALLS_WANTED = {"quick": 16, "standard": 24, "rigorous": 32}
SHORT_SHARE = 0.4                 # sampling blocks drawn short (1 to input-set calls): cheap, and the gap needs many
SHORTS_EACH = 8                   # short blocks of 1 call, and of (input sets) calls, the gap verdict needs
LONG_WANTED = 8
# a call adds this much more to short blocks than to long ones: work skipped on repeated inputs. An
# honest backend's first calls after the untimed work run on colder caches: numpy STREAM triad 2^15
# added 1.0-1.6× as much to short blocks (6 runs), a dropper of overwritten calls 2.3-29×
GAP_FACTOR = 2.0
GAP_SURE = 0.99                   # ... in this share of bootstrap resamples (no accident of a few blocks)
GAP_CPU_FACTOR = 2.0              # ... and CPU time likewise: the work was not done (host devices)
DEVICE_GAP_FACTOR = 2.0           # discrete devices: pipelining hides launch latency up to about this
DEVICE_GAP_MIN_S = 1e-4           # ... and per call beyond this no overlap explains
# a statistic judged by its spread (Monte Carlo) may sample this long for its estimates, whatever the
# rigor's budget: 2^20 draws take ~25 ms a call on one Zen 3 core, 150 estimates ~4 s (quick's 3 budgets: 2.25 s)
STATISTIC_SAMPLING_S = 8.0


def private_draw() -> random.Random:
    """The audit's draws (block lengths, which blocks are judged): the system's entropy, nothing a
    backend can seed or predict (a test that needs one run to repeat replaces this)."""
    return random.SystemRandom()


@dataclass
class Block:
    """One audited block: its calls, wall and CPU time, and what reading its output back waited for."""

    calls: int
    wall_s: float
    cpu_s: float
    late_s: float
    judged: bool = False
    judged_outputs: int = 0   # the timed calls' outputs its judgement read
    counted: bool = False     # a sampling block the figure counts (not warm-up, not a short one)


@dataclass
class BlockAudit:
    """The hooks timing/harness.py calls around every block, and what they found."""

    before_block: Callable[[int], None]
    check_output: Callable[[Any], Check]
    last_output: Callable[[], Any]
    read_back: Callable[[Any], object]
    clock: Clock
    variants: int = 2
    rigor_name: str = "standard"
    on_host: bool = True
    device: str = "cpu"
    blocks: list[Block] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    failed: Check | None = None
    read_failed: str = ""
    overhead_s: float = 0.0
    judged_together: Callable[[], Check] | None = None  # Prepared.judged_together
    snapshot_output: Callable[[Any], Any] | None = None  # Prepared.snapshot_output
    judge_snapshot: Callable[[Any], Check] | None = None  # Prepared.judge_snapshot
    snapshots: list[Any] = field(default_factory=list)
    more_judged: Callable[[], int] | None = None  # Prepared.more_judged
    children: Any = None    # contention.FamilyThreads: child processes' threads, where /proc can be read
    _draw: random.Random = field(default_factory=lambda: private_draw())
    _cpu_start_s: float = 0.0
    _children_first: dict | None = None
    _calibrated: int | None = None   # the sampling phase's calibrated block length, once it started
    _children_last: dict | None = None

    # -- the harness's hooks ---------------------------------------------------------------------
    def before(self, calls: int) -> None:
        self.before_block(calls)
        if self.children is not None and self._children_first is None:
            self._children_first = self.children.read()
        self._cpu_start_s = time.process_time()  # every thread of the process, to the nanosecond

    def after(self, calls: int, start_s: float, end_s: float) -> float:
        """The block's seconds, counting any work its sync left for the read-back to wait for."""
        cpu_s = time.process_time() - self._cpu_start_s
        wall_s = end_s - start_s
        late_s = self._late_s()
        calibrated = self._calibrated
        block = Block(calls, wall_s, cpu_s, late_s,
                      counted=calibrated is not None and not (calibrated > self.variants and calls <= self.variants))
        self.blocks.append(block)
        if self.failed is None and self._draw.random() < CHECK_SHARE:
            block.judged = True
            if self.snapshot_output is not None:  # read now, judged when the timing is over
                taken = self.snapshot_output(self.last_output())
                self.snapshots.append(taken)
                block.judged_outputs = len(taken) if isinstance(taken, list) else min(calls, self.variants)
            else:
                self._judged(self.check_output(self.last_output()))
                block.judged_outputs = min(calls, self.variants)
        return wall_s + (late_s if self._is_late(block) else 0.0)

    def length(self, calls: int) -> int:
        """A sampling block's calls, drawn: short (1 to input sets) with SHORT_SHARE where blocks are
        longer than that, else uniform over 1 to 2·calls - 1 (mean: the calibrated length)."""
        self._calibrated = calls
        if calls > self.variants and self._draw.random() < SHORT_SHARE:
            return self._draw.randint(1, self.variants)
        return self._draw.randint(1, max(1, 2 * calls - 1))

    def short(self, calls: int, calibrated: int) -> bool:
        """A block the reported samples leave out: one of few calls among longer ones (it pays the
        per-block costs a long block spreads; it serves the gap verdict)."""
        return calibrated > self.variants and calls <= self.variants

    def more_wanted(self, calibrated: int) -> bool:
        """Blocks still needed before the verdicts below can be given."""
        if self.failed is not None:
            return False
        if self.judged_calls() < JUDGED_CALLS_WANTED.get(self.rigor_name, JUDGED_CALLS_WANTED["standard"]):
            return True
        if self.more_judged is not None and self.more_judged() > 0:
            return True
        if calibrated > self.variants:
            ones = sum(b.calls == 1 for b in self.blocks)
            fulls = sum(b.calls == self.variants for b in self.blocks)
            longs = sum(b.calls > self.variants for b in self.blocks)
            return min(ones, fulls) < SHORTS_EACH or longs < LONG_WANTED
        return False

    def sampling_limit_s(self, budgets_s: float) -> float:
        return max(budgets_s, STATISTIC_SAMPLING_S) if self.more_judged is not None else budgets_s

    def judged_calls(self) -> int:
        """Timed calls whose outputs were judged (each at most once: the last call on each input set)."""
        return sum(b.judged_outputs for b in self.blocks)

    def finished(self) -> bool:
        """A judged block failed: more blocks cannot change the verdict."""
        return self.failed is not None

    def _late_s(self) -> float:
        """What reading the last output back waited for beyond the read's own cost."""
        output = self.last_output()
        if output is None or isinstance(output, (tuple, list, dict)) or self.read_failed:
            return 0.0
        if self.device != "cpu" and isinstance(output, np.ndarray):
            return 0.0  # host memory a device wrote into: reading it waits for nothing (_host_output says so)
        try:
            first_s = self.clock.now()
            self.read_back(output)
            second_s = self.clock.now()
            self.read_back(output)
            third_s = self.clock.now()
        except Exception as error:  # noqa: BLE001 - an output it cannot read in part: said once
            self.read_failed = f"{type(error).__name__}: {error}"
            return 0.0
        return max(0.0, (second_s - first_s) - (third_s - second_s))

    def _is_late(self, block: Block) -> bool:
        per_call_s = block.wall_s / max(block.calls, 1)
        return block.late_s > max(LATE_MIN_S, LATE_CALL_SHARE * per_call_s, LATE_BLOCK_SHARE * block.wall_s)

    # -- what they found -------------------------------------------------------------------------
    def _judged(self, check: Check) -> None:
        self.checks.append(check)
        if not check.passed and self.failed is None:
            self.failed = check

    def judge_snapshots(self) -> None:
        """The outputs read after the judged blocks, judged now (once)."""
        taken, self.snapshots = self.snapshots, []
        if self.judge_snapshot is not None:
            for snapshot in taken:
                self._judged(self.judge_snapshot(snapshot))

    def check(self) -> Check:
        """The first failed judgement, else the judgement of all of them together where the workload
        has one (a Monte Carlo spread), else the worst passed one."""
        self.judge_snapshots()
        if self.failed is not None:
            return self.failed
        if not self.checks:
            return Check(False, float("inf"), 0.0, "no timed block was judged")
        if self.judged_together is not None:
            together = self.judged_together()
            if not together.passed or together.max_rel_error:  # decided on enough outputs: it speaks for all
                return together
        return max(self.checks, key=lambda c: c.max_rel_error if c.max_rel_error == c.max_rel_error else math.inf)

    def findings(self) -> list[VerdictReason]:
        return self._host_output() + self._sync_findings() + self._gap_findings()

    def _host_output(self) -> list[VerdictReason]:
        """An output in host memory that a device writes into (a device-to-host copy): reading it
        waits for nothing, so the read-backs prove nothing about synchronize()."""
        if self.device == "cpu" or not isinstance(self.last_output(), np.ndarray):
            return []
        return [VerdictReason(VALID, "synchronisation not proven on the timed blocks: its output is host memory the "
                                     "device writes into (reading it back waits for nothing); the start-of-run "
                                     "probe stands", SYNC_UNPROVEN)]

    def cores_used(self) -> float | None:
        """CPU time / wall time of the blocks the figure counts (every thread of the process), plus the
        CPU time of its child processes over the measurement. The untimed work between blocks and the
        short blocks are left out: they would dilute a pool's figure. None before any block."""
        wall_s = sum(b.wall_s for b in self.blocks)
        counted = [b for b in self.blocks if b.counted] or self.blocks
        counted_wall_s = sum(b.wall_s for b in counted)
        if wall_s <= 0 or counted_wall_s <= 0:
            return None
        children_s = 0.0
        if self.children is not None and self._children_first is not None:
            children_s = contention.summed_ns(self._children_first, self.children.read())[0] / 1e9
        return sum(b.cpu_s for b in counted) / counted_wall_s + children_s / wall_s

    def summary(self) -> dict[str, Any]:
        """What the audit did, for the result's record (extra.audit)."""
        return {"blocks": len(self.blocks), "judged_blocks": sum(b.judged for b in self.blocks),
                "judged_calls": self.judged_calls(),
                "short_blocks": sum(b.calls <= self.variants for b in self.blocks),
                "late_blocks": sum(self._is_late(b) for b in self.blocks)}

    def _sync_findings(self) -> list[VerdictReason]:
        """Late in most of the blocks the figure counts (a sync that waits for part of the queue), or in
        every block up to some length, short ones too (a sync that waits only when many calls are
        queued). LATE_MIN_S stays above what a first read-back costs whatever the sync does."""
        counted = [b for b in self.blocks if b.counted]
        late = [b for b in counted if self._is_late(b)]
        everywhere = [b for b in self.blocks if self._is_late(b)]
        if not everywhere:
            return []
        waited_s = stats.median([b.late_s for b in late or everywhere])
        figures = {"late_blocks": len(late), "blocks": len(counted), "late_s": waited_s}
        text = (f"reading each timed block's last output back after synchronize() waited {format_seconds(waited_s)} "
                f"more than the read itself in {len(late)} of the {len(counted)} blocks the figure counts")
        if len(counted) >= LATE_MIN_BLOCKS and len(late) >= LATE_BLOCKS_SHARE * len(counted):
            return [VerdictReason(INVALID, f"{text}: synchronize() does not wait for the work to finish", SYNC_FAILED,
                                  figures)]
        few = late_up_to(self.blocks, self._is_late)
        if few is not None:
            depth, blocks = few
            short_s = stats.median([b.late_s for b in self.blocks if b.calls <= depth])
            return [VerdictReason(INVALID, f"reading each timed block's last output back after synchronize() waited "
                                           f"{format_seconds(short_s)} more than the read itself in every one of the "
                                           f"{blocks} blocks of {depth} calls or fewer: synchronize() does not wait "
                                           f"with {depth} calls queued",
                                  SYNC_FAILED, {"late_blocks": blocks, "blocks": blocks, "late_s": short_s, "depth": depth})]
        if len(late) > 0.3 * len(counted):
            return [VerdictReason(NOISY, f"synchronisation could not be proven: {text}", SYNC_UNPROVEN, figures)]
        return []

    def _gap_findings(self) -> list[VerdictReason]:
        """Short blocks' cost per added call against long blocks': each block costs a fixed part (a
        pool waking after the untimed work, the first call's cold caches) plus one part per call, so
        the per-call parts are compared (slopes, which leave the fixed part out), not the averages."""
        shorts = [b for b in self.blocks if b.calls <= self.variants]
        longs = [b for b in self.blocks if b.calls > self.variants]
        if (min(sum(b.calls == 1 for b in shorts), sum(b.calls == self.variants for b in shorts)) < SHORTS_EACH
                or len(longs) < LONG_WANTED or self.variants < 2):
            return []
        short_s, long_s = _slope(shorts, "wall_s"), _slope(longs, "wall_s")
        if long_s <= 0 or short_s <= GAP_FACTOR * long_s:
            return []
        sure = _surely_above(shorts, longs, "wall_s", GAP_FACTOR, self._draw)
        if sure < GAP_SURE:
            return []
        ratio = short_s / long_s
        short_cpu, long_cpu = _slope(shorts, "cpu_s"), _slope(longs, "cpu_s")
        text = (f"each call added {format_seconds(long_s)} to blocks of {self.variants + 1} calls or more, "
                f"{format_seconds(short_s)} to blocks of 1 to {self.variants} calls on inputs just changed ({ratio:.2f}×)")
        figures = {"short_s": short_s, "long_s": long_s, "short_cpu_s": short_cpu, "long_cpu_s": long_cpu,
                   "sure": sure}
        if self.on_host:
            if long_cpu > 0 and short_cpu > GAP_CPU_FACTOR * long_cpu:
                return [VerdictReason(INVALID, f"{text}, and {short_cpu / long_cpu:.2f}× the CPU time: the backend "
                                               "repeats less of the work on inputs it has seen, or drops calls whose "
                                               "output is written again", CACHED, figures)]
            return [VerdictReason(NOISY, f"{text}, with about as much CPU time a call (a pool waking, or work "
                                         "done elsewhere): the difference could not be explained", SYNC_UNPROVEN,
                                  figures)]
        if ratio > DEVICE_GAP_FACTOR and short_s - long_s > DEVICE_GAP_MIN_S:
            return [VerdictReason(INVALID, f"{text}: more than pipelining can hide; the backend repeats less work "
                                           "on inputs it has seen, or drops calls whose output is written again",
                                  CACHED, figures)]
        return [VerdictReason(NOISY, f"{text}: pipelining, or work left undone", SYNC_UNPROVEN, figures)]


def _slope(blocks: list[Block], field: str) -> float:
    """Seconds one more call adds to a block: the difference of the medians of the longer and the
    shorter half of the blocks (by calls), over the difference of their median lengths."""
    ordered = sorted(blocks, key=lambda b: b.calls)
    if len({b.calls for b in ordered}) < 2:
        return 0.0
    cut = len(ordered) // 2
    while cut < len(ordered) and ordered[cut].calls == ordered[cut - 1].calls:
        cut += 1  # one length on one side only
    if cut >= len(ordered):
        cut = len(ordered) // 2
        while cut > 0 and ordered[cut].calls == ordered[cut - 1].calls:
            cut -= 1
    low, high = ordered[:cut], ordered[cut:]
    if not low or not high:
        return 0.0
    span = stats.median([b.calls for b in high]) - stats.median([b.calls for b in low])
    if span <= 0:
        return 0.0
    return (stats.median([getattr(b, field) for b in high]) - stats.median([getattr(b, field) for b in low])) / span


def _surely_above(shorts: list[Block], longs: list[Block], field: str, factor: float, draw: random.Random,
                  resamples: int = 200) -> float:
    """The share of bootstrap resamples (of the blocks, short and long apart) in which the short
    blocks' slope exceeds `factor` times the long blocks'."""
    above = 0
    for _ in range(resamples):
        short = [shorts[draw.randrange(len(shorts))] for _ in shorts]
        long = [longs[draw.randrange(len(longs))] for _ in longs]
        above += _slope(short, field) > factor * max(_slope(long, field), 0.0)
    return above / resamples


def block_audit_for(prepared: Any, capture: Any, backend: Any, clock: Clock | None, rigor: Any,
                    on_host: bool, device: str = "cpu") -> BlockAudit | None:
    """The audit of a workload's timed blocks, where it changes its inputs before every block
    (Prepared.before_block); None for the others (runner/audit.py checks those after the timing)."""
    if prepared.before_block is None or prepared.check_output is None:
        return None
    from accelbench.timing.clock import PerfCounterClock

    def read_back(output: Any) -> object:
        # the backend's own read-back: the one way to the data an asynchronous backend must wait for
        # (a framework's view of an array a worker thread still writes would not wait)
        return backend.to_host(raw_access.first_element(output))

    try:
        children = contention.FamilyThreads(own=False)
    except Exception:  # noqa: BLE001 - no /proc: the process's own CPU clock stands alone
        children = None
    return BlockAudit(prepared.before_block, prepared.check_output, lambda: capture.last, read_back,
                      clock or PerfCounterClock(), variants=max(1, prepared.variants), rigor_name=rigor.name,
                      on_host=on_host, device=device, children=children, judged_together=prepared.judged_together,
                      more_judged=prepared.more_judged, snapshot_output=prepared.snapshot_output,
                      judge_snapshot=prepared.judge_snapshot)
