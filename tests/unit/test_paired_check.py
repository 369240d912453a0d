"""Paired speed-ups checked by an independent derivation (runner/paired_check.py), cross-talk between
the sides of a pair removed (timing/quiesce.py) or named, and one way to say a ratio (report/ratio_text.py).

The cases are generated: honest rounds drawn from the same distributions as the sides' own
measurements, rounds with one side shifted, rounds where the side that runs second is slowed, and
load that comes and goes over both sides; each check's two error rates are asserted.
"""
from __future__ import annotations

import dataclasses
import math
import random
import threading
import time

import pytest

from accelbench.report.headline import ratio_words
from accelbench.report.ratio_text import oriented, phrase
from accelbench.results import Check, Measurement, PairedSamples, Spec, Work
from accelbench.timing import stats
from accelbench.runner import pairing, paired_check
from accelbench.runner.speedups import CONTAMINATED, CPU_ALL_CORES, CROSS_TALK, CROSS_TALK_KIND, Speedups, wanted_speedups
from accelbench.timing import quiesce
from accelbench.timing.stats import RatioCI
from accelbench import verdict


def _measurement(backend: str, seconds: list[float], threads=None, verdict="valid") -> Measurement:
    extra = {"threads": threads} if threads else {}
    return Measurement(spec=Spec.make("matmul", backend, "cpu" if backend == "numpy" else "cuda:0", n=64,
                                      dtype="float32", **extra),
                       phases_s={"compute": tuple(seconds)}, first_call_s=seconds[0],
                       work=Work(2 * 64**3, 3 * 4 * 64**2), check=Check(True, 0.0, 1e-5), threads=threads,
                       verdict=verdict)


def _draw(rng: random.Random, centre_s: float, spread: float, count: int) -> list[float]:
    return [centre_s * rng.lognormvariate(0.0, spread) for _ in range(count)]


def _speedup(baseline_own, candidate_own, baseline_rounds, candidate_rounds, note="", verdicts=("valid", "valid"),
             note_kind=""):
    baseline = _measurement("numpy", baseline_own, threads=2, verdict=verdicts[0])
    candidate = _measurement("torch", candidate_own, verdict=verdicts[1])
    (wanted,) = [w for w in wanted_speedups([baseline, candidate]) if w.kind == CPU_ALL_CORES]
    stored = PairedSamples(CPU_ALL_CORES, baseline.spec, "compute", candidate.spec, "compute",
                           tuple(baseline_rounds), tuple(candidate_rounds), note=note, note_kind=note_kind)
    return Speedups([stored]).ratio(wanted)


def _case(rng: random.Random, rounds: int = 8, candidate_shift: float = 1.0, second_slowed: float = 1.0,
          load: bool = False):
    """One generated speed-up: sides of a random true ratio and spread, and their paired rounds."""
    baseline_s, ratio = rng.uniform(1e-4, 1e-2), rng.uniform(0.1, 10.0)
    spread = rng.uniform(0.003, 0.03)
    own = _draw(rng, baseline_s, spread, 30), _draw(rng, baseline_s / ratio, spread, 30)
    base_rounds = _draw(rng, baseline_s, spread, rounds)
    cand_rounds = [t * candidate_shift for t in _draw(rng, baseline_s / ratio, spread, rounds)]
    for index in range(rounds):
        if load:  # both sides of a round slowed alike, by a different factor each round
            factor = rng.choice((1.0, 1.0, 2.0, 3.0))
            base_rounds[index] *= factor
            cand_rounds[index] *= factor
        if second_slowed != 1.0:  # forward rounds: the candidate runs second; backward: the baseline
            if index % 2 == 0:
                cand_rounds[index] *= second_slowed
            else:
                base_rounds[index] *= second_slowed
    return own, base_rounds, cand_rounds


def _contaminated_share(cases: int, seed: int, **kind) -> float:
    rng = random.Random(seed)
    found = 0
    for _ in range(cases):
        own, base_rounds, cand_rounds = _case(rng, **kind)
        found += _speedup(own[0], own[1], base_rounds, cand_rounds).verdict() == CONTAMINATED
    return found / cases


