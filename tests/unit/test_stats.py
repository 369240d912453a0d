"""Statistics of timing samples: descriptive values, the median's interval, ratios, Mann-Whitney."""
from __future__ import annotations

import math
import random
import statistics
import subprocess
import sys

import pytest

from accelbench.timing import bootstrap, stats


def _lognormal(rng: random.Random, n: int, median_s: float = 1e-3, sigma: float = 0.1) -> list[float]:
    """Skewed, timing-like samples with a known median."""
    return [median_s * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]


# -- descriptive ---------------------------------------------------------------------------------

def test_descriptive_values_match_the_statistics_module():
    rng = random.Random(1)
    samples = _lognormal(rng, 101)
    assert stats.median(samples) == pytest.approx(statistics.median(samples))
    assert stats.mean(samples) == pytest.approx(statistics.fmean(samples))
    assert stats.stdev(samples) == pytest.approx(statistics.stdev(samples))
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    assert stats.quartiles(samples) == pytest.approx((q1, q3))
    assert stats.iqr(samples) == pytest.approx(q3 - q1)


def test_summarize_fields():
    summary = stats.summarize([4.0, 1.0, 3.0, 2.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    assert summary.n == 10
    assert summary.median_s == 5.5
    assert summary.min_s == 1.0 and summary.max_s == 10.0
    assert summary.mean_s == 5.5
    assert summary.iqr_s == pytest.approx(summary.q3_s - summary.q1_s)
    assert stats.median_ci([4.0, 1.0, 3.0, 2.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]) == (2.0, 9.0)  # ranks 1 and 8
    # in this order the samples climb steadily, so the batch medians disagree and widen the interval
    assert summary.ci_low_s < 2.0 and summary.ci_high_s > 9.0 and summary.ci_method == "batch medians"
    assert summary.rel_ci_halfwidth == pytest.approx((summary.ci_high_s - 5.5) / 5.5)  # symmetric about the median


def test_single_sample_and_empty_input():
    summary = stats.summarize([2.0])
    assert summary.stdev_s == 0.0 and summary.median_s == 2.0
    assert math.isinf(summary.rel_ci_halfwidth)
    with pytest.raises(ValueError):
        stats.summarize([])


def test_bimodal_samples_have_a_large_relative_iqr():
    samples = [1.0e-3] * 20 + [1.4e-3] * 20
    assert stats.summarize(samples).rel_iqr > 0.10


# -- the median's confidence interval ------------------------------------------------------------

def test_median_ci_needs_six_samples_at_95_percent():
    assert stats.median_ci_ranks(5) is None
    assert stats.median_ci([1, 2, 3, 4, 5]) == (-math.inf, math.inf)
    assert stats.median_ci_ranks(6) == (0, 5)
    assert stats.median_ci_coverage(6) == pytest.approx(1 - 2 / 64)


def test_median_ci_ranks_are_the_tightest_reaching_95_percent():
    binom = pytest.importorskip("scipy.stats").binom
    for n in list(range(6, 200)) + [500, 1000, 4999]:
        lo, hi = stats.median_ci_ranks(n)
        assert hi == n - 1 - lo
        assert 1 - 2 * binom.cdf(lo, n, 0.5) >= 0.95       # covers
        assert 1 - 2 * binom.cdf(lo + 1, n, 0.5) < 0.95    # one rank tighter would not
        assert stats.median_ci_coverage(n) == pytest.approx(1 - 2 * binom.cdf(lo, n, 0.5))


@pytest.mark.parametrize("n", [10, 25, 60])
def test_median_ci_covers_the_true_median_about_95_percent_of_the_time(n):
    rng = random.Random(1234 + n)
    simulations, true_median_s = 2000, 1e-3
    covered = 0
    for _ in range(simulations):
        low_s, high_s = stats.median_ci(_lognormal(rng, n, true_median_s, sigma=0.3))
        covered += low_s <= true_median_s <= high_s
    expected = stats.median_ci_coverage(n)
    spread = math.sqrt(expected * (1 - expected) / simulations)
    assert expected >= 0.95
    assert abs(covered / simulations - expected) < 4 * spread + 1e-3  # generous: 4 sigma


# -- ratio of medians ----------------------------------------------------------------------------

def test_ratio_ci_contains_the_true_ratio():
    rng = random.Random(7)
    slow_s, fast_s = _lognormal(rng, 60, 2e-3), _lognormal(rng, 60, 1e-3)
    ci = bootstrap.speedup_ci(slow_s, fast_s, seed=3)
    assert ci.low < 2.0 < ci.high
    assert ci.low < ci.ratio < ci.high
    assert ci.verdict() == "faster"


def test_ratio_ci_coverage_over_seeded_simulations():
    rng = random.Random(99)
    trials, covered = 300, 0
    for trial in range(trials):
        n_a, n_b = rng.choice([15, 40, 101]), rng.choice([16, 41, 100])
        a_s, b_s = _lognormal(rng, n_a, 1.5e-3), _lognormal(rng, n_b, 1e-3)
        ci = bootstrap.ratio_of_medians_ci(a_s, b_s, resamples=1000, seed=trial)
        covered += ci.low <= 1.5 <= ci.high
    assert 0.88 <= covered / trials <= 0.99  # percentile bootstrap of medians: nominal 95%, generous


def test_ratio_ci_is_reproducible_with_a_seed():
    rng = random.Random(5)
    a_s, b_s = _lognormal(rng, 30), _lognormal(rng, 30)
    first = bootstrap.ratio_of_medians_ci(a_s, b_s, resamples=300, seed=11)
    assert bootstrap.ratio_of_medians_ci(a_s, b_s, resamples=300, seed=11) == first
    assert bootstrap.ratio_of_medians_ci(a_s, b_s, resamples=300, seed=12) != first


@pytest.mark.parametrize("n", [1, 2, 7, 10, 31])
def test_direct_bootstrap_median_matches_resampling(n):
    data = sorted(_lognormal(random.Random(n), n))
    draws = 20000
    direct_rng, naive_rng = random.Random(1), random.Random(2)
    direct = [stats._bootstrap_median(data, direct_rng) for _ in range(draws)]
    naive = [stats.median(naive_rng.choices(data, k=n)) for _ in range(draws)]
    for x in data:  # the two empirical CDFs agree everywhere (sampling error ~0.004)
        assert abs(sum(d <= x for d in direct) - sum(d <= x for d in naive)) / draws < 0.02
    assert stats.mean(direct) == pytest.approx(stats.mean(naive), rel=0.01)


def test_ratio_ci_rejects_a_zero_denominator():
    with pytest.raises(ValueError):
        bootstrap.ratio_of_medians_ci([1.0, 2.0], [0.0, 0.0])


@pytest.mark.parametrize("ratio, low, high, expected", [
    (1.20, 1.10, 1.30, "faster"),
    (0.80, 0.70, 0.90, "slower"),
    (1.00, 0.995, 1.01, "same"),        # tight around 1
    (1.007, 1.003, 1.012, "same"),      # excludes 1 but too small a difference to claim
    (0.97, 0.944, 0.978, "same"),       # torch against numpy at n=1000: 3% is within run-to-run spread
    (1.00, 0.95, 1.08, "same"),         # any difference under 10%, the estimate under 5%
    (0.99, 0.87, 1.09, "inconclusive"),  # straddles 1, and a 13% difference is not ruled out
    (1.07, 1.05, 1.09, "faster"),       # a 7% difference, measured tightly: claimed
    (0.945, 0.879, 0.971, "slower"),    # the estimate beyond 5%
    (1.04, 1.01, 1.12, "inconclusive"),  # a 4% estimate, too small to claim; 12% not ruled out
    (0.97, 0.885, 0.998, "inconclusive"),  # jax against numpy at n=1000: was "1.03× slower [1.00–1.13]"
])
def test_speedup_verdict(ratio, low, high, expected):
    assert stats.speedup_verdict(low, high, ratio=ratio) == expected


# -- Mann-Whitney U ------------------------------------------------------------------------------

def test_mann_whitney_matches_scipy_with_ties():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(3)
    a = [round(rng.gauss(10, 2)) for _ in range(40)]  # rounded: many ties
    b = [round(rng.gauss(11, 2)) for _ in range(35)]
    ours = stats.mann_whitney(a, b)
    theirs = scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    assert ours.u == pytest.approx(theirs.statistic)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9)


def test_mann_whitney_all_tied_is_same():
    result = stats.mann_whitney([1.0] * 10, [1.0] * 10)
    assert result.p_value == 1.0 and result.verdict() == "same"


def test_mann_whitney_detects_a_five_percent_shift_on_50_samples():
    rng = random.Random(42)
    trials, faster = 100, 0
    for _ in range(trials):
        baseline_s = _lognormal(rng, 50, 1.00e-3, sigma=0.03)
        candidate_s = _lognormal(rng, 50, 0.95e-3, sigma=0.03)
        faster += stats.mann_whitney(baseline_s, candidate_s).verdict() == "faster"
    assert faster >= 95
    slower = stats.mann_whitney(_lognormal(rng, 50, 1e-3, 0.03), _lognormal(rng, 50, 1.05e-3, 0.03))
    assert slower.verdict() == "slower"


def test_mann_whitney_says_same_for_identical_distributions_in_most_trials():
    rng = random.Random(43)
    trials = 200
    same = sum(stats.mann_whitney(_lognormal(rng, 50, sigma=0.03), _lognormal(rng, 50, sigma=0.03)).verdict()
               == "same" for _ in range(trials))
    assert same >= 0.88 * trials  # 95% expected at alpha = 0.05


# -- layering ------------------------------------------------------------------------------------

def test_timing_modules_import_no_numpy():
    code = ("import sys; import accelbench.timing.harness, accelbench.timing.stats, "
            "accelbench.timing.clock, accelbench.timing.rigor; print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_wide_batch_interval_never_reaches_below_the_fastest_sample():
    # bursts in whole batches: the batch medians disagree so much that median - halfwidth < 0
    samples = [1e-3] * 40 + [1.0] * 15 + [1e-3] * 5
    summary = stats.summarize(samples)
    assert summary.ci_method == "batch medians" and summary.median_s - stats.batch_ci_halfwidth(samples) < 0
    assert summary.ci_low_s == min(samples) and summary.ci_high_s > summary.median_s
