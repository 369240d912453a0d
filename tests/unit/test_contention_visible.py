"""Other processes' CPU time in nanoseconds (timing/other_tasks.py): who took the cores during a
window too short for /proc/stat's ticks, and a wait that nobody visible caused is not `noisy`."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accelbench.timing import contention
from accelbench.timing.contention import CpuTicks, Snapshot, between
from accelbench.timing.contention_limits import SHORT_WINDOW_WAIT_LIMIT
from accelbench.timing.other_tasks import describe, others_ns

ME = str(os.getpid())


def fake_process(proc: Path, pid: str, ppid: str, name: str, threads: dict[str, int]) -> None:
    (proc / pid / "task").mkdir(parents=True)
    (proc / pid / "stat").write_text(f"{pid} ({name} (x)) S {ppid} 1 1 0 -1\n")
    (proc / pid / "comm").write_text(name + "\n")
    for tid, ns in threads.items():
        (proc / pid / "task" / tid).mkdir()
        (proc / pid / "task" / tid / "schedstat").write_text(f"{ns} 5 7\n")


@pytest.fixture
def proc(tmp_path):
    root = tmp_path / "proc"
    fake_process(root, ME, "1", "python", {ME: 10})
    fake_process(root, "900001", ME, "cc1", {"900001": 20})            # our child: ours
    fake_process(root, "900002", "900001", "as", {"900002": 30})       # its child: ours too
    fake_process(root, "900003", "1", "stress", {"900003": 400, "900004": 500})
    fake_process(root, "900005", "1", "sshd", {"900005": 60})
    (root / "stat").write_text("cpu  1 0 1 1 0 0 0 0\ncpu0 1 0 1 1 0 0 0 0\n")
    return root


def test_every_thread_of_every_other_process_and_none_of_ours(proc):
    assert others_ns(proc) == {"900003/900003": 400, "900003/900004": 500, "900005/900005": 60}
    assert describe("900003", proc) == "stress (pid 900003)" and describe("424242", proc) == "pid 424242"


def test_a_scan_past_its_budget_or_with_no_process_listed_says_so(proc, tmp_path):
    assert others_ns(proc, budget_s=-1.0) is None
    (tmp_path / "empty").mkdir()
    assert others_ns(tmp_path / "empty") is None


def window(wall_s: float, wait_share: float, others_before: dict | None, others_after: dict | None):
    """A 50 ms window on 2 cores (too short for 10 ms ticks) in which our one thread waited
    `wait_share` of its runnable time."""
    on_ns = int(wall_s * 1e9 * (1 - wait_share))
    ticks = CpuTicks(busy=0, idle=0, steal=0, cores=2)
    before = Snapshot(0.0, ticks, 0.0, {"1": (0, 0)}, None, others_before)
    after = Snapshot(wall_s, ticks, 0.0, {"1": (on_ns, int(wall_s * 1e9) - on_ns)}, None, others_after)
    return before, after


def test_a_wait_nobody_visible_caused_is_no_noise(proc):
    before, after = window(0.05, 0.30, {"900003/900003": 400}, {"900003/900003": 400 + 100_000})
    found = between(before, after, proc)
    assert found.not_measurable and found.run_wait_share == pytest.approx(0.30)
    assert found.visible_others_cores == pytest.approx(1e5 / 1e9 / 0.05)
    assert not found.disturbed  # 0.002 cores of others: a virtual CPU slow to wake, not a neighbour


def test_a_visible_neighbour_makes_the_same_wait_noisy_and_is_named(proc):
    before, after = window(0.05, 0.30, {"900003/900003": 400}, {"900003/900003": 400 + 40_000_000,
                                                                "900005/900005": 1_000_000})
    found = between(before, after, proc)
    assert found.visible_others_cores == pytest.approx(41e6 / 1e9 / 0.05)
    assert found.disturbed and found.top_other == "stress (pid 900003)"
    assert "other processes used 0.82 cores, the most stress (pid 900003)" in found.text()
    assert found.to_dict()["top_other"] == "stress (pid 900003)"


def test_a_thread_born_in_the_window_counts_whole_and_a_small_wait_stays_quiet(proc):
    before, after = window(0.05, 0.30, {}, {"900003/900004": 30_000_000})
    assert between(before, after, proc).disturbed  # 0.6 cores from a thread that started in the window
    before, after = window(0.05, SHORT_WINDOW_WAIT_LIMIT / 2, {}, {"900003/900004": 30_000_000})
    assert not between(before, after, proc).disturbed


def test_without_the_scan_a_short_window_is_judged_on_the_wait_as_before(proc):
    before, after = window(0.05, 0.30, None, None)
    found = between(before, after, proc)
    assert found.visible_others_cores is None and found.disturbed
    assert "something else ran on its cores" in found.text()


def test_a_real_spinning_process_that_is_not_ours_is_seen_and_named():
    # started through a shell that exits at once: reparented, another user's program as far as we know
    shell = subprocess.run(["bash", "-c", f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                           capture_output=True, text=True, check=True)
    pid = shell.stdout.strip()
    try:
        time.sleep(0.05)
        before = contention.snapshot()
        time.sleep(0.2)
        after = contention.snapshot()
        found = between(before, after)
        spinner_ns = sum(ns - before.others_ns.get(key, 0) for key, ns in after.others_ns.items()
                         if key.startswith(f"{pid}/"))
        window_s = after.wall_s - before.wall_s
        assert spinner_ns / 1e9 / window_s > 0.3  # it had a core (others on this machine may share it)
        assert found.visible_others_cores >= spinner_ns / 1e9 / window_s and found.top_other.endswith(")")
        assert ME not in {key.partition("/")[0] for key in after.others_ns}
    finally:
        os.kill(int(pid), 9)


def test_the_run_notice_names_the_program_seen_most_often():
    from types import SimpleNamespace

    from accelbench.timing.run_notice import run_notice

    def measured(top: str, disturbed: bool = True):
        window = {"disturbed": disturbed, "others_share": 0.45, "steal_share": 0.0, "run_wait_share": 0.3,
                  "top_other": top}
        return SimpleNamespace(telemetry={"interference": {"compute": window}})

    line = run_notice([measured("stress (pid 7)"), measured("stress (pid 7)"), measured("sshd (pid 9)"),
                       measured("cron (pid 3)", disturbed=False)])
    assert "3 of 4 results" in line and "(most often stress (pid 7))" in line
    assert "most often" not in run_notice([measured("")])


def test_the_kind_of_a_short_windows_disturbance_follows_what_was_seen(proc):
    from accelbench.verdict import CPU_WAIT, OTHER_PROCESSES

    before, after = window(0.05, 0.30, {}, {"900003/900004": 30_000_000})
    assert between(before, after, proc).cause == OTHER_PROCESSES
    before, after = window(0.05, 0.30, None, None)
    assert between(before, after, proc).cause == CPU_WAIT
