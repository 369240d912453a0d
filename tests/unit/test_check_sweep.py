"""`accelbench submit --each-node check`: the check job's script (run for real by bash, with a
stand-in for python), and the sweep's table from the files the jobs leave. The whole sweep on a
real several-node Slurm is tests/cluster/test_check_sweep_real.py."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench.cluster import check_sweep
from accelbench.cluster.manifest import CHECK, JobRecord, add_jobs, load_manifest
from accelbench.cluster.script import JobSettings, render_script
from accelbench.cluster.targets import Target

FAULT = {"check": "cpu.quota", "device": "cpu", "status": "FAIL",
         "summary": "CPU quota 0.50 cores, 1 given: shortfall 0.50 cores (50%)"}
OK = {"check": "cpu.affinity", "device": "cpu", "status": "PASS", "summary": "affinity allows 2 CPU(s)"}
BUSY = {"check": "cpu.matmul", "device": "cpu", "status": "INCONCLUSIVE", "summary": "matmul: the machine was busy"}


def _report(*findings) -> dict:
    return {"host": "vm", "level": "quick", "status": "?", "exit_code": 0, "elapsed_s": 4.2,
            "findings": list(findings)}


def _fake_python(folder: Path) -> Path:
    """Stands in for `python -m accelbench check`: prints $FAKE_REPORT, exits $FAKE_RC."""
    path = folder / "python"
    path.write_text('#!/bin/bash\necho "args: $*" >&2\n[ -n "${FAKE_REPORT:-}" ] && printf "%s\\n" "$FAKE_REPORT"\n'
                    'exit "${FAKE_RC:-0}"\n')
    path.chmod(0o755)
    return path


def _run_job(tmp_path: Path, job_id: str, report: dict | None, rc: int) -> subprocess.CompletedProcess:
    results = tmp_path / "results"
    (results / "jobs").mkdir(parents=True, exist_ok=True)
    settings = JobSettings(("--level", "quick"), str(_fake_python(tmp_path)), results, tmp_path, kind=CHECK)
    script = tmp_path / f"job{job_id}.sh"
    script.write_text(render_script(settings, Target(node="n1"), "test"))
    env = {**os.environ, "SLURM_JOB_ID": job_id, "SLURMD_NODENAME": "n1", "FAKE_RC": str(rc),
           "FAKE_REPORT": json.dumps(report) if report else ""}
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=30)


@pytest.mark.parametrize("rc", [0, 1, 3])
def test_a_check_job_keeps_its_report_whatever_the_verdict(tmp_path, rc):
    done = _run_job(tmp_path, "7", _report(FAULT if rc == 1 else OK), rc)
    assert done.returncode == 0, done.stderr  # a faulty node is a finding, not a failed job
    assert "args: -m accelbench check --level quick --json" in done.stderr
    jobs = tmp_path / "results" / "jobs"
    assert json.loads((jobs / "7.check.json").read_text())["findings"][0]["status"] == ("FAIL" if rc == 1 else "PASS")
    status = json.loads((jobs / "7.status.json").read_text())
    assert status["check_exit_code"] == rc and status["run_exit_code"] == 0 and status["node"] == "n1"
    assert not (jobs / "7.check.json.tmp").exists()


def test_a_check_that_gives_no_verdict_fails_its_job_and_says_which_command(tmp_path):
    from accelbench.cluster.states import state_from_status

    done = _run_job(tmp_path, "8", None, 2)
    assert done.returncode == 2
    jobs = tmp_path / "results" / "jobs"
    assert not (jobs / "8.check.json").exists()
    state = state_from_status("8", json.loads((jobs / "8.status.json").read_text()))
    assert state.state == "FAILED" and state.reason == "accelbench check exited 2"
    done = _run_job(tmp_path, "9", None, 1)  # exit 1 but nothing printed: no verdict either
    assert done.returncode == 1 and not (jobs / "9.check.json").exists()


def _sweep_folder(tmp_path: Path) -> Path:
    """Four nodes: n1 healthy, n2 under a quota, n3's check crashed, n4 drained (no job)."""
    results = tmp_path / "results"
    (results / "jobs").mkdir(parents=True)
    records = []
    for index, (node, report) in enumerate([("n1", _report(OK)), ("n2", _report(OK, BUSY, FAULT)), ("n3", None)], 1):
        job_id = str(100 + index)
        records.append(JobRecord("s1", index, Target(node=node), "", "t", ("--level", "quick"), job_id=job_id,
                                 node_info={"features": "typea"}, kind=CHECK))
        rc = 0 if report else 2
        (results / "jobs" / f"{job_id}.status.json").write_text(json.dumps(
            {"node": node, "command": "accelbench check", "run_exit_code": rc, "export_exit_code": 0}))
        if report:
            (results / "jobs" / f"{job_id}.check.json").write_text(json.dumps(report))
    (results / "logs").mkdir()
    (results / "logs" / "103.err").write_text("Traceback (most recent call last):\nImportError: no numpy\n")
    records.append(JobRecord("s1", 4, Target(node="n4"), "", "t", ("--level", "quick"), kind=CHECK,
                             unmeasured="DRAIN (state IDLE+DRAIN): fan failure"))
    add_jobs(results, records)
    return results


