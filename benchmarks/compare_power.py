"""Both error rates of `accelbench compare --fail-if-slower`: false alarms between identical runs, and
detection of injected slowdowns.

Runs `accelbench run WORKLOADS --rigor quick --device cpu` N times back to back, on a quiet machine and
with a busy process (`python -c 'while True: pass'` pinned to CPU 0), and compares consecutive runs as
exported files are compared in CI (no stored history). For every pair (A, B):

* A/A: B as measured. A faster/slower verdict is a false change; the gate failing is a false alarm;
  "undecided" (exit 3) is the gate saying it cannot tell;
* B with every result's samples ×1.1, ×1.3, ×2 (the machine reference left as measured): the gate
  must fail (exit 1): ×2 always, ×1.3 on a quiet machine;
* B with one spec ×1.3 (the longest call, the steadiest): detected when that spec is "slower";
* B with the multi-thread results ×1.3 (a change to the work spread over the cores): the gate should fail;
* the same with the all-cores probes beside them ×1.3 too ("all-core phase": the host's, not the code's):
  it should not;
* B with every sample ×2 *and* its machine reference and all-cores probes ×2 ("the machine was slower"): must be undecided
  (exit 3) with the machine shift named, never a change.

    python benchmarks/compare_power.py                        # about 8 min on 2 cores
    python benchmarks/compare_power.py --keep runs/ --quiet 4 --busy 3
    PYTHONPATH=/old/src python benchmarks/compare_power.py --from runs/   # the same runs, another compare
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

from accelbench.report.compare.compare import compare_runs
from accelbench.report.compare.sources import load_file_run

THRESHOLD_PCT = 10.0
FACTORS = (1.1, 1.3, 2.0)
KEY = "machine_reference"
PROBE_KEY = "all_cores_probe"  # timing/all_cores_probe.py: beside each multi-thread CPU result


def one_run(db: str, workloads: list[str], export_to: str) -> float:
    """`accelbench run` in a fresh process as a user types it, exported to a file; its wall time."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "accelbench", "run", *workloads, "--rigor", "quick", "--device", "cpu",
               "--no-progress", "--db", db]
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"accelbench run failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    subprocess.run([sys.executable, "-m", "accelbench", "export", "latest", "-o", export_to, "--db", db],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def busy_process() -> subprocess.Popen:
    """A process spinning on CPU 0, as a neighbour that never sleeps."""
    def pin() -> None:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {0})
    return subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin)


def make_runs(folder: str, condition: str, count: int, workloads: list[str]) -> list[str]:
    spinner = busy_process() if condition == "busy" else None
    paths = []
    try:
        for i in range(count):
            path = os.path.join(folder, f"{condition}-{i}.json")
            seconds = one_run(os.path.join(folder, f"{condition}.sqlite"), workloads, path)
            print(f"  {condition} run {i + 1}/{count}: {seconds:.0f} s", flush=True)
            paths.append(path)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    return paths


def scaled(run, factor: float, only_key: str | None = None, reference: float = 1.0, multi_thread: bool = False,
           probes: float | None = None):
    """The run with every (or one, or every multi-thread) result's timings × factor, its machine reference
    × `reference` and the all-cores probes beside the scaled results × `probes` (default: `reference`)."""
    probes = reference if probes is None else probes

    def scale(m):
        if only_key is not None and m.spec.key != only_key:
            return m
        if multi_thread and not (m.threads or 0) > 1:
            return m
        probe = (m.telemetry or {}).get(PROBE_KEY)
        if probes != 1.0 and isinstance(probe, dict):  # the machine was slower: beside each spec too
            probe = {**probe, "before_s": probe["before_s"] * probes, "after_s": probe["after_s"] * probes}
            m = dataclasses.replace(m, telemetry={**m.telemetry, PROBE_KEY: probe})
        return dataclasses.replace(m, phases_s={k: tuple(x * factor for x in v) for k, v in m.phases_s.items()})
    machine = copy.deepcopy(run.machine)
    for reading in (machine.get(KEY) or {}).get("readings", []):
        for part in ("matmul_s", "memory_s", "total_s"):
            reading[part] *= reference
    return dataclasses.replace(run, measurements=tuple(scale(m) for m in run.measurements), machine=machine)


def outcome(comparison) -> str:
    """failed / undecided / passed; compare without a gate module (older code): failed or passed."""
    try:
        from accelbench.report.compare.gate import gate
    except ImportError:
        return "failed" if comparison.slower_than(THRESHOLD_PCT / 100) else "passed"
    return gate(comparison, THRESHOLD_PCT).outcome


