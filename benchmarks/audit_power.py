"""Detection power by construction (issue 41): every cheat of tests/sneaky.py, active always or only
when it believes a call unchecked (by its stack, its output buffer, its queue depth, the time since
new inputs, or their identity), over every core workload, through the runner at quick rigor.

    python benchmarks/audit_power.py [--kinds skip,cache] [--whens always,buffer] [--workloads matmul]

Prints a table per workload: "caught" where the result was invalid, else the rate inflation that
went undetected and the verdict it got (docs/truth.md holds the figures and what bounds each cell).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from audit_power import WORKLOADS, render, sweep  # noqa: E402
from sneaky import KINDS, WHENS  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--whens", default=",".join(WHENS))
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    args = parser.parse_args(argv)
    cells = sweep(tuple(args.kinds.split(",")), tuple(args.whens.split(",")), tuple(args.workloads.split(",")))
    print(render(cells))
    missed = [c for c in cells if not c.caught and c.inflation > 1.25]
    print(f"\n{len(cells)} cells, {sum(c.caught for c in cells)} caught, {len(missed)} undetected above 1.25×")
    for c in missed:
        print(f"  {c.kind} {c.when} {c.workload}: {c.inflation:.2f}× {c.status}: {c.reason[:160]}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
