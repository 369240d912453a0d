"""A side whose own measurement ran slower than its paired rounds is measured once more
(runner/own_again.py): the second, valid measurement replaces the first in the run and in the store
(same row, so the speed-ups still name it), with a note; a side that agrees with its rounds, or
one that ran slower in the rounds (cross-talk, not a slow measurement), is left alone."""
from __future__ import annotations

import dataclasses
import re
import random

from accelbench.results import Check, Measurement, PairedSamples, Spec, Work
from accelbench.runner.own_again import measure_slowed_again, slowed_sides
from accelbench.runner.speedups import CPU_ONE_THREAD, Speedups, wanted_speedups
from accelbench.store.db import Store
from accelbench.verdict import REMEASURED, kind_of


def _measurement(threads: int, per_call_s: float, seed: int) -> Measurement:
    draw = random.Random(seed)
    spec = Spec.make("matmul", "numpy", "cpu", n=256, dtype="float32", threads=threads)
    samples = tuple(per_call_s * draw.uniform(0.99, 1.01) for _ in range(15))
    return Measurement(spec=spec, phases_s={"compute": samples}, first_call_s=per_call_s,
                       work=Work(flops=2 * 256**3, bytes_moved=3 * 4 * 256**2), check=Check(True, 1e-7, 1e-5),
                       threads=threads, verdict="valid")


def _paired(one: Measurement, two: Measurement, one_s: float, two_s: float, seed: int) -> PairedSamples:
    draw = random.Random(seed)
    return PairedSamples(CPU_ONE_THREAD, one.spec, "compute", two.spec, "compute",
                         tuple(one_s * draw.uniform(0.99, 1.01) for _ in range(8)),
                         tuple(two_s * draw.uniform(0.99, 1.01) for _ in range(8)))


def test_only_the_side_faster_in_its_rounds_than_in_its_own_measurement_is_named():
    one, two = _measurement(1, 330e-6, 1), _measurement(2, 283e-6, 2)  # 2 threads measured in a slow phase
    assert [m for m, _ in slowed_sides([one, two], [_paired(one, two, 330e-6, 187e-6, 3)])] == [two]
    assert slowed_sides([one, two], [_paired(one, two, 330e-6, 283e-6, 3)]) == []   # rounds agree
    assert slowed_sides([one, two], [_paired(one, two, 330e-6, 400e-6, 3)]) == []   # slower in the rounds
    both_faster = _paired(one, two, 250e-6, 270e-6, 3)    # the side that ran most faster in its rounds
    assert [m.spec.key for m, _ in slowed_sides([one, two], [both_faster])] == [one.spec.key]


def test_a_valid_second_measurement_replaces_the_first_in_the_run_and_the_store(tmp_path):
    one, two = _measurement(1, 330e-6, 1), _measurement(2, 283e-6, 2)
    paired = _paired(one, two, 330e-6, 187e-6, 3)
    with Store(tmp_path / "r.sqlite") as store:
        run_id = store.start_run({}, {})
        for m in (one, two):
            store.add_result(run_id, m)
        store.add_speedup(run_id, paired)
        measured = []

        def measure(first: Measurement) -> Measurement:
            measured.append(first)
            return _measurement(2, 187e-6, 4)

        measurements = [one, two]
        wanted = next(w for w in wanted_speedups(measurements) if w.key == paired.key)
        before = Speedups([paired]).ratio(wanted)
        replaced = measure_slowed_again(measurements, [paired], measure, lambda m: store.replace_result(run_id, m))
        assert measured == [two] and replaced == [measurements[1]] and measurements[0] is one
        notes = [w for w in measurements[1].warnings if kind_of(w) == REMEASURED]
        assert notes and re.search(r"took 1\.5\d× its time in the paired rounds", notes[0])
        stored = {m.spec.key: m for m in store.results(run_id)}
        assert sorted(stored[two.spec.key].phases_s["compute"]) == sorted(measurements[1].phases_s["compute"])
        assert [w for w in stored[two.spec.key].warnings if kind_of(w) == REMEASURED]
        (kept,) = store.speedups(run_id)  # the speed-up still names the result
        assert kept.candidate.key == two.spec.key and kept.candidate_s == paired.candidate_s
    # the paired figure and the medians now agree: no note that a side's own measurement ran slow
    after = Speedups([paired]).ratio(next(w for w in wanted_speedups(measurements) if w.key == paired.key))
    assert "own measurement took" in before.method and "own measurement took" not in after.method
    assert after.low <= 330 / 187 <= after.high


def test_a_second_measurement_that_is_not_valid_replaces_nothing(tmp_path):
    one, two = _measurement(1, 330e-6, 1), _measurement(2, 283e-6, 2)
    refused = dataclasses.replace(_measurement(2, 187e-6, 4), verdict="invalid")
    stored: list[Measurement] = []
    measurements = [one, two]
    assert measure_slowed_again(measurements, [_paired(one, two, 330e-6, 187e-6, 3)], lambda m: refused,
                                stored.append) == []
    assert measurements == [one, two] and stored == []
    assert measure_slowed_again(measurements, [_paired(one, two, 330e-6, 187e-6, 3)], lambda m: None,
                                stored.append) == []
