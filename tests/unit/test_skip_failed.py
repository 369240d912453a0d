"""A failed spec is told from one that cannot run by one property, read the same after storing."""
from __future__ import annotations

from accelbench.results import Skip, Spec
from accelbench.store.db import Store


def test_a_failure_is_failed_and_a_combination_that_cannot_run_is_not(tmp_path):
    spec = Spec.make("matmul", "numpy", "cpu", n=64, dtype="float32")
    failed, cannot = Skip.failure(spec, "RuntimeError: boom"), Skip(spec, "numpy cannot run bfloat16 here")
    assert failed.failed and failed.reason == "failed: RuntimeError: boom"
    assert not cannot.failed
    store = Store(tmp_path / "r.sqlite")
    run_id = store.start_run({"hostname": "test"}, {"workloads": ["matmul"]})
    store.add_skip(run_id, failed)
    store.add_skip(run_id, cannot)
    assert [s.failed for s in store.skips(run_id)] == [True, False]
