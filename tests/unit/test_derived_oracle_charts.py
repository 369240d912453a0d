"""The report's speed-up charts state the oracle's figures: each point drawn (its height and both
whisker ends, read back from the drawn artists) is a speed-up tests/unit/derived_oracle.py derives
from the database, each one it derives for a device is drawn once, and each break-even marked is
its crossing of 1, interpolated log–log. Runs are the oracle test's synthetic run (paired rounds,
matmul) and the figure test's full run (unpaired, with the statistics workloads)."""
from __future__ import annotations

import json
import math
import re

import derived_oracle as oracle
import pytest

pytest.importorskip("matplotlib", reason="figures need matplotlib: pip install accelbench[plot]")

from figure_runs import full_run_measurements, stored_run  # noqa: E402
from test_derived_oracle import (BREAK_EVEN, ORDER_STATISTIC, RATIO, _agrees, _as_said,  # noqa: E402
                                 _bootstrap_close, _close, check_all_speedups, synthetic)

SPEEDUP_CHARTS = ("matmul-speedup", "stats-speedup", "precision")
# bandwidth charts: each point a valid result's bytes moved / its median time, in GB/s
BANDWIDTH_CHARTS = {"stream-bandwidth": ("stream",), "transfer-bandwidth": ("memcpy",),
                    "reduce-elementwise": ("reduce", "elementwise")}
FIELD_OF_STYLE = {"-": "vs_cpu_all_cores", ":": "vs_cpu_one_core", "--": "end_to_end_vs_cpu_all_cores"}
DODGE = 1.5  # series at one size are drawn a few per cent apart (figure_base.dodge): the nearest size is theirs
__all__ = ["synthetic"]  # the fixture, shared with the oracle test


def _drawn_charts(db, run_id: str) -> dict[str, dict]:
    from accelbench.report import drawing
    from accelbench.report.data import load_run
    from accelbench.store.db import Store

    with Store(db) as store:
        run = load_run(store, run_id)
    [figures] = drawing.draw_all([run])
    return {f.name: {"axes": f.drawn["axes"], "colours": f.drawn["colours"]}
            for f in figures if (f.name in SPEEDUP_CHARTS or f.name in BANDWIDTH_CHARTS or f.name == "roofline")
            and f.present}


def _figure_run(tmp_path, workloads: tuple[str, ...]) -> tuple[oracle.StoredRun, dict[str, dict]]:
    """The figure test's full run of `workloads`, stored in a real SQLite file: as the oracle reads
    it, and its charts as drawn."""
    run_id = "20260101-000000-figs"
    stored_run(tmp_path, full_run_measurements(workloads), run_id)
    db = tmp_path / f"{run_id}.sqlite"
    return oracle.read_run(db, run_id), _drawn_charts(db, run_id)


def _series(r: oracle.Result) -> str:
    threads = r.params.get("threads")
    return f"{r.backend}@{r.device}" + (f" ({threads} thread{'s' if threads != 1 else ''})" if threads else "")


def _panel(chart: str, title: str) -> tuple[str | None, str]:
    """(workload, dtype) of a panel from its title: 'float32: above 1 …' or 'montecarlo n=…, float64'."""
    if chart == "matmul-speedup":
        return "matmul", title.split(":")[0]
    return title.split(" ")[0].rstrip(","), title.rsplit(", ", 1)[1]


def _whisker_ok(drawn: float, y: float, interval_end: float, low_end: bool) -> bool:
    # a point has no whisker on a side its interval leaves unbounded (too few rounds)
    if not math.isfinite(interval_end) or (low_end and interval_end <= 0):
        return drawn == y
    return _close(drawn, interval_end, 1e-6)


def _point_agrees(point: tuple[float, float, float, float], f: oracle.Figure) -> bool:
    _, y, low, high = point
    if not _close(y, f.ratio, max(RATIO, 1e-6)):
        return False
    if f.paired:  # the order-statistic interval, or widened to the ratio of medians
        allowed = [(f.low, f.high), (min(f.low, f.medians_ratio), max(f.high, f.medians_ratio))]
        return any(_whisker_ok(low, y, a, True) and _whisker_ok(high, y, b, False) for a, b in allowed)
    bounded = all(math.isfinite(v) and v > 0 for v in (low, high))
    return (bounded and _bootstrap_close(low, f.low, f.low, f.high, f.band[:2])
            and _bootstrap_close(high, f.high, f.low, f.high, f.band[2:]))


