"""A real cgroup v1 CPU quota for tests of `accelbench check` and its Slurm prolog: a group of
half a core (quota 50000 µs of a 100000 µs period), skipped where the controller is not writable,
removed after its processes have left it."""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

CPU_CGROUP = Path("/sys/fs/cgroup/cpu")


@contextmanager
def half_core_quota(name: str) -> Iterator[Path]:
    """The group's folder; write a pid into its `cgroup.procs` to put that process under the quota."""
    group = CPU_CGROUP / f"accelbench-{name}-{os.getpid()}"
    try:
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("50000")
    except OSError as exc:
        pytest.skip(f"cgroup v1 cpu controller not writable here ({exc})")
    try:
        yield group
    finally:
        for _ in range(100):  # the processes have ended; their pids leave the group a moment later
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
