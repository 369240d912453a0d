"""Findings derived from the measurements: each says what the numbers show and carries them.

No finding is boilerplate: each one exists only when the data supports it (a break-even needs
speed-up intervals that exclude 1 on both sides), and its `numbers` hold what the text quotes.
`findings()` is also called for the terminal summary after `accelbench run`.
"""
from __future__ import annotations

from collections import defaultdict

from typing import Any

from accelbench.report.advice_blas import blas_kernels
from accelbench.report.advice_checks import check_failures, cpu_scaling, thread_baseline, unstable, wrong_device
from accelbench.report import ratio_text
from accelbench.report.findings import INFO, IQR_UNSTABLE, WARNING, Finding  # noqa: F401 - shared names
from accelbench.report.precision import precision_tradeoffs, time_vs_float32
from accelbench.report.crossover import Curve, classify, find_crossing
from accelbench.report.data import matmul_series, series_label, size_of, transfer_share, trusted_rows, valid_rows
from accelbench.report.analysis import Row
from accelbench.store.ceilings import measures_bandwidth
from accelbench.timing import stats
from accelbench.vocabulary import is_cpu_baseline
from accelbench.units import format_bytes, format_si

RIGOROUS_BUDGET_S = 15.0


def findings(rows: list[Row], devices: dict | None = None, machine: dict | None = None, *,
             rigor: str | None = None) -> list[Finding]:
    """Everything the measurements support saying, warnings first."""
    devices, machine = devices or {}, machine or {}
    found: list[Finding] = []
    found += wrong_device(rows)
    found += check_failures(rows)
    found += thread_baseline(rows, devices, machine)
    found += cpu_scaling(rows)
    found += blas_kernels(rows, devices, machine)
    found += unstable(rows, rigor)
    found += break_even(rows)
    found += one_thread_claims(rows)
    found += boundedness(rows, devices)
    found += precision(rows)
    found += precision_tradeoffs(rows)
    return sorted(found, key=lambda f: f.severity != WARNING)


def _x(ratio: stats.RatioCI) -> str:
    """A speed-up as every table says it (report/ratio_text.py: never below 1), with its basis."""
    basis = f" ({ratio.basis()})" if hasattr(ratio, "basis") else ""  # paired rounds or not
    return f"{ratio_text.phrase(ratio)}{basis}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _n(size: float | None) -> str:
    return "?" if size is None else f"{size:,.0f}"


# -- break-even --------------------------------------------------------------------------------

def _curve(items: list[Row], attr: str) -> tuple[Curve, list[Row]] | None:
    kept = [r for r in items if getattr(r, attr) is not None and size_of(r.spec)]
    if len(kept) < 2:
        return None
    return Curve(tuple(size_of(r.spec) or 0.0 for r in kept), tuple(getattr(r, attr) for r in kept)), kept


def break_even(rows: list[Row]) -> list[Finding]:
    """Per accelerator and dtype: where its matmul starts to beat the CPU (all cores), and why."""
    out = []
    for dtype, by_series in matmul_series(rows).items():
        for label, items in by_series.items():
            if items[0].baseline_role or is_cpu_baseline(items[0].spec.backend, items[0].spec.device):
                continue
            resident = _curve(items, "speedup_all")
            e2e = _curve(items, "speedup_end_to_end")
            finding = _break_even_finding(label, dtype, resident, e2e)
            if finding:
                out.append(finding)
    return out


def _break_even_finding(label, dtype, resident, e2e) -> Finding | None:
    main, kind_word = (e2e, "end-to-end") if e2e else (resident, "resident")
    if main is None:
        return None
    curve, kept = main
    state = classify(curve)
    subject = f"matmul {dtype} on {label}"
    numbers: dict[str, Any] = {"series": label, "dtype": dtype, "timing": kind_word,
                               "sizes": list(curve.sizes), "speedups": [r.ratio for r in curve.ratios]}
    if state == "crosses":
        text = _crossing_text(subject, curve, kept, kind_word, numbers)
    elif state == "slower_everywhere":
        last = curve.ratios[-1]
        text = (f"{subject} is slower than the CPU (all cores) {kind_word} at every size measured "
                f"(n = {_n(curve.sizes[0])}–{_n(curve.sizes[-1])}; {_x(last)} at n = {_n(curve.sizes[-1])}).")
        numbers["break_even_n"] = None
    elif state == "faster_everywhere":
        text = (f"{subject} beats the CPU (all cores) {kind_word} at every size measured, "
                f"already {_x(curve.ratios[0])} at the smallest, n = {_n(curve.sizes[0])}.")
        numbers["break_even_n"] = None
    else:
        return None
    text += _why(kept, resident if e2e else None, numbers)
    return Finding("break_even" if state == "crosses" else "no_break_even", INFO, text, numbers)


