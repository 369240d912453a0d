"""What a spec holds in memory (issue 28: the quick suite's peak): a refresh lets the input set it
replaces go before it makes the new one (two sets at once, never three), and a prepared workload's
release lets every input, output and reference go while the runner still holds the Prepared."""
from __future__ import annotations

import gc
import weakref

import numpy as np

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.results import Check
from accelbench.workloads import memory
from accelbench.workloads.rotation import Rotation, Variant


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
    gc.collect()
    assert len(arrays) >= 6 and all(ref() is None for ref in arrays)  # held by nothing, the Prepared still alive