def test_honest_rounds_are_almost_never_called_contaminated():
    assert _contaminated_share(300, seed=1) <= 0.05


def test_honest_rounds_under_load_that_comes_and_goes_are_not_contaminated():
    # the sides' medians (measured apart) are unmoved here; load in the rounds hits both sides alike
    assert _contaminated_share(200, seed=2, load=True) <= 0.05


@pytest.mark.parametrize("shift", [1.3, 2.0])
def test_a_side_slowed_in_the_rounds_alone_is_contaminated(shift):
    assert _contaminated_share(200, seed=3, candidate_shift=shift) >= 0.95


@pytest.mark.parametrize("shift", [0.7, 0.5])
def test_a_side_faster_in_the_rounds_than_in_its_own_measurement_leaves_the_paired_figure_standing(shift):
    """Nothing that crosses between the sides makes a block faster: its own measurement ran slow."""
    assert _contaminated_share(200, seed=3, candidate_shift=shift) <= 0.05
    rng = random.Random(4)
    own, base_rounds, cand_rounds = _case(rng, candidate_shift=shift)
    ratio = _speedup(own[0], own[1], base_rounds, cand_rounds)
    assert "own measurement took" in ratio.note and "own measurement took" in ratio.method
    assert (ratio.low, ratio.high) == (pairing_ratio(base_rounds, cand_rounds).low,
                                       pairing_ratio(base_rounds, cand_rounds).high)  # not widened to the medians


@pytest.mark.parametrize("slowed", [1.3, 2.0])
def test_the_side_that_runs_second_slowed_is_contaminated_even_when_no_median_can_be_trusted(slowed):
    # the issue's case: the previous side's pool still spinning slows whichever block follows it
    rng = random.Random(4)
    hits = 0
    for _ in range(100):
        own, base_rounds, cand_rounds = _case(rng, rounds=8, second_slowed=slowed)
        ratio = _speedup(own[0], own[1], base_rounds, cand_rounds, verdicts=("noisy", "noisy"))
        hits += ratio.verdict() == CONTAMINATED and "ran first" in ratio.contaminated
    assert hits >= 95


@pytest.mark.parametrize("rounds", [8, 16])
def test_a_small_order_effect_widens_the_interval_and_still_decides(rounds):
    """Directions parted by 5.5-9.5% (seen: 10 of 579 stored paired figures, e.g. jax against numpy's
    one thread 2.12x one way and 2.23x the other), each side slowed by its share when it runs second.
    The truth lies between the directions' medians: the interval spans them and the figure decides.
    Before (every order effect over 5% contaminated), of 1,000 such cases 742 (8 rounds) and 900 (16)
    were mute and 252 / 98 decided; now 102 / 93 are, with 878 / 899 decided, none wrong, and the
    interval holding the true ratio in 888 of 898 / 870 of 907 shown."""
    rng, mute, right, wrong, held, shown = random.Random(21), 0, 0, 0, 0, 0
    for _ in range(300):
        base_s, ratio, spread = rng.uniform(1e-4, 1e-2), rng.uniform(0.1, 10.0), rng.uniform(0.003, 0.03)
        gap = rng.uniform(1.055, 1.095)
        candidate_second = rng.uniform(1.0, gap)
        own = _draw(rng, base_s, spread, 30), _draw(rng, base_s / ratio, spread, 30)
        base_rounds, cand_rounds = _draw(rng, base_s, spread, rounds), _draw(rng, base_s / ratio, spread, rounds)
        for index in range(rounds):  # forward rounds: the candidate second; backward: the baseline
            if index % 2 == 0:
                cand_rounds[index] *= candidate_second
            else:
                base_rounds[index] *= gap / candidate_second
        found = _speedup(own[0], own[1], base_rounds, cand_rounds)
        word = found.verdict()
        if word == CONTAMINATED:
            mute += 1
            continue
        shown += 1
        held += found.low <= ratio <= found.high
        right += word == ("faster" if ratio > 1 else "slower")
        wrong += word == ("slower" if ratio > 1 else "faster")
    assert mute <= 0.15 * 300 and right >= 0.8 * 300 and wrong == 0
    assert held >= 0.93 * shown


