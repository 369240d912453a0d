"""The fault sweep (tests/fault_sweep.py, docs/reliability.md): a failed write, sync, rename or
unlink, or a SIGKILL, anywhere in a command that writes, leaves a database that opens and passes
integrity_check, all or none of the interrupted work, no partial file under a final name, and an
exit code with one error line. Here a seeded sample; ACCELBENCH_FULL_SWEEP=1 (with -m slow) runs
every injection point."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from fault_sweep import ACCELBENCH, CASES, GATHERED_JOBS, fresh_copy, prepare, run_ids, summary, sweep

pytestmark = [pytest.mark.skipif(sys.platform != "linux" or shutil.which("strace") is None,
                                 reason="injects faults with strace")]

SAMPLED = ["import", "export", "report", "setup", "run", "gather"]
SEED = 20261204


def _held(points) -> None:
    failed = [f"{p.case} {p.fault}: {p.problems}" for p in points if p.problems]
    assert not failed, "\n".join(failed) + "\n" + summary(points)


def test_a_seeded_sample_of_faults_and_kills_holds():
    pytest.importorskip("matplotlib")
    points = sweep(SAMPLED, sample=2, kills=1, seed=SEED)  # about 40 s on 2 quiet cores
    assert len(points) == len(SAMPLED) * 3
    assert sum(p.hit for p in points if not p.fault.startswith("SIGKILL")) >= len(SAMPLED)  # faults landed
    _held(points)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("ACCELBENCH_FULL_SWEEP"), reason="minutes: set ACCELBENCH_FULL_SWEEP=1")
def test_every_injection_point_holds():
    _held(sweep(SAMPLED + ["export-csv"], sample=None, kills=10, seed=SEED))


def test_gather_says_when_it_could_not_update_the_manifest_and_still_gathers(tmp_path):
    """gather remembers Slurm's states in the manifest; a failed write there (here its rename, on
    a full disk) was dropped without a word and the command exited 0 as if all were written."""
    base = tmp_path / "base"
    prepare(base)
    folder, case = fresh_copy(base, tmp_path), CASES["gather"]
    manifest = (folder / "cluster" / "manifest.json").read_bytes()
    before = run_ids(folder)
    done = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "-e", "trace=rename", "-e",
                           "inject=rename:error=ENOSPC", *ACCELBENCH, *map(str, case.argv(folder))],
                          capture_output=True, text=True, timeout=120, check=False, env=case.environment(folder))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (note,) = done.stderr.strip().splitlines()
    assert note.startswith("note: the job manifest") and "No space left on device" in note, note
    assert (folder / "cluster" / "manifest.json").read_bytes() == manifest  # whole, as it was
    assert len(run_ids(folder)) == len(before) + sum(GATHERED_JOBS.values())
