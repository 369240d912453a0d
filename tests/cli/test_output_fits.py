"""Every terminal table fits 80 columns (`COLUMNS=80 accelbench …` piped, as a user's narrow terminal
or a CI log set to 80), words and labels whole, and a wide terminal still gets the full one-line rows.

The runs are real and quick (matmul n=256 on the CPU through numpy and torch, and through pyopencl on
PoCL where it works here); the other commands read them back from the same temporary database.
"""
from __future__ import annotations

import contextlib
import io
import re

import pytest
from rich.cells import cell_len

from accelbench.cli.main import main
from accelbench.session import load_backends

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out

MEDIAN_WITH_UNIT = re.compile(r"\d+(\.\d+)? (ns|µs|ms|s)\b")
VERDICT_WORDS = ("valid", "noisy", "unverified", "invalid")


def cli(argv: list[str], columns: int) -> tuple[int, str]:
    """`COLUMNS=columns accelbench argv…` with its output piped: (exit status, stdout)."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setenv("COLUMNS", str(columns))
        code = main(argv)
    return code, out.getvalue()


def cut_short(text: str) -> list[str]:
    """Words rich truncated to fit ("sta…", "com…"); a list's own "… 3 more" is not one."""
    return re.findall(r"\w+…", text)


def too_wide(text: str, columns: int = 80) -> list[str]:
    return [line for line in text.splitlines() if cell_len(line) > columns]


def _pyopencl_works() -> bool:
    backend = load_backends(["pyopencl"]).get("pyopencl")
    return bool(backend and backend.availability().ok and "opencl:0:0" in backend.device_ids())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three real runs in one database; the run output of each as printed at its width."""
    folder = tmp_path_factory.mktemp("fits")
    db = str(folder / "results.sqlite")
    # n=256: OpenBLAS runs a smaller product on one thread, and a "2-thread" baseline that ran one
    # at a time is no all-cores figure (no speed-up columns to lay out)
    # --details: the per-result tables (the default screen is tests/cli/test_one_screen.py's)
    quick = ["run", "matmul", "--sizes", "256", "--dtype", "float32", "--rigor", "quick", "--db", db,
             "--no-progress", "--no-telemetry", "--details"]
    standard = [word if word != "quick" else "standard" for word in quick]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(folder / "config"))  # no settings file picks the devices
        printed = {"cpu80": cli(quick + ["--device", "cpu"], 80),
                   # standard rigor pairs every speed-up shown (quick pairs only the answer's)
                   "numpy200": cli(standard + ["--backend", "numpy", "--device", "cpu"], 200)}
        if _pyopencl_works():
            printed["opencl80"] = cli(quick + ["--backend", "numpy,pyopencl"], 80)
            # 240: three speed-up cells may each read "contaminated" (PoCL's threads can slow the
            # next block), which needs about 215 columns on one line
            printed["opencl240"] = cli(standard + ["--backend", "numpy,pyopencl"], 240)
    for name, (code, _) in printed.items():
        assert code == 0, name
    return {"db": db, "printed": {name: text for name, (_, text) in printed.items()}}


def table_rows(text: str, label: str, parameters: str) -> list[str]:
    """The results table's rows for one label: a line of the answer may name the same result in a sentence."""
    return [line for line in text.splitlines() if line.startswith(label) and "│" in line and parameters in line]


def _assert_run_tables_readable(text: str) -> None:
    assert too_wide(text) == [], "\n".join(too_wide(text))
    assert "numpy@cpu (1 thread)" in text and "numpy@cpu (2 threads)" in text  # labels whole
    assert "dtype=float32 n=256" in text                                        # parameters whole
    assert MEDIAN_WITH_UNIT.search(text) and re.search(r"± \d+(\.\d+)?%", text)  # median with its spread
    assert "GFLOP/s" in text and "baseline" in text
    assert "Verdicts:" in text and any(re.search(rf"\b{word}\b", text) for word in VERDICT_WORDS)
    assert cut_short(text) == []


def test_run_at_80_columns(runs):
    text = runs["printed"]["cpu80"]
    _assert_run_tables_readable(text)
    assert "torch@cpu (2 threads)" in text
    assert "speed-ups [95% CI]" in text and re.search(r"\d+ pairs each|N pairs", text)  # count in the legend
    # a speed-up cell: the ratio with its interval under it, never split inside a number
    assert re.search(r"\d\.\d+×", text) and re.search(r"\[\d[\d.]*–[\d.]+\]", text)


@pytest.mark.skipif(not _pyopencl_works(), reason="no working OpenCL device opencl:0:0 (PoCL) here")
def test_run_with_opencl_at_80_columns(runs):
    text = runs["printed"]["opencl80"]
    _assert_run_tables_readable(text)
    assert "pyopencl@opencl:0:0" in text and "end-to-end" in text


@pytest.mark.skipif(not _pyopencl_works(), reason="no working OpenCL device opencl:0:0 (PoCL) here")
def test_run_with_opencl_at_240_columns_keeps_one_line_per_result(runs):
    text = runs["printed"]["opencl240"]
    assert too_wide(text, 240) == []
    rows = table_rows(text, "pyopencl@opencl:0:0", "dtype=float32 n=256")
    assert rows and MEDIAN_WITH_UNIT.search(rows[0]) and "GFLOP/s" in rows[0], text
    figures, intervals = re.findall(r"\d×", rows[0]), re.findall(r"\[[\d.]+–[\d.∞]+\]", rows[0])
    # all cores, one core, end-to-end: each with its interval; where other processes held the cores
    # (all cores ran slower than one thread: the screen says so) there is no all-cores baseline
    collapsed = "slower on all cores than on one thread" in " ".join(text.split())
    assert len(figures) == len(intervals) and (len(figures) == 3 or (collapsed and len(figures) >= 1)), text