def _crossing_text(subject, curve: Curve, kept: list[Row], kind_word: str, numbers: dict) -> str:
    crossing = find_crossing(curve)
    if crossing is None:
        raise ValueError(f"{subject}: asked to describe a break-even the curve does not cross")
    i = crossing.index
    below, above = curve.ratios[i], curve.ratios[i + 1]
    numbers.update(break_even_n=crossing.size, n_below=curve.sizes[i], n_above=curve.sizes[i + 1],
                   speedup_below=below.ratio, speedup_above=above.ratio)
    return (f"{subject} breaks even with the CPU (all cores) {kind_word} at n ≈ {_n(crossing.size)}: "
            f"{_x(below)} at n = {_n(curve.sizes[i])}, {_x(above)} at n = {_n(curve.sizes[i + 1])}.")


def _why(kept: list[Row], resident, numbers: dict) -> str:
    """Transfers' share of the end-to-end time, and what the device does with the data kept on it."""
    shares = [(size_of(r.spec), transfer_share(r)) for r in kept]
    shares = [(n, s) for n, s in shares if s is not None]
    if not shares:
        return ""
    numbers["transfer_share"] = {n: s for n, s in shares}
    (first_n, first), rest = shares[0], shares[1:]
    text = (f" Transfers to and from the device take {first:.0%} of the end-to-end time at "
            f"n = {_n(first_n)}" + "".join(f", {s:.0%} at n = {_n(n)}" for n, s in rest))
    if resident:
        curve, _ = resident
        state = classify(curve)
        crossing = find_crossing(curve)
        if state == "faster_everywhere":
            text += (f"; with the data kept on the device it is faster at every size "
                     f"({_x(curve.ratios[0])} at n = {_n(curve.sizes[0])})")
        elif state == "crosses" and crossing:
            numbers["resident_break_even_n"] = crossing.size
            text += f"; with the data kept on the device it breaks even at n ≈ {_n(crossing.size)}"
        elif state == "slower_everywhere":
            text += "; even with the data kept on the device it is slower"
    return text + "."


# -- "against one core" ------------------------------------------------------------------------

def one_thread_claims(rows: list[Row]) -> list[Finding]:
    """A speed-up quoted against one CPU thread overstates the gain by the CPU's own scaling."""
    out = []
    for dtype, by_series in matmul_series(rows).items():
        for label, items in by_series.items():
            row = items[-1]
            if row.speedup_one is None or row.speedup_all is None or row.baseline_role:
                continue
            if row.speedup_one.ratio < 1.5 * row.speedup_all.ratio:
                continue  # the CPU barely scales: the two figures tell the same story
            n = size_of(row.spec)
            out.append(Finding("one_thread_claim", INFO, (
                f"matmul {dtype} on {label} at n = {_n(n)}: {_x(row.speedup_one)} against one CPU thread "
                f"but {_x(row.speedup_all)} against all cores; a speed-up against one core overstates "
                f"the gain by {row.speedup_one.ratio / row.speedup_all.ratio:.1f}×."),
                {"series": label, "dtype": dtype, "n": n, "speedup_one_thread": row.speedup_one.ratio,
                 "speedup_all_cores": row.speedup_all.ratio}))
    return out


# -- compute- or memory-bound --------------------------------------------------------------------

def _best_by(rows: list[Row], key) -> dict:
    best: dict = {}
    for row in rows:
        k = key(row)
        if row.rate and (k not in best or row.rate > best[k].rate):
            best[k] = row
    return best