def _longest(run) -> str:
    usable = [m for m in run.measurements if m.valid and m.samples_s]
    return max(usable, key=lambda m: sorted(m.samples_s)[len(m.samples_s) // 2]).spec.key


def one_pair(path_a: str, path_b: str) -> dict:
    a, b = load_file_run(path_a), load_file_run(path_b)
    found: dict = {}
    aa = compare_runs(a, b, history={})
    found["A/A"] = {"outcome": outcome(aa), "changes": sum(r.verdict in ("faster", "slower") for r in aa.rows),
                    "compared": sum(r.counted for r in aa.rows),
                    "changed": [f"{r.label} {r.verdict_text()}" for r in aa.rows if r.verdict in ("faster", "slower")]}
    for factor in FACTORS:
        c = compare_runs(a, scaled(b, factor), history={})
        found[f"all x{factor}"] = {"outcome": outcome(c), "slower": len(c.by_verdict("slower")),
                                   "compared": sum(r.counted for r in c.rows)}
    key = _longest(a)
    one = compare_runs(a, scaled(b, 1.3, only_key=key), history={})
    found["one spec x1.3"] = {"outcome": outcome(one),
                              "detected": any(r.spec.key == key and r.verdict == "slower" for r in one.rows)}
    for name, probes in (("multi-thread x1.3", 1.0), ("all-core phase", 1.3)):
        partial = compare_runs(a, scaled(b, 1.3, multi_thread=True, probes=probes), history={})
        found[name] = {"outcome": outcome(partial), "slower": len(partial.by_verdict("slower")),
                       "compared": sum(r.counted for r in partial.rows)}
    machine = compare_runs(a, scaled(b, 2.0, reference=2.0), history={})
    found["machine x2"] = {"outcome": outcome(machine), "slower": len(machine.by_verdict("slower")),
                           "named": "this machine ran" in machine.summary_line()}
    return found


def _share(items: list[bool]) -> str:
    return f"{sum(items)}/{len(items)} = {sum(items) / len(items):.0%}" if items else "—"


def table(condition: str, pairs: list[dict]) -> list[str]:
    aa = [p["A/A"] for p in pairs]
    changes, compared = sum(x["changes"] for x in aa), sum(x["compared"] for x in aa)
    lines = [f"{condition}: {len(pairs)} pair(s) of consecutive runs, gate --fail-if-slower {THRESHOLD_PCT:g}",
             f"  {'case':<16} {'gate failed':>14} {'undecided (3)':>14} {'passed':>14}   other",
             _row("A/A", [p["A/A"] for p in pairs],
                  f"false changes {changes}/{compared} specs = {changes / max(compared, 1):.1%}")]
    lines += [f"    A/A pair {i + 1}: {change}" for i, x in enumerate(aa) for change in x.get("changed", ())]
    for factor in FACTORS:
        rows = [p[f"all x{factor}"] for p in pairs]
        lines.append(_row(f"all x{factor}", rows, f"specs slower {sum(r['slower'] for r in rows)}/"
                                                   f"{sum(r['compared'] for r in rows)}"))
    rows = [p["one spec x1.3"] for p in pairs]
    lines.append(_row("one spec x1.3", rows, f"that spec slower {_share([r['detected'] for r in rows])}"))
    for name in ("multi-thread x1.3", "all-core phase"):
        rows = [p[name] for p in pairs if name in p]
        lines.append(_row(name, rows, f"specs slower {sum(r['slower'] for r in rows)}/"
                                      f"{sum(r['compared'] for r in rows)}"))
    rows = [p["machine x2"] for p in pairs]
    lines.append(_row("machine x2", rows, f"named {_share([r['named'] for r in rows])}, "
                                          f"specs slower {sum(r['slower'] for r in rows)}"))
    return lines


def _row(case: str, rows: list[dict], other: str) -> str:
    cells = [_share([r["outcome"] == o for r in rows]) for o in ("failed", "undecided", "passed")]
    return f"  {case:<16} {cells[0]:>14} {cells[1]:>14} {cells[2]:>14}   {other}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="matmul,stream", help="comma-separated (default matmul,stream)")
    parser.add_argument("--quiet", type=int, default=5, help="runs on a quiet machine (default 5: 4 pairs)")
    parser.add_argument("--busy", type=int, default=4, help="runs beside a busy process (default 4: 3 pairs)")
    parser.add_argument("--keep", metavar="DIR", help="keep the exported runs in DIR")
    parser.add_argument("--from", dest="source", metavar="DIR", help="compare the runs kept in DIR, run nothing")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="accelbench-power-") as scratch:
        folder = args.source or args.keep or scratch
        os.makedirs(folder, exist_ok=True)
        results = {}
        for condition, count in (("quiet", args.quiet), ("busy", args.busy)):
            if args.source:
                paths = sorted(glob.glob(os.path.join(folder, f"{condition}-*.json")),
                               key=lambda p: int(p.rsplit("-", 1)[1].split(".")[0]))
            else:
                paths = make_runs(folder, condition, count, [w for w in args.workloads.split(",") if w])
            results[condition] = [one_pair(x, y) for x, y in zip(paths, paths[1:])]
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return 0
    for condition, pairs in results.items():
        if pairs:
            print("\n".join(table(condition, pairs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
