"""The end-of-run tables: one per workload, every number with its unit and its spread."""
from __future__ import annotations

from collections import Counter, defaultdict

from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from accelbench.results import Skip
from accelbench.terminal import hanging
from accelbench.report import ratio_text
from accelbench.report.analysis import Row
from accelbench.timing import stats
from accelbench.units import format_bytes, format_seconds, format_si
from accelbench.verdict import METHOD_NOTES, VERDICTS, kind_of, severity


# workload-specific figures worth a column, in the order shown (the rest stay in --json and the DB)
HEADLINE_EXTRAS = (
    "time_to_accuracy_s", "accuracy_reached", "train_samples_per_s", "epoch_time_s", "images_per_s",
    "latency_p50_s", "latency_p99_s", "throughput_samples_per_s", "scaling_efficiency",
    "speedup_vs_fp32", "rel_error_vs_float64", "error_in_standard_errors", "correct_digits",
)


def headline_extras(extra: dict, limit: int = 4, median_s: float | None = None) -> str:
    from accelbench.units import format_property, label

    shown = []
    items, unit = extra.get("items_per_call"), extra.get("item_unit")
    if isinstance(items, (int, float)) and unit and median_s:
        shown.append(f"{format_si(items / median_s, '')} {unit}/s")
    for name in HEADLINE_EXTRAS:
        value = extra.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            text = format_property(name, value) if not name.endswith("_per_s") else format_si(value, "/s")
            shown.append(f"{label(name).lower() if not name.endswith('_per_s') else name[:-6].replace('_', ' ')}: {text}")
        if len(shown) == limit:
            break
    return "; ".join(shown)


def where(row_or_spec) -> str:
    spec = getattr(row_or_spec, "spec", row_or_spec)
    threads = spec.param("threads")
    suffix = f" ({threads} thread{'s' if threads != 1 else ''})" if threads else ""
    return f"{spec.backend}@{spec.device}{suffix}"


def params_text(spec) -> str:
    shown = []
    for key, value in spec.params:
        if key == "threads":
            continue
        if key == "bytes":
            value = format_bytes(value)
        shown.append(f"{key}={value}")
    return " ".join(shown)



def spec_label(spec) -> str:
    """"matmul numpy@cpu (2 threads) dtype=float32 n=2000": the way the run tables name a spec."""
    return " ".join(p for p in (spec.workload, where(spec), params_text(spec)) if p)

ratio_number = ratio_text.number


def _unpaired(ratio) -> bool:
    return getattr(ratio, "paired", True) is False


def speedup_text(ratio: stats.RatioCI | None, stacked: bool = False, basis: bool = True) -> str:
    """'3.20× [3.00–3.40] faster (16 pairs)'; stacked (narrow tables): '3.20× faster' over
    '[3.00–3.40]', the pair count left to the legend and '†' marking an unpaired ratio."""
    if ratio is None:
        return "—"
    o = ratio_text.oriented(ratio)  # "3.17× slower", never "0.32× slower"
    word = {"faster": " [green]faster[/]", "slower": " [red]slower[/]", "same": " same",
            "contaminated": " [yellow]contaminated[/]"}.get(o.word, "")
    if getattr(ratio, "withheld", False):  # a verdict load could have made (runner/load_bias.py)
        word = " [yellow]load[/]"
    interval = f"[{ratio_number(o.low)}–{ratio_number(o.high)}]"
    value = ratio_number(o.value)
    if stacked:
        return f"{value}×{'†' * _unpaired(ratio)}{word}\n{escape(interval)}"
    if not basis:  # the pair count is in the legend
        return f"{value}×{'†' * _unpaired(ratio)} {escape(interval)}{word}"
    described = getattr(ratio, "basis", None)
    shown = f" [dim]({described()})[/]" if described else ""
    return f"{value}× {escape(interval)}{word}{shown}"


def _percent(value: float | None) -> str:
    return f"{value:.0%}" if value is not None else "—"


def _peak_text(row: Row, stacked: bool) -> str:
    shares = f"{_percent(row.of_measured)} / {_percent(row.of_datasheet)}"
    if row.datasheet_provenance != "formula":
        return shares
    return shares + ("*" if stacked else " (formula)")


def _baseline_or(row: Row, role: str, ratio, stacked: bool, basis: bool = True) -> str:
    return "baseline" if row.baseline_role == role else speedup_text(ratio, stacked, basis)


def _table(title: str, columns: list[tuple[str, JustifyMethod]], **options) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, **options)
    for header, justify in columns:
        table.add_column(header, justify=justify, overflow="fold")
    return table


