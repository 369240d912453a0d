"""The audit is the timing (issue 41): a backend sees nothing that tells a judged block from another.

A recording backend logs, at every call, what a backend could observe about it: its call stack,
the state of its output buffer (poisoned or not), how many calls came since the last synchronize(),
whether it has seen its input objects before, how long since it last got new input objects, and how
long since its previous call. The audited timing (runner/block_audit.py) then decides, after each
block, whether to judge it; the calls of judged blocks and of the others must be alike in every
observable. A leaky audit (one that decides first and changes nothing before an unjudged block) is
told apart by the same comparison: the test of the test.
"""
from __future__ import annotations

import inspect
import math
import time
from collections import Counter

import numpy as np
import pytest

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.runner import block_audit
from accelbench.runner.audit import Capture
from accelbench.runner.block_audit import BlockAudit, block_audit_for
from accelbench.timing import stats
from accelbench.timing.harness import measure
from accelbench.timing.rigor import Rigor
from accelbench.workloads.registry import get_workload

RIGOR = Rigor("recorded", target_rel_ci=0.001, budget_s=1.5, min_samples=60, max_samples=160,
              max_warmup_samples=4, max_warmup_s=0.05, min_block_s=0.0004)
CATEGORICAL = ("stack", "poisoned", "since_sync", "seen_inputs")
NUMERIC = ("since_new_inputs_s", "since_last_call_s")


class Recorder(NumpyBackend):
    """numpy, logging what it could observe at each call (and the synchronize() calls between)."""

    name = "recorder"

    def __init__(self) -> None:
        super().__init__()
        self.log: list[dict | str] = []
        self.since_sync = 0
        self.seen: set[tuple[int, ...]] = set()
        self.new_inputs_at = time.perf_counter()
        self.last_call_at = time.perf_counter()

    def synchronize(self, device):
        self.since_sync = 0
        self.log.append("sync")

    def matmul(self, a, b, out=None):
        now = time.perf_counter()
        key = (id(a), id(b))
        if key not in self.seen:
            self.seen.add(key)
            self.new_inputs_at = now
        frames = tuple(f.function for f in inspect.stack(0)[1:14])
        self.log.append({"stack": frames, "poisoned": bool(out is not None and np.isnan(out).any()),
                         "since_sync": self.since_sync, "seen_inputs": len(self.seen),
                         "since_new_inputs_s": now - self.new_inputs_at, "since_last_call_s": now - self.last_call_at})
        self.since_sync += 1
        self.seen_count = len(self.seen)
        result = super().matmul(a, b, out=out)
        self.last_call_at = time.perf_counter()
        return result


def _recorded(audit_class: type[BlockAudit] = BlockAudit, share: float = 0.5) -> tuple[list[dict], list[dict]]:
    """(observations of calls in judged blocks, of calls in the other blocks), a matmul timed as a run
    times it (a small one: many blocks), half the blocks judged."""
    backend = Recorder()
    prepared = get_workload("matmul").prepare(backend, "cpu", {"n": 48, "dtype": "float64"}, 5)
    capture = Capture(prepared.compute)
    made = block_audit_for(prepared, capture, backend, None, RIGOR, on_host=True)
    assert made is not None
    audit = audit_class(**{f: getattr(made, f) for f in ("before_block", "check_output", "last_output", "read_back",
                                                         "clock", "variants", "rigor_name", "on_host", "device")})
    original = block_audit.CHECK_SHARE
    block_audit.CHECK_SHARE = share
    try:
        measure(capture, lambda: backend.synchronize("cpu"), rigor=RIGOR, hooks=audit)
    finally:
        block_audit.CHECK_SHARE = original
    blocks, current = [], []
    for entry in backend.log:
        if entry == "sync":
            if current:
                blocks.append(current)
            current = []
        else:
            current.append(entry)
    assert len(blocks) == len(audit.blocks), (len(blocks), len(audit.blocks))
    judged = [call for calls, b in zip(blocks, audit.blocks) if b.judged for call in calls]
    other = [call for calls, b in zip(blocks, audit.blocks) if not b.judged for call in calls]
    return judged, other


def differences(judged: list[dict], other: list[dict]) -> list[str]:
    """The observables whose distribution differs between the calls of judged blocks and the others:
    categorical ones by the share of each value (beyond what chance gives), numeric ones by a rank test."""
    found = []
    for name in CATEGORICAL:
        a, b = Counter(str(c[name]) for c in judged), Counter(str(c[name]) for c in other)
        for value in set(a) | set(b):
            p, q = a[value] / len(judged), b[value] / len(other)
            spread = math.sqrt(max(p * (1 - p), q * (1 - q), 0.02) * (1 / len(judged) + 1 / len(other)))
            if abs(p - q) > 5 * spread:
                found.append(f"{name}={value}: {p:.0%} of judged calls, {q:.0%} of the others")
    for name in NUMERIC:
        test = stats.mann_whitney([c[name] for c in judged], [c[name] for c in other])
        if test.p_value < 1e-4:
            found.append(f"{name}: judged median {stats.median([c[name] for c in judged]) * 1e6:.0f} µs, "
                         f"others {stats.median([c[name] for c in other]) * 1e6:.0f} µs (p={test.p_value:.1e})")
    return found


def test_a_judged_block_looks_like_any_other_to_the_backend():
    judged, other = _recorded()
    assert len(judged) >= 30 and len(other) >= 30, (len(judged), len(other))
    assert not differences(judged, other)


class LeakyAudit(BlockAudit):
    """Decides before the block, and leaves the inputs and outputs alone before a block it will not
    judge: the backend can see which blocks are checked (by its buffers, and its inputs' identity)."""

    def before(self, calls: int) -> None:
        self._will_judge = self._draw.random() < block_audit.CHECK_SHARE
        if self._will_judge:
            self.before_block(calls)
        self._cpu_start_s = time.process_time()

    def after(self, calls: int, start_s: float, end_s: float) -> float:
        seconds = super().after(calls, start_s, end_s)
        self.blocks[-1].judged = self._will_judge
        return seconds


def test_the_comparison_tells_a_leaky_audit_apart():
    judged, other = _recorded(LeakyAudit)
    found = differences(judged, other)
    assert any(f.startswith("poisoned=") for f in found), found


@pytest.mark.parametrize("field", ["poisoned", "since_sync"])
def test_each_observable_is_compared(field):
    """A difference planted in one observable of otherwise identical calls is found."""
    calls = [{"stack": ("a",), "poisoned": False, "since_sync": i % 3, "seen_inputs": 2,
              "since_new_inputs_s": 0.001 * (i % 7), "since_last_call_s": 1e-4} for i in range(200)]
    judged, other = [dict(c) for c in calls[:100]], [dict(c) for c in calls[100:]]
    assert not differences(judged, other)
    for c in judged:
        c[field] = True if field == "poisoned" else 0
    assert differences(judged, other)
