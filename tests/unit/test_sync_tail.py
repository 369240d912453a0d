"""The sync proof's tail (timing/sync_probe.py `_tail`): a synchronize() that waits only while more
than K calls are in flight leaves the last K calls of every block pending. The pipelined, serial and
read-each blocks barely see it on long blocks (K of many calls); blocks from an empty queue of one
call and of a drawn number of calls, ended by synchronize() and by reading the last output back,
see K calls' work missing whatever the block's length."""
from __future__ import annotations

import numpy as np
import pytest
from fakes import FakeBackend, FakeClock

from accelbench.timing.sync_probe import NOT_WAITING, UNPROVEN, WAITS, prove


class _LooseSync(FakeBackend):
    """A virtual device queue; synchronize() returns once at most `depth` calls are still pending
    (drain to K), or, with `all_or_nothing`, waits for all of them only when more than K are."""

    def __init__(self, clock, depth: int, all_or_nothing: bool = False, **kw) -> None:
        super().__init__(clock, **kw)
        self.depth, self.all_or_nothing = depth, all_or_nothing
        self.ends: list[float] = []  # when each queued call finishes

    def kernel(self) -> None:
        super().kernel()
        self.ends.append(self._device_free_at_s)

    def synchronize(self, device=None):
        self.syncs += 1
        pending = [end for end in self.ends if end > self.clock.time_s]
        if len(pending) > self.depth:
            until = pending[-1] if self.all_or_nothing else pending[-self.depth - 1]
            self.clock.time_s = max(self.clock.time_s, until)


def _proof(backend, clock, calls: int):
    a = np.ones((8, 8))
    return prove(lambda: backend.matmul(a, a), lambda: backend.synchronize(), backend.to_host, clock, calls)


@pytest.mark.parametrize("depth", [1, 2, 4, 8])
@pytest.mark.parametrize("calls", [5, 40])
@pytest.mark.parametrize("all_or_nothing", [False, True])
def test_a_sync_that_waits_only_beyond_k_calls_in_flight_does_not_wait(depth, calls, all_or_nothing):
    clock = FakeClock(jitter=0.02, seed=depth * 100 + calls)
    backend = _LooseSync(clock, depth, all_or_nothing, kernel_s=1e-3, asynchronous=True, device="cpu")
    proof = _proof(backend, clock, calls)
    assert proof.status == NOT_WAITING, proof.detail
    assert "from an empty queue" in proof.detail


@pytest.mark.parametrize("calls", [5, 40])
def test_an_honest_queue_waits(calls):
    clock = FakeClock(jitter=0.02, seed=calls)
    backend = FakeBackend(clock, kernel_s=1e-3, asynchronous=True, device="cpu", sync_s=5e-6)
    proof = _proof(backend, clock, calls)
    assert proof.status == WAITS, proof.detail
    assert proof.synced_s == pytest.approx(1e-3, rel=0.1)


def test_a_loose_sync_on_calls_shorter_than_the_tail_floor_is_not_refused_by_the_tail():
    """Below MIN_TAIL_S a call's work is within one sync's noise: no claim either way from the tail."""
    clock = FakeClock(jitter=0.02, seed=3)
    backend = _LooseSync(clock, 1, kernel_s=2e-6, asynchronous=True, device="cpu")
    assert "from an empty queue" not in _proof(backend, clock, 40).detail


def test_the_previous_proof_let_a_loose_sync_through_on_long_blocks():
    """Without the tail (its blocks removed), a depth-1 loose sync passes on 40-call blocks: the
    class the tail exists for."""
    import accelbench.timing.sync_probe as sync_probe

    clock = FakeClock(jitter=0.02, seed=5)
    backend = _LooseSync(clock, 1, kernel_s=1e-3, asynchronous=True, device="cpu")
    original = sync_probe._tail
    sync_probe._tail = lambda single, drawn: (WAITS, "")
    try:
        proof = _proof(backend, clock, 40)
    finally:
        sync_probe._tail = original
    assert proof.status in (WAITS, UNPROVEN)


@pytest.mark.parametrize("synced_factor, flagged", [(1.0, False), (3.0, True)])
def test_the_timed_median_is_judged_against_the_proofs_synchronised_blocks(monkeypatch, synced_factor, flagged):
    """Like with like: the timed calls (ended by synchronize()) against the proof's fastest blocks ended
    the same way. Reading each output back 3x slower than the timed median (a pool the checks'
    BLAS left spinning, a read-back's round trip) is the proof's to judge, not a noisy result; the
    proof's own synchronised blocks 3x slower still are."""
    from accelbench.backends.numpy_backend import NumpyBackend
    from accelbench.runner import audit as audit_module
    from accelbench.timing import quiesce
    from accelbench.timing.clock import PerfCounterClock
    from accelbench.timing.sync_probe import Proof
    from accelbench.verdict import READ_BACK
    from accelbench.workloads.registry import get_workload

    median_s = 1e-3
    events: list[str] = []
    monkeypatch.setattr(quiesce, "settle", lambda *a, **k: events.append("settle"))

    def proof(*args, **kwargs):
        events.append("prove")
        return Proof(WAITS, "synchronize() waits", 1.0, proven_s=3 * median_s, synced_s=synced_factor * median_s)

    monkeypatch.setattr(audit_module, "prove", proof)
    backend = NumpyBackend()
    prepared = get_workload("matmul").prepare(backend, "cpu", {"n": 64, "dtype": "float64"}, 5)
    result = audit_module.audit(prepared, audit_module.Capture(prepared.compute), lambda: None, PerfCounterClock(),
                                "cpu", calls_per_sample=1, median_s=median_s, overhead_s=0.0,
                                to_host=backend.to_host)
    assert any(f.kind == READ_BACK for f in result.findings) == flagged, result.findings
    assert events[-2:] == ["settle", "prove"]  # the checks' BLAS workers settle before the proof's blocks
