"""Does the telemetry sampler disturb what it watches? The same kernel timed with and without it.

Each round times a numpy matmul with accelbench's harness twice, in alternating order: once with no
sampler, once with a TelemetrySampler polling every device in its thread and a window open around
the measurement (as `accelbench run` uses it). Rounds interleave (A B, B A, A B, ...) so machine
drift hits both alike. Reported: median time per call of each, the ratio sampler/none with its 95%
bootstrap interval (over all samples and over the per-round medians), and what one poll costs.

    python benchmarks/telemetry_overhead.py --n 256 --rounds 10 --interval 0.1 --interval 0.01
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from accelbench.telemetry import TelemetrySampler
from accelbench.timing import bootstrap
from accelbench.timing.harness import measure
from accelbench.timing.rigor import get_rigor


def kernel(n: int):
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)), rng.random((n, n))
    out = np.empty((n, n))
    return lambda: np.matmul(a, b, out=out)


def timed(call, rigor: str, interval_s: float | None) -> list[float]:
    """Per-call samples of one measurement, with the sampler running when interval_s is given."""
    if interval_s is None:
        return list(measure(call, lambda: None, rigor=get_rigor(rigor)).samples_s)
    with TelemetrySampler(None, interval_s) as sampler, sampler.window():
        return list(measure(call, lambda: None, rigor=get_rigor(rigor)).samples_s)


def poll_cost_s(interval_s: float, polls: int = 50) -> tuple[float, float]:
    """Median wall and CPU time of one poll of every source (the sampler thread's work per interval);
    the CPU time does not grow when other processes load the machine, the wall time does."""
    with TelemetrySampler(None, interval_s) as sampler:
        wall, cpu = [], []
        for _ in range(polls):
            started, started_cpu = time.perf_counter(), time.thread_time()
            sampler.poll()
            wall.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - started_cpu)
    return statistics.median(wall), statistics.median(cpu)


def compare(call, rounds: int, rigor: str, interval_s: float) -> dict:
    runs: dict[str, list[list[float]]] = {"none": [], "sampler": []}
    for index in range(rounds):
        order = ("none", "sampler") if index % 2 == 0 else ("sampler", "none")
        for name in order:
            runs[name].append(timed(call, rigor, interval_s if name == "sampler" else None))
    pooled = {k: [s for run in v for s in run] for k, v in runs.items()}
    overall = bootstrap.ratio_of_medians_ci(pooled["sampler"], pooled["none"])
    paired = paired_ratio([statistics.median(b) / statistics.median(a)
                           for a, b in zip(runs["none"], runs["sampler"])])
    cost_s, cpu_s = poll_cost_s(interval_s)
    return {"interval_s": interval_s, "rounds": rounds,
            "median_none_s": statistics.median(pooled["none"]), "median_sampler_s": statistics.median(pooled["sampler"]),
            "ratio": overall.ratio, "ratio_ci95": [overall.low, overall.high],
            "paired_ratio": paired[0], "paired_ratio_ci95": list(paired[1:]),
            "poll_wall_s": cost_s, "poll_cpu_s": cpu_s, "sampler_cpu_share": cpu_s / interval_s,
            "samples": {k: len(v) for k, v in pooled.items()}}


def paired_ratio(ratios: list[float], resamples: int = 4000) -> tuple[float, float, float]:
    """Median of the per-round ratios (each round's two measurements ran back to back, so drift
    between rounds cancels) with a seeded percentile-bootstrap 95% interval."""
    import random

    rng = random.Random(0)
    boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
    return statistics.median(ratios), boot[int(0.025 * resamples)], boot[int(0.975 * resamples) - 1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256, help="matrix order (default 256)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds per interval (default 10)")
    parser.add_argument("--rigor", default="quick", help="harness rigor per measurement (default quick)")
    parser.add_argument("--interval", type=float, action="append", help="sampler interval(s) in s (default 0.1)")
    parser.add_argument("--threads", type=int, help="BLAS threads (default: the library's own, all cores)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if args.threads:
        from threadpoolctl import threadpool_limits
        threadpool_limits(args.threads)
    call = kernel(args.n)
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    results = [compare(call, args.rounds, args.rigor, i) for i in (args.interval or [0.1])]
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    for r in results:  # a shared machine's load decides how much the times can be trusted
        r["load_average_1min"] = [load_before, load_after]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"matmul n={args.n} float64, {args.rounds} interleaved rounds, rigor {args.rigor}, "
          f"BLAS threads {args.threads or 'default'}; load average {load_before} -> {load_after} "
          f"on {os.cpu_count()} CPUs")
    for r in results:
        print(f"  sampler every {r['interval_s']:g} s: none {r['median_none_s'] * 1e3:.3f} ms, with sampler "
              f"{r['median_sampler_s'] * 1e3:.3f} ms per call; ratio {r['ratio']:.4f} "
              f"[{r['ratio_ci95'][0]:.4f}, {r['ratio_ci95'][1]:.4f}] (95% CI, all samples); paired by round "
              f"{r['paired_ratio']:.4f} [{r['paired_ratio_ci95'][0]:.4f}, "
              f"{r['paired_ratio_ci95'][1]:.4f}]; one poll {r['poll_wall_s'] * 1e6:.0f} µs wall, "
              f"{r['poll_cpu_s'] * 1e6:.0f} µs CPU = {r['sampler_cpu_share']:.3%} of a core")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
