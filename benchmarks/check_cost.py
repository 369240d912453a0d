"""What judging the timed outputs costs the quick suite (issue 41, item 8: at most 10% of its wall time).

Runs `accelbench run` (the quick suite) in fresh processes, interleaved: as shipped, and with the
audit judging one block (runner/block_audit.py: the first block judged, none after, no judged calls
wanted, no statistic asking for estimates; judging none leaves every result unchecked, so invalid,
and nothing paired), the blocks, input changes, poison and read-backs left as they are. Prints
each run's wall time and the ratio of the medians. Run it with nothing else on the machine:

    python benchmarks/check_cost.py --pairs 2 [accelbench run arguments]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

UNJUDGED = """
import sys
from accelbench.runner import block_audit
block_audit.JUDGED_CALLS_WANTED = {name: 0 for name in block_audit.JUDGED_CALLS_WANTED}
block_audit.BlockAudit.sampling_limit_s = lambda self, budgets_s: budgets_s
original_after, original_more = block_audit.BlockAudit.after, block_audit.BlockAudit.more_wanted
def after(self, calls, start_s, end_s):  # the first block judged (a result needs one), no other
    block_audit.CHECK_SHARE = 0.0 if any(b.judged for b in self.blocks) else 1.0
    return original_after(self, calls, start_s, end_s)
def more_wanted(self, calibrated):
    self.more_judged = None
    return original_more(self, calibrated)
block_audit.BlockAudit.after, block_audit.BlockAudit.more_wanted = after, more_wanted
from accelbench.cli.main import entry_point
sys.argv = ["accelbench", *sys.argv[1:]]
sys.exit(entry_point())
"""
SHIPPED = """
import sys
from accelbench.cli.main import entry_point
sys.argv = ["accelbench", *sys.argv[1:]]
sys.exit(entry_point())
"""


def one(code: str, args: list[str], folder: Path, index: int) -> float:
    db = folder / f"run-{index}.sqlite"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, "run", "--db", str(db), "--no-progress", *args],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 2):
        raise SystemExit(f"run failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2)
    known, rest = parser.parse_known_args()
    shipped, unjudged = [], []
    with tempfile.TemporaryDirectory() as folder:
        for index in range(known.pairs):
            order = [(SHIPPED, shipped), (UNJUDGED, unjudged)]
            for code, into in (order if index % 2 == 0 else order[::-1]):
                into.append(one(code, rest, Path(folder), len(shipped) + len(unjudged)))
                print(f"{'judged' if code is SHIPPED else 'unjudged'}: {into[-1]:.1f} s", flush=True)
    ratio = statistics.median(shipped) / statistics.median(unjudged)
    print(f"judged {statistics.median(shipped):.1f} s, unjudged {statistics.median(unjudged):.1f} s (medians of "
          f"{known.pairs}): judging the timed outputs adds {100 * (ratio - 1):+.1f}%")


if __name__ == "__main__":
    main()
