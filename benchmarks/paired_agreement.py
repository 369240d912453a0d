"""Do the paired speed-ups agree with their two sides' own medians? (issue: the answer right and decisive)

Runs `accelbench run matmul --sizes 256,1000 --dtype float32 --backend numpy,torch,jax --device cpu`
R times in fresh processes and, for every paired speed-up of every run, compares the paired ratio
with the ratio of the two measurements' medians (an independent derivation): the share within 10%,
the share whose interval holds it, the share marked contaminated, the widths of the paired
intervals against the sides' own, and the noisy share of the results. Pass `--worktree PATH` to
run another checkout's code (e.g. `git worktree add /tmp/before <commit>`) for a before/after.

    python benchmarks/paired_agreement.py --repeats 5
    python benchmarks/paired_agreement.py --repeats 5 --busy      # a busy process on one core
    python benchmarks/paired_agreement.py --repeats 5 --rigor quick   # 8 rounds a group, as the quick suite
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

from busy_load import busy_elsewhere  # benchmarks/ is on the path when they run

COMMAND = ["run", "matmul", "--sizes", "256,1000", "--dtype", "float32", "--backend", "numpy,torch,jax",
           "--device", "cpu", "--no-progress", "--json"]


def one_run(worktree: str | None, extra_env: dict, extra_args: tuple[str, ...] = ()) -> dict:
    env = {**os.environ, **extra_env}
    if worktree:
        env["PYTHONPATH"] = os.path.join(worktree, "src")
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run([sys.executable, "-m", "accelbench", *COMMAND, *extra_args,
                               "--db", os.path.join(folder, "r.sqlite")],
                              capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"accelbench run failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _problem(result: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in result["spec"]["params"].items() if k != "threads"))


def speedups_of(document: dict) -> list[dict]:
    """Each paired speed-up with its sides' medians, from a run's --json document. The all-cores
    baseline is chosen by measurement among the CPU implementations: per problem, the CPU result
    at the most threads that has no speed-up against all cores of its own (it is the one)."""
    results = document["results"]
    cpu = [x for x in results if x["spec"]["device"] == "cpu"]
    most = max((x["threads"] or 0 for x in cpu), default=0)
    cpu_all = {_problem(r): r for r in cpu if r["threads"] == most
               and not ((r.get("derived") or {}).get("speedups") or {}).get("vs_cpu_all_cores")}
    found = []
    for r in results:
        for kind, speedup in (r.get("derived") or {}).get("speedups", {}).items():
            if not speedup or not speedup.get("paired") or kind != "vs_cpu_all_cores":
                continue
            baseline = cpu_all.get(_problem(r))
            if baseline is None:
                continue
            medians = _median(baseline["phases_s"]["compute"]) / _median(r["phases_s"]["compute"])
            found.append({"what": f"{r['spec']['backend']} ({r['threads']}) n={r['spec']['params'].get('n')}"
                                  f" vs {baseline['spec']['backend']}", "paired": speedup["ratio"],
                          "low": speedup["ci_low"], "high": speedup["ci_high"], "medians": medians,
                          "verdict": speedup["verdict"], "sides_valid": r["verdict"] == baseline["verdict"] == "valid"})
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worktree", help="run this checkout's src instead of the installed code")
    parser.add_argument("--busy", action="store_true", help="a busy process pinned to core 0 meanwhile")
    parser.add_argument("--rigor", choices=("quick", "standard", "rigorous"), help="passed to accelbench run")
    args = parser.parse_args(argv)
    load = None
    if args.busy:
        load = busy_elsewhere()
    try:
        extra = ("--rigor", args.rigor) if args.rigor else ()
        runs = [one_run(args.worktree, {}, extra) for _ in range(args.repeats)]
    finally:
        if load:
            load.kill()
    speedups = [s for d in runs for s in speedups_of(d)]
    statuses = [r["verdict"] for d in runs for r in d["results"]]
    within = sum(abs(s["paired"] / s["medians"] - 1) <= 0.10 for s in speedups)
    held = sum(s["low"] <= s["medians"] <= s["high"] for s in speedups)
    contaminated = sum(s["verdict"] == "contaminated" for s in speedups)
    print(f"{len(runs)} runs, {len(speedups)} paired speed-ups against all CPU cores")
    print(f"  paired within 10% of the ratio of medians: {within}/{len(speedups)}")
    plain = [s for s in speedups if s["sides_valid"] and s["verdict"] != "contaminated"]
    print(f"  paired interval holds the ratio of medians: {held}/{len(speedups)} "
          f"({sum(s['low'] <= s['medians'] <= s['high'] for s in plain)}/{len(plain)} where both sides are valid "
          f"and the check passed: widened to it by construction)")
    print(f"  marked contaminated: {contaminated}/{len(speedups)}")
    # decisive: a difference of 10% or more (by the medians) told as faster or slower, the right way
    clear = [s for s in speedups if abs(math.log(s["medians"])) > math.log(1.1)]
    right = sum(s["verdict"] == ("faster" if s["medians"] > 1 else "slower") for s in clear)
    print(f"  decisive: {right}/{len(clear)} differences of 10% or more (medians) said faster/slower the right way")
    print(f"  results noisy: {statuses.count('noisy')}/{len(statuses)}")
    for s in speedups:
        print(f"    {s['what']:<26} paired {s['paired']:.3f} [{s['low']:.3f}–{s['high']:.3f}]  medians {s['medians']:.3f}"
              f"  {s['verdict']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
