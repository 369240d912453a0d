"""The fleet page: ONE self-contained HTML file (inline CSS, the figure as a data: URI, no scripts),
like the run report: every node's headline figures beside its type's median, the outliers, the
failed and unmeasured nodes, and a figure of each node's ratio to its type's median.

Text from Slurm or the results (node names, features, reasons, log lines) is HTML-escaped.
matplotlib is imported only when the figure is drawn.
"""
from __future__ import annotations

import base64
import html
from collections.abc import Iterable
from pathlib import Path

from accelbench.cluster.fleet import FleetView, HeadlineView
from accelbench.report.html import CSP, CSS
from accelbench.units import format_si

MAX_PANELS = 12
RATIO_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)
OUTLIER_COLOUR, OK_COLOUR, BAND_COLOUR = "#c62828", "#1f5fa8", "#d0d7e2"


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def fleet_figure_png(view: FleetView) -> bytes | None:
    """One panel per headline figure (node types side by side): each node's rate / its type's
    median on a log axis, the band a healthy node stays in shaded, outliers in red."""
    panels: dict[str, list[tuple[str, HeadlineView]]] = {}
    for type_view in view.types:
        for headline in type_view.headlines:
            if headline.judgements:
                panels.setdefault(headline.label, []).append((type_view.node_type, headline))
    if not panels:
        return None
    from accelbench.report.figure_base import new_figure, to_png

    labels = list(panels)[:MAX_PANELS]
    fig, axes = new_figure(len(labels), height_in=3.2)
    for ax, label in zip(axes, labels):
        x, ticks, names = 0, [], []
        for node_type, headline in panels[label]:
            start = x
            for judgement in sorted(headline.judgements, key=lambda j: j.node):
                colour = OUTLIER_COLOUR if judgement.verdict == "outlier" else OK_COLOUR
                marker = "o" if judgement.verdict != "not judged" else "s"
                ax.plot([x], [judgement.ratio], marker=marker, color=colour, markersize=7, linestyle="none")
                ticks.append(x)
                names.append(judgement.node)
                x += 1
            threshold = headline.spread.threshold
            ax.fill_between([start - 0.4, x - 0.6], [threshold] * 2, [1 / threshold] * 2, color=BAND_COLOUR,
                            alpha=0.6, linewidth=0)
            ax.text((start + x - 1) / 2, 1 / threshold, f"{node_type}\nmedian {format_si(headline.median, headline.unit)}",
                    ha="center", va="bottom", fontsize=8)
            x += 1
        ax.axhline(1.0, color="#56606e", linewidth=0.8)
        ax.set_yscale("log")
        ratios = [j.ratio for _, h in panels[label] for j in h.judgements]
        top = max(max(ratios), max(1 / h.spread.threshold for _, h in panels[label])) * 1.4  # room for labels
        bottom = min(min(ratios), min(h.spread.threshold for _, h in panels[label])) * 0.85
        ax.set_ylim(bottom, top)
        from matplotlib.ticker import NullFormatter

        ax.set_yticks([t for t in RATIO_TICKS if bottom <= t <= top], [f"{t:g}×" for t in RATIO_TICKS if bottom <= t <= top])
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(ticks, names, rotation=60 if len(names) > 12 else 0, fontsize=8)
        ax.set_ylabel("rate / type median")
        ax.set_title(label, fontsize=9, loc="left")
    return to_png(fig)


