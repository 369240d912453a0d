"""Figures that tell the truth, checked on what was drawn: one colour per series in every figure,
linear axes from zero, log axes that say so, no bar stretched across a panel, no legend over a
point, speed-ups against both CPU baselines, and each new figure drawn exactly when its data exist.
Runs are stored in a real SQLite file and read back, as `accelbench report` reads them."""
from __future__ import annotations

import pytest

pytest.importorskip("matplotlib", reason="figures need matplotlib: pip install accelbench[plot]")

from figure_runs import full_run_measurements, measurement, stored_run  # noqa: E402

from accelbench.report import drawing, figure_base, figures, figures_speedup, roofline  # noqa: E402
from accelbench.report.build import write_report  # noqa: E402
from accelbench.report.energy_html import energy_html  # noqa: E402
from accelbench.results import Work  # noqa: E402

NEW_FIGURES = {"stream-bandwidth": "stream", "transfer-bandwidth": "memcpy", "reduce-elementwise": "reduce",
               "stats-speedup": "montecarlo", "stats-accuracy": "montecarlo", "dl-curves": "mlp",
               "dl-batches": "vgg-infer"}
BUILDERS = {"stream-bandwidth": "stream_bandwidth", "transfer-bandwidth": "transfer_bandwidth",
            "reduce-elementwise": "array_bandwidth", "stats-speedup": "stats_speedup",
            "stats-accuracy": "stats_accuracy", "dl-curves": "dl_curves", "dl-batches": "dl_batches"}


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    return stored_run(tmp_path_factory.mktemp("full"), full_run_measurements())


@pytest.fixture(scope="module")
def drawn(full_run):
    [figs] = drawing.draw_all([full_run])
    return {f.name: f for f in figs}


def test_every_figure_is_drawn_when_its_data_exist(drawn):
    assert all(f.present for f in drawn.values()), {n: f.note for n, f in drawn.items() if not f.present}
    assert set(NEW_FIGURES) | {"telemetry"} <= set(drawn)


def test_a_series_has_the_same_colour_in_every_figure(full_run, drawn):
    seen: dict[str, set[str]] = {}
    for figure in drawn.values():
        for label, colour in figure.drawn["colours"].items():
            if "@" in label:
                seen.setdefault(label, set()).add(colour)
    assert set(seen) == {"numpy@cpu (1 thread)", "numpy@cpu (2 threads)", "torch@cuda:0"}
    for label, colours in seen.items():
        assert colours == {full_run.colours[label]}, label
    assert len({c for cs in seen.values() for c in cs}) == 3  # and different series differ
    in_figures = sum(1 for f in drawn.values() if "torch@cuda:0" in f.drawn["colours"])
    assert in_figures >= 8


def test_colours_are_one_mapping_for_the_whole_report(tmp_path):
    """A series present in only one of two runs does not shift the others' colours between runs."""
    gpu_run = stored_run(tmp_path, full_run_measurements(("matmul",)), "20260101-000000-gpu")
    cpu_only = [m for m in full_run_measurements(("matmul",)) if m.spec.device == "cpu"]
    cpu_run = stored_run(tmp_path, cpu_only, "20260101-000001-cpu")
    both = drawing.draw_all([gpu_run, cpu_run])
    colour_of = [{label: c for f in figs for label, c in f.drawn.get("colours", {}).items()} for figs in both]
    for label in ("numpy@cpu (1 thread)", "numpy@cpu (2 threads)"):
        assert colour_of[0][label] == colour_of[1][label]
    alone = figures.make_figures(stored_run(tmp_path, cpu_only, "20260101-000002-alone"))
    # drawn on its own the CPU-only run would colour by its own labels: the report's mapping prevents that
    assert gpu_run.colours == cpu_run.colours and any(f.present for f in alone)


def test_linear_axes_start_at_zero_and_log_axes_say_so(drawn):
    checked = 0
    for figure in drawn.values():
        for axes in figure.drawn["axes"]:
            if axes["yscale"] == "linear":
                assert axes["ylim"][0] == 0.0, (figure.name, axes["title"], axes["ylim"])
            else:
                assert "log scale" in axes["ylabel"], (figure.name, axes["ylabel"])
                assert axes["bars"] == 0, f"{figure.name}: bars on a log axis"
            if axes["xscale"] == "log":
                assert "log scale" in axes["xlabel"], (figure.name, axes["xlabel"])
            checked += 1
    assert checked >= 20