def test_the_sweep_names_each_nodes_verdict_and_the_failing_checks(tmp_path):
    results = _sweep_folder(tmp_path)
    records = load_manifest(results)
    assert [r.kind for r in records] == [CHECK] * 4  # the kind survives the manifest
    rows, slurm_error, _ = check_sweep.sweep(results, records, known={}, runner=None)
    by_node = {row.node: row for row in rows}
    assert {n: r.verdict for n, r in by_node.items()} == {"n1": "PASS", "n2": "FAIL", "n3": "JOB FAILED",
                                                          "n4": "NOT MEASURED"}
    assert [p["check"] for p in by_node["n2"].problems] == ["cpu.quota", "cpu.matmul"]  # worst first
    assert "accelbench check exited 2" in by_node["n3"].detail
    assert any("ImportError: no numpy" in line for line in by_node["n3"].log_tail)
    assert check_sweep.exit_code(rows) == 1
    as_dict = check_sweep.to_dict(rows, "s1")
    assert as_dict["faulty_nodes"] == ["n2", "n3"]
    assert next(n for n in as_dict["nodes"] if n["node"] == "n2")["failing_checks"] == ["cpu.quota"]
    out = io.StringIO()
    check_sweep.render(rows, "s1", out, width=100)
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == "health check sweep s1: 4 node(s): 1 FAIL, 1 JOB FAILED, 1 NOT MEASURED, 1 PASS"
    assert lines[2].split()[:4] == ["n2", "typea", "FAIL", "cpu.quota"]  # the node to act on first
    assert "shortfall 0.50 cores" in text and "fan failure" in text
    assert any(line.startswith("faulty: n2, n3 (drain") for line in lines)
    assert all(len(line) <= 100 for line in lines)


def test_a_report_that_is_not_one_is_no_verdict(tmp_path):
    results = _sweep_folder(tmp_path)
    (results / "jobs" / "101.check.json").write_text('{"findings": [{"status": "GREAT"}]}')
    rows, _, _ = check_sweep.sweep(results, load_manifest(results), known={})
    n1 = next(r for r in rows if r.node == "n1")
    assert n1.verdict == "JOB FAILED" and "not an `accelbench check --json` report" in n1.detail


def test_healthy_and_busy_nodes_are_not_faults():
    rows = [check_sweep.NodeCheck("a", "t", "PASS"), check_sweep.NodeCheck("b", "t", "WARN")]
    assert check_sweep.exit_code(rows) == 0
    assert check_sweep.exit_code(rows + [check_sweep.NodeCheck("c", "t", "INCONCLUSIVE")]) == 3
    assert check_sweep.exit_code(rows + [check_sweep.NodeCheck("c", "t", "PENDING")]) == 3


def _submit(*argv, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "accelbench", "submit", *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def test_submit_check_writes_check_jobs_and_refuses_run_options(tmp_path):
    done = _submit("check", "--nodelist", "n1,n2", "--check-level", "standard", "--dry-run",
                   "--results-dir", str(tmp_path / "r"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("-m accelbench check --level standard --json") == 2
    assert "accelbench run" not in done.stdout and "#SBATCH --nodelist=n2" in done.stdout
    mixed = _submit("check", "matmul", "--nodelist", "n1", "--dry-run", cwd=tmp_path)
    assert mixed.returncode == 2 and "takes no workloads beside it" in mixed.stderr
    sizes = _submit("check", "--sizes", "100", "--nodelist", "n1", "--dry-run", cwd=tmp_path)
    assert sizes.returncode == 2 and "--sizes" in sizes.stderr


def test_gather_leaves_check_jobs_alone(tmp_path):
    """A check leaves a verdict, not results: gathering the folder imports nothing and calls no
    check job failed for want of a results file."""
    from accelbench.cluster.gather import gather
    from accelbench.store.db import Store

    results = _sweep_folder(tmp_path)
    with Store(tmp_path / "db.sqlite") as store:
        report = gather(results, store, known={})
        assert report.outcomes == [] and store.runs() == []