def workload_table(workload: str, rows: list[Row], basis: bool = True) -> Table:
    """Every figure of a result on one line: for a terminal wide enough to show it whole (without
    `basis`, the pair count of each speed-up is left to the legend)."""
    columns: list[tuple[str, JustifyMethod]] = [("where", "left"), ("parameters", "left"), ("median ± 95% CI", "right"), ("rate", "right"),
               ("% of peak\nmeasured / datasheet", "right"), ("× vs CPU all cores", "right")]
    with_one = any(r.speedup_one for r in rows)
    with_e2e = any(r.speedup_end_to_end for r in rows)
    if with_one:
        columns.append(("× vs 1 core", "right"))
    if with_e2e:
        columns.append(("× end-to-end\nvs all cores", "right"))
    with_extra = any(headline_extras(r.measurement.extra, median_s=r.summary.median_s) for r in rows)
    columns += [("workload figures", "left")] * with_extra
    table = _table(f"[bold]{escape(workload)}[/]", columns)
    for row in rows:
        m, s = row.measurement, row.summary
        cells = [escape(where(row)), escape(params_text(m.spec)), _time_text(s), _rate_text(row),
                 _peak_text(row, stacked=False), _baseline_or(row, "cpu_all_cores", row.speedup_all, False, basis)]
        cells += [_baseline_or(row, "cpu_one_thread", row.speedup_one, False, basis)] * with_one
        cells += [speedup_text(row.speedup_end_to_end, basis=basis)] * with_e2e
        cells += [escape(headline_extras(m.extra, median_s=s.median_s))] * with_extra
        table.add_row(*cells)
    return table


def _where_and_what(row: Row) -> str:
    return f"{escape(where(row))}\n[dim]{escape(params_text(row.spec))}[/]"


def narrow_tables(workload: str, rows: list[Row]) -> list[Table]:
    """The same figures for a narrow terminal: times and rates, then the speed-ups, then the
    workload's own figures, each row naming where it ran over its parameters."""
    first_width = max(len(where(r)) for r in rows)
    times = _table(f"[bold]{escape(workload)}[/]", [("where\nparameters", "left"), ("median\n± 95% CI", "right"),
                                                   ("rate\nverdict", "right"), ("% of peak\nmeasured / sheet", "right")])
    times.columns[0].min_width = first_width  # "pyopencl@opencl:0:0" stays whole
    for row in rows:
        times.add_row(_where_and_what(row), "\n".join(_time_parts(row.summary)),
                      _rate_and_verdict(row), _peak_text(row, stacked=True))
    tables = [times]
    wanted = [("× vs CPU\nall cores", lambda r: _baseline_or(r, "cpu_all_cores", r.speedup_all, True))]
    if any(r.speedup_one for r in rows):
        wanted.append(("× vs CPU\n1 core", lambda r: _baseline_or(r, "cpu_one_thread", r.speedup_one, True)))
    if any(r.speedup_end_to_end for r in rows):
        wanted.append(("× end-to-end\nvs all cores", lambda r: speedup_text(r.speedup_end_to_end, True)))
    if any(r.speedup_all or r.speedup_one or r.speedup_end_to_end for r in rows):
        speedups = _table(f"[bold]{escape(workload)}[/]: speed-ups [95% CI]",
                          [("where\nparameters", LEFT)] + [(header, RIGHT) for header, _ in wanted])
        speedups.columns[0].min_width = first_width
        for row in rows:
            speedups.add_row(_where_and_what(row), *(cell(row) for _, cell in wanted))
        tables.append(speedups)
    extras = [(row, headline_extras(row.measurement.extra, median_s=row.summary.median_s)) for row in rows]
    if any(text for _, text in extras):
        figures = _table(f"[bold]{escape(workload)}[/]: workload figures", [("where\nparameters", "left"), ("", "left")])
        figures.columns[0].min_width = first_width
        for row, text in extras:
            figures.add_row(_where_and_what(row), escape(text.replace("; ", "\n")) or "—")
        tables.append(figures)
    return tables


def _rate_and_verdict(row: Row) -> str:
    m = row.measurement
    if not m.valid:
        return "—\n[red]invalid[/]"
    style = {"valid": "green", "noisy": "yellow", "unverified": "yellow"}.get(m.verdict, "")
    rate = format_si(row.rate, row.rate_unit) if row.rate else "—"
    return f"{rate}\n[{style}]{m.verdict}[/]" if style else f"{rate}\n{m.verdict}"


def workload_tables(workload: str, rows: list[Row], console: Console) -> tuple[list[Table], str]:
    """The widest layout that fits the console: "full" (one line a result, pairs in each cell),
    "compact" (the same, pair counts in the legend) or "narrow" (two-line rows, several tables)."""
    unbounded = console.options.update_width(10_000)  # natural widths, not clamped to the console's
    for layout, table in (("full", workload_table(workload, rows)),
                          ("compact", workload_table(workload, rows, basis=False))):
        if console.measure(table, options=unbounded).maximum <= console.width:
            return [table], layout
    return narrow_tables(workload, rows), "narrow"


def pairs_note(rows: list[Row]) -> str:
    """'8 pairs each' (or '6–8 pairs'): how many paired rounds back the speed-ups shown."""
    counts = sorted({r.pairs for row in rows for r in (row.speedup_all, row.speedup_one, row.speedup_end_to_end)
                     if r is not None and getattr(r, "paired", False) and getattr(r, "pairs", None)})
    if not counts:
        return "N pairs"
    return f"{counts[0]} pairs each" if len(counts) == 1 else f"{counts[0]}–{counts[-1]} pairs"


