"""Cheats that behave honestly whenever they believe a call is checked (issue 41, tests/sneaky.py):
with the timed blocks the audited ones, each is caught, or gains at most 1.25× undetected.

The fast tier runs one cell of each cheat, each under a different "when"; the full table (every cheat
× every when × every core workload, benchmarks/audit_power.py) runs in the slow tier."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from audit_power import LIMIT, confirmed, applies, cell, honest_median, sweep  # noqa: E402
from sneaky import KINDS, WHENS  # noqa: E402

FAST = [("skip", "stack", "matmul"), ("every_kth", "identity", "triad"), ("lower", "buffer", "elementwise"),
        ("alias", "time", "stream"), ("partial_wait", "always", "matmul"), ("threads", "always", "matmul"),
        ("skip", "buffer", "memcpy h2d"), ("alias", "always", "memcpy d2h"), ("every_kth", "depth", "reduce"),
        ("every_kth", "stack", "montecarlo")]


@pytest.mark.parametrize("kind, when, workload", FAST)
def test_a_cheat_that_hides_from_checks_is_caught(kind, when, workload):
    assert applies(kind, workload)
    found = cell(kind, when, workload, honest_s=1.0)
    if not found.caught:  # a busy machine can take the gain away (a pool of 2 on cores the hypervisor
        # stole from ran like one): then the gain, measured beside an honest median, is what is judged
        found = confirmed(cell(kind, when, workload, honest_median(workload)))
    assert found.caught or found.inflation <= LIMIT, found


@pytest.mark.slow
def test_every_cell_is_caught_or_gains_little():
    """Every cheat × every when × every core workload (about 5 minutes on 2 cores)."""
    cells = sweep(KINDS, WHENS)
    missed = [c for c in cells if not c.caught and c.inflation > LIMIT]
    assert not missed, missed


@pytest.mark.parametrize("workload", ["matmul", "triad", "memcpy d2d"])
def test_the_honest_backend_beside_them_is_not_refused(workload):
    from sneaky import Sneaky

    from audit_power import measure

    m = measure(Sneaky("honest", separate=workload.startswith("memcpy")), workload)
    assert m.verdict != "invalid", m.verdict_reasons
