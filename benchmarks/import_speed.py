"""How long importing exported results takes (target: 100,000 results < 10 s), and adding them one by one.

Writes an `accelbench export` document of generated, realistic results (synthetic_results.py:
20-60 samples per phase, four phases on accelerators) to a temporary file, then times
`accelbench import` of it into a fresh database in a new process, and splits that time into
reading and parsing the file, validating it, finding the samples' text, building the rows and
storing them, one after another as import_file does where it cannot fork a row builder (where it
can, the child validates and builds while this process stores: the wall time is less than the
parts' sum; a checkout without store/import_file.py is timed as a whole only). --src points the
processes at another checkout's src/, for a before/after pair. --one-by-one also times Store.add_result (one committed
transaction per result, as a running benchmark stores them) for a thousand results.

    python benchmarks/import_speed.py                          # this checkout, 100,000 results
    python benchmarks/import_speed.py --src /tmp/old/src --results 20000
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
PER_RUN = 10_000

PARTS = r"""
import json, sys, time
from accelbench.bulk import frozen_heap
from accelbench.store.db import Store
from accelbench.store.document_schema import validate_document
from accelbench.store.export import parse_json
from accelbench.store.import_file import read_bytes, run_records, stored_phases
parts, t = {}, time.perf_counter()
def lap(name):
    global t
    now = time.perf_counter(); parts[name] = now - t; t = now
raw = read_bytes(sys.argv[1]); lap("read file")
with frozen_heap(collect=False):  # as import_file runs
    doc = parse_json(raw, sys.argv[1]); lap("parse JSON")
    validate_document(doc); lap("validate")
    texts = stored_phases(raw, doc); lap("samples' text")
    records = list(run_records(doc["runs"], None, texts)); lap("build rows")
    with Store(sys.argv[2]) as store:
        try:
            store.restore_runs(records, bulk=True)  # as import_file stores them
        except TypeError:  # an older checkout (--src): no rollback-journal bulk write
            store.restore_runs(records)
    lap("store (one commit)")
print(json.dumps(parts))
"""

ONE_BY_ONE = r"""
import sys, time
import synthetic_results as s
from accelbench.store.db import Store
measurements = s.run_measurements(int(sys.argv[2]))
with Store(sys.argv[1]) as store:
    run_id = store.start_run(s.MACHINE, {})
    t0 = time.perf_counter()
    for m in measurements:
        store.add_result(run_id, m)
    print(time.perf_counter() - t0)
"""


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(HERE)])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=100_000, help=f"in runs of {PER_RUN} (the last may be shorter)")
    parser.add_argument("--src", type=Path, default=HERE.parent / "src", help="the src/ folder to time")
    parser.add_argument("--no-parts", action="store_true", help="time the command only")
    parser.add_argument("--one-by-one", action="store_true", help="also time add_result for 1000 results")
    args = parser.parse_args()
    sys.path[:0] = [str(args.src), str(HERE)]
    import synthetic_results

    with tempfile.TemporaryDirectory(prefix="accelbench-import-speed-") as tmp:
        doc_path = Path(tmp) / "export.json"
        started = time.perf_counter()
        runs, last = divmod(args.results, PER_RUN)
        doc = synthetic_results.export_document(runs, PER_RUN)
        if last:
            doc["runs"] += synthetic_results.export_document(1, last, seed=runs)["runs"]
            doc["runs"][-1]["id"] = f"20250101-{runs:06d}-synth"
        doc_path.write_text(json.dumps(doc, indent=1), encoding="utf-8")  # as `accelbench export` writes it
        del doc
        os.sync()  # the 366 MB just written are flushed first: the kernel's writeback is not the import's time
        size_mb = doc_path.stat().st_size / 1e6
        print(f"document: {args.results} results, {size_mb:.0f} MB, written in "
              f"{time.perf_counter() - started:.1f} s (code: {args.src})")
        command = [sys.executable, "-m", "accelbench", "import", str(doc_path), "--db", str(Path(tmp) / "a.sqlite")]
        elapsed, cpu_s = timed(command, _env(args.src))
        verdict = "meets" if elapsed < TARGET_S else "misses"
        print(f"accelbench import of {args.results} results: {elapsed:.1f} s wall, {cpu_s:.1f} s CPU "
              f"({args.results / elapsed:.0f} results/s; {verdict} the {TARGET_S:.0f} s target at this size)")
        if not args.no_parts:
            out = subprocess.run([sys.executable, "-c", PARTS, str(doc_path), str(Path(tmp) / "b.sqlite")],
                                 env=_env(args.src), capture_output=True, text=True)
            if out.returncode != 0:
                print(f"  (no parts: {out.stderr.strip().splitlines()[-1]})")
                return 0
            for name, seconds in json.loads(out.stdout).items():
                print(f"  {name:<19} {seconds:6.1f} s")
        if args.one_by_one:
            out = subprocess.run([sys.executable, "-c", ONE_BY_ONE, str(Path(tmp) / "c.sqlite"), "1000"],
                                 env=_env(args.src), capture_output=True, text=True, check=True)
            print(f"add_result, one committed transaction each: {1000 / float(out.stdout):.0f} results/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
