"""Comparing two runs on synthetic samples: verdicts, the summary line, metadata, the CI exit code."""
import math
import random

import pytest

from accelbench.cli.main import main
from accelbench.compare import Comparison, compare_runs, results_table_html
from accelbench.compare.compare import compare_measurements, geometric_mean, match_specs
from accelbench.compare.sources import RunData
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.runner.analysis import analyse
from accelbench.store.db import Store

MACHINE = {"hostname": "node1", "os": "Linux 6.1", "python": "3.11.7",
           "software": {"numpy": "2.4.6", "blas": "openblas 0.3.31 (SkylakeX, pthreads)"},
           "environment": {"OMP_NUM_THREADS": "2"},
           "inventory": {"devices": [{"id": "cpu", "name": "AMD EPYC", "properties": {"usable_cpus": 2}}]}}


def samples(median_s, n=40, noise=0.01, seed=0):
    rng = random.Random(seed)
    return tuple(median_s * math.exp(noise * rng.gauss(0, 1)) for _ in range(n))


def measurement(spec, times, passed=True):
    return Measurement(spec=spec, phases_s={"compute": tuple(times)}, first_call_s=times[0],
                       work=Work(flops=2.0 * 1000**3, bytes_moved=1.2e7),
                       check=Check(passed, 1e-7 if passed else 0.5, 1e-5))


SPECS = [Spec.make("matmul", "numpy", "cpu", n=n, dtype=d, threads=2) for n in (500, 1000, 2000)
         for d in ("float32", "float64")] + [Spec.make("stream", "numpy", "cpu", kernel=k, n=2**23, dtype="float64")
                                             for k in ("copy", "triad")]


def run(run_id, times_by_key, machine=MACHINE, failed=(), selection=None):
    ms = tuple(measurement(spec, times_by_key[spec.key], spec.key not in failed) for spec in SPECS
               if spec.key in times_by_key)
    return RunData(run_id, "test", ms, machine=machine, selection=selection or {"rigor": "quick"},
                   accelbench_version="0.1.0")


def base_times(seed, slower=None, factor=1.3):
    """Each spec's samples around its own median; `slower` (a spec) takes `factor` times as long."""
    return {spec.key: samples(1e-3 * (i + 1) * (factor if spec == slower else 1.0), seed=seed * 100 + i)
            for i, spec in enumerate(SPECS)}


def test_two_runs_of_the_same_samples_are_all_same():
    times = base_times(seed=1)
    identical = compare_runs(run("a", times), run("b", times))
    assert identical.counts() == {"same": len(SPECS), "slower": 0, "faster": 0, "inconclusive": 0, "excluded": 0}
    redrawn = compare_runs(run("a", base_times(seed=1)), run("b", base_times(seed=2)))
    assert redrawn.counts()["same"] == len(SPECS)
    assert redrawn.summary_line().startswith(f"{len(SPECS)} same, 0 slower, 0 faster, 0 inconclusive")
    assert redrawn.same_machine and not redrawn.differences


def test_one_spec_30_percent_slower_is_slower_with_an_interval_excluding_1():
    slow = SPECS[4]  # matmul n=2000 float32
    c = compare_runs(run("a", base_times(1)), run("b", base_times(2, slower=slow)))
    (row,) = c.by_verdict("slower")
    assert row.spec == slow and row.speedup.high < 1 < 1 / row.speedup.high
    assert 1.25 < 1 / row.speedup.ratio < 1.35 and row.p_value < 1e-6
    assert c.counts()["same"] == len(SPECS) - 1
    assert "1 slower (matmul numpy@cpu (2 threads) dtype=float32 n=2000: 1.3" in c.summary_line()
    assert [r.spec for r in c.slower_than(0.10)] == [slow] and c.slower_than(0.50) == []
    assert c.geomean.low < c.geomean.ratio < c.geomean.high < 1  # one of 8 specs 30% slower drags the mean


def _store_runs(db, *runs):
    with Store(db) as store:
        for r in runs:
            store.restore_run(r.run_id, started_at="2026-01-01T00:00:00+00:00", finished_at=None, status="complete",
                              accelbench_version="0.1.0", selection=r.selection, machine=r.machine, tags={},
                              results=r.measurements, skips=())


