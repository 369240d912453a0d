"""A/A test of `accelbench compare`: two identical quick runs back to back must not differ.

Runs `accelbench run WORKLOADS --quick --device DEVICE` twice into one temporary database, compares
the second with the first, and repeats that R times. Every faster/slower verdict between identical
runs is a false change; the false-change rate is those verdicts among the specs compared. It is
shown for the rule `compare` uses now (the run-to-run noise band, compare/noise.py) and for the old
rule (within-run interval, threshold and rank test only), recomputed on the same pairs. The pairs
share one database, so later pairs can use the specs' stored history (noise source "history").

    python benchmarks/aa_compare.py --device cpu --repeats 3
    python benchmarks/aa_compare.py --device cuda:0 --workloads matmul,stream --repeats 5 --json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time

from accelbench.report.compare.compare import (
    compare_measurements,
    compare_runs,
    geometric_mean,
)
from accelbench.report.compare.sources import load_run

CHANGES = ("faster", "slower")


def one_run(db: str, workloads: list[str], device: str, backend: str | None) -> float:
    """One `accelbench run --quick` in a fresh process, as a user types it; returns its wall time."""
    command = [sys.executable, "-m", "accelbench", "run", *workloads, "--quick", "--device", device,
               "--no-progress", "--no-telemetry", "--db", db]
    if backend:
        command += ["--backend", backend]
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"accelbench run failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return time.perf_counter() - started


def old_rule(a, b) -> dict:
    """The rule before the noise band: within-run interval, ±10% threshold and rank test only."""
    rows = [compare_measurements(ma, mb, noise=None) for ma, mb in _pairs(a, b)]
    geomean = geometric_mean(rows, beyond_noise_only=False)
    return {"changes": sum(r.verdict in CHANGES for r in rows), "compared": sum(r.counted for r in rows),
            "geomean": None if geomean is None else geomean.ratio}


def _pairs(a, b):
    from accelbench.report.compare.compare import match_specs

    return [(ma, mb) for ma, mb, _ in match_specs(list(a.measurements), list(b.measurements))[0]]


def trusting(run):
    """The run with every noisy result taken as valid: what each rule says without that guard."""
    lifted = tuple(dataclasses.replace(m, verdict="valid") if m.verdict == "noisy" else m for m in run.measurements)
    return dataclasses.replace(run, measurements=lifted)


def one_pair(db: str, args) -> dict:
    seconds = [one_run(db, args.workloads, args.device, args.backend) for _ in range(2)]
    a, b = load_run("latest~1", db), load_run("latest", db)
    new = compare_runs(a, b)
    counts = new.counts()
    compared = sum(counts[v] for v in ("same", "faster", "slower", "inconclusive"))
    changed = [f"{r.label}: {r.factor_text()}" for r in new.rows if r.verdict in CHANGES]
    disturbed = sum(r.counted and "noisy" in r.result_verdicts for r in new.rows)
    return {"run_seconds": seconds, "compared": compared, "noisy": disturbed, "new": {"changes": counts["faster"] + counts["slower"],
            "counts": counts, "geomean": new.geomean.ratio if new.geomean else None,
            "noise": new.noise_text(), "changed": changed}, "old": old_rule(a, b),
            "noisy_taken_as_valid": {"new": _changes(compare_runs(trusting(a), trusting(b)).rows),
                                     "old": old_rule(trusting(a), trusting(b))["changes"]}}


def _changes(rows) -> int:
    return sum(r.verdict in CHANGES for r in rows)


def rate(changes: int, compared: int) -> str:
    return f"{changes}/{compared} = {changes / compared:.1%}" if compared else "no spec compared"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="device id as `accelbench info` shows it (default cpu)")
    parser.add_argument("--workloads", default="matmul,stream,reduce",
                        help="comma-separated workloads of the quick suite (default matmul,stream,reduce)")
    parser.add_argument("--backend", default=None, help="comma-separated backends (default: every available one)")
    parser.add_argument("--repeats", type=int, default=3, help="A/A pairs to run (default 3)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats: {args.repeats} is below 1; accepted: a whole number >= 1")
    args.workloads = [w for w in args.workloads.split(",") if w]
    pairs = []
    with tempfile.TemporaryDirectory(prefix="accelbench-aa-") as folder:
        db = os.path.join(folder, "aa.sqlite")
        for repeat in range(args.repeats):
            pair = one_pair(db, args)
            pairs.append(pair)
            if not args.json:
                print(f"pair {repeat + 1}: {pair['compared']} specs compared (runs took "
                      f"{pair['run_seconds'][0]:.0f} s, {pair['run_seconds'][1]:.0f} s); false changes: new rule "
                      f"{rate(pair['new']['changes'], pair['compared'])}, old rule "
                      f"{rate(pair['old']['changes'], pair['old']['compared'])}; {pair['noisy']} spec(s) with a "
                      "noisy result in A or B (no verdict under either rule)", flush=True)
                lifted = pair["noisy_taken_as_valid"]
                print(f"  with noisy results taken as valid: new rule {rate(lifted['new'], pair['compared'])}, "
                      f"old rule {rate(lifted['old'], pair['compared'])}")
                print(f"  {pair['new']['noise']}", flush=True)
                for text in pair["new"]["changed"]:
                    print(f"  new rule still calls a change: {text}", flush=True)
    compared = sum(p["compared"] for p in pairs)
    total = {"device": args.device, "workloads": args.workloads, "repeats": args.repeats, "pairs": pairs,
             "false_change_rate_new": sum(p["new"]["changes"] for p in pairs) / compared if compared else None,
             "false_change_rate_old": sum(p["old"]["changes"] for p in pairs) / compared if compared else None,
             "compared": compared, "noisy": sum(p["noisy"] for p in pairs)}
    if args.json:
        json.dump(total, sys.stdout, indent=2)
        print()
    else:
        print(f"A/A false-change rate over {args.repeats} pair(s) of identical quick runs on {args.device}: "
              f"with the noise band {rate(sum(p['new']['changes'] for p in pairs), compared)}; "
              f"old rule {rate(sum(p['old']['changes'] for p in pairs), compared)} (faster/slower verdicts "
              f"among specs compared); {sum(p['noisy'] for p in pairs)} of the {compared} had a noisy result; "
              "taking noisy results as valid: new rule "
              f"{rate(sum(p['noisy_taken_as_valid']['new'] for p in pairs), compared)}, old rule "
              f"{rate(sum(p['noisy_taken_as_valid']['old'] for p in pairs), compared)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
