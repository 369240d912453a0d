"""Comparing runs: two runs spec by spec, a run against the seeds' published figures and datasheet
peaks, and a roofline projection of a run onto another device.

    from accelbench.report.compare import compare_runs, load_run
    comparison = compare_runs(load_run("latest~1"), load_run("latest"))
    comparison            # in Jupyter: a table (Comparison._repr_html_)
    comparison.summary_line()
"""
from __future__ import annotations

from accelbench.report.compare.compare import Comparison, SpecComparison, compare_runs
from accelbench.report.compare.html import results_table_html
from accelbench.report.compare.sources import RunData, load_run

__all__ = ["Comparison", "SpecComparison", "compare_runs", "results_table_html", "RunData", "load_run"]
