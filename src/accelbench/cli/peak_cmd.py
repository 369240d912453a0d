"""`accelbench peak`: a device's maximum and sustained matmul rate, with the clock and power behind each.

A command of its own rather than a mode of `run`: run measures a fixed grid of specs with
repeats and intervals; the finder chooses its own orders, spends a time budget instead of a repeat
count, and ends with two named figures. Its results are stored as matmul results of a run
(`peak=maximum`, `peak=sustained`), so they travel with export and import.
"""
from __future__ import annotations

import json
import sys
from typing import Any

# preferred multiples and the orders searched: tensor-core tiles on a GPU, SIMD/cache blocks on a CPU
GPU_SEARCH = {"multiple": 256, "low": 2048, "high": 16384}
CPU_SEARCH = {"multiple": 64, "low": 256, "high": 2048}


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("--device", default="cpu", type=validate.nonempty("a device id"),
                        help="the device to search (default: cpu; e.g. cuda:0)")
    from accelbench.vocabulary import DTYPES

    parser.add_argument("--backend", type=validate.BACKENDS,
                        help="backend to multiply with (default: numpy on cpu, torch elsewhere)")
    parser.add_argument("--dtype", choices=tuple(DTYPES), help="element type (default: float32 on cpu, bfloat16 elsewhere)")
    parser.add_argument("--budget", type=validate.seconds(3600), default=180.0, metavar="SECONDS",
                        help="time for the search and the hold together (default: 180)")
    parser.add_argument("--orders", metavar="N,N,...", type=_orders,
                        help="orders to search instead of the device's default grid")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database")
    parser.add_argument("--no-store", action="store_true", help="print the figures without storing them")
    parser.add_argument("--json", action="store_true", help="print the search as JSON")


def _orders(text: str) -> list[int]:
    import argparse

    parts = text.split(",")
    if not all(p.strip().isdigit() and 16 <= int(p) <= 65536 for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r}: accepted: comma-separated orders from 16 to 65536")
    return [int(p) for p in parts]


