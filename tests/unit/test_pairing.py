"""Speed-ups from interleaved paired rounds (runner/pairing.py, runner/speedups.py).

The load test pins this process and a busy subprocess to one core and stops and starts the
subprocess while the rounds run: the paired ratio must still hold the known cost ratio (3), while
the same two costs timed apart, one with the load and one without, are far off.
"""
from __future__ import annotations

import json
import re
import math
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.cli.main import main
from accelbench.results import Check, Measurement, PairedSamples, Spec, Work
from accelbench.runner import pairing
from accelbench.report.analysis import analyse
from accelbench.report.derived import derived_figures
from accelbench.runner.execute import TrustContext, measure_item
from accelbench.runner.plan import PlanItem, build_plan, usable_cpus
from accelbench.runner.run_config import RunConfig
from accelbench.session import run_plan
from accelbench.runner.speedups import CPU_ALL_CORES, paired_ratio_ci, unpaired_ratio_ci
from accelbench.store.db import Store
from accelbench.timing import checkpoint
from accelbench.timing.rigor import RIGORS

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out


def _work(units: int) -> None:
    x = 1.0
    for _ in range(units):
        x = x * 1.0000001 + 1e-9


def _calibrated_units(target_s: float) -> int:
    units = 10_000
    while True:
        start = time.perf_counter()
        _work(units)
        took = time.perf_counter() - start
        if took >= target_s / 4:
            return max(1, int(units * target_s / took))
        units *= 4


class _Load:
    """Busy subprocesses pinned to one core, stopped and started together."""

    def __init__(self, core: int, count: int) -> None:
        def pin() -> None:
            os.sched_setaffinity(0, {core})
        self.processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin)
                          for _ in range(count)]
        self.running = True

    def set(self, running: bool) -> None:
        for process in self.processes:
            process.send_signal(signal.SIGCONT if running else signal.SIGSTOP)
        self.running = running


