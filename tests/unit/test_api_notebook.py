"""The Python API as a notebook user meets it: errors raised, short displays, the function run as
written, arguments checked first, a DataFrame safe to aggregate, a progress line (issue 31)."""
from __future__ import annotations

import math
import random
import sys
import types

import numpy as np
import pytest

import accelbench
from accelbench.errors import UsageError
from accelbench.results import Check, Measurement, Skip, Spec, Work
from accelbench.session import RunResults, thread_counts, with_threads
from accelbench.store.db import Store
from accelbench.vocabulary import usable_cpus


def _measurement(spec: Spec, median_s: float, *, verdict: str = "valid", reasons=(), threads=None) -> Measurement:
    rng = random.Random(hash(spec.key) % 1000)
    samples = tuple(median_s * math.exp(0.01 * rng.gauss(0, 1)) for _ in range(30))
    return Measurement(spec=spec, phases_s={"compute": samples}, first_call_s=samples[0],
                       work=Work(flops=2.0 * 512**3, bytes_moved=3 * 8 * 512**2),
                       check=Check(verdict != "invalid", 1e-9 if verdict != "invalid" else 0.5, 1e-6),
                       threads=threads, telemetry={"big": ["x" * 200] * 50}, verdict=verdict,
                       verdict_reasons=tuple(reasons))


def _big_run(interrupted: bool = True) -> RunResults:
    """A run with many results of every verdict, skips and failures, without timing anything."""
    ms = []
    for n in range(64, 64 + 40):
        for threads in (1, 2):
            ms.append(_measurement(Spec.make("matmul", "numpy", "cpu", n=n, dtype="float64", threads=threads),
                                   1e-4 * n / threads, threads=threads))
        ms.append(_measurement(Spec.make("matmul", "torch", "cuda:0", n=n, dtype="float64"), 1e-5 * n,
                               verdict="noisy", reasons=(f"other processes used {n}% of the GPU",)))
    ms.append(_measurement(Spec.make("matmul", "torch", "cuda:0", n=7, dtype="float64"), 1e-3, verdict="invalid",
                           reasons=("check failed: relative error 5.00e-01 exceeds the tolerance 1.0e-09",)))
    skips = ([Skip(Spec.make("matmul", "pyopencl", "opencl:0:0", n=n, dtype="float16"), "no float16 here")
              for n in range(30)]
             + [Skip(Spec.make("matmul", "jax", "cpu", n=64, dtype="float64"), "failed: TypeError: boom\nTraceback …")])
    return RunResults("r-big", "db.sqlite", ms, skips, interrupted=interrupted, rigor="quick")


# -- displays ------------------------------------------------------------------------------------


def test_a_large_run_reprs_in_a_few_lines_and_its_html_shows_everything_that_went_wrong():
    run = _big_run()
    text = repr(run)
    assert len(text) < 2000 and len(text.splitlines()) < 25, text
    assert text.startswith("accelbench run r-big (INTERRUPTED") and "1 failed" in text and "30 skipped" in text
    assert "failed: matmul jax@cpu" in text and "more results: results.to_pandas()" in text
    assert str(run) == text  # print() is as short as the repr
    html = run._repr_html_()
    assert "Interrupted" in html and "<b>Failed</b> (1)" in html and "<b>Skipped</b> (30)" in html
    assert "failed: TypeError: boom" in html and "Traceback" not in html  # the first line of a failure only
    # every row's verdict and reason in plain text, not only in a tooltip
    assert html.count("noisy: other processes used") == 40 and "invalid: check failed: relative error 5.00e-01" in html
    assert "title=" not in html
    # an invalid row shows no time: it counts nowhere
    invalid_row = html[html.index("n=7<"):html.index("n=7<") + 400]
    assert "not counted" in invalid_row and " ms ± " not in invalid_row
    assert "Interrupted" not in _big_run(interrupted=False)._repr_html_()


def test_one_result_the_headline_findings_and_a_comparison_repr_as_sentences():
    run = _big_run(interrupted=False)
    row, measurement = run.rows[0], run.measurements[0]
    assert repr(row).startswith("Row(matmul numpy@cpu (1 thread) dtype=float64 n=64: ") and len(repr(row)) < 200
    assert repr(measurement).startswith("Measurement(matmul numpy@cpu dtype=float64 n=64 threads=1: median ")
    assert "xxxx" not in repr(measurement) and len(repr(measurement)) < 300  # no telemetry
    headline = run.headline()
    assert repr(headline).startswith("Headline (the answer):\n  torch@cuda:0") and len(repr(headline)) < 4000
    assert "SpeedupCI(" not in repr(headline) and "DeviceVerdict(" not in repr(headline)
    findings = run.findings()
    assert repr(findings).startswith(f"Findings ({len(findings)}):") and "Finding(kind=" not in repr(findings)


def test_a_comparison_of_two_runs_reprs_its_verdict_first(tmp_path):
    from accelbench.report.compare import compare_runs, load_run

    db = str(tmp_path / "c.sqlite")
    a = accelbench.run("matmul", sizes=[64], dtypes="float32", backends="numpy", threads=1, db=db)
    b = accelbench.run("matmul", sizes=[64], dtypes="float32", backends="numpy", threads=1, db=db)
    comparison = compare_runs(load_run(a.run_id, db), load_run(b.run_id, db))
    text = repr(comparison)
    assert text.startswith(f"Comparison: run {b.run_id} against baseline {a.run_id}") and len(text) < 2000
    assert "same" in text.splitlines()[1] or "inconclusive" in text.splitlines()[1]


# -- the function as written ---------------------------------------------------------------------


def test_an_error_in_the_function_is_raised_in_the_caller_with_where_it_ran(tmp_path):
    db = tmp_path / "e.sqlite"
    a = np.ones(100)
    with pytest.raises(NameError, match="undefined_name") as raised:
        accelbench.bench(lambda x: x + undefined_name, [a], threads=1, name="raises", db=str(db))  # noqa: F821
    notes = " ".join(getattr(raised.value, "__notes__", [])) or str(raised.value.__cause__ or "")
    assert "raised by your function 'raises' on numpy@cpu" in notes
    run_id = notes.split("stored as ")[1].split()[0]
    with Store(db) as store:  # stored as a failure too, nothing measured
        assert not store.results(run_id)
        assert [s.reason.split(":")[1].strip() for s in store.skips(run_id)] == ["NameError"]
    # the traceback starts at the user's function, not in the timing machinery
    frames = []
    tb = raised.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert frames[-1] == "<lambda>" and "measure" not in frames


def test_a_failure_on_a_backend_not_asked_for_is_listed_not_raised():
    from accelbench.api import _raise_own_error
    from accelbench.workloads.custom import FunctionWorkload

    custom = FunctionWorkload(lambda x: x, [np.ones(3)])
    custom.raised[("torch", "cuda:0")] = ("function", TypeError("not for torch"))
    _raise_own_error(custom, ["numpy"], _big_run())  # torch was not asked for: nothing raised
    custom.raised[("numpy", "cpu")] = ("reference", ValueError("bad reference"))
    with pytest.raises(ValueError, match="bad reference"):
        _raise_own_error(custom, ["numpy"], _big_run())


def test_numpy_inputs_run_on_numpy_only_and_the_function_leaves_no_workload_behind(tmp_path):
    from accelbench.workloads.registry import workload_names

    a = np.random.default_rng(0).uniform(-1, 1, (64, 64))
    results = accelbench.bench(lambda x: x.sum(axis=1), [a], reference=lambda x: x.sum(axis=1), threads=1,
                               name="rowsums_once", db=str(tmp_path / "n.sqlite"))
    assert {(m.spec.backend, m.spec.device, m.threads) for m in results.measurements} == {("numpy", "cpu", 1)}
    assert not results.skips
    assert "rowsums_once" not in workload_names()
    with pytest.raises(UsageError, match="^workloads: unknown 'rowsums_once'"):
        accelbench.run("rowsums_once", db=str(tmp_path / "n.sqlite"))


