"""What a spec holds in memory (issue 28: the quick suite's peak): a refresh lets the input set it
replaces go before it makes the new one (two sets at once, never three), and a prepared workload's
release lets every input, output and reference go while the runner still holds the Prepared; two
instances of one problem prepared together share their host inputs and reference."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.results import Check
from accelbench.workloads import host_side, memory
from accelbench.workloads.rotation import Rotation, Variant
from accelbench.workloads.verify import relative_norm_error


def _judge(output, variant: Variant) -> Check:
    return Check(True, 0.0, 1e-6, "within tolerance", "cpu")


def test_a_refresh_holds_two_input_sets_at_once_never_three():
    made: dict[int, weakref.ref] = {}
    alive_when_made: list[int] = []

    def make(key: int) -> Variant:
        gc.collect()
        alive_when_made.append(sum(ref() is not None for ref in made.values()))
        values = np.full(16, float(key))
        made[key] = weakref.ref(values)
        return Variant([values], values.copy(), out=np.empty(16), hosts=[values])

    rotation = Rotation(make, _judge, count=2)
    for _ in range(4):  # each call kept for the check, then the next set replaced
        rotation.call(lambda v: v.inputs[0] * 1.0)
        rotation.refresh()
    assert alive_when_made == [0, 1, 1, 1, 1, 1]
    assert rotation.check().passed
    rotation.release()
    gc.collect()
    assert [key for key, ref in made.items() if ref() is not None] == []


def test_a_released_stream_lets_every_array_go(monkeypatch):
    arrays: list[weakref.ref] = []
    made = memory.host_inputs

    def tracked(*args, **kwargs):
        values = made(*args, **kwargs)
        arrays.append(weakref.ref(values))
        return values

    monkeypatch.setattr(memory, "host_inputs", tracked)
    prepared = memory.Stream().prepare(NumpyBackend(), "cpu", {"kernel": "triad", "n": 4096, "dtype": "float64"}, 7)
    for _ in range(3):
        prepared.compute()
        prepared.refresh()
    assert prepared.check_output(None).passed
    assert prepared.release is not None
    prepared.release()
    host_side.forget_recent()  # the last few stay held for the next spec of the problem: let them go
    gc.collect()
    assert len(arrays) >= 6 and all(ref() is None for ref in arrays)  # held by nothing, the Prepared still alive


def test_the_baseline_and_a_device_prepared_together_share_their_host_inputs_and_reference():
    """Two instances of one problem (a part of the paired rounds) hold one copy of the host side
    (the inputs; no whole float64 reference is held any more: the check computes the elements it
    judges, workloads/sampled_check.py); released, nothing holds it."""
    params = {"kernel": "triad", "n": 4096, "dtype": "float64"}
    held: list[weakref.ref] = []
    first = memory.Stream().prepare(NumpyBackend(), "cpu", params, 7)
    second = memory.Stream().prepare(NumpyBackend(), "cpu", params, 7)
    for prepared in (first, second):
        prepared.compute()
        prepared.compute()  # both input sets called
        assert prepared.check_output(None).passed
    rotations = [p.refresh.__self__ for p in (first, second)]  # type: ignore[union-attr]  # Rotation.refresh
    assert all(isinstance(r, Rotation) for r in rotations)
    for a, b in zip(*(r.variants for r in rotations)):
        assert all(x is y for x, y in zip(a.hosts, b.hosts)) and a.reference is None is b.reference
        assert all(x is not y for x, y in zip(a.inputs, b.inputs)) and a.out is not b.out  # each its own
        held += [weakref.ref(h) for h in a.hosts]
    first.release()
    second.release()
    del rotations, a, b
    host_side.forget_recent()
    gc.collect()
    assert held and all(ref() is None for ref in held)


def test_the_error_taken_a_piece_at_a_time_is_the_whole_arrays_error(monkeypatch):
    monkeypatch.setattr(host_side, "PIECE", 1000)  # several pieces, the last one short
    rng = np.random.default_rng(1)
    reference = rng.uniform(-1, 1, 4500)
    result = (reference + rng.normal(0, 1e-6, 4500)).astype(np.float32)
    assert host_side.relative_error(result, reference) == pytest.approx(relative_norm_error(result, reference), rel=1e-9)
    assert host_side.relative_error(result[:-1], reference) == float("inf")
    result[4400] = np.nan
    assert host_side.relative_error(result, reference) == float("inf")
    assert host_side.sum_float64(reference, absolute=True) == pytest.approx(np.abs(reference).sum(), rel=1e-12)
    hosts = [rng.uniform(-1, 1, 4500).astype(np.float32)]
    assert np.array_equal(host_side.elementwise_reference(lambda a: a * a + a, hosts),
                          hosts[0].astype(np.float64) ** 2 + hosts[0].astype(np.float64))