def test_run_wide_keeps_one_line_per_result(runs):
    text = runs["printed"]["numpy200"]
    assert too_wide(text, 200) == []
    rows = table_rows(text, "numpy@cpu (1 thread)", "dtype=float32 n=256")
    assert rows, text  # where, parameters, median, rate and speed-up on one line
    row = rows[0]
    assert MEDIAN_WITH_UNIT.search(row) and "GFLOP/s" in row and "baseline" in row
    # the basis in the cell itself when there is room; no figure where all cores ran slower than
    # one thread (other processes held them: the screen says so), so no basis either
    collapsed = "slower on all cores than on one thread" in " ".join(text.split())
    assert re.search(r"\(\d+ pairs\)|unpaired", row) or (collapsed and "×" not in row), text


def test_runs_at_80_columns_shows_statuses_and_workloads(runs):
    code, text = cli(["runs", "--db", runs["db"]], 80)
    assert code == 0 and too_wide(text) == [], "\n".join(too_wide(text))
    assert cut_short(text) == []
    for header in ("run", "status", "workloads", "results", "tags"):
        assert re.search(rf"\b{header}\b", text), header
    assert text.count("complete") == len(runs["printed"]) and "matmul" in text
    code, wide = cli(["runs", "--db", runs["db"]], 200)
    lines = [line for line in wide.splitlines() if "complete" in line]
    assert len(lines) == len(runs["printed"]) and all("matmul" in line and re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", line)
                                                       for line in lines)


def test_compare_at_80_columns(runs):
    code, text = cli(["compare", "latest~1", "latest", "--db", runs["db"]], 80)
    assert code == 0 and too_wide(text) == [], "\n".join(too_wide(text))
    assert "numpy@cpu (1 thread)" in text and MEDIAN_WITH_UNIT.search(text)
    assert re.search(r"\b(same|slower|faster|inconclusive|excluded)\b", text) and "Summary:" in text
    code, wide = cli(["compare", "latest~1", "latest", "--db", runs["db"]], 200)
    assert any("matmul numpy@cpu (1 thread) dtype=float32 n=256" in line and "×" in line for line in wide.splitlines())


@pytest.mark.parametrize("argv", [["list"], ["ceilings"], ["info"]])
def test_listings_at_80_columns(runs, argv):
    code, text = cli(argv + (["--db", runs["db"]] if argv != ["list"] else []), 80)
    assert code == 0 and text.strip()
    assert too_wide(text) == [], "\n".join(too_wide(text))
    assert cut_short(text) == []
    if argv == ["list"]:
        assert "matmul" in text and "numpy" in text and "float32" in text
    if argv == ["ceilings"]:  # a busy machine may leave no valid result to be a ceiling
        assert ("cpu" in text and "GFLOP/s" in text) or "No measured ceilings" in text
    if argv == ["info"]:
        assert "Peaks" in text and "GFLOP/s" in text


def test_projection_table_at_80_columns():
    """`accelbench project`'s table: a synthetic run (a verified STREAM sets the bandwidth here)."""
    from accelbench.cli import project_cmd
    from accelbench.report.compare.project import project_run
    from accelbench.report.compare.sources import RunData
    from accelbench.results import Check, Measurement, Spec, Work

    def measured(spec, median_s, flops, bytes_moved):
        return Measurement(spec=spec, phases_s={"compute": tuple(median_s * f for f in (0.99, 1.0, 1.01) * 4)},
                           first_call_s=median_s, work=Work(flops, bytes_moved), check=Check(True, 1e-7, 1e-5))

    n, triad_n = 2000, 2**24
    matmul = Spec.make("matmul", "numpy", "cpu", n=n, dtype="float32", threads=2)
    triad = Spec.make("stream", "numpy", "cpu", kernel="triad", n=triad_n, dtype="float64", threads=2)
    peaks = [{"metric": "fp32", "value": 166e9, "provenance": "formula", "detail": "2 cores × ..."}]
    machine = {"hostname": "box", "inventory": {"devices": [{"id": "cpu", "name": "AMD EPYC", "peaks": peaks}]}}
    run = RunData("run-1", source="test", measurements=(measured(matmul, 0.2, 2.0 * n**3, 12.0 * n * n),
                  measured(triad, 24 * triad_n / 20e9, 2.0 * triad_n, 24.0 * triad_n)), machine=machine)
    report = project_run(run, "h100")
    assert report.projections
    for columns in (80, 200):
        out = io.StringIO()
        with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
            patch.setenv("COLUMNS", str(columns))
            project_cmd._render(report)
        text = out.getvalue()
        assert too_wide(text, columns) == [] and cut_short(text) == []
        assert "numpy@cpu (2 threads)" in text and "PROJECTION" in text and MEDIAN_WITH_UNIT.search(text)
        assert "roofline" in text and re.search(r"\d+\.\d×", text)
        if columns == 200:  # the wide table: a projection on one line, its assumption beside it
            assert any("matmul numpy@cpu (2 threads) dtype=float32 n=2000" in line and "compute" in line
                       and "×" in line and "fp32" in line for line in text.splitlines()), text
