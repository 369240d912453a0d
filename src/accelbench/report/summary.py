"""The end-of-run tables: one per workload, every number with its unit and its spread."""
from __future__ import annotations

from collections import Counter, defaultdict

from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from accelbench.results import Skip
from accelbench.report.analysis import Row
from accelbench.timing import stats
from accelbench.units import format_bytes, format_seconds, format_si
from accelbench.verdict import VERDICTS, severity


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

def speedup_text(ratio: stats.RatioCI | None) -> str:
    """'3.20× [3.00–3.40] faster (16 pairs)': the basis says whether it comes from paired rounds."""
    if ratio is None:
        return "—"
    verdict = ratio.verdict()
    word = {"faster": " [green]faster[/]", "slower": " [red]slower[/]", "same": " same"}.get(verdict, "")
    basis = getattr(ratio, "basis", None)
    shown = f" [dim]({basis()})[/]" if basis else ""
    return f"{ratio.ratio:.2f}× [{ratio.low:.2f}–{ratio.high:.2f}]{word}{shown}"


def _percent(value: float | None) -> str:
    return f"{value:.0%}" if value is not None else "—"


def workload_table(workload: str, rows: list[Row]) -> Table:
    table = Table(title=f"[bold]{workload}[/]", title_justify="left", show_edge=False, pad_edge=False)
    columns: list[tuple[str, JustifyMethod]] = [("where", "left"), ("parameters", "left"), ("median ± 95% CI", "right"), ("rate", "right"),
               ("% of peak: measured / datasheet", "right"), ("× vs CPU all cores", "right")]
    with_one = any(r.speedup_one for r in rows)
    with_e2e = any(r.speedup_end_to_end for r in rows)
    if with_one:
        columns.append(("× vs 1 core", "right"))
    if with_e2e:
        columns.append(("× end-to-end vs all cores", "right"))
    with_extra = any(headline_extras(r.measurement.extra, median_s=r.summary.median_s) for r in rows)
    columns += [("workload figures", "left")] * with_extra
    for header, justify in columns:
        table.add_column(header, justify=justify, overflow="fold")
    for row in rows:
        m, s = row.measurement, row.summary
        cells = [escape(where(row)), escape(params_text(m.spec)), _time_text(s),
                 _rate_text(row),
                 f"{_percent(row.of_measured)} / {_percent(row.of_datasheet)}"
                 + (" (formula)" if row.datasheet_provenance == "formula" else ""),
                 "baseline" if row.baseline_role == "cpu_all_cores" else speedup_text(row.speedup_all)]
        cells += ["baseline" if row.baseline_role == "cpu_one_thread" else speedup_text(row.speedup_one)] * with_one
        cells += [speedup_text(row.speedup_end_to_end)] * with_e2e
        cells += [escape(headline_extras(m.extra, median_s=s.median_s))] * with_extra
        table.add_row(*cells)
    return table


_VERDICT_STYLE = {"valid": "", "noisy": " [yellow](noisy)[/]", "unverified": " [yellow](unverified)[/]"}


def _rate_text(row: Row) -> str:
    """The rate with its verdict: an invalid result shows no rate at all."""
    m = row.measurement
    if not m.valid:
        return "[red]invalid[/]"
    return (format_si(row.rate, row.rate_unit) if row.rate else "—") + _VERDICT_STYLE.get(m.status, "")


def verdict_counts(rows: list[Row]) -> str:
    counts = Counter(row.measurement.status for row in rows)
    return ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])


def _render_verdicts(rows: list[Row], console: Console) -> None:
    """The count of each verdict, then why each result is not plainly valid (grouped by reason)."""
    console.print()
    console.print(f"[bold]Verdicts[/]: {verdict_counts(rows)}")
    by_reason: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in rows:
        m = row.measurement
        if m.status != "valid" and m.verdict_reasons:
            by_reason[(m.status, m.verdict_reasons[0])].append(f"{m.spec.workload} {where(row)} {params_text(m.spec)}")
    for (status, reason), labels in sorted(by_reason.items(), key=lambda item: -severity(item[0][0])):
        style = "red" if status == "invalid" else "yellow"
        shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        console.print(f"  [{style}]{status}[/]: {escape(reason)} — {escape(shown)}")


def _time_text(s: stats.Summary) -> str:
    halfwidth = max(s.median_s - s.ci_low_s, s.ci_high_s - s.median_s)
    if s.median_s <= 0 or halfwidth == float("inf"):
        return f"{format_seconds(s.median_s)} (n={s.n}, no CI)"
    return f"{format_seconds(s.median_s)} ± {halfwidth / s.median_s:.1%}"


def render_summary(rows: list[Row], skips: list[Skip], console: Console, warnings_limit: int = 12) -> None:
    by_workload: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_workload[row.spec.workload].append(row)
    for workload, workload_rows in by_workload.items():
        console.print()
        console.print(workload_table(workload, workload_rows))
    console.print("[dim]× columns: CPU time / this time (speed-up), the median of the ratios of interleaved "
                  "paired rounds (N pairs) with its 95% interval; \"unpaired\": the ratio of two medians measured "
                  "apart (not paired: `--json` says why), bootstrap interval. A verdict only where the interval "
                  "excludes 1. CPU = numpy on all usable cores. Invalid results show no rate and count nowhere.[/]")
    if rows:
        _render_verdicts(rows, console)
    _render_warnings(rows, console, warnings_limit)
    if skips:
        console.print()
        console.print(f"[bold]Skipped[/] ({len(skips)}):")
        for reason, specs in _grouped_skips(skips).items():
            console.print(f"  {escape(reason)}: {escape(', '.join(specs[:4]))}" + (f" and {len(specs) - 4} more" if len(specs) > 4 else ""))


def _render_warnings(rows: list[Row], console: Console, limit: int) -> None:
    flagged = [(row, w) for row in rows for w in row.measurement.warnings]
    if not flagged:
        return
    console.print()
    console.print(f"[bold yellow]Warnings[/] ({len(flagged)}):")
    for row, warning in flagged[:limit]:
        console.print(f"  {escape(row.spec.workload)} {escape(where(row))} {escape(params_text(row.spec))}: {escape(warning)}")
    if len(flagged) > limit:
        console.print(f"  … {len(flagged) - limit} more (`--json` lists them all)")


def _grouped_skips(skips: list[Skip]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for skip in skips:
        grouped[skip.reason.splitlines()[0]].append(f"{skip.spec.workload} {where(skip.spec)} {params_text(skip.spec)}")
    return grouped
