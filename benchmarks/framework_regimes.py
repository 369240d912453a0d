"""Does a framework's speed stay put when nothing else runs? Level shifts a measurement cannot see.

Times matmul float32 of one size on one framework, alone in this process, in back-to-back blocks for
SECONDS, and prints the medians of consecutive windows of WINDOW blocks with the context switches per
call in each. A speed that moves between levels for seconds at a time (jax's XLA pool on a 2-core VM:
~90 and ~120 µs per call at n=256, the slow level with three times the voluntary context switches)
makes any two measurements taken seconds apart disagree, however carefully each is taken: the paired
rounds spread over seconds, a side's own measurement over a fraction of one.

    python benchmarks/framework_regimes.py jax --n 256
    python benchmarks/framework_regimes.py numpy --n 256 --seconds 8
    python benchmarks/framework_regimes.py numpy --triad --n 8388608 --calls 1 --window 20

`--triad` times the memory-bound stream triad (a = b + 3·c, float32 vectors of n) instead: on the same
VM plain numpy on one thread moved 0.81-1.16× in windows of 20 calls, with nothing else running.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import time


def _call(framework: str, n: int, threads: int, sync_dispatch: bool = False):
    import numpy as np

    rng = np.random.default_rng(0)
    left, right = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        if sync_dispatch:
            jax.config.update("jax_cpu_enable_async_dispatch", False)
        product = jax.jit(lambda x, y: x @ y)
        a, b = jnp.asarray(left), jnp.asarray(right)
        return lambda: product(a, b), lambda out: out.block_until_ready()
    if framework == "torch":
        import torch

        torch.set_num_threads(threads)
        a, b = torch.from_numpy(left), torch.from_numpy(right)
        return lambda: torch.mm(a, b), lambda out: out
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads)
    return lambda: np.matmul(left, right), lambda out: out


def _triad_call(framework: str, n: int, threads: int):
    import numpy as np

    rng = np.random.default_rng(0)
    b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(2))
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        triad = jax.jit(lambda x, y: x + 3.0 * y)
        xb, xc = jnp.asarray(b), jnp.asarray(c)
        return lambda: triad(xb, xc), lambda out: out.block_until_ready()
    if framework == "torch":
        import torch

        torch.set_num_threads(threads)
        tb, tc, ta = torch.from_numpy(b), torch.from_numpy(c), torch.empty(n)
        return lambda: torch.add(tb, tc, alpha=3.0, out=ta), lambda out: out
    a = np.empty_like(b)  # numpy's ufuncs run on one thread

    def triad():
        np.multiply(c, 3.0, out=a)
        return np.add(a, b, out=a)
    return triad, lambda out: out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=("jax", "numpy", "torch"))
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2, help="numpy and torch (jax takes every core)")
    parser.add_argument("--calls", type=int, default=21, help="calls per block (waited for once)")
    parser.add_argument("--window", type=int, default=50, help="blocks per window")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--sync-dispatch", action="store_true",
                        help="jax: run each computation on the calling thread (no dispatch thread)")
    parser.add_argument("--triad", action="store_true", help="the stream triad on vectors of n, not matmul")
    args = parser.parse_args(argv)
    call, wait = (_triad_call(args.framework, args.n, args.threads) if args.triad
                  else _call(args.framework, args.n, args.threads, args.sync_dispatch))
    for _ in range(10 * args.calls):
        wait(call())
    windows = []
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        before = resource.getrusage(resource.RUSAGE_SELF)
        blocks = []
        for _ in range(args.window):
            started = time.perf_counter()
            out = None
            for _ in range(args.calls):
                out = call()
            wait(out)
            blocks.append((time.perf_counter() - started) / args.calls)
        after = resource.getrusage(resource.RUSAGE_SELF)
        calls = args.window * args.calls
        windows.append((statistics.median(blocks), (after.ru_nvcsw - before.ru_nvcsw) / calls,
                        (after.ru_nivcsw - before.ru_nivcsw) / calls))
    middle = statistics.median(w[0] for w in windows)
    print(f"{args.framework} {'triad' if args.triad else 'matmul'} float32 n={args.n}: {len(windows)} windows of {args.window} blocks × "
          f"{args.calls} calls; median {middle * 1e6:.1f} µs per call")
    print("  window median / overall, voluntary and involuntary context switches per call:")
    for seconds, voluntary, involuntary in windows:
        print(f"    {seconds / middle:5.2f}   {voluntary:4.1f}  {involuntary:4.2f}")
    moved = sum(abs(w[0] / middle - 1) > 0.10 for w in windows)
    print(f"  windows more than 10% from the median: {moved}/{len(windows)}; range "
          f"{min(w[0] for w in windows) / middle:.2f}-{max(w[0] for w in windows) / middle:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