def test_time_per_size_uses_points_on_a_labelled_log_axis_when_bars_would_hide_the_short_ones(drawn, tmp_path):
    [axes] = [a for a in drawn["matmul-time"].drawn["axes"] if a["title"].startswith("float32")]
    # 500 to 2000 on three series: the times differ 600×
    assert axes["yscale"] == "log" and axes["bars"] == 0 and "log scale" in axes["ylabel"]
    close = [measurement("matmul", "numpy", "cpu", 2, 0.01 * k, Work(2e9, 1e7), n=n, dtype="float32")
             for k, n in ((1, 500), (2, 600))]
    [axes] = figures.time_per_size(stored_run(tmp_path, close)).drawn["axes"]
    assert axes["yscale"] == "linear" and axes["bars"] == 2 and axes["ylim"][0] == 0.0


def test_no_single_bar_panel_is_stretched_across_the_width(tmp_path):
    one = stored_run(tmp_path, [m for m in full_run_measurements(("matmul",))
                                if m.spec.param("n") == 1000 and m.spec.param("dtype") == "float32"])
    split = figures.time_split(one)
    [axes] = split.drawn["axes"]
    assert axes["bars"] == 3  # one order: one stacked bar of three phases
    assert 0 < axes["widest_bar_fraction"] <= 0.25
    precision = [measurement("matmul", "torch", "cuda:0", None, t, Work(2e9, 1e7), n=1000, dtype=d)
                 for d, t in (("float64", 0.4), ("float32", 0.1))]
    [axes] = roofline.precision_speed(stored_run(tmp_path, precision, "20260101-000003-p")).drawn["axes"]
    assert axes["bars"] == 2 and axes["widest_bar_fraction"] <= 0.25 and axes["ylim"][0] == 0.0


def test_roofline_legend_covers_no_point(drawn):
    axes = drawn["roofline"].drawn["axes"]
    assert len(axes) == 2 and all(a["points_under_legend"] == 0 for a in axes)


def test_the_legend_check_sees_a_legend_over_points():
    """The check above could fail: a legend placed over a cloud of points is counted."""
    fig, [ax] = figure_base.new_figure(1)
    ax.scatter([0.1 * i for i in range(11)] * 11, [0.1 * j for j in range(11) for _ in range(11)], label="grid")
    ax.legend(loc="center", fontsize="xx-large")
    result = figure_base.finish(figure_base.FigureResult("probe", "probe"), fig)
    assert result.drawn["axes"][0]["points_under_legend"] > 0


def test_speedup_figure_shows_both_cpu_baselines_with_whiskers(drawn):
    result = drawn["matmul-speedup"]
    assert {"cpu_all_cores", "cpu_one_core"} <= set(result.facts["baselines"])
    curves = {(c["series"], c["baseline"]): c for c in result.facts["curves"]}
    all_cores, one_core = curves[("torch@cuda:0", "cpu_all_cores")], curves[("torch@cuda:0", "cpu_one_core")]
    for ratio, low, high in zip(all_cores["ratios"], all_cores["low"], all_cores["high"]):
        assert ratio == pytest.approx(10, rel=0.05) and low < ratio < high
    for a, b in zip(all_cores["ratios"], one_core["ratios"]):
        assert b / a == pytest.approx(1.9, rel=0.05)  # one core is 1.9× slower than all
    legend = result.drawn["colours"]
    assert {b.legend for b in figures_speedup.BASELINES[:2]} <= set(legend)


