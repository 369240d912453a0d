"""Batch writes: add_results and imports store a whole batch in one transaction, or nothing."""
from __future__ import annotations

import math
import sqlite3

import pytest

from accelbench.errors import UsageError
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.store.db import Store
from accelbench.store.export import export_runs, import_document

MACHINE = {"hostname": "node1", "os": "Linux", "python": "3.11", "inventory": {}, "software": {},
           "environment": {}}


def measurement(n: int, samples=(1.0e-3, 1.1e-3, 0.9e-3)) -> Measurement:
    return Measurement(spec=Spec.make("matmul", "numpy", "cpu", n=n, dtype="float64"),
                       phases_s={"compute": tuple(samples)}, first_call_s=2e-3,
                       work=Work(2.0 * n**3, 24.0 * n * n), check=Check(True, 1e-9, 1e-6, "ok", "cpu"),
                       threads=2)


def poison(store: Store, n: int) -> None:
    """Make SQLite itself refuse the result of order n: a real failure in the middle of a batch."""
    conn = sqlite3.connect(store.path)
    conn.execute(f"CREATE TRIGGER poison BEFORE INSERT ON results WHEN json_extract(NEW.params_json, '$.n') = {n} "
                 "BEGIN SELECT RAISE(ABORT, 'poisoned result'); END")
    conn.commit()
    conn.close()


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "results.sqlite") as opened:
        yield opened


def test_add_results_stores_every_measurement_in_order(store):
    run_id = store.start_run(MACHINE, {})
    batch = [measurement(n) for n in (64, 128, 256, 512)]
    assert store.add_results(run_id, batch) == 4
    store.add_result(run_id, measurement(1024))  # one by one still works alongside
    assert store.results(run_id) == batch + [measurement(1024)]
    assert store.add_results(run_id, []) == 0


def test_add_results_is_all_or_nothing(store):
    run_id = store.start_run(MACHINE, {})
    store.add_result(run_id, measurement(32))
    poison(store, 256)
    with pytest.raises(sqlite3.IntegrityError, match="poisoned"):
        store.add_results(run_id, [measurement(n) for n in (64, 128, 256, 512)])
    assert store.results(run_id) == [measurement(32)]  # the earlier result, none of the batch


def test_add_results_to_an_unknown_run_names_it(store):
    with pytest.raises(UsageError, match="unknown run 'nope'"):
        store.add_results("nope", [measurement(64)])


def _two_run_document(tmp_path) -> tuple[dict, list[str]]:
    with Store(tmp_path / "source.sqlite") as source:
        ids = []
        for sizes in ((64, 128), (256, 512)):
            run_id = source.restore_run(f"run-{sizes[0]}", started_at=f"2025-01-0{len(ids) + 1}T00:00:00+00:00",
                                        finished_at=None, status="complete", accelbench_version="0.1.0",
                                        selection={}, machine=MACHINE, tags={},
                                        results=[measurement(n) for n in sizes], skips=())
            assert run_id
            ids.append(f"run-{sizes[0]}")
        return export_runs(source, ids), ids


def test_an_import_that_fails_in_its_last_run_stores_none_of_its_runs(tmp_path, store):
    doc, ids = _two_run_document(tmp_path)
    poison(store, 512)  # the last result of the second run
    with pytest.raises(sqlite3.IntegrityError, match="poisoned"):
        import_document(store, doc)
    assert store.runs() == []
    with sqlite3.connect(store.path) as conn:  # no orphan machine, tag or result rows either
        assert [conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("runs", "machines", "run_tags", "results")] == [0, 0, 0, 0]


def test_an_import_stores_every_run_when_all_is_well(tmp_path, store):
    doc, ids = _two_run_document(tmp_path)
    assert import_document(store, doc) == ids
    assert [len(store.results(run_id)) for run_id in ids] == [2, 2]
    assert import_document(store, doc) == []  # already there: nothing added, nothing changed


@pytest.mark.parametrize("bad, message", [
    (True, "expected a number, got true"),
    (-1e-3, "expected a number >= 1e-15"),
    (0, "expected a number >= 1e-15"),  # a sample of 0 s makes every rate infinite
    (math.nan, "expected a finite number"),
    (10**400, "expected a finite number"),
    (None, "expected a number, got null"),
])
def test_a_bad_sample_among_many_is_named_by_its_path(tmp_path, store, bad, message):
    doc, _ = _two_run_document(tmp_path)
    doc["runs"][1]["results"][0]["phases_s"]["compute"][2] = bad
    with pytest.raises(UsageError) as error:
        import_document(store, doc)
    assert str(error.value).startswith(f"runs[1].results[0].phases_s.compute[2]: {message}"), str(error.value)
    assert store.runs() == []


def test_samples_up_to_the_bound_are_accepted_and_beyond_it_refused(tmp_path, store):
    doc, ids = _two_run_document(tmp_path)
    doc["runs"][0]["results"][0]["phases_s"]["compute"] = [1e7, 1e7, 1e7]  # about four months
    assert import_document(store, doc) == ids
    assert store.results(ids[0])[0].samples_s == (1e7, 1e7, 1e7)
    doc["runs"][0]["results"][0]["phases_s"]["compute"] = [1e308, 1e308, 1e308]  # rates would be 0, sums inf
    with pytest.raises(UsageError, match=r"phases_s\.compute\[0\]: expected a number <= 1e\+07"):
        import_document(store, doc)
