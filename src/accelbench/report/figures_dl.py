"""Deep learning: the tutorial's "model metrics" plot (held-out loss and accuracy per epoch, from the
curves each training result stores), and latency percentiles and throughput against batch size.

Curves are stored shortened to at most CURVE_POINTS evenly picked epochs (first and last kept), so
each point is placed at the epoch it was picked from. Only verified results are drawn.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from accelbench.report.analysis import Row
from accelbench.report.data import RunData, series_label, valid_rows
from accelbench.report.figure_base import (OTHER, FigureResult, family, figure_legend, finish, from_zero, log_axis,
                                           new_figure, size_ticks, variant_text)
from accelbench.report.palette import colours_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes

CURVES = (("val_loss_curve", "held-out loss"), ("val_accuracy_curve", "held-out accuracy"),
          ("train_loss_curve", "training loss (a separate, untimed run)"))
LINE_STYLES = ("-", "--", ":", "-.")
PERCENTILES = (("latency_p50_s", "p50", "-", "o"), ("latency_p90_s", "p90", "--", "s"),
               ("latency_p99_s", "p99", ":", "^"))
THROUGHPUT_KEYS = ("images_per_s", "train_samples_per_s", "throughput_samples_per_s", "samples_per_s")


def _dl_rows(run: RunData) -> list[Row]:
    return [r for r in valid_rows(run.rows) if family(r.spec.workload) == "dl"]


def _measured(run: RunData) -> bool:
    return any(family(m.spec.workload) == "dl" for m in run.measurements)


def _curve(row: Row, key: str) -> tuple[list[float], list[float]]:
    """(epochs or steps, values) of a stored curve, each value at the epoch it was picked from."""
    values = row.measurement.extra.get(key)
    if not isinstance(values, list) or len(values) < 2:
        return [], []
    span = row.measurement.extra.get("epochs_run") if key.startswith("val_") else row.measurement.extra.get("steps")
    last = float(span) if isinstance(span, (int, float)) and span > 0 else float(len(values) - 1)
    xs = [i * last / (len(values) - 1) for i in range(len(values))]
    kept = [(x, float(v)) for x, v in zip(xs, values) if isinstance(v, (int, float)) and math.isfinite(v)]
    return [x for x, _ in kept], [v for _, v in kept]


def dl_curves(run: RunData) -> FigureResult:
    result = FigureResult("dl-curves", "Deep learning: loss and accuracy per epoch (model metrics)")
    if not _measured(run):
        return result
    if not any(key in m.extra for m in run.measurements for key, _ in CURVES):
        return result  # no training workload ran: left out
    rows = [r for r in _dl_rows(run) if any(_curve(r, key)[0] for key, _ in CURVES)]
    if not rows:
        result.note = "no data for learning curves: no verified training result stored a loss or accuracy curve"
        return result
    panels = [(key, title) for key, title in CURVES if any(_curve(r, key)[0] for r in rows)]
    from matplotlib.ticker import MaxNLocator

    fig, axes = new_figure(len(panels), height_in=3.2, columns=min(2, len(panels)))
    palette = colours_of(run)
    workloads = sorted({r.spec.workload for r in rows})
    styles = {w: LINE_STYLES[i % len(LINE_STYLES)] for i, w in enumerate(workloads)}
    facts: dict[str, Any] = {}
    for ax, (key, title) in zip(axes, panels):
        facts[key] = _draw_curves(ax, rows, key, palette, styles)
        ax.set_title(title)
        ax.set_xlabel("training step" if key == "train_loss_curve" else "epoch (0: before training)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if key == "val_accuracy_curve":
            from_zero(ax, "accuracy", top=1.0)
            targets = {r.measurement.extra.get("target_accuracy") for r in rows} - {None}
            for target in targets:
                ax.axhline(float(target), color="grey", linestyle="--", linewidth=0.8)  # type: ignore[arg-type]
        else:
            from_zero(ax, "loss")
    figure_legend(fig, palette, sorted({series_label(r.spec) for r in rows}), [(w, styles[w], "o") for w in workloads])
    result.facts["curves"] = facts
    result.caption = ("Each verified training result's stored curves: held-out loss and accuracy after every epoch "
                      "(epoch 0 is the untrained model; a grey dashed line is the target accuracy). Colour: device "
                      "and backend; line style: workload; the text at a line's end names its batch size.")
    return finish(result, fig)


def _draw_curves(ax: Axes, rows: list[Row], key: str, palette: dict[str, str], styles: dict[str, str]
                 ) -> list[dict[str, Any]]:
    drawn = []
    for row in sorted(rows, key=lambda r: (series_label(r.spec), r.spec.workload, str(r.spec.params))):
        xs, ys = _curve(row, key)
        if not xs:
            continue
        label = series_label(row.spec)
        ax.plot(xs, ys, color=palette.get(label, OTHER), linestyle=styles[row.spec.workload], marker="o",
                markersize=3, linewidth=1.4)
        batch = row.spec.param("batch")
        if batch is not None:
            ax.annotate(f"b={batch}", (xs[-1], ys[-1]), xytext=(3, 0), textcoords="offset points", fontsize="x-small")
        drawn.append({"series": label, "workload": row.spec.workload, "batch": batch, "x": xs, "values": ys})
    return drawn


# -- latency percentiles and throughput against batch size ---------------------------------------

def _throughput(row: Row) -> tuple[str, float] | None:
    for key in THROUGHPUT_KEYS:
        value = row.measurement.extra.get(key)
        if isinstance(value, (int, float)) and value > 0:
            return key, float(value)
    return None


def _batch(row: Row) -> float:
    value = row.spec.param("batch")
    return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0


def dl_batches(run: RunData) -> FigureResult:
    result = FigureResult("dl-batches", "Deep learning: latency percentiles and throughput by batch size")
    if not _measured(run):
        return result
    if not any(key in m.extra for m in run.measurements for key in ("latency_p50_s", *THROUGHPUT_KEYS)):
        return result  # no workload that reports latency or throughput ran: left out
    rows = [r for r in _dl_rows(run) if _batch(r)]
    latency: dict[str, list[Row]] = defaultdict(list)
    throughput: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        parts = (row.spec.workload, variant_text(row, ("batch",)), str(row.spec.param("dtype") or ""))
        variant = " ".join(p for p in parts if p)
        if isinstance(row.measurement.extra.get("latency_p50_s"), (int, float)):
            latency[variant].append(row)
        if _throughput(row):
            throughput[variant].append(row)
    panels = [("latency", v, latency[v]) for v in sorted(latency)]
    panels += [("throughput", v, throughput[v]) for v in sorted(throughput)]
    if not panels:
        result.note = ("no data for batch sweeps: no verified deep-learning result stored latency percentiles "
                       "or a throughput")
        return result
    fig, axes = new_figure(len(panels), height_in=3.0, columns=2 if len(panels) > 1 else 1)
    palette = colours_of(run)
    facts: dict[str, Any] = {"latency": {}, "throughput": {}}
    for ax, (kind, variant, items) in zip(axes, panels):
        if kind == "latency":
            facts["latency"][variant] = _draw_latency(ax, items, palette)
        else:
            facts["throughput"][variant] = _draw_throughput(ax, items, palette)
        ax.set_title(f"{variant}: {kind}", fontsize="medium")
        size_ticks(ax, [_batch(r) for r in items], lambda b: f"{b:g}")
    keys = [(f"latency {name}", style, marker) for _, name, style, marker in PERCENTILES] if latency else []
    figure_legend(fig, palette, sorted({series_label(r.spec) for _, _, it in panels for r in it}), keys)
    result.facts.update(facts)
    result.caption = ("Latency: per-batch percentiles of the timed batches (p50 solid, p90 dashed, p99 dotted); "
                      "throughput: samples or images per second as each workload reports it (at the median step "
                      "or batch time). Colour: device and backend. A p99 from few batches is close to the slowest.")
    return finish(result, fig)


def _draw_latency(ax: Axes, rows: list[Row], palette: dict[str, str]) -> dict[str, dict[str, list[float]]]:
    drawn: dict[str, dict[str, list[float]]] = {}
    by_series: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_series[series_label(row.spec)].append(row)
    for label, items in sorted(by_series.items()):
        items.sort(key=_batch)
        drawn[label] = {"batch": [_batch(r) for r in items]}
        for key, name, style, marker in PERCENTILES:
            points: list[tuple[float, float]] = []
            for row in items:
                value = row.measurement.extra.get(key)
                if isinstance(value, (int, float)):
                    points.append((_batch(row), float(value)))
            if not points:
                continue
            ax.plot([b for b, _ in points], [v * 1e3 for _, v in points], color=palette.get(label, OTHER),
                    linestyle=style, marker=marker, markersize=4)
            drawn[label][name] = [v for _, v in points]
    log_axis(ax, "x", "batch size")
    from_zero(ax, "latency per batch (ms)")
    return drawn


def _draw_throughput(ax: Axes, rows: list[Row], palette: dict[str, str]) -> dict[str, dict[str, Any]]:
    drawn: dict[str, dict[str, Any]] = {}
    by_series: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_series[series_label(row.spec)].append(row)
    unit = "samples"
    for label, items in sorted(by_series.items()):
        items.sort(key=_batch)
        values = [_throughput(r) for r in items]
        xs = [_batch(r) for r, v in zip(items, values) if v]
        ys = [v[1] for v in values if v]
        unit = "images" if any(v and v[0].startswith("images") for v in values) else unit
        ax.plot(xs, ys, color=palette.get(label, OTHER), marker="o", markersize=4, linewidth=1.4)
        drawn[label] = {"batch": xs, "per_s": ys}
    log_axis(ax, "x", "batch size")
    from_zero(ax, f"throughput ({unit}/s)")
    return drawn
