"""Reports over many results: the figures switch to forms that stay cheap and keep every number,
and drawing them on several cores gives the same figures as drawing them here."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="figures need matplotlib: pip install accelbench[plot]")

from synthetic_runs import (break_even_measurements, expected_transfer_share, measurement,  # noqa: E402
                            run_data)

from accelbench import forked  # noqa: E402
from accelbench.report import figures, roofline  # noqa: E402

MANY_SIZES = tuple(range(500, 500 + 100 * (figures.MAX_BAR_GROUPS + 8), 100))  # 20 orders


@pytest.fixture(scope="module")
def many_orders_run():
    return run_data(break_even_measurements(sizes=MANY_SIZES))


def test_time_per_size_past_the_bar_limit_draws_lines_through_every_order(many_orders_run):
    result = figures.time_per_size(many_orders_run)
    assert result.present and "more than 12 orders" in result.caption
    assert result.facts["labels"]["float32"] == [figures.footprint_label(n, "float32") for n in MANY_SIZES]
    small = figures.time_per_size(run_data(break_even_measurements()))
    assert "more than" not in small.caption  # a small run keeps its bars


def test_time_split_past_the_bar_limit_keeps_every_order_share(many_orders_run):
    result = figures.time_split(many_orders_run)
    assert result.present and "stacks areas" in result.caption
    [(label, shares)] = result.facts["transfer_share"].items()
    assert sorted(shares) == list(MANY_SIZES)
    for n in MANY_SIZES:
        assert shares[n] == pytest.approx(expected_transfer_share(n), rel=0.02)


def test_spread_ticks_keeps_both_ends_and_at_most_the_limit():
    sizes = [float(n) for n in range(64, 2000, 64)]
    shown = figures.spread_ticks(sizes)
    assert shown[0] == sizes[0] and shown[-1] == sizes[-1]
    assert len(shown) <= figures.MAX_LABELLED_TICKS and shown == sorted(set(shown))
    assert figures.spread_ticks(sizes[:3]) == sizes[:3]


def test_roofline_places_every_point_of_a_large_run():
    ms = [measurement("stream", "torch", "cuda:0", compute_s=3 * n * 8 / 400e9, n=n, dtype="float64",
                      kernel="triad") for n in range(2**20, 2**20 + 300 * 4096, 4096)]
    ms += [measurement("matmul", "torch", "cuda:0", compute_s=2 * n**3 / 8e12, n=n, dtype="float32")
           for n in range(1000, 1300)]
    result = roofline.roofline(run_data(ms))
    assert result.present
    assert len(result.facts["cuda:0"]["points"]) == len(ms)  # each in the table under the figure


WORKERS_CHILD = """
import sys
from synthetic_runs import break_even_measurements, run_data
from accelbench.report import drawing, figures
runs = [run_data(break_even_measurements()), run_data(break_even_measurements(dtype="float64"))]
here = [figures.make_figures(run) for run in runs]
from accelbench import forked
drawing.PARALLEL_FROM_RESULTS, forked.usable_cpus = 0, lambda: 2
assert forked.fork_is_safe(), "this child loads no threaded framework"
called = []
drawn = drawing.draw_all(runs, meanwhile=lambda: called.append(True))
assert called == [True]
summary = lambda rs: [[(f.name, f.png, f.facts, f.caption, f.note) for f in run] for run in rs]
assert summary(drawn) == summary(here)
print("equal")
"""


def test_figures_drawn_by_workers_equal_those_drawn_here():
    # in a fresh interpreter: this test process may have loaded jax or torch, and then never forks
    here = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here), *sys.path]), "MPLBACKEND": "Agg"}
    out = subprocess.run([sys.executable, "-c", WORKERS_CHILD], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "equal", out.stderr


def test_no_workers_in_a_process_that_loaded_a_threaded_framework(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", object())
    assert not forked.fork_is_safe()
