"""Which nodes are slower than their siblings: a robust rule that learns the spread from the fleet.

No reference value is ever given. For one figure (say matmul's rate) of one node type:

* centre: the median of the nodes' log rates (a slow node cannot drag it, as it would a mean);
* spread: sigma = 1.4826 x MAD of the nodes' log deviations from that centre, pooled with the
  deviations earlier sweeps of the same type showed from their own centres (stored history),
  never under a floor: FLOOR (3%) once at least MIN_POINTS deviations back the estimate, the
  wider SMALL_FLOOR (5%) before, because a MAD of three or four values is itself a guess
  (healthy GPUs of one model already differ by about 5%);
* a node is an outlier when its log rate lies more than Z (4.5) sigmas below the centre. Only
  the slow side is flagged: a node faster than its siblings is shown, not accused.

Z is high because a MAD of a dozen values is itself uncertain and a sweep judges hundreds of
nodes: over the 40 synthetic sweeps of tests/unit/test_fleet_outliers.py (3 to 64 nodes a
type, 2-8% spread) Z = 4 made 3 false flags in 4233 judgements of healthy nodes, Z = 4.5 one,
while still finding 113 of 120 nodes made 2x slow. Pure functions: no store, no Slurm.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Z = 4.5
ROBUST_SIGMA = 1.4826   # MAD x this estimates sigma of a normal distribution
FLOOR = 0.03            # the spread is never taken as under 3% (relative)...
SMALL_FLOOR = 0.05      # ...or under 5% while fewer than MIN_POINTS deviations back it
MIN_POINTS = 8
MIN_NODES = 3           # with two nodes, which one is off cannot be told


@dataclass(frozen=True)
class Spread:
    """The robust spread of one figure across a node type, and where it was learnt."""

    sigma: float            # of the natural log of the rate (~ relative spread)
    estimate: float | None  # before the floor; None with no deviations at all
    floor: float            # the floor that applied (log units)
    points: int             # deviations it was learnt from
    history_points: int     # of those, from earlier sweeps

    @property
    def relative(self) -> float:
        """sigma as a fraction of the rate (0.05 = 5%)."""
        return math.expm1(self.sigma)

    @property
    def source(self) -> str:
        learnt = "this sweep" + (f" + {self.history_points} from earlier sweeps" if self.history_points else "")
        if self.estimate is None or self.estimate < self.floor:
            return f"the floor {math.expm1(self.floor):.0%}: the {self.points} deviations of {learnt} showed less"
        return f"learnt from {self.points} deviations ({learnt})"

    @property
    def threshold(self) -> float:
        """The ratio to the centre under which a node is an outlier."""
        return math.exp(-Z * self.sigma)


@dataclass(frozen=True)
class Judgement:
    node: str
    value: float        # the node's rate
    ratio: float        # value / the type's median
    z: float            # (log value - log median) / sigma: negative = slower
    verdict: str        # "outlier" | "ok" | "not judged"


def median(values: Iterable[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median of nothing")
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def deviations(values: Mapping[str, float]) -> dict[str, float]:
    """Each node's log deviation from the median of them all (positive rates only)."""
    logs = {node: math.log(value) for node, value in values.items() if value > 0}
    if not logs:
        return {}
    centre = median(logs.values())
    return {node: log - centre for node, log in logs.items()}


def spread(current: Iterable[float], history: Iterable[float] = ()) -> Spread:
    """The robust sigma of log deviations: this sweep's and earlier sweeps' pooled."""
    now, before = list(current), list(history)
    pooled = now + before
    estimate = ROBUST_SIGMA * median(abs(d) for d in pooled) if pooled else None
    floor = math.log1p(FLOOR if len(pooled) >= MIN_POINTS else SMALL_FLOOR)
    sigma = max(floor, estimate or 0.0)
    return Spread(sigma, estimate, floor, len(pooled), len(before))


def judge(values: Mapping[str, float], history: Iterable[float] = ()) -> tuple[float | None, Spread, list[Judgement]]:
    """(the type's median rate, the spread, one judgement per node in the order given).

    `values`: node -> rate (higher is better) of one figure; `history`: earlier sweeps' log
    deviations of the same figure and node type (each from its own sweep's median)."""
    devs = deviations(values)
    learnt = spread(devs.values(), history)
    if not devs:
        return None, learnt, []
    centre = math.exp(median(math.log(v) for v in values.values() if v > 0))
    enough = len(devs) >= MIN_NODES
    judgements = []
    for node, value in values.items():
        if node not in devs:
            continue
        z = devs[node] / learnt.sigma
        verdict = ("outlier" if z < -Z else "ok") if enough else "not judged"
        judgements.append(Judgement(node, value, value / centre, z, verdict))
    return centre, learnt, judgements
