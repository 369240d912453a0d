"""STREAM triad (out = a + s·b, float64) on the CPU by every implementation at hand, interleaved.

The CPU baseline is the fastest verified CPU implementation a run measured (runner/speedups.py
cpu_baselines); this script measures the candidates by hand, so the baseline can be read against
the best the CPU does: accelbench's numpy backend on one thread and on its pool (all usable cores),
a hand-threaded numpy (one thread per core, each over its own half in cache-sized blocks), torch on
the CPU (one thread and all) and jax on the CPU, where installed; with --blocks, the pool again with
other block sizes. Each round runs every implementation once in a shuffled order, after letting the
previous one's threads go idle; each figure is bytes counted once per array (3 × 8 × n) / time.
Prints per implementation the median GB/s over the rounds, its range, the median per-round ratio
to the fastest, and its threads' runnable time / wall time (cores it kept busy). With --fastest, each
round's figure is its fastest call (a shared machine preempts some calls for a whole time slice).

    python benchmarks/cpu_triad.py --rounds 9 --n 8388608
"""
from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from accelbench.backends import numpy_backend
from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.vocabulary import usable_cpus

SCALAR = 3.0
SETTLE_S = 0.2  # after each implementation: OpenMP / OpenBLAS workers spin 10-100 ms after a call
_KEPT = contextlib.ExitStack()  # the numpy backends' thread settings, for the whole script


def _runnable_ns() -> int:
    """Runnable time (on a CPU or waiting for one) of this process's threads so far."""
    total = 0
    for task in os.listdir("/proc/self/task"):
        try:
            on_cpu, waiting, _ = open(f"/proc/self/task/{task}/schedstat").read().split()
        except (OSError, ValueError):
            continue
        total += int(on_cpu) + int(waiting)
    return total


def _blocked(a: np.ndarray, b: np.ndarray, out: np.ndarray, block: int) -> None:
    for start in range(0, a.size, block):
        stop = start + block
        np.multiply(b[start:stop], SCALAR, out=out[start:stop])
        np.add(out[start:stop], a[start:stop], out=out[start:stop])


def implementations(n: int, blocks: list[int]) -> dict[str, Callable[[], object]]:
    rng = np.random.default_rng(1)
    a, b, out = rng.random(n), rng.random(n), np.empty(n)
    threads = usable_cpus()
    found: dict[str, Callable[[], object]] = {}

    def numpy_on(count: int, block: int | None = None) -> Callable[[], object]:
        # one backend per thread count, its threads() entered once and kept (as a run enters it once per
        # spec): entering it reads BLAS back through threadpoolctl, about 1 ms, a sixth of a call here
        backend = NumpyBackend()
        _KEPT.enter_context(backend.threads(count))

        def call() -> object:
            before = numpy_backend.BLOCK_ELEMENTS
            numpy_backend.BLOCK_ELEMENTS = block or before
            try:
                return backend.triad(a, b, SCALAR, out)
            finally:
                numpy_backend.BLOCK_ELEMENTS = before
        return call

    found["numpy, 1 thread"] = numpy_on(1)
    found[f"numpy pool, {threads} threads"] = numpy_on(threads)
    for block in blocks:
        found[f"numpy pool, {threads} threads, block {block}"] = numpy_on(threads, block)
    executor = ThreadPoolExecutor(threads)
    bounds = np.linspace(0, n, threads + 1).astype(int)

    def by_hand() -> object:  # one contiguous share per thread, cache-sized blocks within it
        parts = [executor.submit(_blocked, a[lo:hi], b[lo:hi], out[lo:hi], 1 << 16)
                 for lo, hi in zip(bounds[:-1], bounds[1:])]
        return [p.result() for p in parts]

    found[f"numpy by hand, {threads} threads"] = by_hand
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        ta, tb, tout = torch.from_numpy(a.copy()), torch.from_numpy(b.copy()), torch.empty(n, dtype=torch.float64)

        def torch_on(count: int) -> Callable[[], object]:
            def call() -> object:
                previous = torch.get_num_threads()
                torch.set_num_threads(count)
                try:
                    return torch.add(ta, tb, alpha=SCALAR, out=tout)
                finally:
                    torch.set_num_threads(previous)
            return call

        found["torch, 1 thread"] = torch_on(1)
        found[f"torch, {threads} threads"] = torch_on(threads)
    try:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        ja, jb = jnp.asarray(a), jnp.asarray(b)
        triad = jax.jit(lambda x, y: x + SCALAR * y)
        found["jax (its thread pool)"] = lambda: triad(ja, jb).block_until_ready()
    return found


def measure(found: dict[str, Callable[[], object]], n: int, rounds: int, calls: int, seed: int,
            fastest: bool = False) -> None:
    rates: dict[str, list[float]] = {name: [] for name in found}
    cores: dict[str, list[float]] = {name: [] for name in found}
    order = list(found)
    shuffle = random.Random(seed)
    for call in found.values():
        call()
    for _ in range(rounds):
        shuffle.shuffle(order)
        for name in order:
            time.sleep(SETTLE_S)
            found[name]()  # wakes its threads: a pool asleep can take ms to start
            runnable, start = _runnable_ns(), time.perf_counter()
            each_s = []
            for _ in range(calls):
                before = time.perf_counter()
                found[name]()
                each_s.append(time.perf_counter() - before)
            wall_s = time.perf_counter() - start
            # the mean call, or the fastest: on a shared machine other processes preempt some calls for a
            # time slice (~10 ms here), and the fastest call is the one no other process interrupted
            seconds = min(each_s) if fastest else wall_s / calls
            rates[name].append(3 * 8 * n / seconds / 1e9)
            cores[name].append((_runnable_ns() - runnable) / 1e9 / wall_s)
    best_per_round = [max(rates[name][i] for name in found) for i in range(rounds)]
    print(f"n = {n:,} float64, {rounds} rounds of {calls} calls ({'fastest' if fastest else 'mean'} call of each), "
          f"{usable_cpus()} usable cores, "
          f"load average before {os.getloadavg()[0]:.2f} (1 min)")
    print(f"{'implementation':40s} {'GB/s median':>12s} {'range':>14s} {'/ best':>7s} {'cores':>6s}")
    for name in sorted(found, key=lambda k: -statistics.median(rates[k])):
        ratio = statistics.median(r / best for r, best in zip(rates[name], best_per_round))
        low, high = min(rates[name]), max(rates[name])
        print(f"{name:40s} {statistics.median(rates[name]):12.1f} {low:6.1f}–{high:<6.1f} {ratio:7.3f} "
              f"{statistics.median(cores[name]):6.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 23, help="elements per array (default 2^23: 64 MiB)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=10, help="calls timed together per round")
    parser.add_argument("--blocks", default="", help="extra pool block sizes to try, e.g. 16384,65536")
    parser.add_argument("--only", default="", help="comma-separated substrings of the names to keep")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fastest", action="store_true",
                        help="each round's fastest call instead of the mean (a shared machine: see measure)")
    args = parser.parse_args(argv)
    found = implementations(args.n, [int(b) for b in args.blocks.split(",") if b])
    if args.only:
        keep = [k.strip() for k in args.only.split(",")]
        found = {name: call for name, call in found.items() if any(k in name for k in keep)}
    measure(found, args.n, args.rounds, args.calls, args.seed, args.fastest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
