"""`accelbench submit` and `accelbench gather` against a REAL Slurm (sbatch, slurmctld, slurmd).

Start one on this machine first (root): `eval "$(scripts/slurm/start_local_slurm.sh)"`; the
tests skip, saying why, when no Slurm answers or when its node is not this machine (the
results folder is a tmp folder, which only a local node can see). The daemons are left running
for whoever started them: these tests neither start nor stop Slurm.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

from accelbench.store.db import Store

SMALL_SUITE = ["reduce", "--sizes", "4096", "--backend", "numpy", "--rigor", "quick"]
WAIT = ["--wait", "--timeout", "180", "--poll", "0.5"]


def _slurm_problem() -> str | None:
    """Why these tests cannot run here, or None when a local Slurm answers."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "Slurm is not installed (no sinfo/sbatch on PATH); scripts/slurm/start_local_slurm.sh starts one"
    conf = os.environ.get("SLURM_CONF")
    if not conf and not os.path.exists("/etc/slurm/slurm.conf"):
        return "SLURM_CONF is unset and /etc/slurm/slurm.conf is absent: run eval \"$(scripts/slurm/start_local_slurm.sh)\""
    if conf and not os.path.exists(conf):  # sinfo would spend its timeout looking for a controller
        return f"SLURM_CONF={conf} does not exist: run eval \"$(scripts/slurm/start_local_slurm.sh)\""
    try:
        answer = subprocess.run(["sinfo", "-h", "-o", "%N %t"], capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        return "sinfo gave no answer in 15 s: slurmctld is not reachable"
    if answer.returncode != 0:
        return f"Slurm is not running: sinfo says {answer.stderr.strip() or answer.returncode}"
    nodes = {line.split()[0] for line in answer.stdout.splitlines() if line.strip()}
    here = {socket.gethostname().split(".")[0], "localhost"}
    if not nodes & here:
        return f"Slurm's nodes ({', '.join(sorted(nodes))}) are not this machine: a tmp folder is not shared with them"
    return None


SLURM_PROBLEM = _slurm_problem()  # asked once: each question may cost sinfo's timeout
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SLURM_PROBLEM is not None, reason=str(SLURM_PROBLEM))]


