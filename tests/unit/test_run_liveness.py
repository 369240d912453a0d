"""Which "running" runs have lost their process: gone, a zombie, a reused pid, another host, no pid."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone

from accelbench.store import liveness
from accelbench.store.db import Store

HERE = liveness.this_host()


def _iso(delta_s: float = 0.0) -> str:
    return (datetime.now(timezone.utc) + timedelta(seconds=delta_s)).isoformat()


def test_a_live_process_started_before_the_run_keeps_it_running():
    assert liveness.shown_status("running", os.getppid(), HERE, _iso()) == "running"
    assert liveness.shown_status("running", os.getpid(), HERE, _iso(-3600)) == "running"


def test_a_gone_process_or_a_zombie_makes_it_interrupted():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = _iso(-60)
    child.wait()
    assert liveness.shown_status("running", child.pid, HERE, started) == "interrupted"
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:  # exited but not yet waited for: a zombie holds its pid
        _wait_until_zombie(zombie.pid)
        assert liveness.shown_status("running", zombie.pid, HERE, started) == "interrupted"
    finally:
        zombie.wait()


def _wait_until_zombie(pid: int) -> None:
    import time

    import psutil
    for _ in range(300):
        if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return
        time.sleep(0.05)
    raise AssertionError("the child did not exit")


def test_a_reused_pid_started_after_the_run_does_not_count():
    newer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:  # a live process, but created an hour after the run started: not the run's process
        assert liveness.shown_status("running", newer.pid, HERE, _iso(-3600)) == "interrupted"
    finally:
        newer.kill()
        newer.wait()


def test_other_hosts_old_runs_and_finished_runs_keep_their_status():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert liveness.shown_status("running", gone.pid, HERE + "-elsewhere", _iso(-60)) == "running"
    assert liveness.shown_status("running", None, HERE, _iso(-60)) == "running"  # before schema v3
    assert liveness.shown_status("complete", gone.pid, HERE, _iso(-60)) == "complete"
    assert liveness.shown_status("failed", gone.pid, HERE, _iso(-60)) == "failed"


def test_start_run_records_the_process_and_host(tmp_path):
    with Store(tmp_path / "r.sqlite") as store:
        run_id = store.start_run({"hostname": "h"}, {})
        row = store._connection().execute("SELECT pid, host FROM runs WHERE id = ?", (run_id,)).fetchone()
        assert tuple(row) == (os.getpid(), HERE)
        assert store.run_info(run_id).status == "running"  # this very process: alive
        store._connection().execute("UPDATE runs SET pid = ? WHERE id = ?", (_a_gone_pid(), run_id))
        assert store.run_info(run_id).status == "interrupted"
        assert [r.status for r in store.runs()] == ["interrupted"]


def _a_gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid
