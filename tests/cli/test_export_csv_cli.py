"""Results for scripts: `run --json` and `export` carry every derived figure under a versioned
schema, `export --format csv` is one tidy row per stored result, and the R/pandas page's pandas code
runs on a real export. One real quick run (numpy on the CPU, PoCL where installed) serves them all."""
from __future__ import annotations

import contextlib
import io
import json
import math
import re
import shutil
from pathlib import Path

import pytest

from accelbench.backends.registry import availability
from accelbench.cli.main import main
from accelbench.report.tidy import TIDY_COLUMNS
from accelbench.runner.plan import usable_cpus
from accelbench.schemas import load_schema
from accelbench.store.db import Store
from accelbench.timing import stats
from accelbench.verdict import VERDICTS

pytestmark = pytest.mark.slow  # one real run of about 20 s, shared by the module

DOCS = Path(__file__).resolve().parents[2] / "docs"
SPEEDUPS = ("vs_cpu_all_cores", "vs_cpu_one_core", "end_to_end_vs_cpu_all_cores", "float32_vs_this_dtype")
WITH_OPENCL = availability("pyopencl").ok


def _main(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A real run: matmul, two orders, float32 and float64, one thread and all cores (and OpenCL)."""
    folder = tmp_path_factory.mktemp("measured")
    db = folder / "results.sqlite"
    backends, devices = ("numpy,pyopencl", "cpu,opencl:0:0") if WITH_OPENCL else ("numpy", "cpu")
    with pytest.MonkeyPatch.context() as patch:  # no user settings or database
        patch.setenv("XDG_CONFIG_HOME", str(folder / "config"))
        patch.setenv("ACCELBENCH_DB", str(db))
        # orders OpenBLAS runs on both threads (below ~128 it runs one: then no all-cores baseline)
        code, out = _main("run", "matmul", "--sizes", "192,256", "--dtype", "float32,float64", "--backend", backends,
                          "--device", devices, "--rigor", "quick", "--db", str(db), "--no-progress", "--json")
    assert code == 0, out
    return db, json.loads(out)


def _stored(db: Path):
    with Store(db) as store:
        (run,) = store.runs()
        return run, store.results(run.id)


def _key(spec: dict) -> tuple:
    return (spec["workload"], spec["backend"], spec["device"], " ".join(f"{k}={v}" for k, v in sorted(spec["params"].items())))


# -- run --json --------------------------------------------------------------------------------

def test_run_json_is_schema_version_1_and_validates(measured):
    jsonschema = pytest.importorskip("jsonschema")
    _, document = measured
    jsonschema.Draft202012Validator.check_schema(load_schema("results"))
    jsonschema.validate(document, load_schema("results"))
    assert document["schema_version"] == 1 and document["results"]


def test_run_json_schema_refuses_a_result_without_its_figures(measured):
    jsonschema = pytest.importorskip("jsonschema")
    document = json.loads(json.dumps(measured[1]))
    del document["results"][0]["derived"]["median_s"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, load_schema("results"))


def test_run_json_results_carry_consistent_derived_figures(measured):
    _, document = measured
    for result in document["results"]:
        d, samples = result["derived"], result["phases_s"]["compute"]
        assert result["phases_s"]["compute"] and d["n_samples"] == len(samples)  # raw samples kept
        assert d["median_s"] == pytest.approx(stats.median(samples), rel=1e-12)
        assert len(samples) >= 6  # fast specs: dozens of samples, so every interval is finite
        assert min(samples) <= d["ci_low_s"] <= d["median_s"] <= d["ci_high_s"] <= max(samples) + d["median_s"]
        halfwidth = max(d["median_s"] - d["ci_low_s"], d["ci_high_s"] - d["median_s"])
        assert d["relative_spread"] == pytest.approx(halfwidth / d["median_s"])
        if result["verdict"] == "invalid":
            assert d["rate"] is None
        else:
            work = result["work"]["flops"] if d["rate_unit"] == "GFLOP/s" else result["work"]["bytes_moved"]
            assert d["rate"] * 1e9 == pytest.approx(work / d["median_s"], rel=1e-9)
        for name in SPEEDUPS:
            ratio = d["speedups"][name]
            if ratio is not None:
                assert ratio["ci_low"] <= ratio["ratio"] <= ratio["ci_high"], (name, ratio)
                assert ratio["paired"] == (ratio["pairs"] > 0)
    by_key = {_key(r["spec"]): r["derived"] for r in document["results"]}
    float64 = {key: d for key, d in by_key.items() if "dtype=float64" in key[3]}
    assert float64
    for key, d in float64.items():  # defined where both precisions count (a refused twin has no rate)
        twin = by_key.get(key[:3] + (key[3].replace("dtype=float64", "dtype=float32"),))
        if d["rate"] and twin and twin["rate"]:
            assert d["speedups"]["float32_vs_this_dtype"], key
    if usable_cpus() >= 2:
        one_thread = [d for key, d in by_key.items() if key[1] == "numpy" and "threads=1" in key[3]]
        assert one_thread and all(d["baseline_role"] == "cpu_one_thread" for d in one_thread)
        # quick pairs the answer's comparisons only (against all cores, or one core where all cores collapsed)
        assert any(d["speedups"][name] and d["speedups"][name]["pairs"] > 0
                   for d in by_key.values() for name in ("vs_cpu_all_cores", "vs_cpu_one_core"))
    if WITH_OPENCL:
        device = [d for key, d in by_key.items() if key[1] == "pyopencl" and d["rate"]]
        assert device and all(d["speedups"]["end_to_end_vs_cpu_all_cores"] for d in device)
        assert all(0 <= d["transfer_percent_of_end_to_end"] <= 100 and d["end_to_end_median_s"] for d in device)


def test_run_schema_option_prints_the_shipped_schema():
    code, out = _main("run", "--schema")
    assert code == 0 and json.loads(out) == load_schema("results")


# -- export --format csv -----------------------------------------------------------------------

def test_csv_export_reads_back_in_pandas_one_row_per_stored_result(measured, tmp_path):
    pd = pytest.importorskip("pandas")
    db, document = measured
    path = tmp_path / "results.csv"
    assert _main("export", "--format", "csv", "-o", str(path), "--db", str(db))[0] == 0
    code, to_stdout = _main("export", "latest", "--format", "csv", "--db", str(db))
    assert code == 0 and to_stdout == path.read_text()

    df = pd.read_csv(path)
    run, results = _stored(db)
    assert tuple(df.columns) == TIDY_COLUMNS
    assert len(df) == len(results) == len(document["results"])
    assert set(df.run_id) == {run.id} and set(df.verdict) <= set(VERDICTS)
    assert df.median_s.dtype.kind == "f" and df["size"].dtype.kind == "i"
    stored = {(m.spec.workload, m.spec.backend, m.spec.device, " ".join(f"{k}={v}" for k, v in m.spec.params)):
              stats.median(m.samples_s) for m in results}
    for row in df.itertuples():
        assert row.median_s == pytest.approx(stored[(row.workload, row.backend, row.device, row.params)], rel=1e-12)
    # the CSV and `run --json` agree figure for figure (the export recomputes them from the store)
    derived = {_key(r["spec"]): r["derived"] for r in document["results"]}
    for row in df.to_dict("records"):
        d = derived[(row["workload"], row["backend"], row["device"], row["params"])]
        assert row["rate_unit"] == d["rate_unit"] and _same(row["rate"], d["rate"])
        assert _same(row["ci_low_s"], d["ci_low_s"]) and _same(row["ci_high_s"], d["ci_high_s"])
        for name in SPEEDUPS:
            ratio = d["speedups"][name] or {}
            assert _same(row[f"speedup_{name}"], ratio.get("ratio")), name
            assert _same(row[f"speedup_{name}_pairs"], ratio.get("pairs")), name


def _same(cell, value) -> bool:
    """A CSV cell (NaN when empty) against the JSON figure (null when absent)."""
    if value is None:
        return isinstance(cell, float) and math.isnan(cell)
    return cell == pytest.approx(value, rel=1e-12)


def test_export_json_results_carry_derived_figures_and_still_import(measured, tmp_path):
    db, _ = measured
    path = tmp_path / "run.json"
    assert _main("export", "--db", str(db), "-o", str(path))[0] == 0
    document = json.loads(path.read_text())
    assert document["results_schema_version"] == 1
    results = [r for run in document["runs"] for r in run["results"]]
    assert results and all(r["derived"]["median_s"] > 0 for r in results)
    jsonschema = pytest.importorskip("jsonschema")
    schema = load_schema("results")
    for result in results:
        jsonschema.validate(result["derived"], {"$defs": schema["$defs"], "$ref": "#/$defs/derived"})
    # a file's figures are never believed: import ignores them, export recomputes them from the samples
    true_median_s = results[0]["derived"]["median_s"]
    results[0]["derived"].update(median_s=1e9, rate=1e9)
    path.write_text(json.dumps(document))
    other = str(tmp_path / "other.sqlite")
    assert _main("import", str(path), "--db", other)[0] == 0
    with Store(other) as store:
        assert len(store.results(document["runs"][0]["id"])) == len(results)
    again = json.loads(_main("export", "--db", other)[1])
    assert again["runs"][0]["results"][0]["derived"]["median_s"] == true_median_s


def test_export_selects_runs_as_the_other_commands_do(tmp_path, capsys):
    db = str(tmp_path / "two.sqlite")
    for _ in range(2):
        assert main(["run", "reduce", "--sizes", "2048", "--backend", "numpy", "--device", "cpu",
                     "--rigor", "quick", "--db", db, "--no-progress"]) == 0
    capsys.readouterr()
    with Store(db) as store:
        older, newer = reversed([r.id for r in store.runs()])

    def run_ids(*argv: str) -> list[str]:
        code, out = _main("export", "--format", "csv", "--db", db, *argv)
        assert code == 0
        return list(dict.fromkeys(line.split(",", 1)[0] for line in out.splitlines()[1:]))

    assert run_ids() == [newer] and run_ids("latest~1") == [older]
    assert run_ids("--all") == [older, newer]
    assert run_ids(older[-6:]) == [older]        # a unique suffix
    assert run_ids(newer[:17], older) == [newer, older]  # a unique prefix, in the order given
    assert main(["export", "--all", "latest", "--db", db]) == 2
    assert "--all" in capsys.readouterr().err


# -- docs/r-and-pandas.md --------------------------------------------------------------------------

def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def test_the_docs_pandas_code_runs_on_a_real_export(measured, tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    db, document = measured
    shutil.copy(db, tmp_path / "results.sqlite")
    assert _main("export", "--format", "csv", "-o", str(tmp_path / "results.csv"), "--db", str(db))[0] == 0
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    blocks = _python_blocks(DOCS / "r-and-pandas.md")
    assert len(blocks) == 3
    namespaces = []
    for block in blocks:
        namespace: dict = {}
        exec(compile(block, "docs/r-and-pandas.md", "exec"), namespace)  # our own page's code, as a reader runs it
        namespaces.append(namespace)
    import matplotlib.pyplot as plt

    plt.close("all")
    figure = tmp_path / "matmul-cpu-vs-device.png"
    assert figure.stat().st_size > 5_000
    # the chart has one bar group per order and one series per backend@device of float32 matmul
    times = namespaces[2]["times"]
    float32 = {(r["spec"]["backend"], r["spec"]["device"], r["spec"]["params"].get("threads"))
               for r in document["results"] if r["spec"]["params"]["dtype"] == "float32" and r["verdict"] != "invalid"}
    assert list(times.index) == [192, 256] and len(times.columns) == len(float32)
    # the database route gives the medians the CSV holds
    import pandas as pd

    raw, csv = namespaces[1]["raw"], namespaces[0]["df"]  # the CSV block kept only results not invalid
    assert len(raw) == len(document["results"]) and len(csv) > 0

    def key(backend, device, n, dtype, threads) -> tuple:
        return (backend, device, int(n), dtype, 0 if pd.isna(threads) else int(threads))

    from_db = {key(r.backend, r.device, r.n, r.dtype, r.threads): r.median_s for r in raw.itertuples()}
    for r in csv.itertuples():
        assert r.median_s == pytest.approx(from_db[key(r.backend, r.device, r.size, r.dtype, r.threads)], rel=1e-12)
