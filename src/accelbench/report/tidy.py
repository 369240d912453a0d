"""Results as a tidy table: one row per result, one column per figure, the same for every workload.

`accelbench export --format csv` writes it, `RunResults.to_pandas()` returns it. Every figure is
taken from the result's `derived` block (report/derived.py), so the CSV and `--json` never
disagree. Columns are documented in docs/results-schema.md; reading them from R and pandas in
docs/r-and-pandas.md.
"""
from __future__ import annotations

import csv
import math
from typing import IO, Any, Iterable

from accelbench.report.analysis import Row
from accelbench.report.data import series_label, size_of
from accelbench.report.derived import SPEEDUP_FIELDS, derived_figures

_SPEEDUP_COLUMNS = tuple(f"speedup_{name}{part}" for name, _ in SPEEDUP_FIELDS
                         for part in ("", "_ci_low", "_ci_high", "_pairs"))

TIDY_COLUMNS = (
    "run_id", "started_at", "host",
    "workload", "backend", "device", "threads", "dtype", "size", "params", "series",
    "median_s", "ci_low_s", "ci_high_s", "relative_spread", "n_samples",
    "rate", "rate_unit", "peak_metric", "percent_of_measured_peak", "percent_of_datasheet_peak",
    *_SPEEDUP_COLUMNS,
    "end_to_end_median_s", "transfer_percent_of_end_to_end",
    "first_call_s", "check_passed", "max_rel_error",
    "verdict", "verdict_reasons", "warnings",
)

# copied from the derived block under the same name
_FROM_DERIVED = ("median_s", "ci_low_s", "ci_high_s", "relative_spread", "n_samples", "rate", "rate_unit",
                 "peak_metric", "percent_of_measured_peak", "percent_of_datasheet_peak",
                 "end_to_end_median_s", "transfer_percent_of_end_to_end")


def _whole(value: float | None) -> float | int | None:
    return int(value) if value is not None and float(value).is_integer() else value


def tidy_record(row: Row, *, run_id: str, started_at: str | None = None, host: str | None = None) -> dict[str, Any]:
    m, spec = row.measurement, row.spec
    derived = derived_figures(row)
    record: dict[str, Any] = {
        "run_id": run_id, "started_at": started_at, "host": host,
        "workload": spec.workload, "backend": spec.backend, "device": spec.device,
        "threads": m.threads if m.threads is not None else spec.param("threads"),
        "dtype": spec.param("dtype"), "size": _whole(size_of(spec)),
        "params": " ".join(f"{k}={v}" for k, v in spec.params), "series": series_label(spec),
        **{name: derived[name] for name in _FROM_DERIVED},
    }
    for name, _ in SPEEDUP_FIELDS:
        ratio = derived["speedups"][name] or {}
        record.update({f"speedup_{name}": ratio.get("ratio"), f"speedup_{name}_ci_low": ratio.get("ci_low"),
                       f"speedup_{name}_ci_high": ratio.get("ci_high"), f"speedup_{name}_pairs": ratio.get("pairs")})
    error = m.check.max_rel_error
    record.update({
        "first_call_s": m.first_call_s, "check_passed": m.check.passed,
        "max_rel_error": error if math.isfinite(error) else None,
        "verdict": m.verdict, "verdict_reasons": "; ".join(m.verdict_reasons), "warnings": "; ".join(m.warnings),
    })
    return record


def tidy_records(rows: Iterable[Row], *, run_id: str, started_at: str | None = None,
                 host: str | None = None) -> list[dict[str, Any]]:
    return [tidy_record(row, run_id=run_id, started_at=started_at, host=host) for row in rows]


def _cell(value: Any) -> Any:
    """Empty for a missing figure (R's NA, pandas' NaN); true/false for flags; floats in full."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def write_csv(records: Iterable[dict[str, Any]], handle: IO[str]) -> int:
    """Write the header and one line per record (RFC 4180 quoting); returns the number of records."""
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(TIDY_COLUMNS)
    count = 0
    for record in records:
        writer.writerow([_cell(record.get(column)) for column in TIDY_COLUMNS])
        count += 1
    return count
