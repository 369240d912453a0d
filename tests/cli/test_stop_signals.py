"""A real `accelbench run` with jax and torch loaded stops on SIGINT and SIGTERM within seconds,
exits 130 / 143 and is stored as interrupted; a second signal ends it at once; a run whose process
was SIGKILLed is shown as interrupted by `runs --json`, `export` and the Python store."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out

pytest.importorskip("jax")
pytest.importorskip("torch")

STOPPED_WITHIN_S = 8.0  # measured: 1-2.5 s on 2 busy cores; the brief asks for a few seconds
# long enough to last well past the signal: four workloads on three backends
RUN = ["run", "matmul", "stream", "reduce", "elementwise", "--backend", "numpy,jax,torch",
       "--rigor", "quick"]


def _start(db, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "accelbench", *RUN, "--db", str(db), *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _wait_for_results(process: subprocess.Popen, count: int) -> None:
    """Read the plain progress lines ("[k/N] ...") until `count` specs are done."""
    done = 0
    while done < count:
        line = process.stderr.readline()
        assert line, "the run ended before it was signalled"
        done += line.startswith("[")


def _accelbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "accelbench", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def _statuses(db) -> dict[str, str]:
    listed = _accelbench("runs", "--db", str(db), "--json")
    assert listed.returncode == 0, listed.stderr
    return {run["id"]: run["status"] for run in json.loads(listed.stdout)}


@pytest.mark.slow
@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_run_with_jax_and_torch_loaded(tmp_path, signum, status):
    db = tmp_path / "r.sqlite"
    # signalled at different points: early (jax and torch just loaded), and deeper into the plan
    for after_results in (1, 3, 6):
        process = _start(db)
        _wait_for_results(process, after_results)
        sent_s = time.monotonic()
        process.send_signal(signum)
        try:
            returncode = process.wait(timeout=60)
        finally:
            process.kill()
        took_s = time.monotonic() - sent_s
        assert returncode == status, process.stderr.read()
        assert took_s < STOPPED_WITHIN_S, f"stopped {took_s:.1f} s after the signal"
    statuses = _statuses(db)
    assert list(statuses.values()) == ["interrupted"] * 3, statuses


@pytest.mark.slow
def test_a_signal_while_the_backends_load_still_stops_the_run(tmp_path):
    db = tmp_path / "r.sqlite"
    process = _start(db)
    time.sleep(1.0)  # the command has started; jax and torch are still being imported
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 143
    assert set(_statuses(db).values()) <= {"interrupted"}  # no run yet, or one stopped at once


@pytest.mark.slow
def test_a_second_signal_exits_at_once_and_the_run_reads_interrupted(tmp_path):
    db = tmp_path / "r.sqlite"
    process = _start(db, "--timeout", "600")
    _wait_for_results(process, 1)
    process.send_signal(signal.SIGINT)
    time.sleep(0.2)  # two signals sent at once may merge into one
    process.send_signal(signal.SIGINT)
    # the handler's os._exit(130), or, had the first stop already reached interpreter shutdown
    # (which restores the default handler), the default action: killed by SIGINT
    assert process.wait(timeout=STOPPED_WITHIN_S) in (130, -signal.SIGINT)
    assert list(_statuses(db).values()) == ["interrupted"]


@pytest.mark.slow
def test_a_sigkilled_run_is_shown_interrupted_everywhere(tmp_path):
    from accelbench.store.db import Store

    db = tmp_path / "r.sqlite"
    process = _start(db)
    _wait_for_results(process, 1)
    assert list(_statuses(db).values()) == ["running"]  # alive: still running
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    (run_id, status), = _statuses(db).items()
    assert status == "interrupted"
    exported = _accelbench("export", run_id, "--db", str(db))
    assert exported.returncode == 0, exported.stderr
    assert [run["status"] for run in json.loads(exported.stdout)["runs"]] == ["interrupted"]
    with Store(db) as store:
        assert store.run_info(run_id).status == "interrupted"
        # not rewritten: the file still says what the process left (see store/liveness.py)
        stored = store._connection().execute("SELECT status, pid FROM runs").fetchone()
    assert tuple(stored) == ("running", process.pid)
