"""Synchronisation is tested, not trusted: does `synchronize()` really wait for the device?

The same known-long work is timed twice, k launches each:

    with_sync:      sync; t0; [out = launch()] x k; synchronize(); t1
    with_readback:  sync; t0; [out = launch()] x k; read_back(out); t1

Reading an output back can only return once the work that made it is done (a device runs its
queue in order), so `with_readback` is a true time (plus one copy, measured apart and subtracted). If
`with_sync` is far below it, `synchronize()` returned before the work finished, and every time
read after it would be too short: such a backend must not be timed.
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from accelbench.timing.checkpoint import checkpoint
from accelbench.timing.clock import Clock, PerfCounterClock
from accelbench.units import format_seconds

WAITS_FRACTION = 0.5   # with_sync must reach half the true time (noise either way)
TARGET_BLOCK_S = 0.02  # launches per block grow until a block lasts this long
MAX_LAUNCHES = 4096
MIN_WORK_S = 0.002     # a block's true work below this is too close to clock and copy noise to judge
ROUNDS = 5
MIN_LAUNCHES = 4       # a block of one launch is at the mercy of one stall


@dataclass(frozen=True)
class SyncProbe:
    ok: bool
    detail: str
    with_sync_s: float = 0.0   # per launch
    true_s: float = 0.0        # per launch, from the output read back
    tested: bool = True        # False: the probe could not run (ok then claims nothing)


def probe(launch: Callable[[], Any], synchronize: Callable[[], object], read_back: Callable[[Any], object],
          clock: Clock | None = None) -> SyncProbe:
    """Per-launch times of k launches ended by synchronize() and by reading the last output back.

    One copy of the output ends each read-back block (measured apart and subtracted), and k grows
    until the block is long, so a slow link (a GPU's PCIe) does not drown the work being judged.
    """
    clock = clock or PerfCounterClock()
    out = launch()  # the first call (compilation, allocation) stays out of both timings
    read_back(out)
    synchronize()
    start_s = clock.now()
    read_back(out)  # the output is ready: this is the copy alone
    copy_s = clock.now() - start_s
    launches, block_s = 1, 0.0
    while True:
        block_s = _read_back_block(launch, synchronize, read_back, clock, launches) - copy_s
        if block_s >= TARGET_BLOCK_S or launches >= MAX_LAUNCHES:
            break
        launches = min(MAX_LAUNCHES, launches * 4)
    launches = max(launches, MIN_LAUNCHES)
    # a stall lengthens one block, not most: each round's pair, in a random order, is one vote
    trues, syncs = [], []
    for _ in range(ROUNDS):
        pair = [lambda: max(_read_back_block(launch, synchronize, read_back, clock, launches) - copy_s, 0.0),
                lambda: _synced(launch, synchronize, read_back, clock, launches)[0]]
        order = (0, 1) if random.random() < 0.5 else (1, 0)
        found = {i: pair[i]() for i in order}
        trues.append(found[0])
        syncs.append(found[1])
    true_s, with_sync_s = _median(trues) / launches, _median(syncs) / launches
    if max(trues) < MIN_WORK_S:
        return SyncProbe(True, f"work too short to judge ({format_seconds(true_s)} a launch)", with_sync_s, true_s)
    short = sum(s < WAITS_FRACTION * t for s, t in zip(syncs, trues))
    text = (f"work that takes {format_seconds(true_s)} (its output read back) measured "
            f"{format_seconds(with_sync_s)} when followed by synchronize() (medians of {ROUNDS} interleaved rounds, "
            f"{short} short)")
    if short >= CONSISTENT * ROUNDS and with_sync_s < WAITS_FRACTION * true_s:
        return SyncProbe(False, f"synchronize() does not wait for the device: {text}", with_sync_s, true_s)
    if short:
        return SyncProbe(True, f"synchronisation could not be proven (short in some rounds, not most: load, or "
                               f"a runtime's lost overlap): {text}", with_sync_s, true_s)
    return SyncProbe(True, f"synchronize() waits ({format_seconds(with_sync_s)} with it, "
                           f"{format_seconds(true_s)} with the output read back)", with_sync_s, true_s)


def _read_back_block(launch, synchronize, read_back, clock, launches: int) -> float:
    synchronize()
    start_s = clock.now()
    out = None
    for _ in range(launches):
        out = launch()
    read_back(out)
    return clock.now() - start_s


# -- proof on the workload's own call (runner/audit.py) ---------------------------------------
LIE_RATIO = 1.25        # read-back blocks this much slower than synchronised ones: the sync did not wait
SURE_RATIO = 2.0        # beyond what a read-back's lost pipelining can cost an honest device
CONSISTENT = 0.8        # ... in at least this share of rounds (a burst of load hits one block, not most)
MIN_EXTRA_S = 1e-4      # per call: below this (and under SURE_RATIO) a read-back's own round trip may explain it
PROOF_ROUNDS = 7
MIN_INVALID_ROUNDS = 10  # a refusal rests on at least this many rounds (under load, 3 of 3 happen by chance)
MAX_PASSES = 4
WAITS, NOT_WAITING, UNPROVEN = "waits", "does not wait", "unproven"
NOT_WAITING_TEXT = "synchronize() does not wait for all the work"
# the tail: a block from an empty queue ended by synchronize() against the same block ended by
# reading its last output back (as pipelined; the read-back's own cost subtracted). A sync that
# leaves the last K calls of a block pending (waits only while more than K are in flight) ends it
# K calls early however long the block: one call's worth at least, where an honest one ends it on time
TAIL_CALLS = 0.5       # a block ended this many calls' work early (or more) is short in the tail ...
MIN_TAIL_S = 2e-5      # ... and by this long at least (one sync against one read-back: their noise)
TAIL_CONSISTENT = 0.6  # the single call's share of short rounds, where its fastest pair is short too
# a wake-up per call can cost more than the work (jax stream 2^16 at load 7: pipelined 32 µs a call,
# synchronised after every call 215, read back 230; PoCL d2d 1 MiB quiet: read back 2.1-2.3x): a
# refusal from the pipelined blocks alone, with the serial blocks this close to the read-back ones,
# needs the CPU time to say work was dropped (runner/audit.unproven_by_overlap)
SERIAL_ALIKE = 1.5
# CPU time, serial blocks over pipelined ones: honest jax, PoCL, torch on the CPU 0.9-1.5 in plain
# blocks, jax stream 2^16 3.3-4.0 in the proof at load 5 (its pool spins between serial calls). A
# backend dropping every overwritten write saves calls / (input sets) of it: the line is half that
CPU_ALIKE_MIN = 2.0


def cpu_alike(calls: int, variants: int) -> float:
    """The most CPU the serial blocks may take over the pipelined ones while the pipelined blocks
    still count as having done the work (a block of `calls` calls over `variants` output buffers)."""
    return max(CPU_ALIKE_MIN, calls / max(variants, 1) / 2)


@dataclass(frozen=True)
class Proof:
    status: str           # WAITS, NOT_WAITING or UNPROVEN
    detail: str
    ratio: float = 1.0    # median over rounds of read-back time / synchronised time
    proven_s: float = 0.0  # per call, each output read back
    synced_s: float = 0.0  # per call, the fastest pipelined block ended by synchronize() (as the timing ends its blocks)
    serial_ratio: float = math.inf  # median of read-back blocks / blocks synchronised after every call
    by_tail: bool = False  # NOT_WAITING from the tail (blocks from an empty queue), not from the ratios
    cpu_ratio: float | None = None  # this process's CPU time: serial blocks / pipelined ones (medians)

    def serial_pays_alike(self, cpu_limit: float) -> bool:
        """Only the pipelined blocks' speed refused: the blocks synchronised after every call, which
        pay a wake-up per call as the read-back blocks do, came within SERIAL_ALIKE of them, and the
        pipelined blocks used as much CPU (`cpu_limit`, from `cpu_alike`): the work was done there,
        only overlapped. A backend that drops overwritten work saves its CPU time too."""
        return (not self.by_tail and self.serial_ratio <= SERIAL_ALIKE and self.cpu_ratio is not None
                and self.cpu_ratio <= cpu_limit)


@dataclass
class _Evidence:
    """What the rounds measured, one entry per round."""
    ratios: list[float] = field(default_factory=list)
    proven: list[float] = field(default_factory=list)
    extras: list[float] = field(default_factory=list)
    serial: list[float] = field(default_factory=list)
    synced: list[float] = field(default_factory=list)
    # CPU seconds of this process (every thread) in the pipelined and in the serial block
    cpu_synced: list[float] = field(default_factory=list)
    cpu_serial: list[float] = field(default_factory=list)
    # the tail pairs: (ended by synchronize(), ended by the read-back less its cost, calls, per-call time)
    single: list[tuple[float, float, int, float]] = field(default_factory=list)
    drawn: list[tuple[float, float, int, float]] = field(default_factory=list)


def prove(call: Callable[[], Any], synchronize: Callable[[], object], read_back: Callable[[Any], object],
          clock: Clock, calls: int, rounds: int = PROOF_ROUNDS, coin: Callable[[], float] | None = None,
          cpu_clock: Callable[[], float] | None = time.process_time) -> Proof:
    """Rounds of blocks in an order `coin` draws: `calls` calls ended by synchronize(); as many
    reading each call's output back before the next call (a lazy backend that drops work
    overwritten, or a sync that does not wait, is fast only in the first); as many synchronising
    after every call (as serial as the second: what serialising costs an honest backend, a sync that
    returns early does not pay). Right after the second, its last, finished output is read `calls`
    times: the read-backs' own cost, subtracted. And the tail: from an empty queue, one call, and a
    number of calls drawn each round (the backend cannot know it), each ended once by synchronize()
    and once by reading its last output back: a sync that leaves the last calls of a block pending
    ends both early by those calls, however many there were (`_tail`)."""
    coin = coin or random.SystemRandom().random
    seen = _Evidence()
    for _ in range(MAX_PASSES):  # where the rounds so far do not clear it, more rounds decide with them
        _rounds(call, synchronize, read_back, clock, calls, rounds, coin, seen, cpu_clock)
        found = _judged(seen)
        if found.status == WAITS or (found.status == NOT_WAITING and len(seen.ratios) >= MIN_INVALID_ROUNDS):
            return found
        if len(seen.ratios) >= 2 * PROOF_ROUNDS:
            break
    if found.status == NOT_WAITING and len(seen.ratios) < MIN_INVALID_ROUNDS:
        return replace(found, status=UNPROVEN, detail=found.detail.replace(
            NOT_WAITING_TEXT, "synchronize() could not be proven (too few rounds to refuse it)"))
    return found


def _judged(seen: _Evidence) -> Proof:
    synced_s = min(seen.synced) if seen.synced else 0.0
    tail_status, tail_text = _tail(seen.single, seen.drawn)
    found = _decided(sorted(seen.ratios), _median(seen.proven), _median(seen.extras), len(seen.ratios),
                     seen.serial)
    found = replace(found, synced_s=synced_s, serial_ratio=_median(seen.serial) if seen.serial else math.inf,
                    cpu_ratio=_median(seen.cpu_serial) / _median(seen.cpu_synced)
                    if seen.cpu_synced and _median(seen.cpu_synced) > 0 else None)
    if tail_status == NOT_WAITING:
        return replace(found, status=NOT_WAITING, detail=f"{NOT_WAITING_TEXT}: {tail_text}", by_tail=True)
    if tail_status == UNPROVEN and found.status == WAITS:
        return replace(found, status=UNPROVEN, detail=f"synchronisation could not be proven: {tail_text}")
    return found


def _rounds(call, synchronize, read_back, clock, calls: int, rounds: int, coin: Callable[[], float],
            seen: _Evidence, cpu_clock: Callable[[], float] | None = None) -> None:
    last: list[Any] = [None]

    def tracked() -> Any:  # the latest output: reading it back empties the queue before a tail block
        last[0] = call()
        return last[0]

    for _ in range(rounds):
        checkpoint()
        draw = random.Random(coin())  # the order and the drawn count, each round: the backend cannot know them
        drawn = draw.randint(2, max(2, calls))

        def tail(count: int, by_sync: bool) -> Callable[..., tuple[float, float]]:
            return lambda call_, synchronize_, read_back_, clock_, _: _drained(
                call_, synchronize_, read_back_, clock_, count, last[0], by_sync)

        blocks: list[Callable[..., Any]] = [_synced, _read_each, _serial, tail(1, True), tail(1, False),
                                            tail(drawn, True), tail(drawn, False)]
        order = list(range(len(blocks)))
        draw.shuffle(order)
        times, cpu_s = {}, {}
        for i in order:
            cpu_before_s = cpu_clock() if cpu_clock is not None else 0.0
            times[i] = blocks[i](tracked, synchronize, read_back, clock, calls)
            cpu_s[i] = cpu_clock() - cpu_before_s if cpu_clock is not None else 0.0
        if cpu_clock is not None:
            seen.cpu_synced.append(cpu_s[0])
            seen.cpu_serial.append(cpu_s[2])
        synced_s, read_s, serial_s = times[0][0], times[1][0], times[2][0]
        work_s = max(read_s - times[1][1], 0.0)
        seen.ratios.append(work_s / max(synced_s, 1e-12))
        seen.proven.append(work_s / calls)
        seen.extras.append((work_s - serial_s) / calls)
        seen.serial.append(work_s / max(serial_s, 1e-12))
        seen.synced.append(synced_s / calls)
        drawn_read_s = max(times[6][0] - times[6][1], 0.0)
        per_call_s = drawn_read_s / drawn
        single_read_s = max(times[4][0] - times[4][1], 0.0)
        seen.single.append((times[3][0], single_read_s, 1, single_read_s))  # each pair scaled by its own read-back
        seen.drawn.append((times[5][0], drawn_read_s, drawn, per_call_s))


def _tail(single: list[tuple[float, float, int, float]], drawn: list[tuple[float, float, int, float]]
          ) -> tuple[str, str]:
    """Blocks from an empty queue ended by synchronize() against the same ended by reading their last
    output back: WAITS, UNPROVEN (short in the median, not in enough rounds) or NOT_WAITING (short in
    the median and in at least CONSISTENT of the rounds; for the single call, at least
    TAIL_CONSISTENT of them where it is short at its fastest too: load only ever slows a block, so
    an honest sync's fastest single call is as fast as its fastest read back)."""
    found, texts = WAITS, []
    for name, pairs in (("one call", single), ("a drawn number of calls", drawn)):
        if not pairs:
            continue
        share = TAIL_CONSISTENT if name == "one call" else CONSISTENT
        early = [(read_s - sync_s) / max(per_call_s, 1e-12) for sync_s, read_s, _, per_call_s in pairs]
        short = sum((read_s - sync_s) > max(TAIL_CALLS * per_call_s, MIN_TAIL_S)
                    for sync_s, read_s, _, per_call_s in pairs)
        median_early = _median(early)
        fastest_gap_s = min(p[1] for p in pairs) - min(p[0] for p in pairs)
        at_best = fastest_gap_s > max(TAIL_CALLS * min(p[3] for p in pairs), MIN_TAIL_S) or name != "one call"
        if median_early <= TAIL_CALLS or _median([p[1] - p[0] for p in pairs]) <= MIN_TAIL_S:
            continue
        text = (f"{name} from an empty queue ended by synchronize() {format_seconds(_median([p[0] for p in pairs]))}, "
                f"by reading its last output back {format_seconds(_median([p[1] for p in pairs]))} "
                f"({median_early:.1f} calls' work not waited for in the median; {short} of {len(pairs)} rounds short)")
        texts.append(text)
        if short >= share * len(pairs) and at_best:
            found = NOT_WAITING
        elif found == WAITS:
            found = UNPROVEN
    return found, "; ".join(texts)


def _decided(ratios: list[float], proven_s: float, extra_s: float, rounds: int,
             serial: list[float] | None = None) -> Proof:
    """`ratios`: read-back blocks over pipelined synchronised ones; `serial`: over blocks that
    synchronise after every call (as serial as reading each output back, so a pool that sleeps
    between calls, or an asynchronous runtime's lost overlap, costs both alike); `extra_s`: per
    call, what reading back costs beyond synchronising every call."""
    ratio = _median(ratios)
    beyond = sum(r > LIE_RATIO for r in ratios)
    serial_ratio = _median(serial) if serial else math.inf
    text = (f"each call's output read back: {format_seconds(proven_s)} a call; ended by synchronize(): "
            f"{ratio:.2f}× faster (median of {rounds} interleaved rounds, {beyond} beyond {LIE_RATIO}×)")
    if ratio <= LIE_RATIO:
        return Proof(WAITS, f"synchronize() waits ({text})", ratio, proven_s)
    consistent = beyond >= CONSISTENT * rounds
    if consistent and ratio > SURE_RATIO:  # beyond any honest overlap: work was skipped or not waited for
        return Proof(NOT_WAITING, f"{NOT_WAITING_TEXT}: {text}", ratio, proven_s)
    if serial_ratio <= LIE_RATIO:
        return Proof(WAITS, f"synchronize() waits ({text}; with synchronize() after every call "
                            f"{serial_ratio:.2f}×: the calls' lost overlap, not a sync that returns early)",
                     ratio, proven_s)
    if consistent and extra_s > MIN_EXTRA_S:
        return Proof(NOT_WAITING, f"{NOT_WAITING_TEXT}: {text}; with synchronize() "
                                  f"after every call still {serial_ratio:.2f}× faster", ratio, proven_s)
    return Proof(UNPROVEN, f"synchronisation could not be proven (the rounds disagree: load, or a runtime's lost "
                           f"overlap): {text}", ratio, proven_s)


def _synced(call, synchronize, read_back, clock, calls: int, each: bool = False) -> tuple[float, Any]:
    """Seconds for `calls` calls ended by synchronize(); with `each`, one after every call."""
    synchronize()
    start_s = clock.now()
    out = None
    for _ in range(calls):
        out = call()
        if each:
            synchronize()
    synchronize()
    return clock.now() - start_s, out


def _serial(call, synchronize, read_back, clock, calls: int) -> tuple[float, Any]:
    return _synced(call, synchronize, read_back, clock, calls, each=True)


def _drained(call, synchronize, read_back, clock, calls: int, last: Any, by_sync: bool) -> tuple[float, float]:
    """(seconds for `calls` calls from an empty queue, ended by synchronize() or by reading the last
    output back; seconds for reading that finished output back again, 0 when ended by synchronize())."""
    synchronize()
    if last is not None:
        read_back(last)  # the queue is empty whatever synchronize() does
    start_s = clock.now()
    out = None
    for _ in range(calls):
        out = call()
    if by_sync:
        synchronize()
        return clock.now() - start_s, 0.0
    read_back(out)
    elapsed_s = clock.now() - start_s
    start_s = clock.now()
    read_back(out)
    return elapsed_s, clock.now() - start_s


def _read_each(call, synchronize, read_back, clock, calls: int) -> tuple[float, float]:
    """(seconds for the calls, each output read back; seconds for as many read-backs of finished work)."""
    synchronize()
    start_s = clock.now()
    out = None
    for _ in range(calls):
        out = call()
        read_back(out)
    elapsed_s = clock.now() - start_s
    start_s = clock.now()
    for _ in range(calls):
        read_back(out)
    return elapsed_s, clock.now() - start_s


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
