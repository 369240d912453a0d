"""After a run, `accelbench info` shows the measured ceilings next to formula and table figures."""
import json
import os
import sqlite3

import pytest

from accelbench.cli.main import main

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out


def _valid_workloads() -> set[str]:
    """Workloads with a valid result: only those may set a ceiling (a loaded machine makes some noisy)."""
    with sqlite3.connect(os.environ["ACCELBENCH_DB"]) as connection:
        return {w for (w,) in connection.execute("SELECT workload FROM results WHERE verdict = 'valid'")}


def test_info_shows_measured_peaks_after_a_run(capsys, ignore_machine_load):
    # conftest points ACCELBENCH_DB at a fresh file: run and info share it
    assert main(["run", "matmul", "--sizes", "256", "--dtype", "float32", "--backend", "numpy",
                 "--rigor", "quick", "--no-progress"]) == 0
    assert main(["run", "stream", "--sizes", "262144", "--dtype", "float64", "--backend", "numpy",
                 "--rigor", "quick", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["info", "--json", "--probe", "cpu"]) == 0
    (cpu,) = json.loads(capsys.readouterr().out)["devices"]
    measured = {p["metric"]: p for p in cpu["peaks"] if p["provenance"] == "measured"}
    valid = _valid_workloads()
    assert set(measured) == {metric for workload, metric in (("matmul", "fp32"), ("stream", "memory_bandwidth"))
                             if workload in valid}
    if "fp32" in measured:
        assert measured["fp32"]["value"] > 1e8 and "matmul" in measured["fp32"]["detail"]
    if "memory_bandwidth" in measured:
        assert measured["memory_bandwidth"]["inputs"]["workload"] == "stream"


def test_info_without_any_run_has_no_measured_peaks(capsys):
    assert main(["info", "--json", "--probe", "cpu"]) == 0
    (cpu,) = json.loads(capsys.readouterr().out)["devices"]
    assert not [p for p in cpu["peaks"] if p["provenance"] == "measured"]
