"""Backends that pair dishonestly or unevenly, run through the CLI (`accelbench run --json`), quiet and
beside a busy process: what the paired check and the verdict rules let through, and what they refuse.

None of these was what the rules were built around (tests/unit/test_paired_check.py draws per-round
numbers): each is numpy's matmul in a plugin backend that changes its own timing.

- twin: numpy itself under another name. Right: "same" or "no clear difference"; contaminated is a
  wrong refusal, faster/slower a wrong verdict.
- slower-10%: numpy plus 10% more real work every call. Right: "slower".
- rounds-slower-{5,15,40}%: as fast as numpy in its own measurement, that much slower for 60 ms after
  numpy's backend ran a matmul since its own last call (in the paired rounds, the other side's block:
  what a cache or clock the other side leaves behind does). Its own speed is
  numpy's, so right is "same" or "no clear difference", or "contaminated" beyond the 10% slack; a
  "slower" verdict is let through.

    python benchmarks/pairing_adversaries.py --repeats 3
    python benchmarks/pairing_adversaries.py --repeats 3 --busy
"""
from __future__ import annotations

import argparse
import collections
import tempfile
import time

import numpy as np

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.backends.registry import clear_cache, register_backend

from busy_load import busy_elsewhere  # benchmarks/ is on the path when they run
from dishonest_cli import run

SIZE = ["--sizes", "512", "--dtype", "float32"]


class Twin(NumpyBackend):
    name = "twin"


class SlowerByTen(NumpyBackend):
    """numpy's product, then a tenth of it again on a slice: 10% more real work."""

    name = "slower-10%"

    def matmul(self, a, b, out=None):
        result = super().matmul(a, b, out=out)
        rows = max(1, a.shape[0] // 10)
        np.matmul(a[:rows], b)
        return result


class _Foreign:
    """Whether numpy's own backend ran a matmul since a fake's last call."""

    ran = False


_numpy_matmul = NumpyBackend.matmul


def _spied_matmul(self, a, b, out=None):
    if type(self) is NumpyBackend:
        _Foreign.ran = True
    return _numpy_matmul(self, a, b, out=out)


NumpyBackend.matmul = _spied_matmul  # type: ignore[method-assign]


def rounds_slower(share: float) -> type:
    class RoundsSlower(NumpyBackend):
        """As fast as numpy alone; for 60 ms after numpy's backend ran, slower by `share` (a spin)."""

        name = f"rounds-slower-{share:.0%}"
        cold_until = 0.0

        def matmul(self, a, b, out=None):
            started = time.perf_counter()
            if _Foreign.ran:
                _Foreign.ran = False
                type(self).cold_until = started + 0.060
            result = super().matmul(a, b, out=out)
            if started < type(self).cold_until:
                end = time.perf_counter() + share * (time.perf_counter() - started)
                while time.perf_counter() < end:
                    pass
            return result

    return RoundsSlower


FAKES = [Twin, SlowerByTen, rounds_slower(0.05), rounds_slower(0.15), rounds_slower(0.40)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    load = busy_elsewhere() if args.busy else None
    try:
        with tempfile.TemporaryDirectory() as folder:
            for cls in FAKES:
                register_backend(cls.name, cls)
                words: collections.Counter = collections.Counter()
                for repeat in range(args.repeats):
                    results = run(f"numpy,{cls.name}", "matmul", SIZE, f"{folder}/{cls.name}{repeat}.sqlite")
                    [fake] = [r for r in results if r["spec"]["backend"] == cls.name]
                    # None: the fake measured over 5% faster than numpy alone and became the baseline
                    said = fake["derived"]["speedups"]["vs_cpu_all_cores"] or {"verdict": "baseline", "text": "-"}
                    words[said["verdict"]] += 1
                    print(f"  {cls.name:<18} {said['text']:<45} {fake['verdict']}")
                print(f"{cls.name:<18} {'busy' if args.busy else 'quiet'}: {dict(words)}")
                clear_cache()
    finally:
        if load:
            load.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
