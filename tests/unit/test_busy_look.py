"""Busy before, not only after (issue 42): one look before the first measurement names the process
that holds the cores, and --wait-quiet waits for it, with a bound."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from accelbench.timing import busy_look
from accelbench.timing.contention import Interference


def _seen(others: float, top: str = "stress (pid 812)") -> Interference:
    return Interference(0.5, 2, others_cores=others, idle_cores=2 - others, steal_share=0.0, top_other=top,
                        visible_others_cores=others)


def test_a_busy_machine_gets_one_line_naming_the_process_and_a_quiet_one_none():
    line = busy_look.busy_line(_seen(1.0))
    assert line is not None and "stress (pid 812)" in line and "1.0 of the 2 cores" in line and "--wait-quiet" in line
    assert busy_look.busy_line(_seen(0.1)) is None
    assert busy_look.busy_line(None) is None


def test_wait_quiet_returns_once_two_looks_in_a_row_are_quiet(monkeypatch):
    looks = iter([_seen(1.0), _seen(0.05), _seen(0.9), _seen(0.05), _seen(0.02), _seen(1.0)])
    monkeypatch.setattr(busy_look, "look", lambda seconds=busy_look.LOOK_S: next(looks))
    said = []
    quiet, last = busy_look.wait_quiet(60, said.append)
    assert quiet and last.others_cores == 0.02
    assert said and "stress" in said[0]


def test_wait_quiet_gives_up_at_its_bound(monkeypatch):
    monkeypatch.setattr(busy_look, "look", lambda seconds=busy_look.LOOK_S: (time.sleep(0.01), _seen(1.0))[1])
    started = time.monotonic()
    quiet, last = busy_look.wait_quiet(0.05)
    assert not quiet and last.others_cores == 1.0 and time.monotonic() - started < 2


@pytest.mark.slow
def test_a_real_busy_process_is_named_before_the_run(tmp_path):
    """A spinning process on this machine: `accelbench run` names it on stderr before measuring."""
    # started detached (the shell that starts it exits): another program, not a child of this process,
    # whose CPU time a measurement counts as its own
    spin = f"{sys.executable} -c 'while True: pass' > /dev/null 2>&1 & echo $!"
    pid = int(subprocess.run(["sh", "-c", spin], capture_output=True, text=True, check=True).stdout)
    try:
        time.sleep(0.5)
        seen = busy_look.look()
        line = busy_look.busy_line(seen)
        # named: the spinner, or whatever else holds more of the cores on a shared machine
        assert line is not None and "(pid " in line, (line, seen)
    finally:
        os.kill(pid, signal.SIGKILL)
