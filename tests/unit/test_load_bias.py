"""An unpaired speed-up keeps only the verdict a side's load could not have made (runner/load_bias.py).

The adversary: two sides of a known true ratio, one of them measured under load that lengthened its
time by a random factor (so its measurement is noisy, as the contention monitor marks it), and the
ratio of the two medians, unpaired. Before the rule, every such ratio decided by its interval alone;
the figures below are what each rule lets through and wrongly refuses.
"""
from __future__ import annotations

import random

import pytest

from accelbench import verdict
from accelbench.report.headline import ratio_words
from accelbench.report.ratio_text import phrase
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.runner.load_bias import MOVED_EITHER_WAY, SLOWED, median_moved
from accelbench.runner.speedups import CPU_ALL_CORES, Speedups, wanted_speedups
from accelbench.timing import stats

LOADED = verdict.Caveat("other processes used 0.9 of the 2 cores during this measurement", verdict.OTHER_PROCESSES)
DRIFTED = verdict.Caveat("the samples drifted 12% from first to last", verdict.DRIFT)
UNPROVEN = verdict.Caveat("synchronisation could not be proven", verdict.SYNC_UNPROVEN)


def _measurement(backend: str, seconds: list[float], reasons: tuple = ()) -> Measurement:
    threads = 2 if backend == "numpy" else None
    return Measurement(spec=Spec.make("matmul", backend, "cpu" if backend == "numpy" else "cuda:0", n=64,
                                      dtype="float32", **({"threads": 2} if threads else {})),
                       phases_s={"compute": tuple(seconds)}, first_call_s=seconds[0],
                       work=Work(2 * 64**3, 3 * 4 * 64**2), check=Check(True, 0.0, 1e-5), threads=threads,
                       verdict="noisy" if reasons else "valid", verdict_reasons=tuple(reasons))


def _unpaired(baseline_s, candidate_s, baseline_reasons=(), candidate_reasons=()):
    baseline = _measurement("numpy", baseline_s, baseline_reasons)
    candidate = _measurement("torch", candidate_s, candidate_reasons)
    (wanted,) = [w for w in wanted_speedups([baseline, candidate]) if w.kind == CPU_ALL_CORES]
    return Speedups([]).ratio(wanted)


def _draw(rng: random.Random, centre_s: float, count: int = 30) -> list[float]:
    return [centre_s * rng.lognormvariate(0.0, 0.01) for _ in range(count)]


def _direction(ratio: float) -> str:
    return "faster" if ratio > 1 else "slower"


def _adversary(cases: int, seed: int):
    """(true direction, verdict before the rule, verdict after it) for each generated case."""
    rng = random.Random(seed)
    found = []
    for _ in range(cases):
        true_ratio = rng.choice((rng.uniform(0.1, 0.7), rng.uniform(1.4, 10.0)))
        slowed_side = rng.choice(("baseline", "candidate"))
        factor = rng.uniform(1.1, 6.0)   # what the load did to the slowed side's time
        baseline_s, candidate_s = 1e-3, 1e-3 / true_ratio
        if slowed_side == "baseline":
            ratio = _unpaired(_draw(rng, baseline_s * factor), _draw(rng, candidate_s), baseline_reasons=(LOADED,))
        else:
            ratio = _unpaired(_draw(rng, baseline_s), _draw(rng, candidate_s * factor), candidate_reasons=(LOADED,))
        before = stats.RatioCI(ratio.ratio, ratio.low, ratio.high).verdict()
        found.append((_direction(true_ratio), before, ratio.verdict()))
    return found