def run(args) -> int:
    from accelbench.backends.registry import get_backend
    from accelbench.errors import Unsupported, UsageError
    from accelbench.runner.peak_bench import BackendBench, cpu_reader, nvml_reader
    from accelbench.runner.peak_finder import candidate_orders, find_peak
    from accelbench.runner.plausibility import flops_bound
    from accelbench.store.ceilings import measured_inventory

    on_cpu = args.device == "cpu"
    if args.backend and "," in args.backend:
        raise UsageError("accelbench peak: --backend takes one backend")
    backend = get_backend(args.backend or ("numpy" if on_cpu else "torch"))
    dtype = args.dtype or ("float32" if on_cpu else "bfloat16")
    availability = backend.availability()
    if not availability.ok:
        raise UsageError(f"{backend.name} cannot run here: {availability.reason}")
    inventory = measured_inventory(db_path=args.db)
    device = inventory.device(args.device)
    search = CPU_SEARCH if on_cpu else GPU_SEARCH
    orders = args.orders or candidate_orders(search["multiple"], search["low"], search["high"])
    reader = cpu_reader() if on_cpu else (nvml_reader(int(device.properties.get("nvml_index", 0)))
                                          if device is not None and args.device.startswith("cuda:") else None)
    try:
        bench = BackendBench(backend, args.device, dtype, reader=reader)
    except Unsupported as exc:
        raise UsageError(str(exc)) from None
    peak = _formula_peak(device, dtype)
    # refused above the bound every result is held to (runner/plausibility: the peak at the running
    # clock, with its margin), not the nominal formula: numpy reaches 190 GFLOP/s on a 166 one here
    bound = flops_bound(device, dtype) if device is not None else None
    result = find_peak(bench, orders, multiple=search["multiple"], budget_s=args.budget,
                       peak_flops=bound.value if bound else None)
    stored = "" if args.no_store else _store(args.db, result, backend, args.device, dtype, inventory)
    if args.json:
        json.dump(_as_json(result, peak, stored), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        _print(result, peak, stored, reader is not None)
    return 0 if result.maximum is not None else 1


def _formula_peak(device, dtype: str) -> float | None:
    """The formula peak a rate is shown as a share of (the matrix unit's where the device has one)."""
    from accelbench.vocabulary import PEAK_METRIC

    vector = PEAK_METRIC.get(dtype)
    if device is None or vector is None:
        return None
    figure = device.peak(f"{vector}_matrix", "formula") or device.peak(vector, "formula")
    return figure.value if figure else None


def _store(db: str | None, result, backend, device: str, dtype: str, inventory) -> str:
    from accelbench.runner.peak_results import search_measurements
    from accelbench.session import machine_record
    from accelbench.store.db import Store

    check = result.final_check
    if check is None:
        return ""
    measurements = search_measurements(result, backend.name, device, dtype, check)
    if not measurements:
        return ""
    with Store(db) as store:
        # the backend in the machine record: its versions, and the device it reached is not "unreached"
        run_id = store.start_run(machine_record({backend.name: backend}, inventory),
                                 {"command": "peak", "device": device, "dtype": dtype, "backends": backend.name,
                                  "budget_s": result.budget_s})
        store.add_results(run_id, measurements)
        store.finish_run(run_id, "complete")
    return run_id


def _trial_json(trial) -> dict[str, Any]:
    return {"n": trial.n, "rate_flops": trial.rate, "clock_mhz": trial.clock_mhz, "power_w": trial.power_w,
            "status": trial.status, "detail": trial.detail}


def _batches_json(trial) -> dict[str, Any]:
    """The best burst's batches as the maximum's spread: how many, the median rate and its 95% CI."""
    from accelbench.runner.peak_results import rate_spread
    from accelbench.timing import stats

    flops = 2.0 * trial.n**3
    spread = rate_spread(flops, trial.batch_s)
    return {"count": spread["samples"], "median_flops": flops / stats.median(trial.batch_s) if trial.batch_s else None,
            "ci_low_flops": spread["ci_low_flops"], "ci_high_flops": spread["ci_high_flops"],
            "per_call_s": list(trial.batch_s)}


def _as_json(result, peak: float | None, run_id: str) -> dict[str, Any]:
    held = result.sustained
    return {
        "bench": result.label, "budget_s": result.budget_s, "elapsed_s": result.elapsed_s,
        "formula_peak_flops": peak, "coverage": result.coverage, "run_id": run_id or None,
        "trials": [_trial_json(t) for t in result.trials],
        "maximum": {**_trial_json(result.maximum), "batches": _batches_json(result.maximum)} if result.maximum else None,
        "sustained": None if held is None else {
            "n": held.n, "rate_flops": held.rate, "clock_mhz": held.clock_mhz, "power_w": held.power_w,
            "settled": held.settled, "held_s": held.held_s, "windows": [_trial_json(w) for w in held.windows]},
        "final_check_passed": None if result.final_check is None else result.final_check.passed,
        "notes": list(result.notes),
    }


def _print(result, peak: float | None, run_id: str, has_clock: bool) -> None:
    import textwrap

    from accelbench.units import format_si

    def line(name: str, rate: float, n: int, clock: float | None, power: float | None, tail: str = "") -> str:
        facts = [f"n={n}", f"clock {clock:,.0f} MHz" if clock else "clock unknown"]
        if power:
            facts.append(f"{power:,.0f} W")
        share = f", {rate / peak:.0%} of the formula peak" if peak else ""
        return "\n".join(textwrap.wrap(f"{name:<10} {format_si(rate, 'FLOP/s')} ({', '.join(facts)}{share}){tail}",
                                       78, subsequent_indent=" " * 11))

    print(f"accelbench peak: {result.label}")
    for trial in result.trials:
        rate = format_si(trial.rate, "FLOP/s") if trial.rate else f"{trial.status}: {trial.detail}"
        print("\n".join(textwrap.wrap(f"  n={trial.n:<6} {rate}", 78, subsequent_indent=" " * 11)))
    if result.maximum and result.maximum.rate:
        m = result.maximum
        spread = _batches_json(m)
        interval = (f"; best burst's {spread['count']} batches: 95% CI {format_si(spread['ci_low_flops'], 'FLOP/s')}"
                    f"–{format_si(spread['ci_high_flops'], 'FLOP/s')}" if spread["ci_low_flops"] else
                    f"; best burst's {spread['count']} batches, too few for an interval")
        print(line("maximum", m.rate or 0.0, m.n, m.clock_mhz, m.power_w, interval))
    held = result.sustained
    if held is not None:
        tail = "" if held.settled else "; not settled within the budget: the last windows' mean"
        print(line("sustained", held.rate, held.n, held.clock_mhz, held.power_w, tail))
    for note in result.notes:
        print("\n".join(textwrap.wrap(f"note: {note}", 78, subsequent_indent="  ")))
    if not has_clock:
        print("note: no clock reader for this device (NVML or the CPU's multiply chain):\n  clocks are unknown")
    print("\n".join(textwrap.wrap(f"coverage: {result.coverage}", 78, subsequent_indent="  ")))
    if run_id:
        print(f"stored as run {run_id}: `accelbench ceilings` and `info` name it")
