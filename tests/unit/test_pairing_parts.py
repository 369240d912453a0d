"""A group's paired rounds prepare only the instances of one part at a time (issue 28: preparing a
whole group at once held every backend's inputs together: 13 GB for elementwise on five devices).

The pairing test proper counts live prepared instances through the real pair_group: with room for
two instances a part is one speed-up's baseline and candidate, and each speed-up still gets its
paired rounds; with room for all, the count reaches every instance (the counter counts). The
baseline, timed in every part, is prepared once.
"""
from __future__ import annotations

import pytest

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.runner import pairing, pairing_parts
from accelbench.runner.pairing_parts import instance_key, parts
from accelbench.runner.speedups import CPU_ALL_CORES, CPU_ONE_THREAD, MIN_PAIRS, Wanted
from accelbench.timing.rigor import RIGORS
from accelbench.workloads.registry import get_workload

N = 4096
CANDIDATES = ("alt1", "alt2", "alt3")


def _m(backend: str, threads: int | None = None) -> Measurement:
    extra = {"threads": threads} if threads else {}
    return Measurement(spec=Spec.make("elementwise", backend, "cpu", n=N, dtype="float32", **extra),
                       phases_s={"compute": tuple(2e-5 * (1 + 0.001 * i) for i in range(12))},
                       first_call_s=2e-5, work=Work(2 * N, 8 * N), check=Check(True, 0.0, 1e-5), threads=threads)


def _group() -> tuple[list[Wanted], dict[str, NumpyBackend]]:
    """numpy on all cores and on one thread, against three candidates: four instances."""
    every, one = _m("numpy", 2), _m("numpy", 1)
    items = []
    for name in CANDIDATES:
        candidate = _m(name, 2)
        items += [Wanted(CPU_ALL_CORES, every, "compute", candidate, "compute"),
                  Wanted(CPU_ONE_THREAD, one, "compute", candidate, "compute")]
    backends = {name: NumpyBackend() for name in ("numpy", *CANDIDATES)}
    return items, backends


def test_parts_hold_one_candidate_each_when_two_instances_fill_the_budget():
    items, _ = _group()
    split = parts(items, budget_bytes=2 * 100, footprint=lambda key: 100)
    assert [[w.candidate.spec.backend for w in part] for part in split] == [[name, name] for name in CANDIDATES]
    assert all(len({instance_key(m) for w in part for m in (w.baseline, w.candidate)}) == 2 for part in split)
    assert parts(items, budget_bytes=4 * 100, footprint=lambda key: 100) == [items]  # small problems: one part
    # a speed-up larger than the budget by itself is still paired, its two sides alone
    assert [len(part) for part in parts(items, budget_bytes=1, footprint=lambda key: 100)] == [2, 2, 2]


class _Counted:
    """The real workload, its instances counted while prepared and not yet released."""

    def __init__(self, workload) -> None:
        self.workload, self.live, self.most, self.made = workload, 0, 0, 0

    def __getattr__(self, name):
        return getattr(self.workload, name)

    def prepare(self, backend, device, params, seed):
        prepared = self.workload.prepare(backend, device, params, seed)
        self.live += 1
        self.made += 1
        self.most = max(self.most, self.live)
        release = prepared.release

        def counted_release():
            self.live -= 1
            if release:
                release()
        prepared.release = counted_release
        return prepared


@pytest.mark.parametrize("room, most", [(2, 2), (4, 4)])
def test_a_group_prepares_only_the_instances_of_one_part_at_once(monkeypatch, room, most):
    counted = _Counted(get_workload("elementwise"))
    monkeypatch.setattr(pairing, "get_workload", lambda name: counted)
    footprint = get_workload("elementwise").footprint_bytes({"n": N, "dtype": "float32"})
    monkeypatch.setattr(pairing_parts, "PART_BUDGET_BYTES", room * footprint)
    items, backends = _group()
    paired = pairing.pair_group(items, backends, RIGORS["quick"], seed=3)
    assert counted.most == most and counted.live == 0  # at most a part's instances, all released after
    assert counted.made == 4  # the baseline stays prepared from one part to the next: made once
    assert [p.key for p in paired] == [w.key for w in items]  # every speed-up, in the group's order
    for p in paired:  # each still timed in its own paired rounds, its outputs checked
        assert not p.note, p.note
        assert len(p.baseline_s) == len(p.candidate_s) >= MIN_PAIRS
