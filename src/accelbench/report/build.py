"""Build a report: load runs, draw figures, derive findings, write one HTML file and the PNGs."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from accelbench.report.advice import Finding, findings
from accelbench.report.data import RunData, load_runs

HTML_NAME = "report.html"


@dataclass
class ReportFiles:
    html_path: Path
    png_paths: list[Path] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # notes of figures that had no data
    run_ids: list[str] = field(default_factory=list)


def run_findings(run: RunData) -> list[Finding]:
    return findings(run.rows, run.devices, run.machine, rigor=run.info.selection.get("rigor"))


def write_report(runs: list[RunData], output_dir: str | Path, inputs: Sequence[str | Path] = ()) -> ReportFiles:
    """`inputs`: files the report is made from (the database), never written over."""
    from accelbench.bulk import frozen_heap

    with frozen_heap():  # the loaded runs stay alive throughout: the collector need not walk them
        return _write_report(runs, output_dir, inputs)


def _write_report(runs: list[RunData], output_dir: str | Path, inputs: Sequence[str | Path]) -> ReportFiles:
    from accelbench.report.drawing import draw_all
    from accelbench.report.html import render_page, results_html, run_headline_html
    from accelbench.safe_write import check_target, write_bytes, write_text

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = ReportFiles(out / HTML_NAME, run_ids=[r.run_id for r in runs])
    check_target(files.html_path, inputs)  # a planted link or the database: refused before drawing
    found: list[list[Finding]] = []
    tables: list[str] = []
    headlines: list[str] = []

    def meanwhile() -> None:  # what needs no figure, while workers draw them
        found.extend(run_findings(run) for run in runs)
        tables.extend(results_html(run.rows) for run in runs)
        headlines.extend(run_headline_html(run) for run in runs)

    drawn = draw_all(runs, meanwhile=meanwhile)
    sections = []
    for run, figures, run_found, table, headline in zip(runs, drawn, found, tables, headlines):
        names = {}
        for figure in figures:
            if figure.png is None:  # not figure.present; no note: a workload not measured, left out
                if figure.note:
                    files.missing.append(f"{run.run_id}: {figure.note}")
                continue
            # one run: plain names; several: the run id keeps them apart
            name = f"{figure.name}.png" if len(runs) == 1 else f"{run.run_id}-{figure.name}.png"
            write_bytes(out / name, figure.png, inputs)
            files.png_paths.append(out / name)
            names[figure.name] = name
        sections.append((run, figures, run_found, names, table, headline))
    write_text(files.html_path, render_page(sections), inputs)
    return files


def build_report(store, refs: list[str], output_dir: str | Path) -> ReportFiles:
    from accelbench.bulk import frozen_heap

    from accelbench.safe_write import database_files

    with frozen_heap(collect=False):  # reading back makes tens of thousands of objects, no cycles
        runs = load_runs(store, refs or ["latest"])
    return write_report(runs, output_dir, database_files(getattr(store, "path", None)))
