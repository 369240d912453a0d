"""Does the quick suite's answer agree with the same suite at --rigor standard (issue 42)?

Runs `accelbench run` (quick, the default) and `accelbench run --rigor standard --quick` (the quick
suite's grid at standard rigor) into one fresh database, or reads two stored runs, and compares every
speed-up the answer states: for each device, work and CPU side, both verdicts. They agree where both
are decided and the same, or where either is undecided ("not decided", "no clear difference",
"not measurable"): an undecided verdict claims nothing to contradict.

    python benchmarks/answer_agreement.py [--db PATH] [--runs QUICK_ID STANDARD_ID]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

DECIDED = ("faster", "slower", "same")


def stated(db: str, run: str) -> dict[tuple[str, str, str], str]:
    """(series, work kind, against) -> the verdict the stored run's answer states (report/headline.py)."""
    from accelbench.report.data import load_run
    from accelbench.report.headline import headline_for_run
    from accelbench.store.db import Store

    with Store(db, create=False) as store:
        data = load_run(store, store.resolve_run(run))
    headline = headline_for_run(data.rows, data.devices, data.machine, data.selection.get("rigor"))
    found = {}
    for device in headline.devices:
        for c in device.comparisons:
            for against, ratio in (("all cores", c.vs_all_cores), ("one core", c.vs_one_core)):
                if ratio is not None:
                    found[(device.series, c.kind, against)] = ratio.verdict()
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", help="database to run into (default: a fresh temporary one)")
    parser.add_argument("--runs", nargs=2, metavar=("QUICK", "STANDARD"), help="compare two stored runs instead")
    args = parser.parse_args(argv)
    db = args.db or str(Path(tempfile.mkdtemp()) / "agreement.sqlite")
    if args.runs:
        quick, standard = args.runs
    else:
        for extra in ([], ["--rigor", "standard", "--quick"]):
            subprocess.run([sys.executable, "-m", "accelbench", "run", "--db", db, "--no-progress", *extra],
                           check=True, stdout=subprocess.DEVNULL)
        quick, standard = "latest~1", "latest"
    a, b = stated(db, quick), stated(db, standard)
    disagree = []
    for key in sorted(set(a) & set(b)):
        both = (a[key], b[key])
        ok = not (both[0] in DECIDED and both[1] in DECIDED and both[0] != both[1])
        print(f"{'ok ' if ok else 'NO '} {key[0]:28s} {key[1]:15s} vs {key[2]:10s} quick {both[0]:13s} standard {both[1]}")
        if not ok:
            disagree.append(key)
    decided = sum(a[k] in DECIDED and b[k] in DECIDED for k in set(a) & set(b))
    print(f"{len(set(a) & set(b))} stated in both, {decided} decided in both, {len(disagree)} disagree")
    return 1 if disagree else 0


if __name__ == "__main__":
    raise SystemExit(main())