def test_no_verdict_load_could_have_made_stands_and_those_it_could_not_are_kept():
    cases = _adversary(4000, seed=3)
    decided = ("faster", "slower", "same")
    wrong_before = sum(b in decided and b != truth for truth, b, _ in cases)
    wrong_after = sum(a in decided and a != truth for truth, _, a in cases)
    assert wrong_before > 0.15 * len(cases)   # the adversary does hurt a rule-free verdict
    assert wrong_after == 0                    # by construction: load only lengthens a time
    # refusals: a right verdict before that the rule withholds; load made it no more likely than not
    right_before = [(truth, b, a) for truth, b, a in cases if b == truth]
    withheld = sum(a != b for _, b, a in right_before)
    assert 0 < withheld < 0.75 * len(right_before)
    # the verdicts a slowed side could not have made all stand
    kept = [a == b for truth, b, a in right_before if b == truth]
    assert sum(kept) == len(right_before) - withheld


def test_a_slowed_baseline_leaves_slower_standing_and_withholds_faster():
    rng = random.Random(1)
    slower = _unpaired(_draw(rng, 1e-3), _draw(rng, 3e-3), baseline_reasons=(LOADED,))
    faster = _unpaired(_draw(rng, 3e-3), _draw(rng, 1e-3), baseline_reasons=(LOADED,))
    assert slower.verdict() == "slower" and not slower.withheld
    assert faster.verdict() == "inconclusive" and faster.withheld
    assert phrase(faster).startswith("not decided") and "a side slowed by load" in phrase(faster)
    words = ratio_words(faster, "all CPU cores")
    assert words == ("not decided against all CPU cores (3.00× faster, unpaired: the CPU baseline's median moved "
                     "while measured (noisy), which could have made its direction)"), words
    assert faster.to_dict()["load_moved"].startswith("unpaired, and a side's median moved")


def test_a_slowed_candidate_leaves_faster_standing_and_withholds_slower_and_same():
    rng = random.Random(2)
    assert _unpaired(_draw(rng, 3e-3), _draw(rng, 1e-3), candidate_reasons=(LOADED,)).verdict() == "faster"
    assert _unpaired(_draw(rng, 1e-3), _draw(rng, 3e-3), candidate_reasons=(LOADED,)).verdict() == "inconclusive"
    same = _unpaired(_draw(rng, 1e-3), _draw(rng, 1e-3), candidate_reasons=(LOADED,))
    assert stats.RatioCI(same.ratio, same.low, same.high).verdict() == "same" and same.verdict() == "inconclusive"


@pytest.mark.parametrize("ratio_s", [(1e-3, 5e-3), (5e-3, 1e-3)])
def test_a_side_moved_either_way_or_both_sides_slowed_leaves_no_verdict(ratio_s):
    rng = random.Random(4)
    base, cand = ratio_s
    drifted = _unpaired(_draw(rng, base), _draw(rng, cand), candidate_reasons=(DRIFTED,))
    both = _unpaired(_draw(rng, base), _draw(rng, cand), baseline_reasons=(LOADED,), candidate_reasons=(LOADED,))
    assert drifted.verdict() == both.verdict() == "inconclusive"


def test_noisy_for_a_reason_that_leaves_the_timing_as_it_was_keeps_its_verdict():
    rng = random.Random(5)
    ratio = _unpaired(_draw(rng, 3e-3), _draw(rng, 1e-3), baseline_reasons=(UNPROVEN,))
    assert ratio.verdict() == "faster" and not ratio.load_moved


def test_median_moved_reads_the_kinds_of_the_reasons():
    rng = random.Random(6)
    assert median_moved(_measurement("numpy", _draw(rng, 1e-3))) == ""
    assert median_moved(_measurement("numpy", _draw(rng, 1e-3), (LOADED,))) == SLOWED
    assert median_moved(_measurement("numpy", _draw(rng, 1e-3), (LOADED, DRIFTED))) == MOVED_EITHER_WAY
    assert median_moved(_measurement("numpy", _draw(rng, 1e-3), ("a reason stored before kinds",))) == MOVED_EITHER_WAY
    assert median_moved(_measurement("numpy", _draw(rng, 1e-3), (UNPROVEN,))) == ""
