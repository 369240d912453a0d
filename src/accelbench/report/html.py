"""The report as ONE self-contained HTML file: inline CSS, figures as data: URIs, no scripts.

It must open offline, from a file, years later: nothing is fetched (a Content-Security-Policy
forbids it as well), and every piece of text that comes from data (device names, warnings,
parameters, reasons) is HTML-escaped, so a hostile device name shows as text and never runs.
"""
from __future__ import annotations

import base64
import html
import math
from itertools import repeat
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any, Iterable

from accelbench._version import __version__
from accelbench.report.advice import Finding
from accelbench.report.data import RunData, series_label, transfer_share
from accelbench.report.energy_html import energy_html
from accelbench.report.figures import FigureResult
from accelbench.report.headline import headline_for_run, headline_html
from accelbench.report.peak_html import peak_pair_html
from accelbench.report.reference_html import reference_html
from accelbench.report.unreached import unreached_html
from accelbench.report.analysis import Row
from accelbench.runner.load_bias import short_reason
from accelbench.units import format_bytes, format_seconds, format_si

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:2rem auto;
max-width:1400px;padding:0 1rem;color:#1d2430;background:#fff;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{border-bottom:2px solid #d0d7e2;padding-bottom:.2rem;margin-top:2.5rem}
h3{margin-top:1.8rem}.meta{color:#56606e}table{border-collapse:collapse;margin:.6rem 0 1.2rem;font-size:.86rem}
th,td{border:1px solid #d0d7e2;padding:.25rem .5rem;vertical-align:top;text-align:left}
.scroll{overflow-x:auto}tr.note td{font-size:.76rem;color:#8a4b08;border-top:none;padding-top:0}
th{background:#eef2f7}td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
ul.findings{padding-left:0;list-style:none}
ul.findings li{margin:.4rem 0;padding:.45rem .7rem;border-left:5px solid #4c72b0;background:#f3f6fb}
ul.findings li.warning{border-color:#d95f02;background:#fff4ec}
.kind{font-weight:600;margin-right:.4rem}figure{margin:1.2rem 0}figure img{max-width:100%;border:1px solid #d0d7e2}
figcaption{color:#56606e;font-size:.9rem}
.missing{color:#8a4b08;background:#fff8e6;padding:.4rem .7rem;border-left:5px solid #e0a800}
td small{font-size:.76rem;color:#56606e}.nw{white-space:nowrap}
.wraps{white-space:normal}.fig{display:inline-block;min-width:10rem}th{font-size:.8rem}
.failed{color:#b00020}.noisy{color:#8a5a00}.valid{color:#1b7a3a}.small{font-size:.8rem;color:#56606e}
.headline{border:2px solid #4c72b0;border-radius:6px;padding:.2rem 1rem .6rem;margin:1rem 0;background:#f8fafd}
.headline h3{margin-top:.6rem}ul.headline-devices li{margin:.35rem 0}
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]], numeric: set[int] | None = None,
           notes: Iterable[str] | None = None, css: str = "") -> str:
    """Cells are already-escaped HTML; headers are fixed text. A non-empty note (escaped HTML)
    becomes a full-width line under its row: long warnings must not stretch the columns."""
    numeric = numeric or set()
    headers = list(headers)
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for cells, note in zip(rows, notes if notes is not None else repeat("")):
        body.append("<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                     for i, c in enumerate(cells)) + "</tr>")
        if note:
            body.append(f'<tr class="note"><td colspan="{len(headers)}">{note}</td></tr>')
    opening = f'<table class="{esc(css)}">' if css else "<table>"
    return f'<div class="scroll">{opening}<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


# -- pieces ------------------------------------------------------------------------------------

def findings_html(found: list[Finding]) -> str:
    if not found:
        return '<p class="missing">No findings: the measurements support no statement beyond the tables.</p>'
    items = "".join(f'<li class="{esc(f.severity)}"><span class="kind">{esc(f.kind.replace("_", " "))}</span>'
                    f"{esc(f.text)}</li>" for f in found)
    return f'<ul class="findings">{items}</ul>'


def figure_html(figure: FigureResult, file_name: str | None, run_id: str = "") -> str:
    if figure.png is None and figure.note is None:  # a workload the run did not measure: nothing to say
        return ""
    if figure.png is None:  # not figure.present
        return f'<h3>{esc(figure.title)}</h3><p class="missing">No figure: {esc(figure.note)}.</p>'
    saved = f' Also saved as <code>{esc(file_name)}</code>.' if file_name else ""
    return (f'<figure id="fig-{esc(run_id)}-{esc(figure.name)}"><h3>{esc(figure.title)}</h3>'
            f'<img src="{data_uri(figure.png)}" alt="{esc(figure.title)}">'
            f"<figcaption>{esc(figure.caption)}{saved}</figcaption></figure>")


def _ci_text(row: Row) -> str:
    """The median over its interval, IQR and sample count (two lines: the column stays narrow)."""
    s = row.summary
    if not (math.isfinite(s.ci_low_s) and math.isfinite(s.ci_high_s)):
        interval = f"no CI, n={s.n}"
    else:
        interval = f"[{format_seconds(s.ci_low_s)}–{format_seconds(s.ci_high_s)}]"
    return (f"{esc(format_seconds(s.median_s))}<br><small>{esc(interval)}<br>"
            f"IQR {esc(format_seconds(s.iqr_s))} · n={s.n}</small>")


def _ratio_text(ratio, role: str | None, wanted_role: str) -> str:
    """'3.10× faster' over '[2.90–3.30] · 8 pairs' (escaped HTML)."""
    from accelbench.report.ratio_text import number as ratio_number, oriented

    if role == wanted_role:
        return "baseline"
    if ratio is None:
        return "—"
    basis = f" · {ratio.basis()}" if hasattr(ratio, "basis") else ""
    o = oriented(ratio)  # "3.17× slower", never "0.32× slower"
    # why a ratio is contaminated is a sentence: it goes in the row's note, not this no-wrap cell
    # pieces that never break, with room to break between them: a table of eleven columns fits a laptop
    return (f'<span class="wraps"><span class="nw">{ratio_number(o.value)}×</span> {esc(o.word)}<br>'
            f'<small><span class="nw">[{ratio_number(o.low)}–{ratio_number(o.high)}]</span>'
            f'{" " + esc(basis.strip()) if basis else ""}</small></span>')


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _params(spec) -> str:
    shown = []
    for key, value in spec.params:
        if key == "threads":
            continue
        shown.append(f"{key}={format_bytes(value) if key == 'bytes' else value}")
    return " ".join(shown)


def headline_extras(extra: dict, median_s: float | None, limit: int) -> str:
    from accelbench.report.summary import headline_extras as shown

    return shown(extra, limit=limit, median_s=median_s)


def _result_cells(row: Row, with_extras: bool) -> list[str]:
    m = row.measurement
    check = m.check
    verdict = "passed" if check.passed else f'<span class="failed">failed: {esc(check.detail)}</span>'
    share = transfer_share(row)
    rate = format_si(row.rate, row.rate_unit) if row.rate and m.valid else "—"
    cells = [_verdict_cell(m), f'<span class="nw">{esc(series_label(row.spec))}</span><br><small>{esc(_params(row.spec))}</small>',
             _ci_text(row), esc(rate),
             f"{_pct(row.of_measured)} / {_pct(row.of_datasheet)}"
             + (f'<br><small class="wraps">{esc(row.datasheet_provenance)}</small>' if row.datasheet_provenance else ""),
             _ratio_text(row.speedup_all, row.baseline_role, "cpu_all_cores"),
             _ratio_text(row.speedup_one, row.baseline_role, "cpu_one_thread"),
             _ratio_text(row.speedup_end_to_end, None, ""), _pct(share),
             f"{check.max_rel_error:.1e} / {check.tolerance:.1e}<br>{verdict}",
             esc(format_seconds(m.first_call_s))]
    if with_extras:
        cells.append(f'<span class="fig">{esc(_extras(row)).replace("; ", "<br>") or "—"}</span>')
    return cells


def _extras(row: Row) -> str:
    return headline_extras(row.measurement.extra, median_s=row.summary.median_s, limit=6)


def _verdict_cell(m) -> str:
    """The verdict, and its reasons on hover and in the row's note: every number is a claim."""
    css = {"invalid": "failed", "noisy": "noisy", "unverified": "noisy"}.get(m.verdict, "valid")
    reasons = "; ".join(m.verdict_reasons)
    return f'<span class="verdict {css}" title="{esc(reasons)}">{esc(m.verdict)}</span>'


def _warnings_note(row: Row) -> str:
    m = row.measurement
    parts = [f"{esc(m.verdict)}: " + " · ".join(esc(r) for r in m.verdict_reasons)] if m.verdict_reasons else []
    # a warning that restates a verdict reason ("invalid, time not counted: …") is said once
    warnings = [w for w in m.warnings if not any(reason in w for reason in m.verdict_reasons)]
    parts += ["warnings: " + " · ".join(esc(w) for w in warnings)] if warnings else []
    for label, ratio in (("× vs CPU all cores", row.speedup_all), ("× vs CPU 1 thread", row.speedup_one)):
        if ratio is None:
            continue
        why = ratio.contaminated or (short_reason(ratio.moved_sides) if ratio.withheld else "")
        if why:
            parts.append(f"{esc(label)} not decided{'' if ratio.paired else ' (unpaired)'}: {esc(why)}")
    return " — ".join(parts)


RESULT_HEADERS = ("verdict", "where · parameters", "median [95% CI]", "rate",
                  "% of peak: measured / datasheet", "× vs CPU all cores [95% CI]", "× vs CPU 1 thread",
                  "× end-to-end vs CPU all cores", "transfers' share of end-to-end",
                  "check: rel. error / tolerance", "first call")
EXTRAS_HEADER = "workload figures"
OPTIONAL_HEADERS = frozenset({"× vs CPU 1 thread", "× end-to-end vs CPU all cores", "transfers' share of end-to-end",
                              EXTRAS_HEADER})
NUMERIC_HEADERS = frozenset(RESULT_HEADERS[2:9] + ("first call",))


def results_html(rows: list[Row]) -> str:
    by_workload: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_workload[row.spec.workload].append(row)
    if not by_workload:
        return '<p class="missing">No results stored for this run.</p>'
    parts = []
    for workload, items in by_workload.items():
        with_extras = any(_extras(r) for r in items)
        headers = RESULT_HEADERS + (EXTRAS_HEADER,) * with_extras
        cells = [_result_cells(r, with_extras) for r in items]
        # a column with nothing to say for this workload (no transfers, no own figures) is left out
        kept = [i for i, header in enumerate(headers)
                if header not in OPTIONAL_HEADERS or any(row[i] not in ("—", "") for row in cells)]
        parts.append(f"<h3>{esc(workload)}</h3>")
        parts.append(_table([headers[i] for i in kept], [[row[i] for i in kept] for row in cells],
                            numeric={n for n, i in enumerate(kept) if headers[i] in NUMERIC_HEADERS},
                            notes=[_warnings_note(r) for r in items], css="results"))
    parts.append('<p class="small">Speed-up = CPU time / this time: the median of the ratios of N interleaved '
                 "paired rounds (A B B A …, load that comes and goes cancels) with its 95% order-statistic interval; "
                 "marked unpaired where pairing did not run (an imported run, blocks too long for the budget), then "
                 "the ratio of two medians measured apart with a 95% bootstrap interval. A verdict "
                 "only where the interval excludes 1. CPU = the fastest CPU implementation measured, on all usable "
                 "cores (its row says baseline). Rates come from the "
                 "median compute time; invalid results (a wrong output, an impossible rate, a synchronisation "
                 "that does not wait, an output on another device) get none and count nowhere; noisy ones "
                 "are shown but never set a ceiling.</p>")
    return "".join(parts)


def roofline_table_html(figure: FigureResult | None) -> str:
    if figure is None or not figure.present:
        return ""
    rows = []
    for device_id, facts in figure.facts.items():
        for p in facts["points"]:
            rows.append([esc(device_id), esc(p["label"]), f"{p['intensity']:.3g}",
                         esc(format_si(p["flop_per_s"], "FLOP/s")), _pct(p["fraction"])])
    return ("<h3>Roofline points</h3>" +
            _table(("device", "result", "intensity (FLOP/byte)", "performance", "% of attainable measured ceiling"),
                   rows, numeric={2, 3, 4}))


def skips_html(run: RunData) -> str:
    if not run.skips:
        return "<p>Nothing was skipped.</p>"
    rows = [[esc(s.spec.workload), esc(series_label(s.spec)), esc(_params(s.spec)), esc(s.reason)] for s in run.skips]
    return _table(("workload", "where", "parameters", "reason"), rows)


def _mapping_table(mapping: dict[str, Any], key_header: str, value_header: str) -> str:
    if not mapping:
        return "<p>—</p>"
    return _table((key_header, value_header), ([esc(k), esc(v)] for k, v in sorted(mapping.items())))


def _peaks_text(device) -> str:
    return "<br>".join(f"{esc(p.metric)}: {esc(format_si(p.value, p.unit))} ({esc(p.provenance)}: {esc(p.detail)})"
                       for p in device.peaks) or "—"


def machine_html(run: RunData) -> str:
    m = run.machine
    facts = {"hostname": m.get("hostname"), "operating system": m.get("os"), "python": m.get("python"),
             "run status": run.info.status, "started (UTC)": run.info.started_at,
             "finished (UTC)": run.info.finished_at, "accelbench that ran it": run.info.accelbench_version,
             "selection": ", ".join(f"{k}={v}" for k, v in run.info.selection.items() if v not in (None, [], "")),
             "tags": ", ".join(f"{k}={v}" for k, v in run.info.tags.items()) or "—"}
    devices = [[esc(d.id), esc(d.kind), esc(d.vendor), esc(d.name), esc(format_bytes(d.memory_bytes)), _peaks_text(d)]
               for d in run.devices.values()]
    return ("<h3>Run</h3>" + _mapping_table(facts, "field", "value") +
            "<h3>Devices (inventory at run time)</h3>" +
            _table(("id", "kind", "vendor", "name", "memory", "peaks (provenance: detail)"), devices) +
            "<h3>Software</h3>" + _mapping_table(m.get("software") or {}, "package", "version") +
            "<h3>Environment</h3>" + _mapping_table(m.get("environment") or {}, "variable", "value"))


# -- the page ----------------------------------------------------------------------------------

def run_headline_html(run: RunData) -> str:
    """The run's answer, as the page shows it (needs no figure)."""
    return headline_html(headline_for_run(run.rows, run.devices, run.machine, run.info.selection.get("rigor")),
                         run.run_id, unreached_html(run))


def run_section(run: RunData, figures: list[FigureResult], found: list[Finding], files: dict[str, str],
                results: str | None = None, headline: str | None = None) -> str:
    """`results`, `headline`: results_html(run.rows) and run_headline_html(run), where already
    rendered (while the figures were drawn)."""
    roof = next((f for f in figures if f.name == "roofline"), None)
    interrupted = (f'<p class="missing">This run is {esc(run.info.status)}: some combinations may be missing.</p>'
                   if run.info.status != "complete" else "")
    return (f'<section id="run-{esc(run.run_id)}"><h2>Run {esc(run.run_id)}</h2>'
            f'<p class="meta">{esc(run.machine.get("hostname", ""))} · started {esc(run.info.started_at[:19])} UTC · '
            f"{len(run.measurements)} results, {len(run.skips)} skipped · rigor "
            f'{esc(run.info.selection.get("rigor", "—"))}</p>{interrupted}'
            + (run_headline_html(run) if headline is None else headline)
            + f"<h3>Findings</h3>{findings_html(found)}" + reference_html(run)
            + "".join(figure_html(f, files.get(f.name), run.run_id) for f in figures)
            + "<h2>Results</h2>" + (results_html(run.rows) if results is None else results) + roofline_table_html(roof)
            + peak_pair_html(run) + energy_html(run)
            + "<h2>Skipped combinations</h2>" + skips_html(run)
            + "<h2>Machine and software</h2>" + machine_html(run) + "</section>")


def render_page(sections: list[tuple[Any, ...]], generated_at: datetime | None = None) -> str:
    """Each section: run_section's arguments (run, figures, findings, files[, results table, headline])."""
    generated_at = generated_at or datetime.now(timezone.utc)
    ids = ", ".join(run.run_id for run, *_ in sections)
    body = "".join(run_section(*section) for section in sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>accelbench report: {esc(ids)}</title><style>{CSS}</style></head><body>"
            f"<h1>accelbench report</h1><p class=\"meta\">Run(s) {esc(ids)} · generated "
            f"{esc(generated_at.isoformat(timespec='seconds'))} by accelbench {esc(__version__)}</p>"
            f"{body}</body></html>\n")
