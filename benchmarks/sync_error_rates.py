"""The sync proof's two error rates, from a seeded, generated sweep run in-process as a run measures
(`measure_item`: start-of-run probe, timing, audit, rate bound; quick rigor):

- false refusals: honest backends (numpy, torch, jax, pyopencl where installed) at several sizes,
  `--runs` each: results `invalid`, and results `noisy` for the sync proof's own reasons (could
  not be proven; the timed calls faster than the proof's);
- detections: the loose-sync family (tests/cli/truth_plugins_loose.py: synchronize() waits only
  while more than K calls are in flight, K = 1, 2, 4, 8, and an all-or-nothing one) on blocks of
  different call counts, and the dishonest plugins of tests/cli/truth_plugins.py: `invalid`, or a
  rate that got through.

    python benchmarks/sync_error_rates.py --runs 5 --seed 7 [--part honest|cheats] [--json out.json]

Run it beside an older tree (PYTHONPATH=that/src) for a before/after.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

import accelbench
from accelbench.backends.registry import get_backend
from accelbench.results import Spec
from accelbench.runner.execute import TrustContext, measure_item
from accelbench.runner.plan import PlanItem
from accelbench.timing.rigor import get_rigor
from accelbench.verdict import INVALID, READ_BACK, SYNC_FAILED, SYNC_UNPROVEN

PLUGINS = Path(__file__).resolve().parents[1] / "tests" / "cli"
HONEST = ("numpy", "torch", "jax", "pyopencl")
HONEST_SPECS = (("matmul", {"n": 128, "dtype": "float32"}), ("matmul", {"n": 256, "dtype": "float32"}),
                ("matmul", {"n": 512, "dtype": "float32"}),
                ("stream", {"kernel": "triad", "n": 1 << 16, "dtype": "float32"}),
                ("stream", {"kernel": "triad", "n": 1 << 22, "dtype": "float32"}))  # jax's CPU has no float64
LOOSE = ("loose_sync_1", "loose_sync_2", "loose_sync_4", "loose_sync_8", "burst_sync_4", "honest_queue")
# blocks of different call counts: small streams are timed in blocks of many calls, large in few
LOOSE_SPECS = (("stream", {"kernel": "triad", "n": 1 << 16, "dtype": "float64"}),
               ("stream", {"kernel": "triad", "n": 1 << 20, "dtype": "float64"}),
               ("stream", {"kernel": "triad", "n": 1 << 22, "dtype": "float64"}),
               ("matmul", {"n": 256, "dtype": "float32"}))
OTHERS = {"sync_tires": ("stream", {"kernel": "triad", "n": 1 << 22, "dtype": "float64"}),
          "queued_writes": ("stream", {"kernel": "triad", "n": 1 << 22, "dtype": "float64"}),
          "lazy_graph": ("stream", {"kernel": "triad", "n": 1 << 22, "dtype": "float64"}),
          "peek_partial": ("stream", {"kernel": "triad", "n": 1 << 22, "dtype": "float64"}),
          "sgemm_for_dgemm": ("matmul", {"n": 512, "dtype": "float64"}),
          "zero_copy": ("memcpy", {"direction": "h2d", "bytes": 16 << 20, "pinned": False})}
HONEST_PLUGINS = {"honest_queue", "honest_async"}


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, PLUGINS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _plugin_classes() -> dict:
    classes = {}
    for module_name in ("truth_plugins", "truth_plugins_loose"):
        module = _module(module_name)
        for value in vars(module).values():
            if isinstance(value, type) and getattr(value, "name", None) and not value.__name__.startswith("_"):
                classes.setdefault(value.name, value)
    return classes


def _available(name: str) -> bool:
    return name == "numpy" or importlib.util.find_spec(name) is not None


def plan(part: str, runs: int, seed: int) -> list[tuple[str, str, dict, str]]:
    """(backend, workload, params, device) in an order drawn from `seed`."""
    items = []
    if part in ("honest", "all"):
        for name in HONEST:
            if not _available(name):
                continue
            device = "opencl:0:0" if name == "pyopencl" else "cpu"
            items += [(name, w, p, device) for w, p in HONEST_SPECS for _ in range(runs)]
    if part in ("cheats", "all"):
        items += [(name, w, p, "cpu") for name in LOOSE for w, p in LOOSE_SPECS for _ in range(max(1, runs // 2))]
        items += [(name, w, p, "cpu") for name, (w, p) in OTHERS.items() for _ in range(max(1, runs // 2))]
    random.Random(seed).shuffle(items)
    return items


def measure_one(backend, workload: str, params: dict, device: str, seed: int, trust: TrustContext) -> dict:
    spec = Spec.make(workload, backend.name, device, **params)
    started = time.perf_counter()
    with backend.threads(None):
        m = measure_item(PlanItem(spec, None), backend, get_rigor("quick"), seed=seed, trust=trust)
    reasons = [(getattr(r, "kind", ""), str(r)) for r in m.verdict_reasons]
    return {"backend": backend.name, "workload": workload, "params": params, "device": device, "status": m.verdict,
            "median_s": statistics.median(m.samples_s) if m.samples_s else None, "reasons": reasons,
            "seconds": round(time.perf_counter() - started, 1)}


def classify(row: dict) -> str:
    kinds = {k for k, _ in row["reasons"]}
    if row["status"] == INVALID:
        return "invalid(sync)" if SYNC_FAILED in kinds or any("refused for timing" in t for _, t in row["reasons"]) \
            else "invalid(other)"
    if kinds & {SYNC_UNPROVEN, READ_BACK}:
        return "flagged(sync)"
    return row["status"]


def summary(rows: list[dict]) -> str:
    lines = []
    table: dict = collections.defaultdict(collections.Counter)
    for row in rows:
        honest = row["backend"] in HONEST or row["backend"] in HONEST_PLUGINS
        key = ("honest" if honest else "cheat", row["backend"], row["workload"],
               str(row["params"].get("n", row["params"].get("bytes"))))
        table[key][classify(row)] += 1
    for key in sorted(table):
        lines.append(f"{' '.join(key):<48} " + ", ".join(f"{k} {v}" for k, v in sorted(table[key].items())))
    honest = [r for r in rows if r["backend"] in HONEST or r["backend"] in HONEST_PLUGINS]
    cheats = [r for r in rows if r not in honest]
    lines.append(f"honest: {len(honest)} results, invalid {sum(r['status'] == INVALID for r in honest)}, "
                 f"flagged by the sync proof {sum(classify(r) == 'flagged(sync)' for r in honest)}")
    lines.append(f"cheats: {len(cheats)} results, invalid {sum(r['status'] == INVALID for r in cheats)}, "
                 f"got through {sum(r['status'] != INVALID for r in cheats)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--part", choices=("honest", "cheats", "all"), default="all")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from accelbench.devices.inventory import collect_inventory

    devices = {d.id: d for d in collect_inventory().devices}
    classes = _plugin_classes()
    print(f"accelbench from {Path(accelbench.__file__).parent}; load average {os.getloadavg()}", flush=True)
    rows = []
    for index, (name, workload, params, device) in enumerate(plan(args.part, args.runs, args.seed)):
        backend = get_backend(name) if name in HONEST else classes[name]()
        trust = TrustContext(devices=devices)  # each result as its own run: its own start-of-run probe
        row = measure_one(backend, workload, params, device, args.seed + index, trust)
        row["load"] = os.getloadavg()[0]
        rows.append(row)
        first = (row["reasons"] or [("", "")])[0][1]
        print(f"{name:<16} {workload:<7} {str(params.get('n', params.get('bytes'))):<8} {device:<10} "
              f"{classify(row):<15} {row['seconds']:>5}s load {row['load']:.1f}  {first[:150]}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows))
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
