"""A busy process for the benchmarks that measure behaviour beside one."""
from __future__ import annotations

import os
import signal
import subprocess
import sys


class BusyLoad:
    """A busy loop on core 0 that is not our child (a child's CPU time counts as ours, as DDP's
    workers must): started through a shell that exits at once, so it is reparented."""

    def __init__(self) -> None:
        shell = subprocess.Popen(["bash", "-c", f"taskset -c 0 {sys.executable} -c 'while True: pass' & echo $!"],
                                 stdout=subprocess.PIPE, text=True)
        assert shell.stdout is not None
        self.pid = int(shell.stdout.readline())
        shell.wait()

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)


def busy_elsewhere() -> BusyLoad:
    return BusyLoad()
