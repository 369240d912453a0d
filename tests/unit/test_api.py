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
    from accelbench.session import RunResults
    from accelbench.report.tidy import TIDY_COLUMNS

    frame = RunResults("x", "db", [], []).to_pandas()
    assert isinstance(frame, pd.DataFrame) and tuple(frame.columns) == TIDY_COLUMNS  # the CSV's columns


# -- honest by default -----------------------------------------------------------------------


def test_without_a_reference_the_result_is_unverified_and_never_a_ceiling(tmp_path):
    a = np.random.default_rng(3).uniform(-1, 1, (64, 64))
    results = accelbench.bench(lambda x, y: x @ y, [a, a], flops=2 * 64**3, devices="cpu", backends="numpy",
                               name="no_reference", db=str(tmp_path / "u.sqlite"))
    assert results.measurements and {m.verdict for m in results.measurements} == {"unverified"}
    assert all("no reference given" in m.verdict_reasons[0] for m in results.measurements)
    assert not any(m.trusted for m in results.measurements)
    assert {r["verdict"] for r in results.to_records()} == {"unverified"}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_inputs_dtype_is_measured_and_a_rate_comes_only_from_declared_work(tmp_path, dtype):
    a = np.random.default_rng(4).uniform(-1, 1, 5000).astype(dtype)
    results = accelbench.bench(lambda x: x * 2.0, [a], reference=lambda x: x * 2.0, threads=1,
                               name=f"double_{dtype}", db=str(tmp_path / "d.sqlite"))
    assert {m.spec.param("dtype") for m in results.measurements} == {dtype}
    assert {m.work.bytes_moved for m in results.measurements} == {0.0}  # nothing declared: no guess
    assert all(m.verdict in ("valid", "noisy") for m in results.measurements)
    assert [r["rate"] for r in results.to_records()] == [None]
    declared = accelbench.bench(lambda x: x * 2.0, [a], reference=lambda x: x * 2.0, threads=1,
                                bytes_moved=2 * a.nbytes, db=str(tmp_path / "d.sqlite"))
    (record,) = declared.to_records()
    assert record["rate_unit"] == "GB/s" and record["rate"] == pytest.approx(2 * a.nbytes / record["median_s"] / 1e9)


def test_outputs_are_waited_on_whatever_the_backend_tracks(tmp_path, monkeypatch):
    from accelbench.backends.numpy_backend import NumpyBackend

    waited = []
    monkeypatch.setattr(NumpyBackend, "wait_for", lambda self, output: waited.append(output))
    a = np.random.default_rng(5).uniform(-1, 1, 300)
    accelbench.bench(lambda x: x + 1.0, [a], reference=lambda x: x + 1.0, devices="cpu", backends="numpy",
                     name="plus_one", db=str(tmp_path / "w.sqlite"))
    outputs = [w for w in waited if isinstance(w, np.ndarray)]
    assert len(outputs) > 10 and all(w.shape == (300,) for w in outputs)  # every timed block's output


def test_a_kernel_only_backend_skips_a_user_function_with_a_reason_to_act_on(tmp_path):
    pytest.importorskip("pyopencl")
    from accelbench.backends.registry import get_backend

    opencl = get_backend("pyopencl")
    if not opencl.availability().ok or not opencl.device_ids():
        pytest.skip("no OpenCL device here")
    a = np.random.default_rng(6).uniform(-1, 1, (32, 32))
    results = accelbench.bench(lambda x, y: x @ y, [a, a], reference=lambda x, y: x @ y,
                               devices=opencl.device_ids()[:1], backends="pyopencl", name="cl_matmul",
                               db=str(tmp_path / "o.sqlite"))
    assert not results.measurements
    assert any("user functions run on numpy, torch, jax or cupy" in s.reason for s in results.skips)


def test_a_device_the_inventory_did_not_find_is_never_measured():
    from accelbench.backends.numpy_backend import NumpyBackend
    from accelbench.runner.plan import build_plan

    class Claims(NumpyBackend):
        def device_ids(self):
            return ["cpu", "cuda:7"]

    plan = build_plan(["matmul"], sizes=[64], dtypes=["float32"], backends={"claims": Claims()},
                      known_devices={"cpu"})
    assert {i.spec.device for i in plan.items} == {"cpu"}
    (skip,) = plan.skips
    assert skip.spec.device == "cuda:7" and "inventory did not find" in skip.reason
