"""The fleet's outlier rule (cluster/outliers.py), pure logic: no reference values, the spread
learnt from the fleet (and its history), and how often it accuses a healthy node.

The false-flag count over many synthetic sweeps of healthy fleets is printed (pytest -s) and
bounded; docs/cluster.md quotes it."""
from __future__ import annotations

import math
import random

import pytest

from accelbench.cluster.outliers import FLOOR, MIN_POINTS, SMALL_FLOOR, Z, deviations, judge, median, spread


def _fleet(rng: random.Random, nodes: int, relative_spread: float, centre: float = 1e12) -> dict[str, float]:
    """Healthy nodes of one type: rates lognormal around `centre`."""
    return {f"n{i:03d}": centre * math.exp(rng.gauss(0.0, relative_spread)) for i in range(nodes)}


def test_a_slow_node_is_found_without_any_reference_value():
    rates = {"a1": 101.0, "a2": 99.0, "a3": 100.0, "a4": 102.0, "slow": 45.0}
    centre, learnt, judgements = judge(rates)
    verdicts = {j.node: j.verdict for j in judgements}
    assert verdicts == {"a1": "ok", "a2": "ok", "a3": "ok", "a4": "ok", "slow": "outlier"}
    assert centre == pytest.approx(100.0)
    slow = next(j for j in judgements if j.node == "slow")
    assert slow.ratio == pytest.approx(0.45) and slow.z < -Z


def test_the_same_fleet_scaled_gives_the_same_verdicts():
    """Only ratios matter: a GPU fleet at TFLOP/s and a CPU fleet at GFLOP/s are judged alike."""
    rates = {"a": 3.0, "b": 3.1, "c": 2.9, "d": 1.2}
    small = [j.verdict for j in judge(rates)[2]]
    large = [j.verdict for j in judge({k: v * 1e12 for k, v in rates.items()})[2]]
    assert small == large == ["ok", "ok", "ok", "outlier"]


def test_only_the_slow_side_is_flagged():
    _, _, judgements = judge({"a": 100.0, "b": 101.0, "c": 99.0, "fast": 300.0})
    assert {j.node: j.verdict for j in judgements}["fast"] == "ok"


def test_two_nodes_are_never_judged():
    _, _, judgements = judge({"a": 100.0, "b": 10.0})
    assert [j.verdict for j in judgements] == ["not judged", "not judged"]


def test_a_wide_fleet_widens_the_band_and_a_tight_one_meets_the_floor():
    wide = spread(deviations({f"n{i}": 100.0 * (1.2 if i % 2 else 0.8) for i in range(10)}).values())
    assert wide.sigma > math.log1p(FLOOR) and wide.estimate == pytest.approx(wide.sigma)
    tight = spread([0.001, -0.001, 0.0, 0.002, -0.002, 0.0, 0.001, -0.001])
    assert tight.sigma == pytest.approx(math.log1p(FLOOR)) and "floor" in tight.source
    few = spread([0.001, -0.001, 0.0])
    assert len([0.0] * 3) < MIN_POINTS and few.sigma == pytest.approx(math.log1p(SMALL_FLOOR))


def test_history_teaches_the_spread_when_the_sweep_alone_cannot():
    """Three nodes agreeing by chance would leave only the small-sample floor; earlier sweeps that
    showed 10% scatter keep a node 30% slow from being accused."""
    rates = {"a": 100.0, "b": 100.5, "c": 70.0}
    alone = {j.node: j.verdict for j in judge(rates)[2]}
    history = [0.1, -0.12, 0.09, -0.1, 0.11, -0.08, 0.0, 0.1, -0.1]
    learnt_with_history = judge(rates, history)
    assert alone["c"] == "outlier"
    assert {j.node: j.verdict for j in learnt_with_history[2]}["c"] == "ok"
    assert learnt_with_history[1].history_points == len(history)


def test_false_flags_over_many_synthetic_sweeps_of_healthy_fleets():
    """40 sweeps of two node types each (3 to 64 nodes, 2-8% spread, three headline figures), a
    node made 2x slow in each sweep's first type: every slow node found, healthy ones counted."""
    rng = random.Random(20261203)
    false_flags = judged = found = 0
    sweeps = 40
    for sweep in range(sweeps):
        for kind in range(2):
            nodes = rng.choice((3, 4, 6, 8, 12, 16, 32, 64))
            relative_spread = rng.choice((0.02, 0.05, 0.08))
            for _figure in range(3):
                rates = _fleet(rng, nodes, relative_spread)
                slow = None
                if kind == 0:
                    slow = "n000"
                    rates[slow] *= 0.5
                for judgement in judge(rates)[2]:
                    if judgement.node == slow:
                        found += judgement.verdict == "outlier"
                    else:
                        judged += 1
                        false_flags += judgement.verdict == "outlier"
    print(f"\n{sweeps} sweeps: {false_flags} false flag(s) in {judged} judgements of healthy nodes; "
          f"{found} of {sweeps * 3} slow-node figures flagged")
    assert found >= sweeps * 3 * 0.9           # a 2x slow node is found (n=3 with 8% spread may hide it)
    assert false_flags <= max(3, judged // 500)  # well under 1 in 500


def test_median_of_an_even_count_is_the_middle_pair():
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    with pytest.raises(ValueError):
        median([])