def bandwidth_ceiling(rows: list[Row], device) -> tuple[float, str] | None:
    """The best plainly valid stream rate measured on a device (B/s), else a stored measured figure."""
    streams = [r for r in trusted_rows(rows) if measures_bandwidth(r.spec.workload)
               and r.spec.device == getattr(device, "id", device) and r.rate]
    if streams:
        rate, best = max(((r.rate, r) for r in streams if r.rate), key=lambda pair: pair[0])
        return rate, f"best stream ({best.spec.param('kernel')}, {series_label(best.spec)})"
    stored = device.peak("memory_bandwidth", "measured") if hasattr(device, "peak") else None
    return (stored.value, "stored measured bandwidth") if stored else None


def boundedness(rows: list[Row], devices: dict) -> list[Finding]:
    out = []
    flop_rows = [r for r in valid_rows(rows) if r.rate_unit == "FLOP/s" and r.metric]
    for (device_id, metric), row in _best_by(flop_rows, lambda r: (r.spec.device, r.metric)).items():
        finding = _compute_finding(row, devices.get(device_id), rows)
        if finding:
            out.append(finding)
    byte_rows = [r for r in valid_rows(rows) if r.rate_unit == "B/s" and r.metric == "memory_bandwidth"
                 and not measures_bandwidth(r.spec.workload) and r.rate]
    for key, row in _best_by(byte_rows, lambda r: (r.spec.device, r.spec.workload, r.spec.param("dtype"))).items():
        ceiling = bandwidth_ceiling(rows, devices.get(row.spec.device) or row.spec.device)
        if ceiling:
            out.append(_memory_finding(row, *ceiling))
    return out


def _compute_finding(row: Row, device, rows: list[Row]) -> Finding | None:
    if device is None or row.of_datasheet is None:
        return None
    sheet = device.peak(row.metric, "table") or device.peak(row.metric, "formula")
    size = size_of(row.spec)
    where = (f"{row.spec.workload} {row.spec.param('dtype')}" + (f" n = {_n(size)}" if size else "")
             + f" on {series_label(row.spec)}")
    intensity = row.measurement.work.intensity_flop_per_byte or 0.0
    numbers = {"series": series_label(row.spec), "metric": row.metric, "rate_flop_per_s": row.rate,
               "peak_flop_per_s": sheet.value, "fraction_of_peak": row.of_datasheet,
               "provenance": sheet.provenance, "intensity_flop_per_byte": intensity}
    peak_text = f"the {sheet.provenance} peak {format_si(sheet.value, 'FLOP/s')} ({sheet.detail})"
    if row.of_datasheet > 1.05:
        return Finding("ceiling_exceeded", WARNING, (
            f"{where} reached {format_si(row.rate, 'FLOP/s')}, {row.of_datasheet:.0%} of {peak_text}: the "
            f"ceiling is wrong, not the code fast (e.g. the formula's clock is below the one the chip runs at)."),
            numbers)
    kind, bound = _bound_by_ridge(intensity, sheet.value, _bandwidth_for_ridge(rows, device), numbers)
    return Finding(kind, INFO, (
        f"{where}: {bound}, at {row.of_datasheet:.0%} of {peak_text}: {format_si(row.rate, 'FLOP/s')}"
        f"{_per_thread_share(row, sheet, numbers)}."), numbers)


def _bandwidth_for_ridge(rows: list[Row], device) -> float | None:
    measured = bandwidth_ceiling(rows, device)
    sheet = device.peak("memory_bandwidth")
    return measured[0] if measured else (sheet.value if sheet else None)


def _bound_by_ridge(intensity: float, peak: float, bandwidth: float | None, numbers: dict) -> tuple[str, str]:
    """Compute- or memory-bound by the roofline: intensity above or below peak / bandwidth."""
    if not bandwidth:
        return "compute_bound", f"{intensity:.0f} FLOP/byte (no bandwidth measured to place the ridge)"
    ridge = peak / bandwidth
    numbers["ridge_flop_per_byte"] = ridge
    if intensity >= ridge:
        return "compute_bound", f"compute-bound ({intensity:.0f} FLOP/byte, above the ridge at {ridge:.0f})"
    return "memory_bound", f"memory-bound ({intensity:.1f} FLOP/byte, below the ridge at {ridge:.0f})"


