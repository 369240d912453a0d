"""Every command, piped with no $COLUMNS (a log file, `| less`, a CI job), prints lines of at most
80 columns with every word whole: tables switch to their narrow layouts, nothing is cut short
("inconclu…"). Diagnostics on stderr stay one line each (grep, CI), so only stdout is measured.

The database is real and small: quick matmul runs on the CPU (and PoCL where it works), and a
stored cluster sweep for `fleet`, as tests/unit/test_fleet_view.py builds one.
"""
from __future__ import annotations

import math
import re

import pytest
from piped_cli import piped
from rich.cells import cell_len

from accelbench.results import Check, Measurement, Spec, Work
from accelbench.store.db import Store

pytestmark = pytest.mark.slow  # real runs: seconds each

# a word rich or textwrap cut short, or a verdict cut to fit a column
CUT = re.compile(r"\w+…|\b(inconclu|inconclus|inconclusi|incon|slowe|faste)\b")




def _sweep(db: str) -> None:
    """Four nodes of one type, one of them slow (`accelbench fleet` flags it)."""
    spec = Spec.make("matmul", "numpy", "cpu", n=512, dtype="float32")
    with Store(db) as store:
        for index, (node, rate) in enumerate({"a1": 100e9, "a2": 101e9, "a3": 99e9,
                                              "node-with-a-rather-long-name-07": 40e9}.items()):
            seconds = 2.0 * 512**3 / rate
            result = Measurement(spec=spec, phases_s={"compute": tuple(seconds * (1 + 0.002 * math.sin(i))
                                                                       for i in range(30))},
                                 first_call_s=seconds, work=Work(2.0 * 512**3, 12.0 * 512**2),
                                 check=Check(True, 1e-7, 1e-3))
            store.restore_run(f"sweep1-{index:03d}", started_at=f"2026-12-01T00:00:{index:02d}+00:00",
                              finished_at=None, status="complete", accelbench_version="test", selection={},
                              machine={"hostname": node}, tags={"node": node, "node_features": "typea",
                                                                "submission": "sweep1"},
                              results=[result], skips=())


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    from accelbench.session import load_backends

    folder = tmp_path_factory.mktemp("piped")
    path = str(folder / "results.sqlite")
    backend = load_backends(["pyopencl"]).get("pyopencl")
    opencl = bool(backend and backend.availability().ok and "opencl:0:0" in backend.device_ids())
    quick = ["run", "matmul", "--sizes", "64", "--dtype", "float32", "--rigor", "quick", "--db", path,
             "--no-progress", "--no-telemetry", "--backend", "numpy,pyopencl" if opencl else "numpy"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(folder / "config"))
        printed = [piped(quick), piped(quick)]
    assert [code for code, _ in printed] == [0, 0]
    _sweep(path)
    return {"path": path, "run": printed[-1][1], "folder": folder}


def _fits(text: str) -> None:
    wide = [line for line in text.splitlines() if cell_len(line) > 80]
    assert wide == [], "\n".join(wide)
    assert not CUT.search(text), CUT.search(text)


def test_run_piped_fits_80_columns(db):
    _fits(db["run"])
    words = " ".join(db["run"].split())
    assert "The answer" in words and "numpy" in words  # the CPU side, named


@pytest.mark.parametrize("argv", [
    ["compare", "latest~1", "latest"],       # the two real runs (the sweep is stored as days older)
    ["compare", "--reference", "latest"],
    ["info"], ["list"], ["runs", "--limit", "20"], ["ceilings"], ["fleet"],
    ["project", "latest", "--to", "h100"],
])
def test_command_piped_fits_80_columns(db, argv):
    code, text = piped([*argv, "--db", db["path"]] if argv[0] not in ("info", "list") else argv)
    assert code in (0, 1, 3) and text.strip(), (code, text)  # fleet: 1 (an outlier); check: 3 (busy)
    _fits(text)


def test_report_and_monitor_piped_fit_80_columns(db):
    code, text = piped(["report", "latest", "-o", str(db["folder"] / "report"), "--db", db["path"]])
    assert code == 0 and "report.html" in text
    _fits(text)
    code, text = piped(["monitor", "--duration", "1", "--interval", "0.5"])
    assert code == 0 and "Summary over" in text and " cpu  Utilization" in text
    _fits(text)


def test_check_piped_fits_80_columns(db):
    code, text = piped(["check", "--level", "quick", "--db", db["path"]])
    assert code in (0, 1, 3) and "cpu.matmul" in text
    _fits(text)
    assert "None cores" not in text  # no quota reads "measured nothing", not a Python None


def test_peak_and_the_pair_it_leaves_piped_fit_80_columns(db):
    code, text = piped(["peak", "--device", "cpu", "--budget", "8", "--orders", "64,128", "--db", db["path"]])
    assert code == 0 and "maximum" in text and "sustained" in text
    _fits(text)
    for argv in (["ceilings"], ["info"]):  # each now names the stored maximum and sustained rate
        code, text = piped([*argv, "--db", db["path"]])
        assert code == 0 and "sustained" in text, argv
        _fits(text)