def test_the_issues_figures_are_contaminated_with_the_sides_named():
    # torch against numpy on a quiet Zen 4: medians 9.7 and 10.35 ms, paired 0.47× [0.30–0.84]
    rng = random.Random(5)
    numpy_own, torch_own = _draw(rng, 9.7e-3, 0.009, 20), _draw(rng, 10.35e-3, 0.012, 20)
    torch_rounds = [10.3e-3 * f for f in (2.1, 1.0, 2.3, 1.05, 3.2, 1.0, 2.0, 1.1)]
    ratio = _speedup(numpy_own, torch_own, _draw(rng, 9.7e-3, 0.01, 8), torch_rounds)
    assert ratio.verdict() == CONTAMINATED
    assert ratio.to_dict()["contaminated"] == ratio.contaminated
    assert "not decided" in ratio_words(ratio) and "slower" not in ratio_words(ratio).split("(")[0]


def test_cross_talk_seen_while_pairing_makes_the_speed_up_contaminated():
    own = [0.01] * 12
    ratio = _speedup(own, own, [0.01] * 8, [0.01] * 8, note=f"{CROSS_TALK} torch@cuda:0: 3 of its blocks ...",
                     note_kind=CROSS_TALK_KIND)
    assert ratio.verdict() == CONTAMINATED and ratio.contaminated.startswith(CROSS_TALK)
    clean = _speedup(own, own, [0.01] * 8, [0.01] * 8)
    assert clean.verdict() != CONTAMINATED


def test_disagreement_is_measured_in_the_combined_uncertainty():
    tight = RatioCI(1.0, 0.99, 1.01)
    assert paired_check.disagreement(RatioCI(1.02, 1.01, 1.03), tight) < 1     # within the slack
    assert paired_check.disagreement(RatioCI(0.5, 0.45, 0.55), tight) > 1
    wide = RatioCI(1.0, 0.5, 2.0)                                                # a wide reference allows more
    assert paired_check.disagreement(RatioCI(0.8, 0.7, 0.9), wide) < 1


# -- one convention for ratios ------------------------------------------------------------------

def test_a_direction_word_always_comes_with_a_ratio_of_at_least_one():
    rng = random.Random(6)
    for _ in range(2000):
        low = rng.lognormvariate(0, 1.5)
        high = low * math.exp(abs(rng.gauss(0, 0.5)))
        ratio = RatioCI(rng.uniform(low, high), low, high)
        o = oriented(ratio)
        assert o.low <= o.value <= o.high
        if o.word in ("faster", "slower"):
            assert o.value >= 1.0 and o.low >= 1.0 / (1 + 1e-12), (ratio, o)
            assert f"× {o.word}" in phrase(ratio)
        if o.word in ("faster", "slower"):
            assert not phrase(ratio).startswith("0."), phrase(ratio)


def test_slower_is_the_inverse_of_the_speed_up():
    assert phrase(RatioCI(1 / 3.17, 1 / 3.3, 1 / 3.0)) == "3.17× slower [3.00–3.30]"
    assert phrase(RatioCI(3.1, 2.9, 3.3)) == "3.10× faster [2.90–3.30]"
    # undecided, it still reads one way: no ratio below 1 (issue 42)
    assert phrase(RatioCI(0.98, 0.90, 1.07)) == "no clear difference (between 1.07× faster and 1.11× slower)"


# -- cross-talk removed: the other threads idle before a block ----------------------------------

def _spin_until(stop: threading.Event) -> None:
    while not stop.is_set():
        pass


