"""A whole cluster in one command, against a REAL Slurm of several nodes on this machine.

Start it first (root): `eval "$(scripts/slurm/start_local_fleet.sh)"` (six `slurmd -N` daemons:
fleet1-3 with feature typea, fleet4-6 with typeb and GRES fpga:2; its own ports and folder, beside the one-node
Slurm of test_slurm_real.py). The tests skip, saying why, when it does not answer.

The sweep runs the test-only workload `nodepace` (tests/cluster/plugin_site), whose calls wait
three times as long on the node named in ACCELBENCH_TEST_SLOW_NODES: the one node made slow.
The last typeb node is drained for the module (and resumed after). Two sweeps run, so the second
also learns from the first as stored history; in the second, the first typeb node's benchmark
fails (ACCELBENCH_TEST_BROKEN_NODES). No reference value is given anywhere.

The comparison admits noisy results (--include-noisy): on a shared two-core machine the contention
watch marks nearly every result noisy while the other jobs run; that valid-only results are the
default is tested in tests/unit/test_fleet_view.py.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accelbench.store.db import Store

HERE = Path(__file__).resolve().parent
PLUGIN_SITE = HERE / "plugin_site"
SRC = HERE.parents[1] / "src"
FLEET_CONF = Path(os.environ.get("ACCELBENCH_FLEET_DIR", "/tmp/accelbench-fleet")) / "slurm.conf"
SUITE = ["nodepace", "--backend", "numpy", "--device", "cpu", "--rigor", "quick"]
DRAIN_REASON = "fan failure (accelbench fleet test)"


def _slurm(*argv: str, timeout_s: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, "SLURM_CONF": str(FLEET_CONF)})


def _node_types() -> tuple[dict[str, list[str]] | None, str | None]:
    """feature -> node names of the several-node Slurm, or None and why it cannot be used."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return None, "Slurm is not installed (no sinfo/sbatch on PATH); scripts/slurm/start_local_fleet.sh starts one"
    if not FLEET_CONF.exists():
        return None, f"{FLEET_CONF} does not exist: run eval \"$(scripts/slurm/start_local_fleet.sh)\""
    try:
        answer = _slurm("sinfo", "-h", "-N", "-o", "%N %f", timeout_s=15)
    except subprocess.TimeoutExpired:
        return None, "sinfo gave no answer in 15 s: the fleet's slurmctld is not reachable"
    if answer.returncode != 0:
        return None, f"the several-node Slurm is not running: sinfo says {answer.stderr.strip()}"
    types: dict[str, list[str]] = {}
    for line in answer.stdout.splitlines():
        if line.strip():
            name, features = line.split()
            types.setdefault(features, []).append(name)
    if len(types.get("typea", [])) < 3 or len(types.get("typeb", [])) < 2:
        return None, f"need >= 3 typea and >= 2 typeb nodes; the Slurm at {FLEET_CONF} has {types}"
    return {k: sorted(set(v)) for k, v in types.items()}, None


NODE_TYPES, FLEET_PROBLEM = _node_types()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(FLEET_PROBLEM is not None, reason=str(FLEET_PROBLEM))]


def accelbench(*args: str, env: dict[str, str], timeout_s: float = 200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "accelbench", *args], capture_output=True, text=True,
                          timeout=timeout_s, env=env)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """Two sweeps of every node (one drained), gathered into one database, then `fleet` on each."""
    assert NODE_TYPES is not None
    slow, drained, broken = NODE_TYPES["typea"][-1], NODE_TYPES["typeb"][-1], NODE_TYPES["typeb"][0]
    folder = tmp_path_factory.mktemp("fleet")
    results, db = folder / "results", folder / "fleet.sqlite"
    env = {**os.environ, "SLURM_CONF": str(FLEET_CONF), "ACCELBENCH_DB": str(folder / "default.sqlite"),
           "XDG_CONFIG_HOME": str(folder / "config"), "ACCELBENCH_TEST_SLOW_NODES": slow,
           "ACCELBENCH_TEST_SLOW_FACTOR": "3",
           "PYTHONPATH": os.pathsep.join([str(PLUGIN_SITE), str(SRC), os.environ.get("PYTHONPATH", "")])}
    drain = _slurm("scontrol", "update", f"nodename={drained}", "state=drain", f"reason={DRAIN_REASON}")
    assert drain.returncode == 0, drain.stderr
    started = time.monotonic()
    try:
        done = []
        for number in range(2):
            sweep_env = {**env, "ACCELBENCH_TEST_BROKEN_NODES": broken if number == 1 else ""}
            submitted = accelbench("submit", *SUITE, "--each-node", "--results-dir", str(results), "--db", str(db),
                                   "--wait", "--timeout", "150", "--poll", "0.5", env=sweep_env)
            fleet = accelbench("fleet", str(results), "--db", str(db), "--include-noisy", "--json",
                               "--html", str(folder / "page"), env=env)
            done.append((submitted, fleet))
    finally:
        _slurm("scontrol", "update", f"nodename={drained}", "state=resume")
    elapsed_s = time.monotonic() - started
    for submitted, fleet in done:
        print(f"\n{submitted.stdout}{submitted.stderr}\nfleet exit {fleet.returncode}\n{fleet.stderr}")
    print(f"two sweeps, gathered and judged, in {elapsed_s:.1f} s")
    return {"done": done, "slow": slow, "drained": drained, "broken": broken, "db": db, "results": results, "env": env,
            "folder": folder}


