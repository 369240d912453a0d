"""`accelbench gather` reads a job's files only inside its results folder.

A job id from the manifest names files (jobs/J.json, logs/J.err, ...): anything but a Slurm job id
is refused before a path is built, and a path that leads out of the folder through a symlink is
refused for that job alone (the others are still gathered). Every case uses a real folder, real
symlinks and FIFOs, a real SQLite file, and the command as a user types it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench.cli.main import main
from accelbench.cluster.gather import gather
from accelbench.cluster.manifest import (
    FORMAT_NAME,
    FORMAT_VERSION,
    JobRecord,
    add_jobs,
    load_manifest,
)
from accelbench.cluster.targets import Target
from accelbench.errors import UsageError
from accelbench.store.db import Store
from accelbench.store.export import export_runs, write_json

STATUS_OK = {"job_id": "12", "node": "n1", "partition": "gpu", "run_exit_code": 0, "export_exit_code": 0}


def _forgotten(argv):  # Slurm answering "no such job" for every id
    return subprocess.CompletedProcess(argv, 1, "", "slurm_load_jobs error: Invalid job id specified\n")


def _record(job_id, index=1) -> JobRecord:
    return JobRecord(submission="s1", index=index, target=Target(), script="scripts/s1-1.sbatch",
                     submitted_at="2026-12-02T09:00:00+00:00", command=("reduce",), job_id=job_id)


def _export(path: Path, hostname: str) -> str:
    """A real export document with one run, at `path`; returns the run id."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with Store(path.parent / f".{path.name}.sqlite") as store:
        run_id = store.start_run({"hostname": hostname}, {"workloads": ["reduce"]})
        store.finish_run(run_id, "complete")
        write_json(path, export_runs(store, [run_id]))
    return run_id


def _manifest_with_job_id(results: Path, job_id) -> None:
    results.mkdir(parents=True, exist_ok=True)
    job = {**_record("1").to_dict(), "job_id": job_id}
    (results / "manifest.json").write_text(json.dumps({"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                                                       "jobs": [job]}))


@pytest.mark.parametrize("job_id", ["../x", "../../x", "/etc/passwd", "a/../../b", "12/../../x", "..", ".",
                                    "12\x00", "12\n", "", "12 ", " 12", "1e3", "-1", "12_", "_1", "12_3_4",
                                    "12/x", "12\\..\\x", "１２", True])
def test_a_job_id_that_is_not_a_slurm_job_id_is_refused_before_any_path(tmp_path, capsys, job_id):
    results = tmp_path / "results"
    _manifest_with_job_id(results, job_id)
    _export(tmp_path / "x.json", "outside")  # what ../x would have reached
    db = tmp_path / "local.sqlite"
    assert main(["gather", str(results), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "jobs[0].job_id" in err and "is not a Slurm job id" in err
    assert "accepted: digits" in err
    assert not db.exists()  # refused before the database was opened


@pytest.mark.parametrize("job_id", ["1234", "1234_5", 77])
def test_slurm_job_ids_and_array_tasks_are_accepted(tmp_path, job_id):
    results = tmp_path / "results"
    _manifest_with_job_id(results, job_id)
    (record,) = load_manifest(results)
    assert record.path(results, "jobs/{job_id}.json") == results / "jobs" / f"{job_id}.json"


def test_a_record_built_in_python_cannot_name_a_path_outside_either(tmp_path):
    for job_id in ("../x", "/etc/passwd", "1/../../x"):
        with pytest.raises(UsageError, match="not a Slurm job id"):
            _record(job_id).path(tmp_path, "jobs/{job_id}.json")


def _plant(results: Path, outside: Path, how: str) -> None:
    """Make job 12's files lead out of `results` in one of several ways."""
    (results / "jobs").mkdir(parents=True, exist_ok=True)
    (results / "logs").mkdir(parents=True, exist_ok=True)
    if how == "jobs folder":
        (results / "jobs").rmdir()
        (results / "jobs").symlink_to(outside)
    elif how == "results file":
        (results / "jobs" / "12.json").symlink_to(outside / "12.json")
    elif how == "status file":
        (results / "jobs" / "12.status.json").symlink_to(outside / "12.status.json")
    elif how == "log":
        (results / "logs" / "12.err").symlink_to(outside / "secret.txt")
    elif how == "relative link":
        (results / "jobs" / "12.json").symlink_to(Path("..") / ".." / outside.name / "12.json")


@pytest.mark.parametrize("how", ["jobs folder", "results file", "status file", "log", "relative link"])
def test_a_symlink_leading_out_of_the_folder_costs_that_job_only(tmp_path, how):
    results, outside = tmp_path / "results", tmp_path / "outside"
    add_jobs(results, [_record("12"), _record("13", 2)])
    outside_run = _export(outside / "12.json", "outside")
    (outside / "12.status.json").write_text(json.dumps(STATUS_OK))
    (outside / "secret.txt").write_text("root:x:0:0:SECRET\n")
    _plant(results, outside, how)
    inside_run = _export(results / "jobs" / "13.json", "inside")
    (results / "jobs" / "13.status.json").write_text(json.dumps({**STATUS_OK, "job_id": "13"}))
    with Store(tmp_path / "local.sqlite") as store:
        twelve, thirteen = gather(results, store, runner=_forgotten).outcomes
        stored = [r.id for r in store.runs()]
    assert twelve.status == "failed" and "leads outside the results folder" in twelve.problem
    assert "SECRET" not in " ".join(twelve.log_tail) and outside_run not in stored
    if how == "jobs folder":  # every job's results lie outside now
        assert thirteen.status == "failed" and "leads outside" in thirteen.problem and stored == []
    else:
        assert thirteen.status == "ok" and stored == [inside_run]


def test_links_that_stay_inside_the_folder_and_a_linked_folder_are_followed(tmp_path):
    real = tmp_path / "real"
    add_jobs(real, [_record("12")])
    run_id = _export(real / "elsewhere" / "12.json", "n1")
    (real / "jobs").mkdir()
    (real / "jobs" / "12.json").symlink_to(Path("..") / "elsewhere" / "12.json")
    (real / "jobs" / "12.status.json").write_text(json.dumps(STATUS_OK))
    (tmp_path / "link").symlink_to(real)
    with Store(tmp_path / "local.sqlite") as store:
        (outcome,) = gather(tmp_path / "link", store, runner=_forgotten).outcomes
    assert outcome.status == "ok" and outcome.imported == [run_id]


def test_fifos_planted_in_the_folder_do_not_hang_gather(tmp_path):
    results = tmp_path / "results"
    add_jobs(results, [_record("12")])
    for name in ("jobs/12.json", "jobs/12.status.json", "logs/12.err", "logs/12.out"):
        (results / name).parent.mkdir(exist_ok=True)
        os.mkfifo(results / name)
    env = {**os.environ, "PATH": str(tmp_path / "no-slurm")}  # no squeue: the files decide
    done = subprocess.run([sys.executable, "-m", "accelbench", "gather", str(results), "--db",
                           str(tmp_path / "local.sqlite")], capture_output=True, text=True, timeout=120, env=env,
                          check=False)
    assert done.returncode == 1, done.stderr
    assert "[FAILED] job 12" in done.stdout and "no results file" in done.stdout