def test_torch_tensors_run_on_torch_where_they_live():
    torch = pytest.importorskip("torch")
    from accelbench.workloads.custom import FunctionWorkload

    custom = FunctionWorkload(lambda x: torch.softmax(x, 1), [torch.ones(4, 3)])
    assert custom.framework == "torch" and custom.dtypes == ("float32",)
    assert FunctionWorkload(lambda x: x, [torch.ones(3, dtype=torch.bfloat16)]).dtypes == ("bfloat16",)
    assert FunctionWorkload(lambda x: x, [np.ones(3), 2.0]).framework == "numpy"
    with pytest.raises(UsageError, match="^inputs: "):
        FunctionWorkload(lambda x: x, "abc")


def test_torch_bench_measures_torch_alone(tmp_path):
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((64, 32)))
    results = accelbench.bench(lambda t: torch.softmax(t, 1), [x], threads=1, name="torch_softmax",
                               reference=lambda a: np.exp(a) / np.exp(a).sum(axis=1, keepdims=True),
                               db=str(tmp_path / "t.sqlite"))
    assert {m.spec.backend for m in results.measurements} | {s.spec.backend for s in results.skips} == {"torch"}
    assert all(m.check.passed for m in results.measurements)


# -- arguments -----------------------------------------------------------------------------------


@pytest.mark.parametrize("call, argument", [
    (lambda db: accelbench.run("matmul", rigor="fast", db=db), "rigor"),
    (lambda db: accelbench.run("matmul", threads=0, db=db), "threads"),
    (lambda db: accelbench.run("matmul", timeout=-1, db=db), "timeout"),
    (lambda db: accelbench.run("matmul", sizes="1000", db=db), "sizes"),
    (lambda db: accelbench.run("matmul", devices="cuda:7", db=db), "devices"),
    (lambda db: accelbench.run("matmul", dtypes="float8", db=db), "dtypes"),
    (lambda db: accelbench.run("matmull", db=db), "workloads"),
    (lambda db: accelbench.run("matmul", backends="nope", db=db), "backends"),
    (lambda db: accelbench.bench(lambda x: x, [np.ones(3)], rigor="fast", db=db), "rigor"),
    (lambda db: accelbench.bench(lambda x: x, [np.ones(3)], devices="cuda:7", db=db), "devices"),
    (lambda db: accelbench.bench(lambda x: x, [np.ones(3)], threads=[1, 10**6], db=db), "threads"),
    (lambda db: accelbench.bench(lambda x: x, [np.ones(3)], flops="many", db=db), "flops"),
    (lambda db: accelbench.bench(lambda x: x, [np.ones(3)], reference=3, db=db), "reference"),
    (lambda db: accelbench.bench(lambda x: x, [np.ones(3)], name="matmul", db=db), "name"),
    (lambda db: accelbench.bench(42, [np.ones(3)], db=db), "fn"),
])
def test_a_bad_argument_is_refused_by_its_python_name_before_anything_is_stored(tmp_path, call, argument):
    db = tmp_path / "never.sqlite"
    with pytest.raises(UsageError) as refused:
        call(str(db))
    assert str(refused.value).startswith(argument), str(refused.value)
    assert "--" not in str(refused.value).split(";")[0]  # no command-line flag names
    assert not db.exists()


def test_threads_argument():
    usable = usable_cpus()
    assert thread_counts(None) is None and thread_counts(1) == (1,) and thread_counts("all") == (usable,)
    assert thread_counts([1, "all", 1]) == tuple(sorted({1, usable}))
    for bad in (0, -1, True, 1.5, "2", [], usable + 1):
        with pytest.raises(UsageError, match="^threads: "):
            thread_counts(bad)
    from accelbench.backends.numpy_backend import NumpyBackend
    from accelbench.runner.plan import build_plan

    plan = with_threads(build_plan(["matmul"], sizes=[64, 128], dtypes=["float32"], backends={"numpy": NumpyBackend()},
                                   known_devices={"cpu"}), (1,))
    assert [(i.spec.param("n"), i.threads, i.spec.param("threads")) for i in plan.items] == [(64, 1, 1), (128, 1, 1)]


