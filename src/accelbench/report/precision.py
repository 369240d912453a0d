"""The seed's "use single precision if it does not affect the result substantially", measured:
for every workload other than matmul (which advice.precision covers) run in float64 and float32 on
the same backend and device with the same parameters, how much faster float32 was and how much
accuracy it lost against float64.
"""
from __future__ import annotations

from collections import defaultdict

from accelbench.report import ratio_text
from accelbench.report.data import series_label
from accelbench.report.analysis import Row
from accelbench.timing import bootstrap

# accuracy figures the workloads store, in the order preferred: against float64 on the same inputs first
ACCURACY_KEYS = ("rel_error_vs_float64", "max_error_in_standard_errors", "error_in_standard_errors",
                 "abs_error", "correct_digits")


def time_vs_float32(other: Row, fp32: Row):
    """This dtype's time over float32's, same series and parameters: the paired rounds where the run
    timed them (runner/pairing.py), else two medians measured apart. The one derivation the findings
    and the precision chart state."""
    return other.vs_float32 or bootstrap.ratio_of_medians_ci(other.measurement.samples_s, fp32.measurement.samples_s)


def precision_tradeoffs(rows: list[Row]) -> list:
    from accelbench.report.findings import INFO, Finding

    pairs: dict[tuple, dict[str, Row]] = defaultdict(dict)
    for row in rows:
        dtype = row.spec.param("dtype")
        if row.spec.workload == "matmul" or not row.measurement.valid or dtype not in ("float32", "float64"):
            continue
        rest = tuple((k, v) for k, v in row.spec.params if k not in ("dtype", "threads"))
        pairs[(row.spec.workload, series_label(row.spec), rest)][dtype] = row
    found = []
    for (workload, label, rest), by_dtype in pairs.items():
        if set(by_dtype) != {"float32", "float64"}:
            continue
        fp32, fp64 = by_dtype["float32"], by_dtype["float64"]
        ratio = time_vs_float32(fp64, fp32)
        basis = f", {ratio.basis()}" if hasattr(ratio, "basis") else ""
        lost = _accuracy_text(fp32)
        params = " ".join(f"{k}={v}" for k, v in rest)
        text = (f"{workload} {params} on {label}: {ratio_text.compared(ratio, 'float32', 'float64')}"
                f"{f' ({basis[2:]})' if basis else ''}; {lost}.")
        found.append(Finding("precision_tradeoff", INFO, text.replace("  ", " "), {
            "workload": workload, "series": label, "float64_over_float32_time": ratio.ratio,
            "ci_low": ratio.low, "ci_high": ratio.high, "pairs": getattr(ratio, "pairs", 0),
            **{k: fp32.measurement.extra[k] for k in ACCURACY_KEYS if k in fp32.measurement.extra},
            "float32_check_rel_error": fp32.measurement.check.max_rel_error}))
    return found


def _accuracy_text(fp32: Row) -> str:
    extra = fp32.measurement.extra
    shown = [f"{key.replace('_', ' ')} {extra[key]:.2g}" for key in ACCURACY_KEYS
             if isinstance(extra.get(key), (int, float)) and not isinstance(extra.get(key), bool)]
    if shown:
        return "float32 accuracy: " + ", ".join(shown[:3])
    return f"float32 relative error against the reference {fp32.measurement.check.max_rel_error:.1e}"
