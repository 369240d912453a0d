"""The vectorised ratio-of-medians bootstrap against a plain reference, its coverage, its layering."""
from __future__ import annotations

import math
import random
import statistics
import subprocess
import sys

import pytest

from accelbench.timing import bootstrap, stats


def _lognormal(rng: random.Random, n: int, median_s: float = 1e-3, sigma: float = 0.1) -> list[float]:
    return [median_s * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]


def _reference_ratios(top: list[float], bottom: list[float], resamples: int, seed: int) -> list[float]:
    """The textbook percentile bootstrap: resample each set with replacement, take medians, divide."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        top_median = statistics.median(rng.choices(top, k=len(top)))
        bottom_median = statistics.median(rng.choices(bottom, k=len(bottom)))
        ratios.append(top_median / bottom_median if bottom_median > 0 else math.inf)
    return sorted(ratios)


CASES = [  # (n_top, n_bottom, true ratio, sigma): odd and even counts, tight and wide spreads
    (21, 21, 2.0, 0.05), (40, 37, 1.0, 0.1), (60, 20, 0.5, 0.3), (7, 10, 1.5, 0.2), (33, 58, 1.1, 0.02),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_interval_ends_agree_with_the_textbook_bootstrap_within_monte_carlo_error(case):
    n_top, n_bottom, ratio, sigma = CASES[case]
    rng = random.Random(100 + case)
    top, bottom = _lognormal(rng, n_top, ratio * 1e-3, sigma), _lognormal(rng, n_bottom, 1e-3, sigma)
    ci = bootstrap.ratio_of_medians_ci(top, bottom, seed=case)  # 4000 resamples, the default
    reference = _reference_ratios(top, bottom, resamples=20000, seed=case)
    assert ci.ratio == pytest.approx(statistics.median(top) / statistics.median(bottom), rel=1e-12)
    # each end must sit where the reference puts the 2.5% (97.5%) point, give or take 1.3 points of
    # probability: about 4 standard errors of a 4000-resample percentile, plus the reference's own
    for end, level in ((ci.low, 0.025), (ci.high, 0.975)):
        within = (stats.quantile_presorted(reference, level - 0.013),
                  stats.quantile_presorted(reference, level + 0.013))
        assert within[0] <= end <= within[1], (end, level, within)


@pytest.mark.parametrize("n", [1, 2, 7, 10, 31, 60])
def test_vectorised_resampled_medians_match_resampling(n):
    data = sorted(_lognormal(random.Random(n), n))
    draws = 20000
    direct = bootstrap._bootstrap_medians(__import__("numpy").array(data),
                                      bootstrap._bootstrap_ranks(n, draws, 5, 0)).tolist()
    naive_rng = random.Random(2)
    naive = [statistics.median(naive_rng.choices(data, k=n)) for _ in range(draws)]
    for x in data:  # the two empirical CDFs agree everywhere (sampling error ~0.004)
        assert abs(sum(d <= x for d in direct) - sum(d <= x for d in naive)) / draws < 0.02
    assert statistics.fmean(direct) == pytest.approx(statistics.fmean(naive), rel=0.01)


def test_interval_covers_the_true_ratio_at_about_the_nominal_rate_on_lognormal_data():
    rng = random.Random(2024)
    trials, covered = 1000, 0
    for trial in range(trials):
        n_a, n_b = rng.randint(20, 60), rng.randint(20, 60)
        sigma = rng.choice([0.02, 0.1, 0.3])
        true_ratio = rng.choice([0.5, 1.0, 3.0])
        a_s, b_s = _lognormal(rng, n_a, true_ratio * 1e-3, sigma), _lognormal(rng, n_b, 1e-3, sigma)
        ci = bootstrap.ratio_of_medians_ci(a_s, b_s, seed=trial)
        covered += ci.low <= true_ratio <= ci.high
    # nominal 95%; the percentile bootstrap of medians is a little conservative here (97% seen);
    # one standard error of the rate over 1000 trials is 0.7 points
    assert 0.93 <= covered / trials <= 0.99, covered / trials


def test_a_zero_resampled_denominator_gives_an_infinite_end_as_the_reference_does():
    top, bottom = [1.0] * 10, [0.0] * 4 + [1.0] * 7  # a resample with >= 6 zeros has median 0
    ci = bootstrap.ratio_of_medians_ci(top, bottom)
    reference = _reference_ratios(top, bottom, resamples=4000, seed=0)
    assert math.isinf(reference[-1]) and math.isinf(ci.high)
    assert ci.low == 1.0 and ci.ratio == 1.0  # (the old code gave high = nan here: inf - inf)


def test_lists_and_tuples_give_the_same_interval_and_input_order_does_not_matter():
    rng = random.Random(8)
    a_s, b_s = _lognormal(rng, 25), _lognormal(rng, 30)
    from_lists = bootstrap.ratio_of_medians_ci(a_s, b_s, seed=4)
    assert bootstrap.ratio_of_medians_ci(tuple(a_s), tuple(b_s), seed=4) == from_lists
    assert bootstrap.ratio_of_medians_ci(a_s[::-1], sorted(b_s), seed=4) == from_lists


def test_the_same_seed_gives_the_same_interval_in_a_fresh_process():
    rng = random.Random(6)
    a_s, b_s = _lognormal(rng, 24), _lognormal(rng, 41)
    code = (f"from accelbench.timing import bootstrap; "
            f"print(repr(bootstrap.ratio_of_medians_ci({a_s!r}, {b_s!r}, seed=9)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == repr(bootstrap.ratio_of_medians_ci(a_s, b_s, seed=9))


def test_numpy_loads_only_when_a_bootstrap_is_asked_for():
    code = ("import sys; from accelbench.timing import bootstrap, stats; s = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]; "
            "stats.summarize(s); stats.median(s); stats.mann_whitney(s, s); "
            "stats.rel_ci_halfwidth_presorted(s); print('numpy' in sys.modules); "
            "bootstrap.ratio_of_medians_ci(s, s); print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("pairs_count", [3, 4 * bootstrap.RATIO_BLOCK * 2])
def test_what_runs_meanwhile_runs_once_and_leaves_the_intervals_as_they_were(pairs_count):
    """Few pairs are bootstrapped here, many by forked workers (where this machine may fork): either
    way the caller's work runs once, and the intervals are those of a call without it."""
    generator = random.Random(5)
    baseline = tuple(generator.lognormvariate(0, 0.1) for _ in range(25))
    pairs = [(tuple(generator.lognormvariate(1, 0.2) for _ in range(20)), baseline) for _ in range(pairs_count)]
    calls = []
    with_work = bootstrap.ratios_of_medians_ci(pairs, meanwhile=lambda: calls.append(1))
    assert calls == [1]
    assert with_work == bootstrap.ratios_of_medians_ci(pairs)
