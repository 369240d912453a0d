"""accelbench's timing against three other ways of timing the same matmul, in one run.

Methods, each timing torch.mm on two float32 matrices of order N on the CPU:
  accelbench   the harness (rigor "rigorous": stop at a ±1% CI of the median)
  hand loop    best practice by hand: warm-up, then one call per sample until the CI is ±1%
  torch        torch.utils.benchmark.Timer.adaptive_autorange(threshold=0.01)
  pyperf       pyperf.Runner.bench_func in its own worker processes (pyperf's defaults)

Rounds interleave the methods (A B C D, A B C D, ...) so drift of the machine hits all alike.
Prints each method's median with its 95% CI, the ratio to the hand loop, and the wall time it needed.

    python benchmarks/compare_timers.py --n 2000 --rounds 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from accelbench.timing import stats
from accelbench.timing.harness import measure

TARGET = 0.01


def inputs(n: int):
    generator = torch.Generator().manual_seed(0)
    a = torch.rand((n, n), generator=generator, dtype=torch.float32)
    b = torch.rand((n, n), generator=generator, dtype=torch.float32)
    return a, b, torch.empty((n, n), dtype=torch.float32)


def by_accelbench(a, b, c):
    timing = measure(lambda: torch.mm(a, b, out=c), lambda: None, rigor="rigorous")
    return list(timing.samples_s), timing.target_met


def by_hand(a, b, c, budget_s: float = 30.0):
    for _ in range(3):
        torch.mm(a, b, out=c)
    samples, started = [], time.perf_counter()
    while time.perf_counter() - started < budget_s:
        t0 = time.perf_counter()
        torch.mm(a, b, out=c)
        samples.append(time.perf_counter() - t0)
        if len(samples) >= 10 and stats.summarize(samples).rel_ci_halfwidth <= TARGET:
            return samples, True
    return samples, False


def by_torch(a, b, c):
    from torch.utils import benchmark

    timer = benchmark.Timer(stmt="torch.mm(a, b, out=c)", globals={"torch": torch, "a": a, "b": b, "c": c},
                            num_threads=torch.get_num_threads())
    result = timer.adaptive_autorange(threshold=TARGET, max_run_time=30)
    # raw_times are per block of number_per_run calls: per call
    samples = [t / result.number_per_run for t in result.raw_times]
    return samples, stats.summarize(samples).rel_ci_halfwidth <= TARGET


PYPERF_SCRIPT = """
import pyperf, torch
n = {n}
g = torch.Generator().manual_seed(0)
a = torch.rand((n, n), generator=g); b = torch.rand((n, n), generator=g); c = torch.empty((n, n))
runner = pyperf.Runner()
runner.bench_func("matmul", lambda: torch.mm(a, b, out=c))
"""


def by_pyperf(n: int):
    import pyperf

    with tempfile.TemporaryDirectory() as folder:
        script, output = os.path.join(folder, "bench.py"), os.path.join(folder, "out.json")
        with open(script, "w") as handle:
            handle.write(PYPERF_SCRIPT.format(n=n))
        subprocess.run([sys.executable, script, "-o", output, "--quiet"], check=True)
        samples = list(pyperf.Benchmark.load(output).get_values())
    return samples, stats.summarize(samples).rel_ci_halfwidth <= TARGET


def paired_with_hand_loop(a, b, c, pairs: int, budget_s: float = 1.0) -> list[float]:
    """accelbench and the hand loop alternated in short windows: drift of the machine cancels."""
    import dataclasses

    from accelbench.timing.rigor import RIGORS

    rigor = dataclasses.replace(RIGORS["standard"], budget_s=budget_s, target_rel_ci=0.005)
    ratios = []
    for index in range(pairs):
        first_accelbench = index % 2 == 0  # alternate who goes first
        order = ("accelbench", "hand") if first_accelbench else ("hand", "accelbench")
        medians = {}
        for who in order:
            if who == "accelbench":
                medians[who] = measure(lambda: torch.mm(a, b, out=c), lambda: None, rigor=rigor).summary.median_s
            else:
                medians[who] = stats.median(by_hand(a, b, c, budget_s=budget_s)[0])
        ratios.append(medians["accelbench"] / medians["hand"])
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-pyperf", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--pairs", type=int, default=0,
                        help="instead: alternate accelbench and the hand loop in 1 s windows this many times")
    args = parser.parse_args()
    a, b, c = inputs(args.n)
    if args.pairs:
        ratios = paired_with_hand_loop(a, b, c, args.pairs)
        low, high = stats.median_ci(ratios)
        print(f"matmul n={args.n} float32, {torch.get_num_threads()} threads: accelbench / hand loop, "
              f"{len(ratios)} alternating pairs of 1 s windows")
        print(f"median ratio {stats.median(ratios):.4f} (95% CI {low:.4f}–{high:.4f}); "
              f"pairs: {' '.join(f'{r:.3f}' for r in ratios)}")
        return 0
    methods = {"accelbench": lambda: by_accelbench(a, b, c), "hand loop": lambda: by_hand(a, b, c),
               "torch.utils.benchmark": lambda: by_torch(a, b, c)}
    if not args.skip_pyperf:
        methods["pyperf"] = lambda: by_pyperf(args.n)
    medians = {name: [] for name in methods}
    walls = {name: [] for name in methods}
    reached = {name: [] for name in methods}
    for round_index in range(args.rounds):
        for name, method in methods.items():
            started = time.perf_counter()
            samples, met = method()
            walls[name].append(time.perf_counter() - started)
            medians[name].append(stats.median(samples))
            reached[name].append(met)
            print(f"round {round_index + 1} {name:<22} median {stats.median(samples) * 1e3:8.2f} ms  "
                  f"n={len(samples):4d}  wall {walls[name][-1]:6.1f} s  ±1% reached: {met}", flush=True)
    # the rounds interleave the methods, so a round's ratio compares them under the same conditions
    paired = {name: [m / h for m, h in zip(medians[name], medians["hand loop"])] for name in methods}
    print(f"\nmatmul n={args.n} float32, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'method':<22} {'median of medians':>18} {'ratio to hand loop':>19} {'per-round ratios':>26} {'wall per run':>13} {'±1% reached':>12}")
    summary = {}
    for name in methods:
        value = statistics.median(medians[name])
        summary[name] = {"median_s": value, "ratio_to_hand_loop": statistics.median(paired[name]),
                         "per_round_ratios": paired[name],
                         "wall_s": statistics.median(walls[name]), "target_reached": reached[name]}
        rounds_text = " ".join(f"{r:.3f}" for r in paired[name])
        print(f"{name:<22} {value * 1e3:15.2f} ms {statistics.median(paired[name]):18.3f}× {rounds_text:>26}"
              f" {statistics.median(walls[name]):11.1f} s {sum(reached[name])}/{len(reached[name]):>10}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(summary, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
