"""The telemetry chart marks the CPU's running clock where the drawn clock is only the nominal one
(no cpufreq): it reads the stored telemetry's label for that clock, never the words of its note."""
from __future__ import annotations

import dataclasses

import pytest
from synthetic_runs import CPU, measurement, run_data

pytest.importorskip("matplotlib")

from accelbench.report.figures_telemetry import telemetry_over_run  # noqa: E402

CLOCK = {"min": 2596.0, "max": 2596.0, "mean": 2596.0, "samples": 2}


def _run(labels: dict | None, notes: list[str]):
    cpu = {"source": "psutil", "metrics": {"frequency_mhz": CLOCK}, "notes": notes}
    if labels is not None:
        cpu["labels"] = labels
    m = measurement("matmul", "numpy", "cpu", compute_s=1e-3, threads=2, n=256, dtype="float32")
    m = dataclasses.replace(m, telemetry={"start_time": "2026-12-07T12:00:00+00:00", "window_s": 0.5,
                                          "devices": {"cpu": cpu}})
    device = dataclasses.replace(CPU, properties={**CPU.properties, "running_clock_mhz": 3450})
    return run_data([m], devices={"cpu": device})


NOMINAL = {"frequency_mhz": "Nominal clock"}


@pytest.mark.parametrize("notes", [["no cpufreq driver here (usual in a VM): the nominal clock is ..."],
                                   ["the kernel's frequency files are absent"], []])
def test_a_nominal_clock_label_marks_the_running_clock_whatever_the_note_says(notes):
    assert telemetry_over_run(_run(NOMINAL, notes)).facts["cpu_running_clock_mhz"] == 3450


def test_a_note_that_reads_like_no_cpufreq_marks_nothing_without_the_label():
    result = telemetry_over_run(_run(None, ["no cpufreq driver here (usual in a VM)"]))
    assert "cpu_running_clock_mhz" not in result.facts