@pytest.fixture
def one_core():
    """This process and two busy subprocesses on the same core: while they run, our work gets
    about a third of the core."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs sched_setaffinity (Linux) to share one core with the load")
    before = os.sched_getaffinity(0)
    core = min(before)
    os.sched_setaffinity(0, {core})
    load = _Load(core, 2)
    load.set(False)
    try:
        yield load
    finally:
        for process in load.processes:
            process.kill()
            process.wait()
        os.sched_setaffinity(0, before)


def _blocks_s(call, seconds: float) -> list[float]:
    """Blocks of one call each, for `seconds`: an unpaired measurement."""
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def test_paired_rounds_hold_the_known_ratio_while_a_load_starts_and_stops(one_core):
    units = _calibrated_units(0.010)
    fast = pairing.TimedSide(lambda: _work(units), lambda: None, calls=2)           # k units a call
    slow = pairing.TimedSide(lambda: (_work(units), _work(units), _work(units)), lambda: None, calls=2)  # 3k

    # unpaired: the fast side timed while the load sleeps, the slow one while it runs
    fast_s = _blocks_s(fast.call, 0.4)
    one_core.set(True)
    slow_s = _blocks_s(slow.call, 0.6)
    one_core.set(False)
    unpaired = unpaired_ratio_ci(slow_s, fast_s)
    assert unpaired.ratio > 3 * 1.5, f"the load did not slow the work ({unpaired.ratio:.2f}): the test proves nothing"

    stop = threading.Event()

    def toggle():  # the load comes and goes, out of step with the rounds
        while not stop.wait(1.0):
            one_core.set(not one_core.running)

    toggler = threading.Thread(target=toggle, daemon=True)
    toggler.start()
    try:
        slow_rounds, fast_rounds = pairing.run_rounds([slow, fast], 30)
    finally:
        stop.set()
        toggler.join()
    per_call = sorted(slow_rounds)
    assert per_call[-3] > 1.5 * per_call[2], "the load never overlapped the rounds"
    paired = paired_ratio_ci(slow_rounds, fast_rounds)
    assert paired.pairs == 30 and paired.paired
    # the interval holds 3 (a margin of 3% for the calls' own overhead and the shared machine),
    # and says something: the ratio itself within 15% of 3
    assert paired.low * 0.97 <= 3.0 <= paired.high * 1.03, (paired, unpaired)
    assert abs(paired.ratio / 3.0 - 1) < 0.15, (paired, unpaired)


def test_rounds_run_in_a_balanced_order():
    seen = []
    sides = [pairing.TimedSide(lambda name=name: seen.append(name), lambda: None, calls=1) for name in "AB"]
    pairing.run_rounds(sides, 4)
    # each block: one untimed call that wakes its side's pool, then the timed call
    assert "".join(seen) == "AABBBBAAAABBBBAA"


def test_a_block_is_preceded_by_untimed_calls_that_fill_the_warm_time():
    # WARM_S of calls whatever the block's length: a short block is no shorter wake-up
    assert pairing.warm_calls_for(185e-6) == math.ceil(pairing.WARM_S / 185e-6)
    assert pairing.warm_calls_for(0.0047) == math.ceil(pairing.WARM_S / 0.0047) >= 4  # jax, n=1000
    assert pairing.warm_calls_for(0.050) == 1                  # a call longer than WARM_S: one
    assert pairing.warm_calls_for(0.0) == 1
    seen = []
    side = pairing.TimedSide(lambda: seen.append("call"), lambda: seen.append("sync"), calls=2, warm_calls=3)
    pairing.run_rounds([side], 1, settle=None)
    assert seen == ["call", "call", "sync", "call", "sync"] + ["call"] * 2 + ["sync"]


def test_no_warm_call_is_left_queued_when_the_timed_calls_start():
    """A backend that dispatches without waiting (jax) queues its warm calls: a burst of them left its
    runtime busy beside the timed call (jax matmul n=1000, 2-core Zen 5: 1.27-2× slow in 33% of blocks,
    5% with each warm call waited for). So the warm calls run in waited-for blocks of the timed block's
    length, as the side's own measurement ran them."""
    pending, drained = [0], []

    def call():
        pending[0] += 1

    def synchronize():
        drained.append(pending[0])   # how many queued calls each wait found
        pending[0] = 0

    side = pairing.TimedSide(call, synchronize, calls=4, warm_calls=pairing.warm_calls_for(185e-6))
    side.block_s(pairing.PerfCounterClock())
    full, rest = divmod(side.warm_calls, side.calls)
    assert side.warm_calls > 100 and drained == [4] * full + ([rest] if rest else []) + [4]


def _m(backend: str, device: str, seconds: float, threads=None, **params) -> Measurement:
    extra = {"threads": threads} if threads else {}
    return Measurement(spec=Spec.make("matmul", backend, device, n=64, dtype="float32", **params, **extra),
                       phases_s={"compute": tuple(seconds * (1 + 0.001 * i) for i in range(12))},
                       first_call_s=seconds, work=Work(2 * 64**3, 3 * 4 * 64**2), check=Check(True, 0.0, 1e-5),
                       threads=threads)


def test_analysis_uses_paired_rounds_and_marks_the_rest_unpaired():
    cpu_all, cpu_one, device = _m("numpy", "cpu", 0.01, 2), _m("numpy", "cpu", 0.02, 1), _m("torch", "cuda:0", 0.001)
    rounds = PairedSamples(CPU_ALL_CORES, cpu_all.spec, "compute", device.spec, "compute",
                           baseline_s=(0.004,) * 10, candidate_s=(0.001,) * 10)  # 4× paired, 10× unpaired
    rows = {r.spec.backend + str(r.spec.param("threads")): r for r in analyse([cpu_all, cpu_one, device], {}, [rounds])}
    paired = rows["torchNone"].speedup_all
    assert paired.paired and paired.pairs == 10 and abs(paired.ratio - 4.0) < 1e-9
    assert not rows["torchNone"].speedup_one.paired  # no rounds for that one
    assert abs(rows["torchNone"].speedup_one.ratio - 20.0) < 0.1
    shown = derived_figures(rows["torchNone"])["speedups"]["vs_cpu_all_cores"]
    assert shown["paired"] is True and shown["pairs"] == 10 and "paired ratios" in shown["method"]
    # a speed-up that could not be paired says why, and falls back to the two medians
    why = PairedSamples(CPU_ALL_CORES, cpu_all.spec, "compute", device.spec, "compute", note="not paired: too long")
    fallback = analyse([cpu_all, cpu_one, device], {}, [why])[2].speedup_all
    assert not fallback.paired and fallback.method == "unpaired: not paired: too long"
    assert abs(fallback.ratio - 10.0) < 0.05


