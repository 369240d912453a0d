"""Each report figure drawn from synthetic data, and left out with a note when its data is missing."""
from __future__ import annotations

import struct

import pytest

pytest.importorskip("matplotlib", reason="figures need matplotlib: pip install accelbench[plot]")

from synthetic_runs import (BREAK_EVEN_SIZES, DEVICES, break_even_measurements,  # noqa: E402
                            expected_transfer_share, measurement, run_data)

from accelbench.report import figures, roofline  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size_px(png: bytes) -> tuple[int, int]:
    assert png[:8] == PNG_MAGIC
    return struct.unpack(">II", png[16:24])


@pytest.fixture(scope="module")
def break_even_run():
    return run_data(break_even_measurements())


@pytest.fixture(scope="module")
def cpu_only_run():
    ms = [measurement("matmul", "numpy", "cpu", compute_s=0.01 * n / 500, threads=2, n=n, dtype="float32")
          for n in (500, 1000)]
    return run_data(ms, {"cpu": DEVICES["cpu"]})


def assert_drawn(result):
    assert result.present and result.note is None
    width_px, height_px = png_size_px(result.png)
    assert width_px >= 600 and height_px >= 250


def test_time_per_size_labels_each_order_with_its_memory(break_even_run):
    result = figures.time_per_size(break_even_run)
    assert_drawn(result)
    # 3 × 2000² × 4 bytes = 45.8 MiB, as the seed 000 chart labels its orders
    assert figures.footprint_label(2000, "float32") == "2000 (45.8 MiB)"
    assert result.facts["labels"]["float32"] == [figures.footprint_label(n, "float32") for n in BREAK_EVEN_SIZES]


def test_speedup_figure_marks_the_end_to_end_break_even(break_even_run):
    result = figures.speedup_vs_size(break_even_run)
    assert_drawn(result)
    [crossing] = result.facts["crossings"]  # resident is faster everywhere: only end-to-end crosses
    assert crossing["series"].endswith("end-to-end") and crossing["supported"]
    assert crossing["n"] == pytest.approx(2000, rel=0.05)


def test_time_split_shows_the_transfer_share(break_even_run):
    result = figures.time_split(break_even_run)
    assert_drawn(result)
    [(label, shares)] = result.facts["transfer_share"].items()
    assert label.startswith("torch@cuda:0")
    for n in BREAK_EVEN_SIZES:  # shares of the summed phases; end-to-end is their sum here
        assert shares[n] == pytest.approx(expected_transfer_share(n), rel=0.02)


def test_roofline_places_results_under_measured_and_datasheet_ceilings():
    n = 2**24
    ms = [measurement("stream", "torch", "cuda:0", compute_s=3 * n * 8 / 400e9, n=n, dtype="float64", kernel="triad"),
          measurement("reduce", "torch", "cuda:0", compute_s=n * 4 / 200e9, n=n, dtype="float32"),
          measurement("matmul", "torch", "cuda:0", compute_s=2 * 4000**3 / 8e12, n=4000, dtype="float32")]
    result = roofline.roofline(run_data(ms))
    assert_drawn(result)
    facts = result.facts["cuda:0"]
    assert facts["bandwidth_b_per_s"] == pytest.approx(400e9, rel=0.01)
    assert facts["ceilings_flop_per_s"]["float32"] == pytest.approx(8e12, rel=0.01)
    by_workload = {p["workload"]: p for p in facts["points"]}
    assert by_workload["reduce"]["intensity"] == pytest.approx(0.25)
    assert by_workload["reduce"]["fraction"] == pytest.approx(0.5, rel=0.02)   # 200 of 400 GB/s
    assert by_workload["matmul"]["fraction"] == pytest.approx(1.0, rel=0.01)   # it is the ceiling
    ceilings = roofline.device_ceilings(run_data(ms).rows, "cuda:0", DEVICES["cuda:0"])
    assert ceilings["sheet"]["float32"].value == 10e12 and ceilings["bandwidth_sheet"].value == 500e9


def test_precision_figure_compares_dtypes_at_a_shared_order():
    ms = [measurement("matmul", "torch", "cuda:0", compute_s=t, n=2000, dtype=d)
          for d, t in (("float64", 0.4), ("float32", 0.1), ("bfloat16", 0.05))]
    ms.append(measurement("matmul", "torch", "cuda:0", compute_s=0.01, n=1000, dtype="float32"))
    result = roofline.precision_speed(run_data(ms))
    assert_drawn(result)
    [(label, facts)] = result.facts.items()
    assert facts["n"] == 2000
    rates = facts["rates_flop_per_s"]
    assert rates["float32"] / rates["float64"] == pytest.approx(4, rel=0.01)
    assert rates["bfloat16"] / rates["float32"] == pytest.approx(2, rel=0.01)


def test_figures_without_their_data_are_omitted_with_a_note(cpu_only_run):
    assert figures.time_per_size(cpu_only_run).present
    for build, missing in ((figures.speedup_vs_size, "speed-ups"), (figures.time_split, "time split"),
                           (roofline.precision_speed, "precision")):
        result = build(cpu_only_run)
        assert result.png is None and missing in result.note and result.note.startswith("no data")
    memcpy_only = run_data([measurement("stream", "numpy", "cpu", compute_s=0.01, threads=2, n=2**20,
                                        dtype="float64", kernel="copy")])
    empty = roofline.roofline(memcpy_only)  # a copy does no arithmetic: nothing to place
    assert not empty.present and "no data for a roofline" in empty.note
    assert not figures.time_per_size(memcpy_only).present


def test_make_figures_returns_every_figure_in_order(break_even_run):
    results = figures.make_figures(break_even_run)
    assert [r.name for r in results] == ["matmul-time", "matmul-speedup", "matmul-time-split", "roofline", "precision",
                                         "stream-bandwidth", "transfer-bandwidth", "reduce-elementwise",
                                         "stats-speedup", "stats-accuracy", "dl-curves", "dl-batches", "telemetry"]
    assert [r.present for r in results][:5] == [True, True, True, True, False]  # one dtype: no precision chart
    # matmul only, no telemetry: the other figures are left out without a note
    assert all(r.png is None and r.note is None for r in results[5:])