def test_every_usable_node_runs_once_pinned_and_the_drained_one_is_named(sweeps):
    expected = {n for names in NODE_TYPES.values() for n in names} - {sweeps["drained"]}
    for number, (submitted, _) in enumerate(sweeps["done"]):
        assert submitted.returncode == number, submitted.stdout + submitted.stderr  # the 2nd: a job failed
        assert {line.split("node=")[1] for line in submitted.stdout.splitlines()
                if line.startswith("submitted job ")} == expected
        assert (f"not measured: node {sweeps['drained']}: DRAIN (state IDLE+DRAIN): {DRAIN_REASON}"
                in submitted.stdout)
        assert f"[--] node {sweeps['drained']} not measured: DRAIN" in submitted.stdout
        assert f"{len(expected) - number} done, 0 pending, 0 running, {number} failed" in submitted.stdout


def test_a_failed_node_is_named_with_its_slurm_state_and_last_lines(sweeps):
    submitted, fleet = sweeps["done"][1]
    assert re.search(rf"\[FAILED\] job \d+ \({sweeps['broken']}\): FAILED \(exit 1:0", submitted.stdout)
    (failed,) = json.loads(fleet.stdout)["failed"]
    assert failed["node"] == sweeps["broken"] and failed["state"].startswith("FAILED (exit 1:0")
    assert any(f"nodepace: node {sweeps['broken']} is broken (test)" in line for line in failed["log_tail"])


def test_each_nodes_results_carry_its_name_features_and_sweep(sweeps):
    with Store(sweeps["db"]) as store:
        runs = store.runs()
    assert len(runs) == 2 * sum(len(v) for v in NODE_TYPES.values()) - 2
    for run in runs:
        node = run.tags["node"]
        assert run.tags["node_features"] == next(t for t, names in NODE_TYPES.items() if node in names)
        # start_local_fleet.sh gives typeb nodes a count-only GRES; typea nodes have none
        assert run.tags.get("node_gres") == ("fpga:2" if run.tags["node_features"] == "typeb" else None)
        assert run.tags["submission"] and run.tags["job_id"] and run.tags["partition"] == "fleet"
    assert sweeps["drained"] not in {run.tags["node"] for run in runs}


def test_fleet_flags_exactly_the_slow_node_in_both_sweeps(sweeps):
    for number, (_, fleet) in enumerate(sweeps["done"]):
        assert fleet.returncode == 1, fleet.stdout + fleet.stderr  # an outlier was found
        view = json.loads(fleet.stdout)
        assert view["outliers"] == [sweeps["slow"]]
        assert [n["node"] for n in view["failed"]] == ([] if number == 0 else [sweeps["broken"]])
        assert view["pending"] == []
        assert [n["node"] for n in view["not_measured"]] == [sweeps["drained"]]
        assert DRAIN_REASON in view["not_measured"][0]["reason"]
        typea = next(t for t in view["types"] if t["node_type"] == "typea")
        for headline in typea["headlines"]:
            slow = next(n for n in headline["nodes"] if n["node"] == sweeps["slow"])
            assert slow["verdict"] == "outlier" and slow["ratio_to_median"] < 0.6
            assert headline["spread"]["history_points"] == (0 if number == 0 else 3)
    assert (sweeps["folder"] / "page" / "index.html").stat().st_size > 0


def test_the_exit_status_follows_fail_on_and_valid_only_never_accuses_a_healthy_node(sweeps):
    env = sweeps["env"]
    quiet = accelbench("fleet", str(sweeps["results"]), "--db", str(sweeps["db"]), "--include-noisy",
                       "--fail-on", "none", env=env)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert f"NOT MEASURED {sweeps['drained']}: DRAIN" in quiet.stdout
    strict = accelbench("fleet", str(sweeps["results"]), "--db", str(sweeps["db"]), "--fail-on", "unmeasured",
                        "--json", env=env)
    assert strict.returncode == 1
    valid_only = json.loads(strict.stdout)
    assert set(valid_only["outliers"]) <= {sweeps["slow"]}  # noisy results left out: fewer comparisons
    judged = {n["node"] for t in valid_only["types"] for h in t["headlines"] for n in h["nodes"]}
    unjudged = {node for t in valid_only["types"] for node in t["unjudged"]}
    measured = {n["node"] for t in valid_only["types"] for n in t["nodes"] if n["status"] == "measured"}
    assert judged | unjudged == measured  # every measured node is either compared or said why not
