"""The fault sweep (tests/fault_sweep.py, docs/reliability.md): a failed write, sync, rename or
unlink, or a SIGKILL, anywhere in a command that writes, leaves a database that opens and passes
integrity_check, all or none of the interrupted work, no partial file under a final name, and an
exit code with one error line. Here a seeded sample; ACCELBENCH_FULL_SWEEP=1 (with -m slow) runs
every injection point."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from cluster_folder import fake_slurm

from accelbench.cluster.manifest import CHECK, JobRecord, add_jobs
from accelbench.cluster.targets import Target
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


def _renames_failing(argv: list, env: dict) -> subprocess.CompletedProcess:
    """The command with every rename failing as on a full disk (the manifest's is its only one)."""
    return subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "-e", "trace=rename", "-e",
                           "inject=rename:error=ENOSPC", *ACCELBENCH, *map(str, argv)],
                          capture_output=True, text=True, timeout=120, check=False, env=env)


def _one_note(done: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    (note,) = done.stderr.strip().splitlines()
    assert note.startswith("note: the job manifest") and "No space left on device" in note, note
    return note


def test_gather_says_when_it_could_not_update_the_manifest_and_still_gathers(tmp_path):
    """gather remembers Slurm's states in the manifest; a failed write there (here its rename, on
    a full disk) was dropped without a word and the command exited 0 as if all were written."""
    base = tmp_path / "base"
    prepare(base)
    folder, case = fresh_copy(base, tmp_path), CASES["gather"]
    manifest = (folder / "cluster" / "manifest.json").read_bytes()
    before = run_ids(folder)
    done = _renames_failing(case.argv(folder), case.environment(folder))
    assert done.returncode == 0
    _one_note(done)
    assert (folder / "cluster" / "manifest.json").read_bytes() == manifest  # whole, as it was
    assert len(run_ids(folder)) == len(before) + sum(GATHERED_JOBS.values())


def test_a_health_check_sweep_says_when_it_could_not_update_the_manifest(tmp_path):
    """The same write in `fleet` of a `submit --each-node check` sweep was dropped without a word."""
    results = tmp_path / "results"
    add_jobs(results, [JobRecord("s1", 1, Target(node="n101"), "", "t", ("--level", "quick"), job_id="101",
                                 kind=CHECK)])
    (results / "jobs").mkdir()
    (results / "jobs" / "101.status.json").write_text(json.dumps(  # the check itself crashed: no report
        {"node": "n101", "command": "accelbench check", "run_exit_code": 2, "export_exit_code": 0}))
    manifest = (results / "manifest.json").read_bytes()
    done = _renames_failing(["fleet", results], fake_slurm(tmp_path / "slurm-bin", ["101"]))
    assert done.returncode == 1 and "JOB FAILED" in done.stdout, done.stdout + done.stderr  # the verdicts stand
    _one_note(done)
    assert (results / "manifest.json").read_bytes() == manifest
