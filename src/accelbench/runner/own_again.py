"""Sides measured again where their own measurement disagreed with their paired rounds.

A paired round cannot make a side faster than it is. Where a side ran faster in its paired rounds
than in its own measurement while nothing ran slower (runner/paired_check.py `slowed_own_side`),
its own measurement was taken in a slow phase of the machine: on a quiet 2-core VM, numpy on 2
threads at n=256 ran 283 µs per call through a whole measurement and 187 µs in the rounds a few
seconds later. Such a side is measured once more, and the second measurement replaces the first
where it is valid, with a note saying why: the table's median and the paired speed-up then describe
the same machine. The paired figure stands either way (runner/speedups.py).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from accelbench.results import Measurement, PairedSamples
from accelbench.runner.paired_check import side_shift, slowed_own_side
from accelbench.runner.speedups import steady_rounds
from accelbench.timing import stats
from accelbench.verdict import REMEASURED, Caveat


def slowed_sides(measurements: Sequence[Measurement], paired: Sequence[PairedSamples]) -> list[tuple[Measurement, str]]:
    """Each measurement whose own timing ran slower than its paired rounds, with the figures that say so."""
    by_key = {m.spec.key: m for m in measurements}
    found: dict[str, tuple[Measurement, str]] = {}
    for p, _ in map(steady_rounds, paired):
        base, cand = by_key.get(p.baseline.key), by_key.get(p.candidate.key)
        if not p.baseline_s or base is None or cand is None:
            continue
        if p.baseline_phase not in base.phases_s or p.candidate_phase not in cand.phases_s:
            continue
        sides = ((base.spec.label(), p.baseline_s, base.phases_s[p.baseline_phase]),
                 (cand.spec.label(), p.candidate_s, cand.phases_s[p.candidate_phase]))
        slowed = slowed_own_side(*sides)
        if slowed is None:
            continue
        m, (_, rounds, own) = (base, cand)[slowed], sides[slowed]
        phase = (p.baseline_phase, p.candidate_phase)[slowed]
        found.setdefault(m.spec.key, (m, f"its first measurement's {phase} took {1 / side_shift(rounds, own):.2f}× "
                                         f"its time in the paired rounds"))
    return list(found.values())


def measure_slowed_again(measurements: list[Measurement], paired: Sequence[PairedSamples],
                         measure: Callable[[Measurement], Measurement | None],
                         replace: Callable[[Measurement], object]) -> list[Measurement]:
    """Measure each slowed side once more with `measure`; a valid second measurement, noted,
    takes the first's place in `measurements` and is handed to `replace` (the store). Returns those."""
    replaced = []
    for first, why in slowed_sides(measurements, paired):
        second = measure(first)
        if second is None or not second.valid:
            continue  # the first stands: a second that failed or was refused replaces nothing
        second = dataclasses.replace(second, warnings=(*second.warnings, Caveat(
            f"measured twice: {why} (a slow phase of the machine while it was measured); these are the "
            f"second's numbers", REMEASURED, {"first_median_s": stats.median(first.samples_s)})))
        replace(second)
        measurements[measurements.index(first)] = second
        replaced.append(second)
    return replaced