def _measured(backend, threads, n=64):
    spec = Spec.make("matmul", "numpy", "cpu", n=n, dtype="float64", threads=threads)
    with backend.threads(threads):
        return measure_item(PlanItem(spec, threads), backend, RIGORS["quick"], seed=3, trust=TrustContext(probe_sync=False))


class _List(list):
    def add_speedup(self, run_id, paired):
        self.append(paired)


class WrongWhenPaired(NumpyBackend):
    """Honest while measured, wrong afterwards: the paired blocks must not count its work."""

    name = "numpy"

    def matmul(self, a, b, out=None):
        result = super().matmul(a, b, out)
        result *= 1.5
        return result


def test_a_paired_block_with_a_wrong_output_is_not_counted():
    honest = NumpyBackend()
    one, two = _measured(honest, 1), _measured(honest, 2)
    assert one.valid and two.valid
    store = _List()
    # standard rigor pairs every speed-up (quick pairs only those the answer states: none on the CPU alone)
    pairing.pair_speedups([one, two], {"numpy": honest}, store, "run", RIGORS["standard"], seed=3)
    assert store and all(p.baseline_s and len(p.baseline_s) >= 6 for p in store)
    store = _List()
    pairing.pair_speedups([one, two], {"numpy": WrongWhenPaired()}, store, "run", RIGORS["standard"], seed=3)
    assert store and all(not p.baseline_s and "failed its check" in p.note for p in store)


def _plan(sizes):
    return build_plan(["matmul"], sizes=sizes, dtypes=["float64"], backends={"numpy": NumpyBackend()},
                      cpu_threads=2)


def test_a_stop_during_pairing_keeps_what_was_stored(tmp_path, monkeypatch):
    db = tmp_path / "r.sqlite"
    groups = []
    real = pairing.pair_group

    def stop_after_first(items, *args, **kwargs):
        if groups and items is not groups[0]:  # the second group (not the first's rounds once more)
            checkpoint.request_stop(signal.SIGINT)  # Ctrl-C arrives while its rounds run
        if not any(items is seen for seen in groups):
            groups.append(items)
        return real(items, *args, **kwargs)

    monkeypatch.setattr(pairing, "pair_group", stop_after_first)
    try:
        results = run_plan(_plan([48, 64]), {"numpy": NumpyBackend()}, RunConfig(RIGORS["standard"], db=str(db), telemetry=False))
    finally:
        checkpoint.clear_stop()
    assert results.interrupted and len(groups) == 2
    with Store(db) as store:
        (run,) = store.runs()
        assert run.status == "interrupted" and run.result_count == 4
        stored = store.speedups(run.id)
    # two speed-ups of n=48 (against all cores and one), or one where OpenBLAS ran the "2-thread"
    # n=48 product on one core: then it is no all-cores baseline (results.uses_claimed_threads)
    assert 1 <= len(stored) <= 2 and all(p.baseline.param("n") == 48 and len(p.baseline_s) >= 6 for p in stored)
    assert [p.key for p in results.paired] == [p.key for p in stored]


