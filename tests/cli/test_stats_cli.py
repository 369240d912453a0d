"""The statistics workloads as a user runs them: results checked and stored with their accuracy
figures, a biased generator's results run to the end but marked failed."""
import json

import pytest

from accelbench.backends.registry import availability
from accelbench.cli.main import main
from accelbench.store.db import Store
from accelbench.workloads.stats.rng import NumpyRandom

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out

QUICK = ["--rigor", "quick", "--no-progress"]


def test_a_biased_generator_is_run_and_its_results_marked_failed(tmp_path, monkeypatch, capsys):
    honest = NumpyRandom.normal
    monkeypatch.setattr(NumpyRandom, "normal", lambda self, shape, dtype: honest(self, shape, dtype) + 0.05)
    db = tmp_path / "biased.sqlite"
    code = main(["run", "montecarlo", "--sizes", "65536", "--dtype", "float64", "--backend", "numpy",
                 "--db", str(db), *QUICK])
    out = capsys.readouterr().out
    assert code == 0 and "check failed" in out
    with Store(db) as store:
        (run,) = store.runs()
        results = store.results(run.id)
    assert len(results) == 2  # one thread and all threads
    for m in results:
        assert not m.check.passed and m.warnings[0].startswith("invalid, time not counted: check failed")
        assert m.extra["error_in_standard_errors"] > 4.5 and "SE" in m.check.detail


def test_stats_workloads_run_checked_on_numpy_and_opencl(tmp_path, capsys):
    if not availability("pyopencl").ok:
        pytest.skip(f"pyopencl: {availability('pyopencl').reason}")
    code = main(["run", "montecarlo", "integrate", "--sizes", "65536", "--dtype", "float32", "--quick",
                 "--backend", "numpy,pyopencl", "--db", str(tmp_path / "r.sqlite"), "--json", *QUICK])
    document = json.loads(capsys.readouterr().out)
    results = document["results"]
    # a second OpenCL implementation of this CPU (the wheel's PoCL beside Debian's) is a skip: each
    # processor is measured once unless --device names it
    assert code == 0 and all("another OpenCL implementation on this same CPU" in s["reason"]
                             for s in document["skips"]), document["skips"]
    opencl = [r for r in results if r["spec"]["backend"] == "pyopencl"]
    devices = {r["spec"]["device"] for r in opencl}
    assert devices
    # montecarlo, integrate × 2 rules (3 specs): numpy × 2 thread counts, then each OpenCL device
    assert len(results) == 3 * (2 + len(devices))
    assert all(r["check"]["passed"] for r in results), [r["check"]["detail"] for r in results]
    assert all("end_to_end" in r["phases_s"] for r in opencl)  # its transfers timed too
    for device in devices:
        assert len([r for r in opencl if r["spec"]["device"] == device]) == 3
        (price,) = [r for r in opencl if r["spec"]["workload"] == "montecarlo" and r["spec"]["device"] == device]
        extra = price["extra"]
        assert extra["items_per_call"] == 65536 and extra["item_unit"] == "draws"
        assert 0 < extra["rel_error_vs_float64"] < 1e-5 and extra["error_in_standard_errors"] < 4.5


def test_many_chains_outpace_one_chain_in_a_run(tmp_path, capsys):
    code = main(["run", "mcmc", "--quick", "--dtype", "float32", "--backend", "numpy",
                 "--db", str(tmp_path / "m.sqlite"), "--json", *QUICK])
    results = json.loads(capsys.readouterr().out)["results"]
    assert code == 0 and len(results) == 4 and all(r["check"]["passed"] for r in results)
    rate = {(r["spec"]["params"]["variant"], r["spec"]["params"]["threads"]):
            r["extra"]["items_per_call"] / r["derived"]["median_s"] for r in results}
    for threads in {t for _, t in rate}:
        assert rate[("chains", threads)] > 20 * rate[("sequential", threads)]
