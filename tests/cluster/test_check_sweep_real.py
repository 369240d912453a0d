"""`accelbench submit --each-node check` against a REAL Slurm of several nodes on this machine:
one node runs its jobs under a real half-core CPU quota, and the sweep must name that node and
the quota, and accuse no other.

Start the Slurm first (root): `eval "$(scripts/slurm/start_local_fleet.sh)"` (tests/cluster/
test_fleet_real.py uses the same one). The fault is real: a cgroup v1 cpu group with
cpu.cfs_quota_us 50000 of a 100000 period, which the faulty node's jobs join before Python starts,
the way a site's slurmd or container runtime would put a job under a quota. The jobs are started
through `--python` with a wrapper that joins the group only when SLURMD_NODENAME is that node;
`accelbench check` itself is not told anything (it reads /proc/self/cgroup and the cgroup files).
Skipped, saying why, when the Slurm does not answer or the cgroup cpu controller is not writable.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cpu_quota import half_core_quota

SRC = Path(__file__).resolve().parents[2] / "src"
FLEET_CONF = Path(os.environ.get("ACCELBENCH_FLEET_DIR", "/tmp/accelbench-fleet")) / "slurm.conf"
CPU_CGROUP = Path("/sys/fs/cgroup/cpu")


def _nodes() -> tuple[list[str], str | None]:
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return [], "Slurm is not installed (no sinfo/sbatch); scripts/slurm/start_local_fleet.sh starts one"
    if not FLEET_CONF.exists():
        return [], f"{FLEET_CONF} does not exist: run eval \"$(scripts/slurm/start_local_fleet.sh)\""
    try:
        answer = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, timeout=15,
                                env={**os.environ, "SLURM_CONF": str(FLEET_CONF)})
    except subprocess.TimeoutExpired:
        return [], "sinfo gave no answer in 15 s: the fleet's slurmctld is not reachable"
    if answer.returncode != 0:
        return [], f"the several-node Slurm is not running: sinfo says {answer.stderr.strip()}"
    idle = sorted({line.split()[0] for line in answer.stdout.splitlines()
                   if line.strip() and not line.split()[1].startswith(("drain", "down", "drng"))})
    return idle, None if len(idle) >= 3 else f"need >= 3 usable nodes; sinfo says {answer.stdout!r}"


NODES, PROBLEM = _nodes()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(PROBLEM is not None, reason=str(PROBLEM))]

WRAPPER = """#!/bin/bash
# joins the half-core group on the faulty node only, then runs accelbench's python
if [ "${{SLURMD_NODENAME:-}}" = "$ACCELBENCH_TEST_QUOTA_NODE" ]; then
  echo $$ > "$ACCELBENCH_TEST_QUOTA_CGROUP/cgroup.procs" || exit 97
fi
exec {python} "$@"
"""


@pytest.fixture(scope="module")
def half_core_group():
    with half_core_quota("sweep-test") as group:
        yield group


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, half_core_group):
    folder = tmp_path_factory.mktemp("checksweep")
    faulty = NODES[1]
    wrapper = folder / "python"
    wrapper.write_text(WRAPPER.format(python=sys.executable))
    wrapper.chmod(0o755)
    env = {**os.environ, "SLURM_CONF": str(FLEET_CONF), "ACCELBENCH_TEST_QUOTA_NODE": faulty,
           "ACCELBENCH_TEST_QUOTA_CGROUP": str(half_core_group), "ACCELBENCH_DB": str(folder / "none.sqlite"),
           "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]), "COLUMNS": "200"}
    results = folder / "results"
    started = time.monotonic()
    submitted = subprocess.run([sys.executable, "-m", "accelbench", "submit", "check", "--each-node",
                                "--nodelist", ",".join(NODES), "--python", str(wrapper), "--results-dir",
                                str(results), "--wait", "--timeout", "240", "--poll", "0.5"],
                               capture_output=True, text=True, env=env, timeout=300)
    elapsed_s = time.monotonic() - started
    fleet = subprocess.run([sys.executable, "-m", "accelbench", "fleet", str(results), "--json"],
                           capture_output=True, text=True, env=env, timeout=120)
    print(f"\n{submitted.stdout}{submitted.stderr}\nsweep of {len(NODES)} nodes in {elapsed_s:.1f} s")
    return {"submitted": submitted, "fleet": fleet, "faulty": faulty, "db": folder / "none.sqlite"}


def test_the_sweep_names_the_node_under_a_quota_and_the_quota(sweep):
    submitted, faulty = sweep["submitted"], sweep["faulty"]
    assert submitted.returncode == 1, submitted.stdout + submitted.stderr
    rows = {line.split()[0]: line for line in submitted.stdout.splitlines()
            if line.split() and line.split()[0] in NODES and "job" not in line}
    assert set(rows) == set(NODES)  # one row per node
    assert rows[faulty].split()[2:4] == ["FAIL", "cpu.quota"]
    assert "CPU quota 0.50 cores, 1 given: shortfall 0.50 cores (50%)" in rows[faulty]
    for node in set(NODES) - {faulty}:  # healthy nodes, only busy with each other: never a fault
        assert rows[node].split()[2] in ("PASS", "WARN", "INCONCLUSIVE"), rows[node]
    assert f"faulty: {faulty} (drain" in submitted.stdout


def test_fleet_shows_the_sweep_again_as_json_naming_the_faulty_node(sweep):
    fleet, faulty = sweep["fleet"], sweep["faulty"]
    assert fleet.returncode == 1, fleet.stdout + fleet.stderr
    view = json.loads(fleet.stdout)
    assert view["faulty_nodes"] == [faulty]
    nodes = {n["node"]: n for n in view["nodes"]}
    assert set(nodes) == set(NODES)
    assert nodes[faulty]["failing_checks"] == ["cpu.quota"]
    quota = next(p for p in nodes[faulty]["problems"] if p["check"] == "cpu.quota")
    assert "shortfall" in quota["summary"]
    assert all(n["elapsed_s"] is not None and n["elapsed_s"] < 120 for n in nodes.values())
    assert not sweep["db"].exists()  # a check sweep neither needs nor makes a results database
