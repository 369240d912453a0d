"""The figures' own layout (report/figure_layout.py): every axes with its labels, title and legend,
and every figure legend, lies inside the PNG's canvas and overlaps no other."""
from __future__ import annotations

import pytest

pytest.importorskip("matplotlib", reason="figures need matplotlib: pip install accelbench[plot]")

from figure_runs import full_run_measurements, stored_run  # noqa: E402
from synthetic_runs import break_even_measurements, run_data  # noqa: E402

from accelbench.report import figure_base, figures  # noqa: E402
from accelbench.report.palette import assign_colours  # noqa: E402

MANY_SIZES = tuple(range(500, 500 + 100 * (figures.MAX_BAR_GROUPS + 8), 100))
TOLERANCE_PX = 0.5


def drawn_boxes(fig) -> list:
    """The drawn extent of each visible axes (labels, title, its legend) and of each figure legend."""
    renderer = fig.canvas.get_renderer()
    boxes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()]
    return boxes + [legend.get_window_extent(renderer) for legend in fig.legends]


def misplaced(fig) -> list[str]:
    """What lies outside the canvas or over another drawn part: empty when the layout is right."""
    boxes, canvas = drawn_boxes(fig), fig.bbox
    problems = [f"box {i} outside the canvas: {b.bounds}" for i, b in enumerate(boxes)
                if b.x0 < -TOLERANCE_PX or b.y0 < -TOLERANCE_PX
                or b.x1 > canvas.width + TOLERANCE_PX or b.y1 > canvas.height + TOLERANCE_PX]
    for i, a in enumerate(boxes):
        for j, b in enumerate(boxes[i + 1:], start=i + 1):
            if (min(a.x1, b.x1) - max(a.x0, b.x0) > TOLERANCE_PX and min(a.y1, b.y1) - max(a.y0, b.y0) > TOLERANCE_PX):
                problems.append(f"boxes {i} and {j} overlap")
    return problems


@pytest.fixture(scope="module")
def drawn_figures(tmp_path_factory):
    """Every figure of a run with every kind of result and of a run with many orders, as drawn."""
    runs = [stored_run(tmp_path_factory.mktemp("layout"), full_run_measurements()),
            run_data(break_even_measurements(sizes=MANY_SIZES))]
    kept, to_png = [], figure_base.to_png

    def keep(fig):
        png = to_png(fig)
        kept.append(fig)
        return png

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figure_base, "to_png", keep)
        for run in runs:
            assign_colours([run])
            for build in figures.figure_builders():
                build(run)
    return kept


def test_every_figure_keeps_its_labels_and_legends_inside_the_canvas(drawn_figures):
    assert len(drawn_figures) >= 15
    for fig in drawn_figures:
        titles = [ax.get_title() for ax in fig.axes]
        assert misplaced(fig) == [], titles
        assert not any(ax.get_legend() is not None and fig.legends for ax in fig.axes if ax.get_visible())


def test_the_check_sees_a_legend_cut_off_and_the_layout_brings_it_in():
    """Without the layout pass a legend beside the axes sticks out of the canvas; with it, it fits."""
    fig, axes = figure_base.new_figure(2)
    for ax in axes:
        ax.plot([1, 2, 3], [3, 1, 2], label="a long legend entry for a series with a long name")
        ax.set_ylabel("a y label")
        ax.legend(**figure_base.OUTSIDE_RIGHT)
    fig.canvas.draw()
    assert any("outside the canvas" in problem for problem in misplaced(fig))
    figure_base.to_png(fig)
    assert misplaced(fig) == []


def test_a_figure_legend_sits_beside_the_grid():
    fig, axes = figure_base.new_figure(4, columns=2, height_in=3.0)
    for ax in axes:
        ax.plot([1, 10, 100], [1, 2, 3])
        ax.set_title("a panel")
    figure_base.figure_legend(fig, {"series": "#1f77b4"}, ["series"], [("dashed key", "--", "o")])
    figure_base.to_png(fig)
    assert misplaced(fig) == []
    legend = fig.legends[0].get_window_extent(fig.canvas.get_renderer())
    assert legend.x0 > max(ax.get_window_extent().x1 for ax in axes)


# -- annotations: every label inside its panel, clear of other labels, whiskers and bars ---------