def _headline_table(headline: HeadlineView) -> str:
    unit, spread = headline.unit, headline.spread
    rows = []
    for judgement in sorted(headline.judgements, key=lambda j: j.ratio):
        figure = headline.figures[judgement.node]
        verdict = {"outlier": "<strong class='bad'>outlier</strong>", "ok": "ok",
                   "not judged": "not judged (fewer than 3 nodes)"}[judgement.verdict]
        rows.append(f"<tr><td>{_e(judgement.node)}</td><td>{_e(format_si(figure.value, unit))} ±{figure.spread:.1%}</td>"
                    f"<td>{judgement.ratio:.2f}×</td><td>{judgement.z:+.1f}</td><td>{verdict}</td>"
                    f"<td>{_e(figure.verdict)}</td></tr>")
    return (f"<h4>{_e(headline.label)}</h4><p class='meta'>type median {_e(format_si(headline.median, unit))}; "
            f"spread ±{spread.relative:.1%} ({_e(spread.source)}); outlier below {spread.threshold:.2f}× the median</p>"
            "<table><tr><th>node</th><th>rate ± 95% CI of its median</th><th>÷ type median</th>"
            "<th>robust z</th><th>verdict</th><th>result verdict</th></tr>" + "".join(rows) + "</table>")


def fleet_html(view: FleetView, png: bytes | None) -> str:
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
             f"<title>accelbench fleet {_e(view.submission)}</title><style>{CSS}.bad{{color:{OUTLIER_COLOUR}}}</style>"
             f"</head><body><h1>Fleet: sweep {_e(view.submission)}</h1>"
             f"<p class='meta'>Each node's headline figures beside its node type's median. Only results with "
             f"verdict {_e(' or '.join(view.verdicts))} are compared; no reference value is used: the spread "
             f"is learnt from the fleet (and its earlier sweeps).</p>"]
    problems = [f"<li><strong class='bad'>outlier</strong> {_e(j.node)} ({_e(t.node_type)}): {_e(h.label)}: "
                f"{j.ratio:.2f}× its type's median</li>" for t, h, j in view.outliers()]
    problems += [f"<li><strong class='bad'>failed</strong> {_e(n.node)}: {_e(n.detail)}"
                 + (f"<pre>{_e(chr(10).join(n.log_tail[-6:]))}</pre>" if n.log_tail else "") + "</li>"
                 for n in view.nodes("failed")]
    problems += [f"<li>not measured {_e(n.node)}: {_e(n.detail)}</li>" for n in view.nodes("unmeasured")]
    problems += [f"<li>still queued or running {_e(n.node)}</li>" for n in view.nodes("pending")]
    problems += [f"<li>not compared {_e(node)}: {_e(why)}</li>" for node, why in view.unjudged().items()]
    parts.append("<h2>Findings</h2><ul>" + ("".join(problems) or "<li>no outlier, no failed node, every node "
                                                                   "measured and compared</li>") + "</ul>")
    if png:
        parts.append("<h2>Each node against its type</h2><figure><img alt='each node's rate divided by its "
                     "type's median, per headline figure' src='data:image/png;base64,"
                     + base64.b64encode(png).decode("ascii") + "'><figcaption>Shaded: the band a healthy node "
                     "stays in (outlier rule); red: outliers; squares: types of fewer than 3 nodes, not "
                     "judged.</figcaption></figure>")
    for type_view in view.types:
        counts = ", ".join(f"{type_view.count(s)} {s}" for s in ("measured", "failed", "pending", "unmeasured")
                           if type_view.count(s))
        parts.append(f"<h2>Node type {_e(type_view.node_type)}</h2><p class='meta'>{len(type_view.nodes)} "
                     f"node(s): {_e(counts)}</p>")
        parts += [_headline_table(h) for h in type_view.headlines]
    parts.append("</body></html>")
    return "\n".join(parts)


def write_fleet_page(view: FleetView, output_dir: str | Path, inputs: Iterable[str | Path] = ()) -> Path:
    """DIR/index.html through safe_write, never onto one of `inputs` (the database)."""
    from accelbench.errors import UsageError
    from accelbench.safe_write import write_text

    folder = Path(output_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # read-only, or a file on the way: one line, not a traceback
        raise UsageError(f"--html {output_dir}: cannot make the folder: {exc.strerror or exc}; accepted: "
                         f"a folder where this user may write") from None
    return write_text(folder / "index.html", fleet_html(view, fleet_figure_png(view)), inputs)
