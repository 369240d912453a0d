"""How often an honest backend is refused on a loaded machine (docs/truth.md).

Starts a busy process pinned to core 0 (`taskset -c 0 python -c 'while True: pass'`), then runs
the core workloads at quick rigor on numpy, torch, jax and pyopencl (PoCL) `--rounds` times, each round
a fresh run (its own synchronisation probe), and counts verdicts. An honest backend must never
be invalid; noisy is what a loaded machine should say.

    python benchmarks/honest_refusals.py [--rounds 20] [--no-load]
"""
from __future__ import annotations

import argparse
import collections
import signal
import sys

from accelbench.backends.registry import available_backends, get_backend
from accelbench.devices.inventory import collect_inventory
from accelbench.results import Spec
from accelbench.runner.execute import TrustContext, measure_item
from accelbench.runner.plan import PlanItem
from accelbench.timing.rigor import get_rigor
from accelbench.verdict import INVALID, READ_BACK, SYNC_UNPROVEN

from busy_load import busy_elsewhere  # benchmarks/ is on the path when they run

QUICK = get_rigor("quick")

SPECS = (("matmul", {"n": 128, "dtype": "float32"}), ("matmul", {"n": 256, "dtype": "float32"}),
         ("matmul", {"n": 512, "dtype": "float64"}),
         ("stream", {"kernel": "copy", "n": 1 << 16, "dtype": "float32"}),
         ("stream", {"kernel": "triad", "n": 1 << 22, "dtype": "float64"}),
         ("reduce", {"n": 1 << 22, "dtype": "float32"}), ("elementwise", {"n": 1 << 22, "dtype": "float32"}),
         ("memcpy", {"direction": "h2d", "bytes": 16 << 20, "pinned": False}),
         # judged by the spread of its estimates and by estimates repeated to the bit (issue 41)
         ("montecarlo", {"n": 1 << 20, "dtype": "float64"}), ("montecarlo", {"n": 1 << 20, "dtype": "float32"}))
TARGETS = (("numpy", "cpu"), ("torch", "cpu"), ("jax", "cpu"), ("pyopencl", "opencl:0:0"))


def one_round(devices: dict, counts: collections.Counter, refusals: list) -> None:
    for name, device in TARGETS:
        backend = get_backend(name)
        trust = TrustContext(devices=devices)  # a fresh run: its own synchronisation probe
        for workload, params in SPECS:
            if workload == "memcpy" and backend.shares_host_memory(device):
                continue
            spec = Spec.make(workload, name, device, **params)
            try:
                with backend.threads(None):
                    m = measure_item(PlanItem(spec, None), backend, QUICK, seed=5, trust=trust)
            except Exception as error:  # noqa: BLE001 - an unsupported spec is no verdict
                counts[(name, "skipped")] += 1
                print(f"  {name} {workload}: {type(error).__name__}: {error}", flush=True)
                continue
            counts[(name, m.verdict)] += 1
            counts[("all", m.verdict)] += 1
            if m.verdict == "noisy" and any(getattr(r, "kind", "") in (SYNC_UNPROVEN, READ_BACK) for r in m.verdict_reasons):
                counts[(name, "sync unproven")] += 1  # noisy for the sync proof's sake (counted apart)
            if m.verdict == INVALID:
                refusals.append((name, workload, m.verdict_reasons[0]))
                print(f"  REFUSED {name} {workload}: {m.verdict_reasons[0]}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--no-load", action="store_true")
    args = parser.parse_args(argv)
    global TARGETS
    TARGETS = tuple(t for t in TARGETS if available_backends().get(t[0]) and available_backends()[t[0]].ok)
    devices = {d.id: d for d in collect_inventory().devices}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the busy process is stopped in `finally`
    busy = None if args.no_load else busy_elsewhere()  # not our child: its CPU time is not ours
    counts: collections.Counter = collections.Counter()
    refusals: list = []
    try:
        for index in range(args.rounds):
            one_round(devices, counts, refusals)
            print(f"round {index + 1}: {dict(counts)}", flush=True)
    finally:
        if busy is not None:
            busy.kill()
    total = sum(v for (_, status), v in counts.items() if status not in ("skipped", "sync unproven"))
    print(f"honest results: {total}; refused (invalid): {len(refusals)}; by backend and verdict: {dict(counts)}")
    skipped = sum(v for (_, status), v in counts.items() if status == "skipped")
    if total == 0 or skipped:  # a sweep that measured nothing proves nothing: say so in the exit status
        print(f"{skipped} specs skipped: the figure above does not cover them", file=sys.stderr)
        return 1
    return 1 if refusals else 0


if __name__ == "__main__":
    raise SystemExit(main())