def test_fail_if_slower_sets_the_exit_code(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    _store_runs(db, run("run-a", base_times(1)), run("run-b", base_times(2, slower=SPECS[4])))
    assert main(["compare", "run-a", "run-b", "--db", str(db), "--fail-if-slower", "10"]) == 1
    captured = capsys.readouterr()
    assert "significantly slower by more than 10%" in captured.err and "n=2000" in captured.err
    assert "Summary: 7 same, 1 slower" in captured.out
    assert main(["compare", "run-a", "run-b", "--db", str(db), "--fail-if-slower", "50"]) == 0
    assert main(["compare", "run-a", "run-b", "--db", str(db), "--fail-if-slower", "-1"]) == 2


def test_noisy_small_samples_are_inconclusive():
    spec = SPECS[0]
    a = measurement(spec, samples(1e-3, n=8, noise=0.3, seed=1))
    b = measurement(spec, samples(1.1e-3, n=8, noise=0.3, seed=2))
    row = compare_measurements(a, b)
    assert row.verdict == "inconclusive" and row.speedup.low < 1 < row.speedup.high
    few = compare_measurements(measurement(spec, (1e-3,) * 3), measurement(spec, (2e-3,) * 3))
    assert few.verdict == "inconclusive" and "too few samples" in few.note


def test_mismatched_metadata_is_reported():
    other = {**MACHINE, "software": {**MACHINE["software"], "numpy": "1.26.4"},
             "environment": {"OMP_NUM_THREADS": "1", "ACCELBENCH_DB": "/tmp/x.sqlite"},
             "inventory": {"devices": [{"id": "cpu", "name": "AMD EPYC", "properties": {"usable_cpus": 1}}]}}
    c = compare_runs(run("a", base_times(1)), run("b", base_times(2), machine=other, selection={"rigor": "standard"}))
    shown = {d.field: (d.a, d.b) for d in c.differences}
    assert shown == {"software.numpy": ("2.4.6", "1.26.4"), "environment.OMP_NUM_THREADS": ("2", "1"),
                     "device cpu.usable_cpus": ("2", "1"), "rigor": ("quick", "standard")}
    assert c.same_machine  # same host and CPU: a history of one machine, with its settings changed


def test_different_hosts_are_labelled_and_still_compared():
    elsewhere = {**MACHINE, "hostname": "node2",
                 "inventory": {"devices": [{"id": "cpu", "name": "Intel Xeon Gold 6338", "properties": {}}]}}
    c = compare_runs(run("a", base_times(1)), run("b", base_times(2), machine=elsewhere))
    assert not c.same_machine and "ACROSS MACHINES: node1 → node2" in c.summary_line()
    assert {"hostname", "device cpu.name"} <= {d.field for d in c.differences}
    assert c.counts()["same"] == len(SPECS)


def test_failed_checks_count_nowhere():
    bad = SPECS[1].key
    c = compare_runs(run("a", base_times(1)), run("b", base_times(2, slower=SPECS[1], factor=3.0), failed={bad}))
    (row,) = c.by_verdict("excluded")
    assert row.spec.key == bad and "check failed in run B" in row.note and row.speedup is None
    assert row.result_verdicts == ("valid", "invalid")
    assert c.counts()["slower"] == 0 and "1 excluded (check failed or invalid)" in c.summary_line()
    assert geometric_mean(list(c.rows)).ratio == pytest.approx(c.geomean.ratio)
    assert 0.97 < c.geomean.ratio < 1.03  # the 3× slower but wrong result is not in the mean


def test_unmatched_specs_are_listed_and_all_core_specs_match_across_thread_counts():
    keep = {SPECS[0].key: samples(1e-3), SPECS[6].key: samples(2e-3)}
    a = run("a", keep)
    eight = Spec.make("matmul", "numpy", "cpu", n=500, dtype="float32", threads=8)
    b_ms = (measurement(eight, samples(1e-3, seed=5)), measurement(SPECS[7], samples(2e-3)))
    b = RunData("b", "test", b_ms, machine=MACHINE)
    pairs, only_a, only_b = match_specs(list(a.measurements), list(b.measurements))
    assert [(x.spec, y.spec, note) for x, y, note in pairs] == [
        (SPECS[0], eight, "all cores: 2 threads in A, 8 in B")]
    assert only_a == [SPECS[6]] and only_b == [SPECS[7]]


def test_html_tables_escape_and_show_every_row():
    times = base_times(1)
    c = compare_runs(run("a<b>", times), run("b", times))
    html = c._repr_html_()
    assert isinstance(c, Comparison) and html.count("<tr>") == len(SPECS) + 1
    assert "a&lt;b&gt;" in html and "a<b>" not in html
    rows = analyse([measurement(s, times[s.key]) for s in SPECS[:2]] + [measurement(SPECS[2], times[SPECS[2].key], False)])
    table = results_table_html(rows)
    assert table.count("<tr>") == 4 and ">invalid<" in table and "FLOP/s" in table


def test_threshold_separates_drift_from_regressions():
    from accelbench.compare.compare import verdict_of
    from accelbench.timing import stats

    significant_slower = stats.MannWhitney(u=0.0, z=-5.0, p_value=1e-6, n_a=50, n_b=50)
    # a tight, significant 7% slowdown is run-to-run drift under the 10% threshold: same
    assert verdict_of(stats.RatioCI(0.935, 0.92, 0.95), significant_slower) == "same"
    # a tight, significant 15% slowdown is a regression
    assert verdict_of(stats.RatioCI(0.87, 0.85, 0.89), significant_slower) == "slower"
    # a wide interval says nothing
    assert verdict_of(stats.RatioCI(0.95, 0.60, 1.40), significant_slower) == "inconclusive"
    # with a 5% threshold the 7% slowdown is claimed
    assert verdict_of(stats.RatioCI(0.935, 0.92, 0.95), significant_slower, same_within=0.05) == "slower"
