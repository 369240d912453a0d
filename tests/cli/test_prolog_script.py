"""scripts/slurm/accelbench-prolog.sh, the Slurm prolog of docs/health-check.md: it drains the node
on a fault (exit 1 of `accelbench check`), naming the failing checks, and never on a busy node (3),
a broken check, or one that overran its limit. `scontrol` is a stand-in that records its
arguments; the check is a stand-in in the logic tests, and the real `accelbench check` under a
real half-core cgroup quota in the last test."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cpu_quota import half_core_quota

ROOT = Path(__file__).resolve().parents[2]
PROLOG = ROOT / "scripts" / "slurm" / "accelbench-prolog.sh"
QUOTA = {"check": "cpu.quota", "status": "FAIL", "summary": "CPU quota 0.50 cores, 2 given: shortfall 1.50 cores (75%)"}
AFFINITY = {"check": "cpu.affinity", "status": "FAIL", "summary": "affinity allows 1 CPU(s)\n(0) but Slurm gave 2"}


def _tool(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
    return path


def _prolog(tmp_path: Path, *, rc: int = 0, findings=(), sleep_s: float = 0, env=None, accelbench=None,
            preexec=None, timeout_s: float = 60):
    """Run the prolog; returns (exit status, stderr, the argv scontrol was called with or None)."""
    calls = tmp_path / "scontrol.calls"
    _tool(tmp_path, "scontrol", f'printf "%s\\n" "$@" > {calls}\n')
    report = json.dumps({"status": "?", "findings": list(findings)})
    fake = _tool(tmp_path, "fake-accelbench", f'echo "$*" > {tmp_path}/check.args\nsleep {sleep_s}\n'
                                              f"printf '%s\\n' '{report}'\nexit {rc}\n")
    done = subprocess.run(["bash", str(PROLOG)], capture_output=True, text=True, timeout=timeout_s, preexec_fn=preexec,
                          env={**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}",
                               "ACCELBENCH": str(accelbench or fake), "ACCELBENCH_PYTHON": sys.executable,
                               "SLURMD_NODENAME": "gpu07", "SLURM_JOB_ID": "4242", **(env or {})})
    return done.returncode, done.stderr, calls.read_text().splitlines() if calls.exists() else None


def test_a_fault_drains_the_node_naming_the_failing_checks(tmp_path):
    code, err, scontrol = _prolog(tmp_path, rc=1, findings=[{"check": "cpu.numa", "status": "WARN"}, QUOTA, AFFINITY])
    assert code == 1, err
    assert scontrol[:3] == ["update", "nodename=gpu07", "state=drain"] and len(scontrol) == 4
    reason = scontrol[3]
    assert reason.startswith("reason=accelbench check: cpu.quota, cpu.affinity FAIL: CPU quota 0.50 cores")
    assert "shortfall 1.50 cores" in reason and len(reason) <= len("reason=accelbench check: ") + 200
    assert "drained" in err
    assert (tmp_path / "check.args").read_text().split() == ["check", "--level", "quick", "--json"]


def test_a_reason_is_one_line_whatever_the_summary_holds(tmp_path):
    code, _, scontrol = _prolog(tmp_path, rc=1, findings=[AFFINITY])
    assert code == 1 and len(scontrol) == 4 and "1 CPU(s) (0) but Slurm gave 2" in scontrol[3]


@pytest.mark.parametrize("rc, said", [(0, ""), (3, "inconclusive"), (2, "could not run (exit 2)"),
                                      (139, "could not run (exit 139)")])
def test_healthy_busy_or_broken_checks_never_drain(tmp_path, rc, said):
    code, err, scontrol = _prolog(tmp_path, rc=rc, findings=[QUOTA] if rc else [])
    assert code == 0 and scontrol is None
    assert said in err


def test_a_check_that_overruns_its_limit_is_stopped_and_does_not_drain(tmp_path):
    start_s = time.monotonic()
    code, err, scontrol = _prolog(tmp_path, rc=1, findings=[QUOTA], sleep_s=30,
                                  env={"ACCELBENCH_CHECK_TIMEOUT_S": "1"})
    assert time.monotonic() - start_s < 15
    assert code == 0 and scontrol is None and "did not finish within 1 s" in err


def test_an_unreadable_report_still_drains_saying_so(tmp_path):
    fake = _tool(tmp_path, "broken-accelbench", "echo 'not json'\nexit 1\n")
    code, _, scontrol = _prolog(tmp_path, accelbench=fake)
    assert code == 1 and scontrol[3] == "reason=accelbench check: a FAIL (report unreadable: JSONDecodeError)"


def test_the_report_is_kept_where_asked_and_the_level_passed(tmp_path):
    kept = tmp_path / "last-check.json"
    code, _, _ = _prolog(tmp_path, rc=0, env={"ACCELBENCH_CHECK_REPORT": str(kept), "ACCELBENCH_CHECK_LEVEL": "standard"})
    assert code == 0 and json.loads(kept.read_text())["findings"] == []
    assert "--level standard" in (tmp_path / "check.args").read_text()


@pytest.mark.slow
def test_the_real_check_under_a_real_half_core_quota_drains(tmp_path):
    accelbench = _tool(tmp_path, "accelbench", f'exec {sys.executable} -m accelbench "$@"\n')
    with half_core_quota("prolog-test") as group:
        code, err, scontrol = _prolog(tmp_path, accelbench=accelbench, timeout_s=240,
                                      env={"ACCELBENCH_DB": str(tmp_path / "none.sqlite"),
                                           "PYTHONPATH": str(ROOT / "src")},
                                      preexec=lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
    assert code == 1, err
    assert scontrol[:3] == ["update", "nodename=gpu07", "state=drain"]
    assert scontrol[3].startswith("reason=accelbench check: cpu.quota") and "CPU quota 0.50 cores" in scontrol[3]