def check_speedup_charts(charts: dict[str, dict], expected: list[oracle.Expected]) -> list[str]:
    """Where a drawn point or break-even is not the oracle's, and each oracle figure of a device
    (not the CPU baseline itself) on a charted workload that was not drawn."""
    drawable = [e for e in expected if e.field in FIELD_OF_STYLE.values() and not (e.shown_on.backend == "numpy" and e.shown_on.device == "cpu")
                and ("matmul-speedup" in charts if e.shown_on.workload == "matmul" else "stats-speedup" in charts)
                and e.shown_on.workload in ("matmul", "montecarlo", "bootstrap", "mcmc", "permutation", "gibbs")]
    left = list(drawable)
    wrong = []
    for chart, figure in charts.items():
        if chart not in ("matmul-speedup", "stats-speedup"):
            continue
        series_of_colour = {colour: label for label, colour in figure["colours"].items() if "@" in label}
        for axes in figure["axes"]:
            if not axes["errorbars"]:
                continue
            workload, dtype = _panel(chart, axes["title"])
            for bars in axes["errorbars"]:
                series, field = series_of_colour.get(bars["colour"]), FIELD_OF_STYLE.get(bars["linestyle"])
                curve = [e for e in left if e.field == field and _series(e.shown_on) == series
                         and e.shown_on.workload == workload and e.shown_on.params.get("dtype") == dtype]
                drawn_curve = []
                for point in bars["points"]:
                    near = [e for e in curve if e.shown_on.size and abs(math.log(point[0] / e.shown_on.size)) <
                            math.log(DODGE)]
                    match = next((e for e in near if _point_agrees(point, e.figure)), None)
                    if match is None:
                        wrong.append(f"{chart} {axes['title']!r} {series} {field}: drawn {point}, the oracle's "
                                     f"{[(e.shown_on.size, e.figure.ratio, e.figure.low, e.figure.high) for e in near]}")
                        continue
                    left.remove(match)
                    curve.remove(match)
                    drawn_curve.append(match)
                wrong += _check_crossing(axes["texts"], drawn_curve, f"{chart} {series} {field}")
    wrong += [f"not drawn: {e.field} of {e.shown_on.key} ({e.figure.ratio:.3g})" for e in left]
    return wrong


def _check_crossing(texts: list[str], curve: list[oracle.Expected], what: str) -> list[str]:
    """The first crossing of 1 (below, then at or above), interpolated log–log, is marked."""
    curve = sorted(curve, key=lambda e: e.shown_on.size)
    for a, b in zip(curve, curve[1:]):
        if 0 < a.figure.ratio < 1 <= b.figure.ratio:
            size = oracle.crossing_size(a.shown_on.size, a.figure.ratio, b.shown_on.size, b.figure.ratio)
            marked = [float(m.replace(",", "")) for t in texts for m in re.findall(r"break-even n≈([\d,.]+)", t)]
            if not any(_close(m, size, max(BREAK_EVEN, 0.5 / size)) for m in marked):
                return [f"{what}: break-even n≈{size:,.0f} recomputed, marked {marked}"]
            return []
    return []


def check_bandwidth_charts(charts: dict[str, dict], run: oracle.StoredRun) -> tuple[list[str], int]:
    """Each point of a bandwidth chart is a valid result of its series at that size, drawn at the
    oracle's bytes moved / median time, inside its own whiskers; each valid result is drawn once."""
    wrong, points = [], 0
    for chart, workloads in BANDWIDTH_CHARTS.items():
        if chart not in charts:
            continue
        left = [r for r in run.results if r.workload in workloads and r.valid]
        series_of_colour = {colour: label for label, colour in charts[chart]["colours"].items() if "@" in label}
        for axes in charts[chart]["axes"]:
            for bars in axes["errorbars"]:
                series = series_of_colour.get(bars["colour"])
                for x, y, low, high in bars["points"]:
                    points += 1
                    near = [r for r in left if _series(r) == series and r.size
                            and abs(math.log(x / r.size)) < math.log(DODGE)
                            and _close(y, r.bytes_moved / r.median() / 1e9, 1e-6)]
                    if not near or not low <= y <= high:
                        wrong.append(f"{chart} {axes['title']!r} {series}: drawn {(x, y, low, high)}, no valid result "
                                     f"of that series and size moves that many GB/s")
                        continue
                    left.remove(near[0])
        wrong += [f"{chart}: not drawn: {r.key} ({r.bytes_moved / r.median() / 1e9:.3g} GB/s)" for r in left]
    return wrong, points