def test_settle_waits_for_a_spinning_thread_and_says_when_one_will_not_stop():
    if quiesce.running_other_threads() is None:
        pytest.skip("needs /proc/self/task")
    stop = threading.Event()
    spinner = threading.Thread(target=_spin_until, args=(stop,), daemon=True)
    spinner.start()
    try:
        threading.Timer(0.08, stop.set).start()
        settled = quiesce.settle(max_wait_s=2.0)
        assert settled.settled and settled.waited_s >= 0.07
    finally:
        stop.set()
        spinner.join()
    endless = threading.Event()
    spinner = threading.Thread(target=_spin_until, args=(endless,), daemon=True)
    spinner.start()
    try:
        refused = quiesce.settle(max_wait_s=0.05)
        assert not refused.settled and refused.busy_threads >= 1 and "still ran" in refused.text()
    finally:
        endless.set()
        spinner.join()


def test_a_side_that_leaves_a_thread_spinning_is_named_as_cross_talk():
    if quiesce.running_other_threads() is None:
        pytest.skip("needs /proc/self/task")
    stop = threading.Event()
    spinners: list[threading.Thread] = []

    def leaves_a_spinner() -> None:
        if not spinners:
            spinners.append(threading.Thread(target=_spin_until, args=(stop,), daemon=True))
            spinners[0].start()

    sides = [pairing.TimedSide(leaves_a_spinner, lambda: None, calls=1, pool="a"),
             pairing.TimedSide(lambda: None, lambda: None, calls=1, pool="b")]
    cross_talk = pairing.CrossTalk([[], []])
    try:
        pairing.run_rounds(sides, 6, settle=lambda: quiesce.settle(max_wait_s=0.01), cross_talk=cross_talk)
    finally:
        stop.set()
        spinners[0].join()
    # b settles before each block that follows a's (3 of 6: the rounds alternate direction)
    assert cross_talk.note(1).startswith("3 of its blocks started while") and "still ran" in cross_talk.note(1)


def test_settling_is_skipped_between_blocks_of_the_same_pool():
    calls: list[str] = []

    def settle() -> quiesce.Settled:
        calls.append("settle")
        return quiesce.Settled(0.0, 0, True)

    sides = [pairing.TimedSide(lambda: calls.append("a"), lambda: None, calls=1, pool="p"),
             pairing.TimedSide(lambda: calls.append("b"), lambda: None, calls=1, pool="p")]
    pairing.run_rounds(sides, 2, settle=settle)
    # each block: one untimed call that wakes its pool, then its timed call
    assert calls == ["settle", "a", "a", "b", "b", "b", "b", "a", "a"]
    sides[1].pool = "q"
    calls.clear()
    pairing.run_rounds(sides, 2, settle=settle)
    assert calls == ["settle", "a", "a", "settle", "b", "b", "b", "b", "settle", "a", "a"]


def test_settle_costs_little_when_nothing_spins():
    start = time.perf_counter()
    settled = quiesce.settle()
    assert settled.settled
    assert time.perf_counter() - start < 0.25  # generous on a loaded CI machine; ~5 ms when idle


def test_a_speed_up_that_holds_its_check_states_an_interval_holding_the_ratio_of_medians():
    # generated cases, the rounds shifted a little (within the slack) or not at all: every interval
    # shown reaches the independent derivation, and the paired interval alone did not always
    rng, reached_by_rounds_alone, shown = random.Random(11), 0, 0
    for _ in range(300):
        own, base_rounds, cand_rounds = _case(rng, candidate_shift=rng.choice((1.0, 1.03, 0.97)))
        found = _speedup(own[0], own[1], base_rounds, cand_rounds)
        if found.contaminated:
            continue
        shown += 1
        medians = paired_check.stats.median(own[0]) / paired_check.stats.median(own[1])
        assert found.low <= medians <= found.high
        rounds = pairing_ratio(base_rounds, cand_rounds)
        assert found.ratio == pytest.approx(rounds.ratio)  # the figure itself stays the paired one
        reached_by_rounds_alone += rounds.low <= medians <= rounds.high
    assert shown >= 200 and reached_by_rounds_alone < shown