def test_new_figures_show_what_the_store_holds(drawn):
    stream = drawn["stream-bandwidth"].facts["panels"]
    assert set(stream) == {"copy", "triad"}
    gpu = next(line for line in stream["copy"] if line["series"] == "torch@cuda:0")
    assert gpu["gb_per_s"][0] == pytest.approx(200, rel=0.02)  # 20 GB/s on all cores, 10× on the GPU
    copies = drawn["transfer-bandwidth"]
    assert copies.facts["pinned_kinds"] == [False, True] and {"pinned host memory", "pageable"} <= set(
        copies.drawn["colours"])
    errors = drawn["stats-accuracy"].facts["errors"]
    assert all(set(by_dtype) == {"float64", "float32"} for v in errors.values() for by_dtype in v.values())
    curves = drawn["dl-curves"].facts["curves"]
    assert curves["val_accuracy_curve"][0]["x"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    latency = drawn["dl-batches"].facts["latency"]
    [(variant, by_series)] = latency.items()
    assert by_series["torch@cuda:0"]["p99"] == pytest.approx([0.015, 0.12])
    power = drawn["telemetry"].facts["panels"]["power_w"]
    assert list(power) == ["cuda:0"] and power["cuda:0"]["mean"][0] == 250.0


@pytest.mark.parametrize("name, workload", sorted(NEW_FIGURES.items()))
def test_a_new_figure_is_left_out_silently_without_its_workload(tmp_path, name, workload):
    left_out = {workload, "mlp"} if name == "dl-batches" else {workload}  # mlp reports a throughput too
    others = full_run_measurements(tuple(w for w in ("matmul", "stream", "memcpy", "reduce", "montecarlo", "mlp",
                                                     "vgg-infer") if w not in left_out))
    run = stored_run(tmp_path, others)
    [build] = [b for b in figures.figure_builders() if b.__name__ == BUILDERS[name]]
    result = build(run)
    assert result.png is None and result.note is None
    with_it = stored_run(tmp_path, full_run_measurements(tuple(left_out)), "20260101-000009-with")
    assert build(with_it).present  # the same builder draws it once the workload is there


def test_a_measured_workload_with_no_verified_result_gets_a_note(tmp_path):
    failed = [measurement("stream", "numpy", "cpu", 2, 0.01, Work(0.0, 1e8), passed=False, kernel="copy",
                          n=2**20, dtype="float64")]
    result = next(f for f in figures.make_figures(stored_run(tmp_path, failed)) if f.name == "stream-bandwidth")
    assert result.png is None and result.note.startswith("no data for STREAM")


def test_report_page_has_the_new_figures_and_the_energy_table(full_run, tmp_path):
    files = write_report([full_run], tmp_path / "report")
    page = files.html_path.read_text(encoding="utf-8")
    for name in list(NEW_FIGURES) + ["telemetry"]:
        assert f'id="fig-{full_run.run_id}-{name}"' in page
    assert files.missing == []
    table = energy_html(full_run)
    assert "Energy per result" in table and table.count("<tr>") == 1 + sum(
        1 for r in full_run.rows if r.spec.device == "cuda:0")
    assert "counter difference (test)" in table


def test_no_energy_no_table(tmp_path):
    cpu_only = [m for m in full_run_measurements(("matmul",)) if m.spec.device == "cpu"]
    assert energy_html(stored_run(tmp_path, cpu_only)) == ""


@pytest.mark.slow
def test_figures_from_a_real_quick_run(tmp_path):
    """A real run on this machine (numpy on all cores and one core), stored and drawn: the same rules hold."""
    import accelbench
    from accelbench.report.data import load_run
    from accelbench.store.db import Store

    db = str(tmp_path / "real.sqlite")
    real = accelbench.run(["stream", "reduce"], sizes=[2**18], dtypes="float32", backends="numpy", rigor="quick", db=db)
    with Store(db) as store:
        run = load_run(store, real.run_id)
    [figs] = drawing.draw_all([run])
    by_name = {f.name: f for f in figs}
    assert by_name["stream-bandwidth"].present and by_name["reduce-elementwise"].present
    colours = {}
    for figure in (f for f in figs if f.present):
        for axes in figure.drawn["axes"]:
            assert axes["ylim"][0] == 0.0 if axes["yscale"] == "linear" else "log scale" in axes["ylabel"]
        for label, colour in figure.drawn["colours"].items():
            assert colours.setdefault(label, colour) == colour, label
    assert {"numpy@cpu (1 thread)", "numpy@cpu (2 threads)"} <= set(colours)
    telemetry = by_name["telemetry"]
    assert telemetry.present or telemetry.note  # sampled here, or said why not