def check_roofline(charts: dict[str, dict], run: oracle.StoredRun) -> tuple[list[str], int]:
    """Each roofline point is a valid result that did arithmetic, on the panel's device, at its FLOP
    per byte and FLOP / median time; each such result is drawn once."""
    wrong, points = [], 0
    for axes in charts.get("roofline", {}).get("axes", []):
        device = axes["title"].split(": ")[0]
        left = [r for r in run.results if r.valid and r.device == device and r.flops and r.bytes_moved]
        for x, y in (p for scatter in axes["scatters"] for p in scatter):
            points += 1
            match = next((r for r in left if _close(x, r.flops / r.bytes_moved, 1e-9)
                          and _close(y, r.flops / r.median(), 1e-9)), None)
            if match is None:
                wrong.append(f"roofline {device}: a point at {x:.4g} FLOP/B, {y:.4g} FLOP/s is no valid result's")
            else:
                left.remove(match)
        wrong += [f"roofline {device}: not drawn: {r.key}" for r in left]
    return wrong, points


PRECISION_LABEL = re.compile(r"(\d[\d,]*(?:\.\d+)?)× (faster|slower)\n\[(\d[\d,.]*)–(\d[\d,.]*)\]")


def check_precision_chart(charts: dict[str, dict], expected: list[oracle.Expected]) -> tuple[list[str], int]:
    """Each bar label of the precision chart ('2.84× faster [2.10–3.30]': the dtype's speed against
    float32) is a float32_vs_this_dtype figure the oracle derives, read either way round."""
    figures = [shown for e in expected if e.field == "float32_vs_this_dtype" for shown in _as_said(e.figure)]
    wrong, labels = [], 0
    for axes in charts.get("precision", {}).get("axes", []):
        for text in axes["texts"]:
            for m in PRECISION_LABEL.finditer(text):
                labels += 1
                said = tuple(float(v.replace(",", "")) for v in (m[1], m[3], m[4]))
                if not any(_agrees(said, shown) for shown in figures):
                    wrong.append(f"precision chart: {text!r} is no float32 comparison the oracle derives")
    return wrong, labels


def test_the_synthetic_runs_speedup_chart_draws_the_oracles_figures(synthetic):
    run, document = synthetic["run"], synthetic["json"]
    _, expected = check_all_speedups(run, document)
    charts = _drawn_charts(synthetic["db"], run.run_id)
    assert "matmul-speedup" in charts
    assert sum(len(b["points"]) for a in charts["matmul-speedup"]["axes"] for b in a["errorbars"]) >= 6
    assert any("break-even" in t for a in charts["matmul-speedup"]["axes"] for t in a["texts"])
    wrong = check_speedup_charts(charts, expected)
    assert not wrong, "\n".join(wrong)
    # each check can fail: a point moved 2%, a whisker moved, a point left out, a break-even moved
    for move in ("height", "whisker", "drop", "break-even"):
        moved = json.loads(json.dumps(charts))
        axes = next(a for a in moved["matmul-speedup"]["axes"] if a["errorbars"])
        bars = axes["errorbars"][0]
        x, y, low, high = bars["points"][0]
        if move == "height":
            bars["points"][0] = [x, y * 1.02, low, high]
        elif move == "whisker":
            bars["points"][0] = [x, y, low, high * 1.05 if high != y else y * 1.05]
        elif move == "drop":
            bars["points"].pop(0)
        else:
            axes = next(a for a in moved["matmul-speedup"]["axes"] if any("break-even" in t for t in a["texts"]))
            axes["texts"] = [re.sub(r"n≈([\d,]+)", lambda m: f"n≈{float(m[1].replace(',', '')) * 1.1:,.0f}", t)
                             for t in axes["texts"]]
        assert check_speedup_charts(moved, expected), move


