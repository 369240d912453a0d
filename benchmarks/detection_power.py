"""Print the detection-power table (docs/truth.md): every mutation × every core workload.

    python benchmarks/detection_power.py [--fast] [--details]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from adversary import render, sweep  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fast", action="store_true", help="one size, two strengths")
    parser.add_argument("--details", action="store_true", help="every trial, with its verdict")
    parser.add_argument("--kinds", default="", help="comma-separated mutations (default: all)")
    parser.add_argument("--workloads", default="", help="comma-separated workloads (default: all)")
    parser.add_argument("--strengths", default="", help="comma-separated strengths (default: 1.25,2,4,10)")
    args = parser.parse_args(argv)
    options = {"sizes": (0,), "strengths": (1.25, 4.0)} if args.fast else {}
    if args.kinds:
        options["kinds"] = tuple(args.kinds.split(","))
    if args.strengths:
        options["strengths"] = tuple(float(x) for x in args.strengths.split(","))
    if args.workloads:
        options["workloads"] = tuple(args.workloads.split(","))
    trials = sweep(**options)
    if args.details:
        for t in trials:
            print(f"{t.kind:18} {t.workload:12} {str(t.params):60.60} ×{t.strength:<5g} {t.status:10} "
                  f"inflation {t.inflation:6.2f}  {t.reason[:110]}", flush=True)
    print(render(trials))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