def test_run_measures_the_cpu_on_the_threads_asked_for(tmp_path):
    results = accelbench.run("matmul", sizes=[64], dtypes="float32", backends="numpy", threads=1,
                             db=str(tmp_path / "r.sqlite"))
    assert [m.threads for m in results.measurements] == [1]


# -- the DataFrame -------------------------------------------------------------------------------


def test_to_pandas_is_safe_to_aggregate():
    pytest.importorskip("pandas")
    df = _big_run().to_pandas()
    invalid = df[df.verdict == "invalid"]
    assert len(invalid) == 1 and invalid[["median_s", "ci_low_s", "ci_high_s", "rate"]].isna().all(axis=None)
    assert df[df.verdict != "invalid"].median_s.notna().all()
    assert df.threads.dtype == "int64" and set(df.threads) == {0, 1, 2}
    assert set(df[df.device == "cuda:0"].threads) == {0}
    assert {"numpy@cpu (1 thread)", "numpy@cpu (2 threads)", "torch@cuda:0"} == set(df.series)
    records = _big_run().to_records()  # the CSV's records keep the raw median of an invalid result
    assert [r["median_s"] for r in records if r["verdict"] == "invalid"][0] > 0


# -- several results in one table ----------------------------------------------------------------


def test_compare_puts_several_results_in_one_table():
    run = _big_run(interrupted=False)
    other = RunResults("r-2", "db", [_measurement(Spec.make("softmax", "numpy", "cpu", dtype="float64", threads=2),
                                                  2e-3, threads=2)], [])
    table = accelbench.Compare([run, other])
    text = repr(table)
    header = text.splitlines()[0]
    assert "numpy@cpu (1 thread)" in header and "torch@cuda:0" in header
    line = next(t for t in text.splitlines() if t.startswith("softmax dtype=float64"))
    assert "2.00 ms" in line or "1.99 ms" in line or "2.01 ms" in line
    assert "failed" in next(t for t in text.splitlines() if t.startswith("matmul dtype=float64 n=64 "))
    assert "matmul dtype=float64 n=7" in text and "invalid" in text
    assert "<table" in table._repr_html_() and "softmax dtype=float64" in table._repr_html_()
    with pytest.raises(UsageError):
        accelbench.Compare([run, "not a result"])


# -- progress ------------------------------------------------------------------------------------


def test_progress_in_a_notebook_is_one_line_updated_in_place(monkeypatch):
    from accelbench.report import notebook_progress
    from accelbench.runner.plan import PlanItem

    shown: list[tuple[str, str]] = []

    class Handle:
        def update(self, data, raw):
            shown.append(("update", data["text/plain"]))

    def display(data, raw, display_id):
        shown.append(("display", data["text/plain"]))
        return Handle()

    fake = types.ModuleType("IPython.display")
    fake.display = display  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython.display", fake)
    now = [0.0]
    item = PlanItem(Spec.make("matmul", "numpy", "cpu", n=64, threads=1), 1)
    quick = notebook_progress.NotebookProgress(1, 0.5, show=True, clock=lambda: now[0])
    quick.on_start(item)
    quick.on_done(item, None)
    assert shown == []  # expected under 2 s, and it was
    slow = notebook_progress.NotebookProgress(1, 0.5, show=True, clock=lambda: now[0])
    slow.on_start(item)
    now[0] = 3.0  # ... but it took longer: shown from then on
    slow.on_done(item, Skip(item.spec, "failed: x"))
    slow.finish(interrupted=False)
    assert [kind for kind, _ in shown] == ["display", "update"]
    assert shown[-1][1] == "accelbench: 1 of 1 measured (1 skipped or failed), 3 s; done"
    shown.clear()
    long = notebook_progress.NotebookProgress(12, 0.75, show=True, clock=lambda: now[0])
    long.on_start(item)
    long.finish(interrupted=True)
    assert shown[0] == ("display", "accelbench: 0 of 12 measured, 0 s") and shown[-1][1].endswith("interrupted")
    assert "now: matmul numpy@cpu (1 thread) n=64" in shown[1][1]
    assert not notebook_progress.in_kernel()  # pytest is no Jupyter kernel: nothing shown by default
