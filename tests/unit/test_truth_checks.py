"""Checks of issue #26 that need no measurement: the scattered poison, the fresh-input decision under a
delayed warm call, and threads beyond the recorded count (tests/cli/test_truth_plugins.py runs
the plugins that motivated them through the CLI)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from accelbench.backends import raw_access
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.runner import audit
from accelbench.runner.execute import _threads_beyond_claim
from accelbench.verdict import INVALID
from accelbench.workloads.rotation import Rotation, Variant


def _rotation(rows: int = 300) -> Rotation:
    rng = np.random.default_rng(0)

    def make(key: int) -> Variant:
        a = rng.standard_normal((rows, 8))
        return Variant([a], a * 2.0, out=np.empty_like(a))

    def judge(output, variant):
        error = float(np.nanmax(np.abs(output - variant.reference))) if not np.isnan(output).any() else float("inf")
        return Check(error == 0.0, error, 0.0, f"error {error}")

    return Rotation(make, judge)


def test_a_scattered_poison_marks_few_elements_at_random_places():
    a = np.zeros((512, 64))
    assert raw_access.poison_scattered(a, lambda size, count: np.random.default_rng(1).choice(size, count, False))
    hit = np.isnan(a)
    assert hit.sum() == a.size // raw_access.SCATTER_EVERY
    assert hit.any(axis=1).sum() > 32  # spread over the rows, not one block
    assert not raw_access.poison_scattered(np.zeros(4, dtype=np.int64), lambda s, c: np.arange(c))


def test_a_partial_rewrite_that_peeks_for_the_poison_fails_under_the_scattered_poison():
    """Rewrites a third of its output per call, and all of it when a sampled element is NaN: a
    whole-buffer poison is seen and survived; a scattered one, in either phase, is not."""
    rotation = _rotation()
    turn = {}

    def op(v: Variant):
        out, a = v.out, v.inputs[0]
        if id(out) not in turn or np.isnan(out[0, 0]):
            np.multiply(a, 2.0, out=out)
            turn[id(out)] = 0
        else:
            third = out.shape[0] // 3
            s = slice(turn[id(out)] * third, (turn[id(out)] + 1) * third)
            np.multiply(a[s], 2.0, out=out[s])
            turn[id(out)] = (turn[id(out)] + 1) % 3
        return out

    rotation.call(op)
    rotation.call(op)  # each buffer written once in full: from here on it rewrites thirds
    failed = []
    for _ in range(2):  # two poisons in a row: one of them scatters, whatever the random start
        rotation.poison(lambda array: False)
        for _ in range(3):
            rotation.call(op)
        failed.append(not rotation.check().passed)
    assert any(failed) and not all(failed)


class _Timed:
    """A fake clock and call: a fresh call (right after a refresh) takes `fresh_s`, a warm one `warm_s`,
    the first warm call `first_warm_s` (a burst of load delayed it)."""

    def __init__(self, fresh_s: float, warm_s: float, first_warm_s: float) -> None:
        self.t, self.fresh_s, self.warm_s, self.first_warm_s = 0.0, fresh_s, warm_s, first_warm_s
        self.after_refresh, self.warm_calls = False, 0

    def now(self) -> float:
        return self.t

    def refresh(self) -> None:
        self.after_refresh = True

    def call(self) -> str:
        if self.after_refresh:
            self.t += self.fresh_s
            self.after_refresh = False
        else:
            self.warm_calls += 1
            self.t += self.first_warm_s if self.warm_calls == 1 else self.warm_s
        return "out"


def _fresh(timed: _Timed, median_s: float):
    prepared = dataclasses.make_dataclass("P", [("refresh", object), ("wake", object), ("check_output", object)])(
        timed.refresh, None, lambda _out: Check(True, 0.0, 0.0, "ok"))
    return audit._fresh_calls(prepared, audit.Capture(timed.call), lambda: None, timed, 0.0, median_s)


def test_a_cache_whose_first_warm_call_was_delayed_is_still_caught(monkeypatch):
    monkeypatch.setattr(audit, "FRESH_PAUSE_S", 0.0)
    _, _, found = _fresh(_Timed(fresh_s=2e-3, warm_s=5e-6, first_warm_s=3e-3), median_s=5e-6)
    assert [f.status for f in found] == [INVALID] and "new inputs" in found[0].reason


def test_an_honest_call_slower_alone_than_in_the_blocks_is_not_refused(monkeypatch):
    monkeypatch.setattr(audit, "FRESH_PAUSE_S", 0.0)
    _, _, found = _fresh(_Timed(fresh_s=15e-3, warm_s=15e-3, first_warm_s=15e-3), median_s=2.2e-3)
    assert found == []


def _cpu_result(threads: int, demanded: float) -> Measurement:
    return Measurement(spec=Spec.make("matmul", "x", "cpu", n=64, threads=threads), phases_s={"compute": (1e-3,)},
                       first_call_s=0.0, work=Work(flops=1.0, bytes_moved=1.0), threads=threads,
                       check=Check(True, 0.0, 1.0, "ok"),
                       telemetry={"interference": {"compute": {"own_demand_cores": demanded}}})


@pytest.mark.parametrize("threads, demanded, open_cores, refused", [
    (1, 1.05, 4, False), (1, 1.4, 4, False), (1, 1.9, 4, True), (1, 1.9, 2, True), (2, 2.4, 4, False),
    (2, 3.6, 4, True),
    # more threads runnable than cores open only queue: 2 claimed of 2 cores cannot be beyond
    (2, 3.2, 2, False), (1, 3.2, 1, False)])
def test_threads_beyond_the_recorded_count_are_invalid(threads, demanded, open_cores, refused, monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(open_cores)))
    found = _threads_beyond_claim(_cpu_result(threads, demanded))
    assert bool(found) == refused
    assert all(f.status == INVALID and f"claims {threads}" in f.reason for f in found)


def _peeking_partial_writer_escapes(elements: int, audits: int) -> int:
    """How many of `audits` real audit rounds (runner/audit._checked_rounds) pass a writer that rewrites
    a third of its output per call, and all of it when one of 8 sampled output elements is not what
    it last wrote (tests/cli/truth_plugins.py `peek_partial`'s rule)."""
    from accelbench.backends.numpy_backend import NumpyBackend
    from accelbench.timing.clock import PerfCounterClock

    picks = np.linspace(0, elements - 1, 8).astype(np.int64)
    escaped = 0
    for seed in range(audits):
        rng = np.random.default_rng(seed)

        def make(key: int) -> Variant:
            a = rng.standard_normal(elements)
            return Variant([a], a * 2.0, out=np.empty_like(a))

        def judge(output, variant):
            ok = not np.isnan(output).any() and np.array_equal(output, variant.reference)
            return Check(ok, 0.0 if ok else float("inf"), 0.0, "")

        state: dict = {}

        def op(v: Variant):
            out, a = v.out, v.inputs[0]
            known, third = state.get(id(out)), -(-elements // 3)
            if known is None or known[0] != tuple(out[picks].tolist()):
                np.multiply(a, 2.0, out=out)
                turn = 0
            else:
                s = slice(known[1] * third, min(elements, (known[1] + 1) * third))
                np.multiply(a[s], 2.0, out=out[s])
                turn = (known[1] + 1) % 3
            state[id(out)] = (tuple(out[picks].tolist()), turn)
            return out

        prepared = Rotation(make, judge).prepared(NumpyBackend(), op=op)
        capture = audit.Capture(prepared.compute)
        for _ in range(8):
            capture()  # the timed blocks before the audit
        escaped += audit._checked_rounds(prepared, capture, lambda: None, PerfCounterClock(), 1).passed
    return escaped


def test_a_peeking_partial_writer_rarely_escapes_the_audit():
    """Measured: with one element in 512 poisoned (no cap) and 3 rounds, such a writer passed 1.5-3.3% of
    audits (its 8 samples hit a poisoned element, so it rewrote everything); with at most 256 poisoned
    and 4 rounds (two scattered, whatever the start), 0.08-0.13% (0 of 600 at 2^20 elements)."""
    escaped = _peeking_partial_writer_escapes(4096, 2000)
    assert escaped <= 10, f"{escaped} of 2000 audits passed a partial writer"


def test_the_scattered_poison_is_capped_so_sampling_rarely_finds_it():
    a = np.zeros(1 << 20)
    assert raw_access.poison_scattered(a, lambda size, count: np.random.default_rng(2).choice(size, count, False))
    assert np.isnan(a).sum() == raw_access.SCATTER_MAX
    assert audit.CHECK_ROUNDS >= 4  # poisons alternate: two of the rounds scatter, whatever the random start