def test_the_precision_charts_labels_are_the_oracles_float32_comparisons(synthetic):
    run, document = synthetic["run"], synthetic["json"]
    _, expected = check_all_speedups(run, document)
    charts = _drawn_charts(synthetic["db"], run.run_id)
    wrong, labels = check_precision_chart(charts, expected)
    assert labels >= 1 and not wrong, (labels, wrong, [a["texts"] for a in charts["precision"]["axes"]])
    moved = json.loads(json.dumps(charts))
    for axes in moved["precision"]["axes"]:
        axes["texts"] = [PRECISION_LABEL.sub(lambda m: f"{float(m[1]) * 1.1:.2f}× {m[2]}\n[{m[3]}–{m[4]}]", t)
                         for t in axes["texts"]]
    assert check_precision_chart(moved, expected)[0]


def test_the_statistics_speedup_chart_draws_the_oracles_figures(tmp_path):
    """Unpaired speed-ups (no paired rounds stored): the bootstrap intervals, statistics panels."""
    run, charts = _figure_run(tmp_path, ("matmul", "montecarlo"))
    expected = oracle.expected_speedups(run)
    assert {"matmul-speedup", "stats-speedup"} <= set(charts)
    stats_points = sum(len(b["points"]) for a in charts["stats-speedup"]["axes"] for b in a["errorbars"])
    assert stats_points >= 4
    wrong = check_speedup_charts(charts, expected)
    assert not wrong, "\n".join(wrong)
    assert ORDER_STATISTIC  # the paired tolerance is the oracle test's own


def test_the_bandwidth_charts_draw_each_valid_results_rate_once(tmp_path):
    run, charts = _figure_run(tmp_path, ("stream", "memcpy", "reduce"))
    assert set(BANDWIDTH_CHARTS) <= set(charts)
    wrong, points = check_bandwidth_charts(charts, run)
    assert points >= 10 and not wrong, "\n".join(wrong)
    for move in ("height", "drop"):  # each check can fail
        moved = json.loads(json.dumps(charts))
        bars = next(b for a in moved["stream-bandwidth"]["axes"] for b in a["errorbars"])
        x, y, low, high = bars["points"][0]
        if move == "height":
            bars["points"][0] = [x, y * 1.02, low, high * 1.02]
        else:
            bars["points"].pop(0)
        assert check_bandwidth_charts(moved, run)[0], move


def test_the_roofline_places_each_valid_result_at_the_oracles_rate(tmp_path):
    run, charts = _figure_run(tmp_path, ("matmul", "stream", "reduce"))
    wrong, points = check_roofline(charts, run)
    assert points >= 10 and not wrong, "\n".join(wrong)
    moved = json.loads(json.dumps(charts))
    scatter = next(s for a in moved["roofline"]["axes"] for s in a["scatters"])
    scatter[0] = [scatter[0][0], scatter[0][1] * 1.02]
    assert check_roofline(moved, run)[0]


@pytest.mark.slow
def test_a_real_runs_charts_draw_the_oracles_figures(tmp_path, monkeypatch):
    """A real quick run (numpy and PoCL, matmul and STREAM): its speed-up, bandwidth and roofline
    charts hold to the oracle as the synthetic runs' do."""
    from accelbench.backends.registry import availability
    from test_derived_oracle import _main

    if not availability("pyopencl").ok:
        pytest.skip("needs pyopencl with an OpenCL platform (PoCL)")
    db = tmp_path / "real.sqlite"
    monkeypatch.setenv("ACCELBENCH_DB", str(db))
    code, out = _main("run", "matmul", "stream", "--sizes", "128,192", "--dtype", "float32", "--backend",
                      "numpy,pyopencl", "--device", "cpu,opencl:0:0", "--rigor", "quick", "--json", "--no-progress",
                      "--db", str(db))
    assert code == 0, out
    document = json.loads(out)
    run = oracle.read_run(db, document["run_id"])
    _, expected = check_all_speedups(run, document)
    charts = _drawn_charts(db, run.run_id)
    assert "matmul-speedup" in charts and "roofline" in charts
    wrong = check_speedup_charts(charts, expected) + check_bandwidth_charts(charts, run)[0]
    wrong += check_roofline(charts, run)[0] + check_precision_chart(charts, expected)[0]
    assert not wrong, "\n".join(wrong)