LEFT: JustifyMethod = "left"
RIGHT: JustifyMethod = "right"
_VERDICT_STYLE = {"valid": "", "noisy": " [yellow](noisy)[/]", "unverified": " [yellow](unverified)[/]"}


def _rate_text(row: Row) -> str:
    """The rate with its verdict: an invalid result shows no rate at all."""
    m = row.measurement
    if not m.valid:
        return "[red]invalid[/]"
    return (format_si(row.rate, row.rate_unit) if row.rate else "—") + _VERDICT_STYLE.get(m.verdict, "")


def verdict_counts(rows: list[Row]) -> str:
    counts = Counter(row.measurement.verdict for row in rows)
    return ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])


def _render_verdicts(rows: list[Row], console: Console) -> None:
    """The count of each verdict, then why each result is not plainly valid (grouped by reason)."""
    console.print()
    console.print(f"[bold]Verdicts[/]: {verdict_counts(rows)}")
    by_reason: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in rows:
        m = row.measurement
        if m.verdict != "valid" and m.verdict_reasons:
            by_reason[(m.verdict, m.verdict_reasons[0])].append(f"{m.spec.workload} {where(row)} {params_text(m.spec)}")
    for (status, reason), labels in sorted(by_reason.items(), key=lambda item: -severity(item[0][0])):
        style = "red" if status == "invalid" else "yellow"
        shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        console.print(hanging(f"[{style}]{status}[/]:", f"{escape(reason)} — {escape(shown)}"))


def _time_parts(s: stats.Summary) -> tuple[str, str]:
    """('6.69 µs', '± 4.3%'): the median and the half-width of its interval, relative."""
    halfwidth = max(s.median_s - s.ci_low_s, s.ci_high_s - s.median_s)
    if s.median_s <= 0 or halfwidth == float("inf"):
        return format_seconds(s.median_s), f"(n={s.n}, no CI)"
    return format_seconds(s.median_s), f"± {halfwidth / s.median_s:.1%}"


def _time_text(s: stats.Summary) -> str:
    return " ".join(_time_parts(s))


def render_summary(rows: list[Row], skips: list[Skip], console: Console, warnings_limit: int = 12) -> None:
    by_workload: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_workload[row.spec.workload].append(row)
    layouts = set()
    for workload, workload_rows in by_workload.items():
        tables, layout = workload_tables(workload, workload_rows, console)
        layouts.add(layout)
        for table in tables:
            console.print()
            console.print(table)
    if rows:  # the legend of the tables' × columns: with no table it explains nothing
        _render_legend(rows, layouts, console)
        _render_verdicts(rows, console)
    _render_warnings(rows, console, warnings_limit)
    if skips:
        console.print()
        console.print(f"[bold]Skipped[/] ({len(skips)}):")
        for reason, specs in _grouped_skips(skips).items():
            console.print(hanging("•", f"{escape(reason)}: {escape(', '.join(specs[:4]))}"
                                      + (f" and {len(specs) - 4} more" if len(specs) > 4 else "")))


def _render_legend(rows: list[Row], layouts: set, console: Console) -> None:
    console.print(f"[dim]× columns: CPU time / this time (speed-up), the median of the ratios of interleaved "
                  f"paired rounds ({pairs_note(rows)}) with its 95% interval; \"unpaired\"{' (†)' * bool(layouts - {'full'})}: the ratio "
                  "of two medians measured apart (not paired: `--json` says why), bootstrap interval. A verdict only "
                  "where the interval excludes 1; \"slower\" shows the inverse (this time / CPU time, so 3.17× "
                  "slower, never 0.32×); \"contaminated\": the paired rounds disagree with the two measurements "
                  "(`--json` says how), no verdict; \"load\": an unpaired ratio with a side slowed by load, which could "
                  "have made its direction, so no verdict. CPU = the fastest CPU implementation measured, on all usable "
                  "cores (its row says baseline). Invalid results show no rate "
                  "and count nowhere." + (" *: the datasheet column is a peak from a formula (cores × clock × FLOP/cycle)."
                                      if "narrow" in layouts and any(r.datasheet_provenance == "formula" for r in rows)
                                      else "")
                  + "[/]")


def _render_warnings(rows: list[Row], console: Console, limit: int) -> None:
    flagged = [(row, w) for row in rows for w in row.measurement.warnings if kind_of(w) not in METHOD_NOTES]
    if not flagged:
        return
    console.print()
    console.print(f"[bold yellow]Warnings[/] ({len(flagged)}):")
    for row, warning in flagged[:limit]:
        console.print(hanging("•", f"{escape(row.spec.workload)} {escape(where(row))} {escape(params_text(row.spec))}: "
                                  f"{escape(warning)}"))
    if len(flagged) > limit:
        console.print(f"  … {len(flagged) - limit} more (`--json` lists them all)")


def _grouped_skips(skips: list[Skip]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for skip in skips:
        grouped[skip.reason.splitlines()[0]].append(spec_label(skip.spec))  # no stray space without parameters
    return grouped
