"""Each result as scripts read it (`run --json`, `export`): the raw measurement and, beside it,
every figure accelbench derives from it, so no script has to recompute them.

The layout is versioned (RESULTS_SCHEMA_VERSION) and documented in docs/results-schema.md; the
JSON Schema ships as src/accelbench/schemas/results.schema.json. Plain JSON only: an unbounded
interval end (too few samples or pairs) is written as null, never as Infinity.
"""
from __future__ import annotations

from typing import Any

from accelbench.report.ratio_text import phrase
from accelbench.report.analysis import Row
from accelbench.report.data import phase_median_s, transfer_share
from accelbench.results import finite  # noqa: F401 - re-exported for the JSON writers
from accelbench.runner.speedups import SpeedupCI
from accelbench.timing.stats import CONFIDENCE

RESULTS_SCHEMA_VERSION = 1

# rates in one unit per kind, so a column of them sorts and plots without reading prefixes
GIGA = 1e9
RATE_UNITS = {"FLOP/s": "GFLOP/s", "B/s": "GB/s"}

# derived["speedups"] key -> Row attribute; what each one divides is in docs/results-schema.md
SPEEDUP_FIELDS = (
    ("vs_cpu_all_cores", "speedup_all"),              # the CPU on all cores, compute / this compute (resident)
    ("vs_cpu_one_core", "speedup_one"),               # the CPU on one thread, compute / this compute
    ("end_to_end_vs_cpu_all_cores", "speedup_end_to_end"),  # all cores, compute / this end to end (transfers in)
    ("float32_vs_this_dtype", "vs_float32"),          # this compute / float32's compute, same series
)


def _percent(fraction: float | None) -> float | None:
    return None if fraction is None else 100.0 * fraction


def speedup_dict(ratio: SpeedupCI | None) -> dict[str, Any] | None:
    if ratio is None:
        return None
    return finite({"ratio": ratio.ratio, "ci_low": ratio.low, "ci_high": ratio.high,
                   "confidence": ratio.confidence, "verdict": ratio.verdict(), "paired": ratio.paired,
                   "pairs": ratio.pairs, "method": ratio.method, "text": phrase(ratio),
                   "contaminated": ratio.contaminated, "load_moved": ratio.load_moved})


def derived_figures(row: Row) -> dict[str, Any]:
    """What accelbench computes from one result's raw samples, in the units named beside them."""
    s = row.summary
    rate = row.rate if row.measurement.valid and row.rate else None
    share = transfer_share(row)
    return finite({
        "median_s": s.median_s, "ci_low_s": s.ci_low_s, "ci_high_s": s.ci_high_s,
        "confidence": CONFIDENCE, "ci_method": s.ci_method,
        "relative_spread": s.rel_ci_halfwidth,
        "n_samples": s.n, "min_s": s.min_s, "max_s": s.max_s, "mean_s": s.mean_s, "stdev_s": s.stdev_s,
        "iqr_s": s.iqr_s,
        "rate": None if rate is None else rate / GIGA, "rate_unit": RATE_UNITS[row.rate_unit],
        "peak_metric": row.metric,
        "percent_of_measured_peak": _percent(row.of_measured),
        "percent_of_datasheet_peak": _percent(row.of_datasheet),
        "datasheet_provenance": row.datasheet_provenance,
        "baseline_role": row.baseline_role,
        "speedups": {name: speedup_dict(getattr(row, attribute)) for name, attribute in SPEEDUP_FIELDS},
        "end_to_end_median_s": phase_median_s(row, "end_to_end"),
        "transfer_percent_of_end_to_end": _percent(share),
    })


def result_entry(row: Row) -> dict[str, Any]:
    """One result of the document: the measurement as stored (raw samples kept), then `derived`."""
    return {**finite(row.measurement.to_dict()), "derived": derived_figures(row)}


def add_derived(document: dict[str, Any], store: Any) -> dict[str, Any]:
    """An `accelbench export` document with each result's `derived` block added (import ignores
    them: figures are always recomputed from the samples)."""
    from accelbench.report.data import load_run

    for run in document["runs"]:
        rows = load_run(store, run["id"]).rows
        if [r.spec.to_dict() for r in rows] != [entry["spec"] for entry in run["results"]]:
            raise RuntimeError(f"run {run['id']}: the stored results changed while exporting; export again")
        for entry, row in zip(run["results"], rows):
            entry["derived"] = derived_figures(row)
    document["results_schema_version"] = RESULTS_SCHEMA_VERSION
    return document