def test_a_side_whose_own_measurement_is_noisy_leaves_the_paired_interval_as_it_is():
    rng = random.Random(5)
    own, base_rounds, cand_rounds = _case(rng, candidate_shift=1.03)
    noisy = _speedup(own[0], own[1], base_rounds, cand_rounds, verdicts=("noisy", "valid"))
    rounds = pairing_ratio(base_rounds, cand_rounds)
    assert (noisy.low, noisy.high) == (rounds.low, rounds.high)


def pairing_ratio(base_rounds, cand_rounds):
    from accelbench.runner.speedups import paired_ratio_ci

    return paired_ratio_ci(base_rounds, cand_rounds)


@pytest.mark.parametrize("kind, reference", [(verdict.SYNC_UNPROVEN, True), (verdict.PHASES, True),
                                             (verdict.OTHER_PROCESSES, False), (verdict.DRIFT, False), ("", False)])
def test_a_side_noisy_for_a_reason_that_leaves_its_timing_as_it_was_still_checks_the_rounds(kind, reference):
    """torch n=256 on a quiet Zen 4: noisy only because its sync was not proven, its median right,
    and its paired figure 1.39× against medians of 0.95× went unchecked."""
    rng = random.Random(5)
    numpy_own, torch_own = _draw(rng, 185e-6, 0.01, 20), _draw(rng, 176e-6, 0.01, 20)
    numpy_rounds, torch_rounds = _draw(rng, 260e-6, 0.01, 8), _draw(rng, 176e-6, 0.01, 8)   # numpy slowed
    baseline = _measurement("numpy", numpy_own, threads=2)
    candidate = dataclasses.replace(_measurement("torch", torch_own), verdict="noisy",
                                    verdict_reasons=(verdict.Caveat("a reason", kind),))
    (wanted,) = [w for w in wanted_speedups([baseline, candidate]) if w.kind == CPU_ALL_CORES]
    stored = PairedSamples(CPU_ALL_CORES, baseline.spec, "compute", candidate.spec, "compute",
                           tuple(numpy_rounds), tuple(torch_rounds))
    ratio = Speedups([stored]).ratio(wanted)
    assert (ratio.verdict() == CONTAMINATED) == reference, (kind, ratio)


@pytest.mark.parametrize("slowed, contaminated", [(1.5, False), (2.5, True), (100.0, True)])
def test_a_noisy_side_still_may_not_part_the_rounds_from_the_medians_grossly(slowed, contaminated):
    """Beside a busy process numpy on 2 threads ran 99-390× its own time in the rounds: PoCL was
    called 59× faster than all cores where the medians said 0.29×."""
    rng = random.Random(3)
    numpy_own, device_own = _draw(rng, 1e-3, 0.05, 20), _draw(rng, 3.4e-3, 0.05, 20)
    numpy_rounds, device_rounds = _draw(rng, 1e-3 * slowed, 0.05, 8), _draw(rng, 3.4e-3, 0.05, 8)
    ratio = _speedup(numpy_own, device_own, numpy_rounds, device_rounds, verdicts=("noisy", "valid"))
    assert (ratio.verdict() == CONTAMINATED) == contaminated, ratio
    if contaminated:
        assert "disagree with the sides' own measurements" in ratio.contaminated


def test_rounds_that_scatter_far_more_than_the_sides_own_are_named_and_others_are_not():
    tight = stats.RatioCI(0.985, 0.97, 1.0)              # the ratio of medians, ±1.5%
    assert paired_check.scattered(stats.RatioCI(0.80, 0.664, 0.82), tight).startswith("the rounds scattered")
    assert paired_check.scattered(stats.RatioCI(0.98, 0.955, 1.005), tight) == ""   # about twice the own
    assert paired_check.scattered(stats.RatioCI(1.0, 0.96, 1.04), stats.RatioCI(1.0, 0.999, 1.001)) == ""  # ±5% floor
    wide_own = stats.RatioCI(1.0, 0.85, 1.15)            # noisy sides: wide rounds are expected
    assert paired_check.scattered(stats.RatioCI(0.9, 0.75, 1.05), wide_own) == ""
