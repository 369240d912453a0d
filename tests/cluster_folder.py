"""A cluster results folder as `accelbench submit` and finished jobs leave it, without Slurm: the
manifest written by the product's own `add_jobs`, and for each job the files its batch script
writes (cluster/script.py): jobs/J.json (`accelbench export` of the job's run) and, as its last
act, jobs/J.status.json. Shared by the cluster unit tests and the fault sweep."""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from accelbench.cluster.manifest import JobRecord
from accelbench.cluster.targets import Target
from accelbench.store.db import Store
from accelbench.store.export import export_runs, write_json

OK_STATUS = {"job_id": "12", "node": "n1", "partition": "gpu", "cluster": "hpc",
             "run_exit_code": 0, "export_exit_code": 0}


def job_record(job_id: str | None = "12", index: int = 1, submission: str = "sub1", **target) -> JobRecord:
    return JobRecord(submission=submission, index=index, target=Target(**target), script="scripts/x.sbatch",
                     submitted_at="2026-12-02T09:00:00+00:00", command=("reduce",), job_id=job_id)


def finish_job(results_dir: Path, job_id: str, status: dict | None, *, document: dict | None = None,
               hostname: str = "n1") -> list[str]:
    """Leave the files of a finished job: `document` (an export) at jobs/J.json, else one made
    from a new empty run; then jobs/J.status.json when `status` is given. Returns the run ids."""
    jobs = results_dir / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    if document is None:
        with Store(results_dir / f"job-{job_id}.sqlite") as store:
            run_id = store.start_run({"hostname": hostname}, {"workloads": ["reduce"]})
            store.finish_run(run_id, "complete")
            document = export_runs(store, [run_id])
    write_json(jobs / f"{job_id}.json", document)
    if status is not None:
        (jobs / f"{job_id}.status.json").write_text(json.dumps({**status, "job_id": job_id}))
    return [run["id"] for run in document["runs"]]


def fake_slurm(folder: Path, completed: Iterable[str]) -> dict[str, str]:
    """`squeue` and `scontrol` in `folder`: squeue says each job in `completed` completed, scontrol
    has forgotten them (so squeue's word stands). Returns an environment with them first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"{job_id}|COMPLETED|n{job_id}|gpu|None\\n" for job_id in completed)
    (folder / "squeue").write_text(f"#!/bin/sh\nprintf '{lines}'\n")
    (folder / "scontrol").write_text("#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n")
    for command in ("squeue", "scontrol"):
        (folder / command).chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}