@pytest.mark.skipif(usable_cpus() < 2, reason="one usable CPU: no one-thread / all-cores speed-up")
def test_terminal_and_json_show_the_pairs(tmp_path, capsys):
    db = str(tmp_path / "r.sqlite")
    # n=256: large enough for OpenBLAS to use both threads (at n=96 it runs one: no all-cores baseline)
    argv = ["run", "matmul", "--sizes", "256", "--dtype", "float64", "--backend", "numpy", "--rigor", "standard",
            "--db", db, "--no-progress"]
    assert main(argv + ["--details"]) == 0
    out = capsys.readouterr().out
    # a narrow column may wrap the cell: read it with the table's borders and spaces taken out
    assert re.search(r"\d+pairs", "".join(out.replace("│", "").split())), out  # in the cells, or the narrow legend
    assert main(argv + ["--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (one,) = [r for r in document["results"] if r["threads"] == 1]
    speedup = one["derived"]["speedups"]["vs_cpu_all_cores"]
    from accelbench.runner.speedups import MIN_PAIRS
    assert speedup["paired"] is True and MIN_PAIRS <= speedup["pairs"] <= pairing.PAIRS["standard"]
    assert speedup["ci_low"] <= speedup["ratio"], speedup


def test_slow_rounds_still_get_the_minimum_pairs_within_a_stretched_budget():
    from accelbench.runner.speedups import MIN_PAIRS
    from accelbench.timing.rigor import get_rigor

    quick = get_rigor("quick")
    assert pairing.rounds_within(0.001, 1.0, quick) == pairing.PAIRS["quick"]      # the rigor's count
    assert pairing.rounds_within(1.0 / 7, 1.0, quick) == 7                            # the budget ends first
    slow = pairing.STRETCH * 1.0 / MIN_PAIRS
    assert pairing.rounds_within(slow * 0.99, 1.0, quick) == MIN_PAIRS                # past the budget, within the stretch
    assert pairing.rounds_within(slow * 1.01, 1.0, quick) == 0                        # beyond it: unpaired


class SlowOnOneThreadWhileFlagged(NumpyBackend):
    """One side (1 thread) slowed 3× while `slowed` says so: a transient, or cross-talk that stays."""

    name = "numpy"
    slowed = False

    def matmul(self, a, b, out=None):
        result = super().matmul(a, b, out)
        if self.slowed and self._cpu_threads == 1:
            super().matmul(a, b, out)
            super().matmul(a, b, out)
        return result


@pytest.mark.parametrize("transient", [True, False])
def test_contaminated_rounds_are_timed_once_more_and_only_the_second_count(monkeypatch, transient):
    honest = NumpyBackend()
    # the check against the sides' medians needs plainly valid sides (a noisy median is no reference:
    # then nothing is contaminated, rightly); a VM with 6-8% steal measured one at IQR 41% once
    for _ in range(3):
        one, two = _measured(honest, 1, n=96), _measured(honest, 2, n=96)
        if one.verdict == two.verdict == "valid":
            break
    else:
        pytest.skip(f"no plainly valid sides in 3 tries ({one.verdict}, {two.verdict}): the machine is too noisy")
    backend = SlowOnOneThreadWhileFlagged()
    calls = []
    real = pairing.pair_group

    def counted(items, *args, **kwargs):
        backend.slowed = not calls or not transient  # the first rounds always; the second only if it stays
        calls.append(items)
        return real(items, *args, **kwargs)

    monkeypatch.setattr(pairing, "pair_group", counted)
    store = _List()
    # standard rigor: a quick answer times its rounds once and says a contaminated figure is one
    pairing.pair_speedups([one, two], {"numpy": backend}, store, "run", RIGORS["standard"], seed=3)
    assert len(calls) == 2 and store
    from accelbench.runner.speedups import REPAIRED, REPAIRED_KIND, Speedups, wanted_speedups
    wanted = wanted_speedups([one, two])
    ratios = Speedups(store).ratios(wanted)
    if transient:
        assert all(p.note_kind == REPAIRED_KIND and p.note.startswith(REPAIRED) and "contaminated" in p.note
                   for p in store)
        assert all(r is not None and not r.contaminated and REPAIRED in r.method for r in ratios)
    else:
        assert all(r is not None and r.contaminated for r in ratios)
