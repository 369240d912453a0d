"""A killed run keeps every result it reported: one committed transaction per result.

A child process stores results one by one and prints a line after each commit; the test kills it
part-way and opens the file it left behind.
"""
from __future__ import annotations

import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import textwrap
import time

import pytest

from accelbench.store.db import Store

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")

REPORTED_BEFORE_KILL = 20
DEADLINE_S = 60.0  # interpreter start, imports and 20 fsynced commits, with a wide margin

CHILD = textwrap.dedent("""
    import sys, time
    from accelbench.results import Check, Measurement, Spec, Work
    from accelbench.runner.deadline import stop_on_signals
    from accelbench.store.db import Store
    from accelbench.timing.checkpoint import checkpoint

    store = Store(sys.argv[1])
    run_id = store.start_run({"hostname": "child"}, {"workloads": ["matmul"]})
    print("run", run_id, flush=True)
    stop_at = time.monotonic() + 120  # never outlive a test that died
    i = 0
    # what the runner does on Ctrl-C: the handler records it, a checkpoint between results raises
    # (a KeyboardInterrupt raised by the default handler can be lost in a finaliser)
    with stop_on_signals():
        try:
            while time.monotonic() < stop_at:
                checkpoint()
                m = Measurement(Spec.make("matmul", "numpy", "cpu", n=i), {"compute": (1e-3, 1.1e-3)},
                                0.01, Work(2.0 * i**3, 24.0 * i * i), Check(True, 1e-7, 1e-5))
                store.add_result(run_id, m)
                print("stored", i, flush=True)
                i += 1
        except KeyboardInterrupt:
            store.finish_run(run_id, "interrupted")
            print("interrupted", flush=True)
""")


def _lines(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line.split())
    out.put(None)


def _run_until(path, reported: int, sig: int) -> tuple[str, int, int, str]:
    """Start the child, wait for `reported` stored lines, send `sig`.

    Returns (run id, results reported, exit code, stderr)."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=_lines, args=(child.stdout, lines), daemon=True)
    reader.start()
    deadline = time.monotonic() + DEADLINE_S
    run_id, stored = None, 0
    try:
        while stored < reported:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            if line is None:
                break  # the child ended early: its stderr is in the assertion below
            if line[0] == "run":
                run_id = line[1]
            elif line[0] == "stored":
                stored = int(line[1]) + 1
        child.send_signal(sig)
        child.wait(timeout=DEADLINE_S)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        reader.join(timeout=DEADLINE_S)
        child.stdout.close()
        stderr = child.stderr.read()
        child.stderr.close()
    assert stored >= reported, f"child stopped after {stored} results: {stderr}"
    return run_id, stored, child.returncode, stderr


def test_sigkill_mid_run_loses_no_reported_result(tmp_path):
    path = tmp_path / "crash.sqlite"
    run_id, reported, returncode, _ = _run_until(path, REPORTED_BEFORE_KILL, signal.SIGKILL)
    assert returncode == -signal.SIGKILL
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with Store(path) as store:
        results = store.results(run_id)
        assert len(results) >= reported
        assert [m.spec.param("n") for m in results] == list(range(len(results)))
        info = store.run_info(run_id)
        # its process has gone: shown as interrupted (store/liveness.py), the row left as it was
        assert info.status == "interrupted" and info.finished_at is None
        assert store._connection().execute("SELECT status FROM runs").fetchone()[0] == "running"


def test_ctrl_c_mid_run_keeps_results_and_marks_the_run(tmp_path):
    path = tmp_path / "sigint.sqlite"
    run_id, reported, returncode, stderr = _run_until(path, 5, signal.SIGINT)
    assert returncode == 0, stderr
    with Store(path) as store:
        assert len(store.results(run_id)) >= reported
        assert store.run_info(run_id).status == "interrupted"