def _overlap(a, b) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > TOLERANCE_PX
            and min(a.y1, b.y1) - max(a.y0, b.y0) > TOLERANCE_PX)


def _inside(box, frame) -> bool:
    return (box.x0 >= frame.x0 - TOLERANCE_PX and box.y0 >= frame.y0 - TOLERANCE_PX
            and box.x1 <= frame.x1 + TOLERANCE_PX and box.y1 <= frame.y1 + TOLERANCE_PX)


def _marks(ax, renderer) -> list[tuple[str, object]]:
    """The drawn extent of every whisker (each segment, each cap) and every bar, in pixels; found
    from the artists themselves, independently of the figure code."""
    import numpy as np
    from matplotlib.collections import LineCollection
    from matplotlib.container import ErrorbarContainer
    from matplotlib.patches import Rectangle
    from matplotlib.transforms import Bbox

    found: list[tuple[str, object]] = []
    for container in ax.containers:
        if not isinstance(container, ErrorbarContainer):
            continue
        _, caps, whiskers = container.lines
        for collection in whiskers:
            assert isinstance(collection, LineCollection)
            half = max(np.atleast_1d(collection.get_linewidth())) * renderer.points_to_pixels(1.0) / 2
            for segment in collection.get_segments():
                xy = collection.get_transform().transform(np.asarray(segment, dtype=float))
                if np.isfinite(xy).all():
                    box = Bbox([xy.min(axis=0) - half, xy.max(axis=0) + half])
                    found.append((f"whisker {segment.tolist()}", box))
        for cap in caps:
            found += [(f"whisker cap {cap.get_xydata()[i].tolist()}", box)
                      for i, box in enumerate(_cap_boxes(cap, renderer))]
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_width() > 0 and p.get_height() != 0]
    found += [(f"bar at x={bar.get_x():g}", bar.get_window_extent(renderer)) for bar in bars]
    return found


def _cap_boxes(cap, renderer) -> list:
    import numpy as np
    from matplotlib.transforms import Bbox

    length, thick = (renderer.points_to_pixels(v) / 2 for v in (cap.get_markersize(), cap.get_markeredgewidth()))
    half = np.array([length, thick] if cap.get_marker() in ("_", 1, "1") else [thick, length])  # a dash or a bar
    xy = cap.get_transform().transform(np.asarray(cap.get_xydata(), dtype=float))
    return [Bbox([p - half, p + half]) for p in xy if np.isfinite(p).all()]


def misplaced_annotations(fig) -> list[str]:
    """Every text drawn in an axes (ax.text, ax.annotate) inside its frame, or inside the canvas
    where it is deliberately outside; over no other text, whisker or bar; and every whisker end
    inside its panel. Empty when the figure is right."""
    from matplotlib.transforms import Bbox

    from accelbench.report.label_place import OUTSIDE_FRAME

    renderer, problems = fig.canvas.get_renderer(), []
    for ax in (a for a in fig.axes if a.get_visible()):
        frame, title = ax.get_window_extent(renderer), ax.get_title()
        texts = [(t.get_text(), t.get_window_extent(renderer), t) for t in ax.texts
                 if t.get_visible() and t.get_text()]
        for text, box, artist in texts:
            bound = fig.bbox if artist.get_gid() == OUTSIDE_FRAME else frame
            if not _inside(box, bound):
                problems.append(f"{title}: label {text!r} {box.bounds} outside {bound.bounds}")
        for i, (a, box_a, _) in enumerate(texts):
            problems += [f"{title}: labels {a!r} and {b!r} overlap" for b, box_b, _ in texts[i + 1:]
                         if _overlap(box_a, box_b)]
        marks = _marks(ax, renderer)
        for text, box, _ in texts:
            problems += [f"{title}: label {text!r} over {name}" for name, mark in marks if _overlap(box, mark)]
        for name, mark in marks:
            if name.startswith("whisker") and not _inside(Bbox([[frame.x0, mark.y0], [frame.x1, mark.y1]]),
                                                           frame.padded(3.0)):
                problems.append(f"{title}: {name} runs off the panel {mark.bounds} {frame.bounds}")
    return problems


