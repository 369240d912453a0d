"""Dishonest fakes the checks were not designed around, run through the CLI (`accelbench run --json`),
quiet and beside a busy process: what each check lets through, and what it refuses of honest backends.

The fakes here are written apart from tests/mutants.py (the adversary suite the checks were built
with): a cache keyed by the inputs' content, work on every other element only, float16 arithmetic
for float32, a tail of the output refreshed every other call only, and an executor whose
synchronize() returns while work is still queued.

    python benchmarks/dishonest_cli.py            # quiet
    python benchmarks/dishonest_cli.py --busy     # a busy process on core 0
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import io
import json
import tempfile

import numpy as np

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.backends.registry import clear_cache, register_backend

from busy_load import busy_elsewhere  # benchmarks/ is on the path when they run


class ContentCache(NumpyBackend):
    """Returns the product remembered for inputs whose first and last bytes it has seen before."""

    name = "content-cache"
    memo: dict = {}

    def matmul(self, a, b, out=None):
        key = (a.shape, a.ravel()[:8].tobytes(), a.ravel()[-8:].tobytes(), b.ravel()[:8].tobytes())
        if key not in self.memo:
            self.memo[key] = np.matmul(a, b)
        result = self.memo[key]
        if out is None:
            return result
        out[...] = result
        return out


class EveryOther(NumpyBackend):
    """Memory-bound ops write only every other element (the rest keeps what was there)."""

    name = "every-other"

    def triad(self, a, b, scalar, out):
        np.add(a[::2], scalar * b[::2], out=out[::2])
        return out

    def copy(self, a, out):
        out[::2] = a[::2]
        return out


class HalfPrecision(NumpyBackend):
    """float32 products computed in float16."""

    name = "half-precision"

    def matmul(self, a, b, out=None):
        result = np.matmul(a.astype(np.float16), b.astype(np.float16)).astype(a.dtype)
        if out is None:
            return result
        out[...] = result
        return out


class StaleTail(NumpyBackend):
    """The last tenth of a product's output is recomputed on every other call only."""

    name = "stale-tail"
    calls = 0

    def matmul(self, a, b, out=None):
        StaleTail.calls += 1
        rows = a.shape[0] - a.shape[0] // 10 if StaleTail.calls % 2 else a.shape[0]
        target = out if out is not None else np.empty((a.shape[0], b.shape[1]), a.dtype)
        np.matmul(a[:rows], b, out=target[:rows])
        return target


class LooseSync(NumpyBackend):
    """Work goes to an executor; synchronize() waits only when more than 4 calls are pending."""

    name = "loose-sync"
    asynchronous = True
    pool = concurrent.futures.ThreadPoolExecutor(1)
    pending: list = []

    def triad(self, a, b, scalar, out):
        self.pending.append(self.pool.submit(lambda: (np.multiply(b, scalar, out=out), np.add(out, a, out=out))))
        return out

    def matmul(self, a, b, out=None):
        target = out if out is not None else np.empty((a.shape[0], b.shape[1]), a.dtype)
        self.pending.append(self.pool.submit(np.matmul, a, b, out=target))
        return target

    def synchronize(self, device):
        if len(self.pending) > 4:
            for job in self.pending:
                job.result()
            self.pending.clear()


FAKES = {"content-cache": (ContentCache, "matmul", ["--sizes", "512", "--dtype", "float32"]),
         "every-other": (EveryOther, "stream", ["--sizes", "4194304", "--dtype", "float64"]),
         "half-precision": (HalfPrecision, "matmul", ["--sizes", "256", "--dtype", "float32"]),
         "stale-tail": (StaleTail, "matmul", ["--sizes", "512", "--dtype", "float32"]),
         "loose-sync": (LooseSync, "stream", ["--sizes", "4194304", "--dtype", "float64"]),
         "numpy": (None, "matmul", ["--sizes", "512", "--dtype", "float32"]),
         "torch": (None, "stream", ["--sizes", "4194304", "--dtype", "float64"])}


def run(name: str, workload: str, extra: list[str], db: str) -> list[dict]:
    argv = ["run", workload, "--backend", name, "--device", "cpu", "--rigor", "quick", "--json",
            "--no-progress", "--no-telemetry", "--db", db, *extra]
    from accelbench.cli.main import main  # noqa: TID251 - through the CLI, as a user runs it

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(argv)
    return json.loads(out.getvalue())["results"]


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", action="store_true")
    args = parser.parse_args(argv)
    load = busy_elsewhere() if args.busy else None
    try:
        with tempfile.TemporaryDirectory() as folder:
            for name, (cls, workload, extra) in FAKES.items():
                if cls is not None:
                    register_backend(name, cls)
                for r in run(name, workload, extra, f"{folder}/r.sqlite"):
                    rate = r["derived"]["rate"]
                    kernel = r["spec"]["params"].get("kernel", "")  # stream: copy is the honest numpy one in every fake
                    print(f"{name:<15} {workload:<7} {kernel:<6} {r['verdict']:<10} rate {rate if rate is None else round(rate, 1)}"
                          f"  {_text((r['verdict_reasons'] or [''])[0])[:110]}")
                clear_cache()
    finally:
        if load:
            load.kill()
    return 0


def _text(reason) -> str:
    """A stored reason is its text, or {"text", "kind"[, "figures"]} since reasons carry kinds."""
    return reason["text"] if isinstance(reason, dict) else str(reason)


if __name__ == "__main__":
    raise SystemExit(main_())
