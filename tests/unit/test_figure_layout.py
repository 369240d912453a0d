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