def _long_whisker_run():
    """Matmul in two precisions and STREAM triad, each with samples spread ±60%: long whiskers."""
    from synthetic_runs import measurement

    out = []
    for n in (1000, 2000):
        for dtype, slower in (("float32", 1.0), ("float64", 2.1), ("bfloat16", 0.55)):
            cpu_s = 1e-10 * n**3 * slower
            out.append(measurement("matmul", "numpy", "cpu", compute_s=cpu_s, threads=2, n=n, dtype=dtype, spread=0.6))
            out.append(measurement("matmul", "torch", "cuda:0", compute_s=cpu_s / 9, to_device_s=2e-9 * n * n,
                                   to_host_s=1e-9 * n * n, n=n, dtype=dtype, spread=0.6))
    for n in (2**20, 2**24):
        for kernel in ("copy", "triad"):
            out.append(measurement("stream", "numpy", "cpu", compute_s=24 * n / 20e9, threads=2, n=n,
                                   kernel=kernel, dtype="float64", spread=0.6))
    return run_data(out)


def _close_roofline_run():
    """Two labelled roofline points at one intensity (FLOP per byte) 4% apart: 83% and 80% of the roof."""
    from synthetic_runs import measurement

    n, bandwidth = 2**24, 20e9  # stream add float32 and triad float64 both do 1 FLOP per 12 bytes
    out = [measurement("matmul", "numpy", "cpu", compute_s=2 * 1000**3 / 150e9, threads=2, n=1000, dtype="float32"),
           measurement("stream", "numpy", "cpu", compute_s=16 * n / bandwidth, threads=2, n=n, kernel="copy",
                       dtype="float64"),
           measurement("stream", "numpy", "cpu", compute_s=12 * n / (0.83 * bandwidth), threads=2, n=n, kernel="add",
                       dtype="float32"),
           measurement("stream", "numpy", "cpu", compute_s=24 * n / (0.80 * bandwidth), threads=2, n=n,
                       kernel="triad", dtype="float64")]
    return run_data(out)


@pytest.fixture(scope="module")
def annotated_figures(drawn_figures):
    """The fixture's figures and those of runs made to provoke collisions."""
    kept, to_png = list(drawn_figures), figure_base.to_png

    def keep(fig):
        png = to_png(fig)
        kept.append(fig)
        return png

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figure_base, "to_png", keep)
        for run in (_long_whisker_run(), _close_roofline_run()):
            assign_colours([run])
            for build in figures.figure_builders():
                build(run)
    return kept


def test_every_label_lies_inside_its_panel_and_clear_of_labels_whiskers_and_bars(annotated_figures):
    labelled = [fig for fig in annotated_figures if any(ax.texts for ax in fig.axes)]
    assert len(labelled) >= 4  # roofline, precision, time split, break-even … each drawn at least once
    problems = [p for fig in annotated_figures for p in misplaced_annotations(fig)]
    assert problems == []


def test_the_check_sees_a_label_over_a_whisker_and_the_placer_moves_it_clear():
    """A ratio written just above a bar whose whisker reaches through it, with the y axis stopped
    at the bar's top: the check reports the label over the whisker, outside the frame and the
    whisker off the panel; after the layout pass none of that is left."""
    fig, axes = figure_base.new_figure(1)
    ax = axes[0]
    ax.bar([0, 1], [10.0, 9.8], 0.8, yerr=[[1.0, 1.0], [4.0, 4.0]], capsize=3)
    for x, height in ((0, 10.0), (1, 9.8)):
        ax.annotate(f"{height:.2f}×", (x, height), xytext=(0, 3), textcoords="offset points", ha="center")
    ax.annotate("a", (0.5, 5.0), xytext=(0, 0), textcoords="offset points")
    ax.annotate("b", (0.5, 5.0), xytext=(1, 1), textcoords="offset points")
    ax.set_ylim(0, 10.0)
    fig.canvas.draw()
    seen = " ".join(misplaced_annotations(fig))
    assert "over whisker" in seen and "outside" in seen and "runs off the panel" in seen
    assert "labels 'a' and 'b' overlap" in seen
    figure_base.to_png(fig)
    assert misplaced_annotations(fig) == []
    assert ax.get_ylim()[0] == 0.0  # the axis still starts at zero