def accelbench(*args: str, timeout_s: float = 240) -> subprocess.CompletedProcess:
    """The command as a user types it, in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "accelbench", *args], capture_output=True, text=True,
                          timeout=timeout_s)


def _job_ids(stdout: str) -> list[str]:
    return re.findall(r"^submitted job (\d+)", stdout, flags=re.MULTILINE)


@pytest.fixture(scope="module")
def two_jobs(tmp_path_factory):
    """One submission of two jobs (--repeat 2) on the local node, waited for and gathered."""
    folder = tmp_path_factory.mktemp("cluster")
    results, db = folder / "results", folder / "local.sqlite"
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as env:  # module scope: conftest's isolation is not active yet
        env.setenv("ACCELBENCH_DB", str(folder / "default.sqlite"))
        env.setenv("XDG_CONFIG_HOME", str(folder / "config"))
        done = accelbench("submit", *SMALL_SUITE, "--repeat", "2", "--results-dir", str(results),
                          "--db", str(db), *WAIT)
    elapsed_s = time.monotonic() - started
    print(f"\nsubmit --wait of two jobs took {elapsed_s:.1f} s:\n{done.stdout}{done.stderr}")
    return {"results": results, "db": db, "done": done, "elapsed_s": elapsed_s}


def test_two_jobs_run_and_their_results_arrive_tagged(two_jobs):
    done = two_jobs["done"]
    assert done.returncode == 0, done.stdout + done.stderr
    job_ids = _job_ids(done.stdout)
    assert len(job_ids) == 2 and job_ids[0] != job_ids[1]
    assert done.stdout.count("COMPLETED (from") == 2
    with Store(two_jobs["db"]) as store:
        runs = store.runs()
        assert sorted(r.tags["job_id"] for r in runs) == sorted(job_ids)
        for run in runs:
            assert run.tags["node"] and run.tags["partition"] and run.status == "complete"
            assert {m.spec.workload for m in store.results(run.id)} == {"reduce"}
    manifest = json.loads((two_jobs["results"] / "manifest.json").read_text())
    assert [job["last_state"]["state"] for job in manifest["jobs"]] == ["COMPLETED", "COMPLETED"]
    for job_id in job_ids:  # each job's logs and export are in the shared folder
        assert (two_jobs["results"] / "logs" / f"{job_id}.out").read_text().startswith(f"accelbench job {job_id} on ")
        assert (two_jobs["results"] / "jobs" / f"{job_id}.json").exists()


def test_gathering_again_adds_nothing(two_jobs):
    again = accelbench("gather", str(two_jobs["results"]), "--db", str(two_jobs["db"]))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 run(s) newly imported" in again.stdout and again.stdout.count("already in the database") == 2
    with Store(two_jobs["db"]) as store:
        assert len(store.runs()) == 2


def test_the_two_jobs_can_be_compared(two_jobs):
    pytest.importorskip("accelbench.cli.compare_cmd", reason="`accelbench compare` is not part of this tree yet")
    with Store(two_jobs["db"]) as store:
        first, second = sorted(store.runs(), key=lambda r: int(r.tags["job_id"]))
    compared = accelbench("compare", first.id, second.id, "--db", str(two_jobs["db"]))
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert first.id in compared.stdout and second.id in compared.stdout
    # spec by spec: the backend and its threads on one line, the workload and its parameters under it
    assert re.search(r"^numpy@cpu \(1 thread\) .*\n^reduce dtype=float32 n=4096 ", compared.stdout, flags=re.MULTILINE)


def test_a_gpu_request_on_a_node_without_gpus_is_refused_by_sbatch(tmp_path):
    done = accelbench("submit", *SMALL_SUITE, "--gres", "gpu:1", "--results-dir", str(tmp_path / "r"),
                      "--db", str(tmp_path / "db.sqlite"), *WAIT)
    assert done.returncode == 1
    assert "sbatch refused job 1 (gres=gpu:1): sbatch: error:" in done.stdout
    assert "REJECTED" in done.stdout and _job_ids(done.stdout) == []
    later = accelbench("gather", str(tmp_path / "r"), "--db", str(tmp_path / "db.sqlite"))
    assert later.returncode == 1 and "REJECTED" in later.stdout  # still reported, not dropped


def test_a_job_whose_benchmark_fails_is_reported_with_state_and_log(tmp_path):
    done = accelbench("submit", "reduce", "--backend", "numpy", "--device", "nosuch:0", "--rigor", "quick",
                      "--results-dir", str(tmp_path / "r"), "--db", str(tmp_path / "db.sqlite"), *WAIT)
    assert done.returncode == 1, done.stdout + done.stderr
    (job_id,) = _job_ids(done.stdout)
    assert f"[FAILED] job {job_id}" in done.stdout and "FAILED (exit 2:0" in done.stdout
    assert re.search(rf"\| {job_id}\.err: accelbench run: error: --device: [^|]*'nosuch:0'", done.stdout)
    with Store(tmp_path / "db.sqlite") as store:
        assert store.runs() == []


def _min_job_age_s() -> int:
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30).stdout
    match = re.search(r"^MinJobAge\s*=\s*(\d+)", config, flags=re.MULTILINE)
    return int(match.group(1)) if match else 300


def _forgotten(job_id: str) -> bool:
    answer = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, timeout=30)
    return answer.returncode != 0 and "Invalid job id" in answer.stderr


def test_jobs_slurm_has_forgotten_are_judged_by_their_files(tmp_path):
    min_age_s = _min_job_age_s()
    if min_age_s > 60:
        pytest.skip(f"MinJobAge is {min_age_s} s here: too long to wait for Slurm to forget a job "
                    f"(start_local_slurm.sh sets 10 s)")
    results, db = str(tmp_path / "r"), str(tmp_path / "db.sqlite")
    good = accelbench("submit", *SMALL_SUITE, "--results-dir", results)
    bad = accelbench("submit", "reduce", "--backend", "numpy", "--device", "nosuch:0", "--results-dir", results)
    (good_id,), (bad_id,) = _job_ids(good.stdout), _job_ids(bad.stdout)
    deadline = time.monotonic() + min_age_s + 180  # ended, then purged by slurmctld's periodic pass
    while not (_forgotten(good_id) and _forgotten(bad_id)):
        assert time.monotonic() < deadline, f"Slurm still knows job {good_id} or {bad_id}"
        time.sleep(1)
    done = accelbench("gather", results, "--db", db)
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(rf"^\[ok\] job {good_id} \(\S+\): COMPLETED \(from files\)", done.stdout, flags=re.MULTILINE)
    assert f"[FAILED] job {bad_id}" in done.stdout and "accelbench run exited 2; from files" in done.stdout
    with Store(db) as store:
        (run,) = store.runs()
        assert run.tags["job_id"] == good_id and run.tags["node"]
