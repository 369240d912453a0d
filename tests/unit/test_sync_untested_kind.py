"""A backend whose synchronisation could not be probed says so on each result: decided by the
probe's `tested` flag, never by the words of its detail (issue 43)."""
from __future__ import annotations

import pytest

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.results import Spec
from accelbench.runner.execute import TrustContext, measure_item
from accelbench.runner.plan import PlanItem
from accelbench.timing.rigor import RIGORS
from accelbench.timing.sync_probe import SyncProbe
from accelbench.verdict import SYNC_UNTESTED


def _kinds(probe: SyncProbe) -> set[str]:
    backend = NumpyBackend()
    trust = TrustContext(sync_probes={(backend.name, "cpu"): probe})
    spec = Spec.make("reduce", "numpy", "cpu", n=4096, dtype="float32")
    measured = measure_item(PlanItem(spec, None), backend, RIGORS["quick"], seed=3, trust=trust)
    return {reason.kind for reason in measured.verdict_reasons} | {w.kind for w in measured.warnings}


@pytest.mark.parametrize("detail", ["synchronisation untested: its matrix product could not run",
                                    "no matrix product here, so nothing was probed"])
def test_an_untested_probe_is_said_whatever_its_words(detail):
    assert SYNC_UNTESTED in _kinds(SyncProbe(True, detail, tested=False))


def test_words_that_read_untested_do_not_make_a_tested_probe_untested():
    assert SYNC_UNTESTED not in _kinds(SyncProbe(True, "synchronisation untested: only words", tested=True))
