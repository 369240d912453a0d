"""How long `accelbench report` takes over a large results database (target: 10,000 results < 10 s).

Builds a database of generated, realistic results (synthetic_results.py: six series, 20-60 samples
per phase) in a temporary folder, then times `accelbench report` over every run in a fresh process,
and splits the time into its parts (load and analyse, findings, figures, HTML) in a second process.
By default two databases of 10,000 results: one run (what `accelbench report` shows by default,
the latest run, at its largest) and five runs of 2,000 reported together (five sets of figures:
there matplotlib's cost per panel, not the number of results, sets the time). --src points both
processes at another checkout's src/, for a before/after pair:

    python benchmarks/report_speed.py                                   # this checkout, 1 x 10000 and 5 x 2000
    python benchmarks/report_speed.py --src /tmp/old/src --runs 1 --results-per-run 500
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from synthetic_results import timed  # noqa: E402

TARGET_S = 10.0

PARTS = r"""
import json, sys, time
from accelbench.store.db import Store
from accelbench.report.data import load_run
from accelbench.report.build import run_findings
from accelbench.report.figures import make_figures
from accelbench.report.html import render_page
parts = dict.fromkeys(("load and analyse", "figures", "findings", "html"), 0.0)
with Store(sys.argv[1]) as store:
    sections = []
    for run_id in sys.argv[2:]:
        t0 = time.perf_counter(); run = load_run(store, run_id)
        t1 = time.perf_counter(); figures = make_figures(run)
        t2 = time.perf_counter(); found = run_findings(run)
        t3 = time.perf_counter()
        parts["load and analyse"] += t1 - t0; parts["figures"] += t2 - t1; parts["findings"] += t3 - t2
        sections.append((run, figures, found, {}))
    t4 = time.perf_counter(); render_page(sections); parts["html"] = time.perf_counter() - t4
print(json.dumps(parts))
"""


def build(db_path: Path, src: Path, runs: int, per_run: int) -> list[str]:
    code = ("import json, sys; from accelbench.store.db import Store; import synthetic_results as s\n"
            f"with Store({str(db_path)!r}) as st: print(json.dumps(s.fill_store(st, {runs}, {per_run})))")
    out = subprocess.run([sys.executable, "-c", code], env=_env(src), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(HERE)]), "MPLBACKEND": "Agg"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, help="one shape only: this many runs (default: 1 x 10000 and 5 x 2000)")
    parser.add_argument("--results-per-run", type=int, default=2000)
    parser.add_argument("--src", type=Path, default=HERE.parent / "src", help="the src/ folder to time")
    parser.add_argument("--no-parts", action="store_true", help="time the command only")
    args = parser.parse_args()
    shapes = [(args.runs, args.results_per_run)] if args.runs else [(1, 10000), (5, 2000)]
    for runs, per_run in shapes:
        time_report(runs, per_run, args.src, parts=not args.no_parts)
    return 0


def time_report(runs: int, per_run: int, src: Path, parts: bool) -> None:
    total = runs * per_run
    with tempfile.TemporaryDirectory(prefix="accelbench-report-speed-") as tmp:
        db_path = Path(tmp) / "results.sqlite"
        started = time.perf_counter()
        run_ids = build(db_path, src, runs, per_run)
        print(f"database: {total} results in {runs} run(s), built in {time.perf_counter() - started:.1f} s "
              f"(code: {src})")
        command = [sys.executable, "-m", "accelbench", "report", *run_ids, "--db", str(db_path),
                   "-o", str(Path(tmp) / "report")]
        elapsed, cpu_s = timed(command, _env(src))
        verdict = "meets" if elapsed < TARGET_S else "misses"
        print(f"accelbench report over {total} results in {runs} run(s): {elapsed:.1f} s wall, {cpu_s:.1f} s CPU "
              f"({total / elapsed:.0f} results/s; {verdict} the {TARGET_S:.0f} s target at this size)")
        if parts:
            out = subprocess.run([sys.executable, "-c", PARTS, str(db_path), *run_ids], env=_env(src),
                                 capture_output=True, text=True, check=True)
            for name, seconds in json.loads(out.stdout).items():
                print(f"  {name:<17} {seconds:6.1f} s")


if __name__ == "__main__":
    sys.exit(main())