def _per_thread_share(row: Row, sheet, numbers: dict) -> str:
    """A result on fewer threads than the peak's cores is judged against their share of it too."""
    threads, cores = row.measurement.threads, sheet.inputs.get("cores")
    if not threads or not isinstance(cores, (int, float)) or threads >= cores or row.of_datasheet is None:
        return ""
    share = row.of_datasheet * cores / threads
    numbers["fraction_of_threads_share"] = share
    return (f" (on {threads} thread{'s' if threads != 1 else ''} of {cores:g} cores: {share:.0%} of "
            f"{'its' if threads == 1 else 'their'} share of the peak)")


def _memory_finding(row: Row, bandwidth_b_per_s: float, source: str) -> Finding:
    if row.rate is None:
        raise ValueError(f"{row.spec.key}: no rate to set against the bandwidth")
    share = row.rate / bandwidth_b_per_s
    intensity = row.measurement.work.intensity_flop_per_byte or 0.0
    where = f"{row.spec.workload} {row.spec.param('dtype')} on {series_label(row.spec)}"
    if share > 1.05:
        return Finding("ceiling_exceeded", WARNING, (
            f"{where} moved {format_si(row.rate, 'B/s')}, {share:.0%} of the measured bandwidth "
            f"({format_si(bandwidth_b_per_s, 'B/s')}, {source}): its {format_bytes(row.measurement.work.bytes_moved)} "
            f"may have stayed in cache, or the stream ceiling is low (a noisy or single-threaded stream); "
            f"rerun stream with more elements or on a quieter machine."),
            {"series": series_label(row.spec), "workload": row.spec.workload, "rate_b_per_s": row.rate,
             "bandwidth_b_per_s": bandwidth_b_per_s, "fraction_of_bandwidth": share})
    return Finding("memory_bound", INFO, (
        f"{where}: memory-bound ({intensity:.2f} FLOP/byte) at {share:.0%} of the measured bandwidth "
        f"({format_si(bandwidth_b_per_s, 'B/s')}, {source}): {format_si(row.rate, 'B/s')}."),
        {"series": series_label(row.spec), "workload": row.spec.workload, "rate_b_per_s": row.rate,
         "bandwidth_b_per_s": bandwidth_b_per_s, "fraction_of_bandwidth": share,
         "intensity_flop_per_byte": intensity})


# -- precision ---------------------------------------------------------------------------------

def precision(rows: list[Row]) -> list[Finding]:
    """float64 and bfloat16 against float32 on each series, at the largest order they share."""
    by_series: dict[str, dict[str, dict[float, Row]]] = defaultdict(lambda: defaultdict(dict))
    for dtype, series in matmul_series(rows).items():
        for label, items in series.items():
            for row in items:
                size = size_of(row.spec)
                if size is not None:
                    by_series[label][dtype][size] = row
    out = []
    for label, by_dtype in by_series.items():
        if "float32" not in by_dtype:
            continue
        for other in ("float64", "bfloat16", "float16"):
            shared = sorted(set(by_dtype["float32"]) & set(by_dtype.get(other, {})))
            if shared:
                n = shared[-1]
                out.append(_precision_finding(label, by_dtype["float32"][n], by_dtype[other][n], other))
    return out


def _precision_finding(label: str, fp32: Row, other: Row, dtype: str) -> Finding:
    # same n, same flops: the ratio of times is the ratio of speeds
    ratio = time_vs_float32(other, fp32)
    n = size_of(fp32.spec)
    verdict = ratio.verdict()
    # the time of `dtype` over float32's, seen from `dtype`'s side: its speed-up over float32
    speed = ratio_text.compared(ratio_text.inverted(ratio), dtype, "float32")
    errors = (f"relative error against the float64 reference: float32 {fp32.measurement.check.max_rel_error:.1e}, "
              f"{dtype} {other.measurement.check.max_rel_error:.1e}")
    return Finding("precision", INFO, f"matmul n = {_n(n)} on {label}: {speed}; {errors}.",
                   {"series": label, "n": n, "dtype": dtype, "time_ratio_vs_float32": ratio.ratio,
                    "ci_low": ratio.low, "ci_high": ratio.high, "verdict": verdict, "pairs": getattr(ratio, "pairs", 0),
                    "float32_rel_error": fp32.measurement.check.max_rel_error,
                    f"{dtype}_rel_error": other.measurement.check.max_rel_error})
