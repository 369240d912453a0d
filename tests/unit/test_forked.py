"""Work shared out over forked processes gives exactly what it gives run here: the ratio bootstrap
of a large report, the runs of a multi-run report read from a real SQLite file, and maps nested
inside a worker (run there, not forked again)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench import forked

HERE = Path(__file__).parent

# in a fresh interpreter: this test process may have loaded torch or jax, and then never forks
CHILD_PRELUDE = """
import os, random
from accelbench import forked
forked.usable_cpus = lambda: 2
assert forked.fork_is_safe(), "this child loads no threaded framework"
"""


def run_child(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path]), "MPLBACKEND": "Agg"}
    out = subprocess.run([sys.executable, "-c", CHILD_PRELUDE + code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_map_runs_here_in_order_where_forking_is_unsafe(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", object())
    called = []
    assert forked.worker_count(10) == 0
    assert forked.forked_map(lambda x: x * x, [3, 1, 2], meanwhile=lambda: called.append(True)) == [9, 1, 4]
    assert called == [True]


FORKED_MAP = """
pids = forked.forked_map(lambda piece: (piece, os.getpid(), forked.forked_map(lambda x: os.getpid(), [1, 2])),
                         list(range(6)), meanwhile=lambda: print("meanwhile"))
assert [p for p, _, _ in pids] == list(range(6)), pids
workers = {pid for _, pid, _ in pids}
assert os.getpid() not in workers and 1 <= len(workers) <= 2, workers
assert all(set(inner) == {pid} for _, pid, inner in pids), "a nested map runs in its worker"
print("ok")
"""


def test_pieces_run_in_workers_in_order_and_a_nested_map_stays_in_its_worker():
    assert run_child(FORKED_MAP).split() == ["meanwhile", "ok"]


BOOTSTRAP = """
from accelbench.timing import bootstrap
rng = random.Random(3)
baselines = [tuple(rng.lognormvariate(-7, 0.2) for _ in range(rng.randint(5, 40))) for _ in range(30)]
pairs = []
for i in range(4 * bootstrap.RATIO_BLOCK * 2 + 37):   # enough blocks for two workers, a partial last block
    candidate = tuple(rng.lognormvariate(-8, 0.3) for _ in range(rng.randint(3, 60)))
    if i % 97 == 0:
        candidate = (0.0,) * 3 + candidate   # resampled medians of zero: an infinite ratio end
    pairs.append((baselines[i % 30], candidate))
assert forked.worker_count(len(pairs) // (4 * bootstrap.RATIO_BLOCK)) == 2
together = bootstrap.ratios_of_medians_ci(pairs, resamples=1000, seed=5)
one_by_one = [bootstrap.ratio_of_medians_ci(a, b, resamples=1000, seed=5) for a, b in pairs]
assert together == one_by_one
assert any(r.high == float("inf") for r in together) and all(r.low <= r.ratio <= r.high for r in together)
print(len(together))
"""


def test_ratios_bootstrapped_together_on_two_workers_equal_each_bootstrapped_alone():
    assert int(run_child(BOOTSTRAP)) > 2000


def test_ratios_bootstrapped_together_here_equal_each_bootstrapped_alone():
    import random

    from accelbench.timing import bootstrap

    rng = random.Random(8)
    shared = tuple(rng.uniform(1.0, 2.0) for _ in range(11))
    pairs = [(shared, tuple(rng.uniform(0.5, 1.5) for _ in range(rng.randint(2, 30)))) for _ in range(300)]
    pairs += [(pairs[4][1], shared), (shared, shared)]
    assert bootstrap.ratios_of_medians_ci(pairs, resamples=500) == [
        bootstrap.ratio_of_medians_ci(a, b, resamples=500) for a, b in pairs]
    assert bootstrap.ratios_of_medians_ci([]) == []
    with pytest.raises(ValueError, match="not positive"):
        bootstrap.ratios_of_medians_ci([(shared, (0.0, 0.0, 1.0))])


LOAD_RUNS = """
import sys
from synthetic_runs import break_even_measurements
from accelbench.report.data import load_run, load_runs
from accelbench.store.db import Store
path = sys.argv[1]
with Store(path) as store:
    for k, dtype in enumerate(("float32", "float64", "float16")):
        store.restore_run(f"run-{k}", started_at=f"2026-01-0{k + 1}T00:00:00+00:00", finished_at=None,
                          status="complete", accelbench_version="test", selection={}, machine={}, tags={},
                          results=break_even_measurements(dtype=dtype), skips=())
    loaded = load_runs(store, ["run-2", "latest~2", "run-1", "run-2"])
    here = [load_run(store, run_id) for run_id in ("run-2", "run-0", "run-1")]
assert [r.run_id for r in loaded] == ["run-2", "run-0", "run-1"]
assert [(r.rows, r.measurements, r.info, r.source) for r in loaded] == [(r.rows, r.measurements, r.info, r.source) for r in here]
print("equal")
"""


def test_runs_read_by_workers_from_a_database_file_equal_those_read_here(tmp_path):
    assert run_child(LOAD_RUNS.replace("sys.argv[1]", repr(str(tmp_path / "results.sqlite")))) == "equal"


def test_a_ratio_interval_is_the_percentile_interval_of_the_resampled_ratios():
    import numpy as np

    from accelbench.timing import bootstrap

    top, bottom = (3.0, 1.0, 2.0, 5.0, 4.0, 2.5), (1.0, 1.5, 0.9, 1.2, 1.1)
    resampled = [bootstrap._bootstrap_medians(np.sort(np.array(s)), bootstrap._bootstrap_ranks(len(s), 999, 2, side))
                 for side, s in enumerate((top, bottom))]
    low, high = np.quantile(resampled[0] / resampled[1], [0.025, 0.975])  # numpy's default: linear
    ci = bootstrap.ratio_of_medians_ci(top, bottom, resamples=999, seed=2)
    assert (ci.ratio, ci.low, ci.high) == pytest.approx((2.75 / 1.1, low, high), rel=1e-12)
