"""The Python API: accelbench.run and accelbench.bench go through the same machinery as the CLI."""
import numpy as np
import pytest

import accelbench
from accelbench.store.db import Store


def test_bench_a_user_function_verifies_and_stores(tmp_path):
    db = tmp_path / "api.sqlite"
    a = np.random.default_rng(1).uniform(-1, 1, (96, 96))
    results = accelbench.bench(lambda x, y: x @ y, [a, a], flops=2 * 96**3, devices="cpu",
                               backends="numpy", name="user_matmul", db=str(db))
    assert results.measurements and all(m.check.passed for m in results.measurements)
    records = results.to_records()
    assert {r["workload"] for r in records} == {"user_matmul"} and all(r["rate"] > 0 for r in records)
    with Store(db) as store:
        assert len(store.results(results.run_id)) == len(results.measurements)


def test_bench_flags_a_function_that_disagrees_with_its_reference(tmp_path):
    a = np.random.default_rng(2).uniform(-1, 1, 1000)
    results = accelbench.bench(lambda x: x.sum() * 1.01, [a], reference=lambda x: x.sum(), devices="cpu",
                               backends="numpy", name="biased_sum", db=str(tmp_path / "b.sqlite"))
    assert results.measurements and not any(m.check.passed for m in results.measurements)


def test_decorator_and_run(tmp_path):
    @accelbench.workload(flops=2 * 64**3)
    def decorated_matmul(x, y):
        return x @ y

    a = np.ones((64, 64)) * 0.5
    results = decorated_matmul.bench([a, a], devices="cpu", backends="numpy", db=str(tmp_path / "d.sqlite"))
    assert all(m.check.passed for m in results.measurements)
    run = accelbench.run("matmul", sizes=[64], dtypes="float32", backends="numpy", db=str(tmp_path / "d.sqlite"))
    assert len(run.measurements) >= 1 and run.run_id != results.run_id


def test_to_pandas():
    pd = pytest.importorskip("pandas")
    from accelbench.runner.session import RunResults
    assert isinstance(RunResults("x", "db", [], []).to_pandas(), pd.DataFrame)
