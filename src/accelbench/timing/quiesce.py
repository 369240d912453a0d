"""Let this process's other threads go idle before a timed block starts.

Thread pools keep spinning on a core for a while after their work is done (OpenBLAS ~0.1 s,
OpenMP in torch ~10 ms, XLA's and PoCL's pools), so a block that starts right after another
framework's runs beside a spinning thread: measured on a quiet Zen 4, torch against numpy paired
0.47× although their medians are 10.35 and 9.7 ms. Waiting until the CPU time of every thread
but this one stops growing removes that cross-talk whatever the pool, and the wait says how
much there was. Standard library only.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

POLL_S = 0.001          # between looks at the other threads' states
QUIET_POLLS = 5         # this many looks in a row with none of them running: they are idle
# without /proc, CPU time: the kernel adds a running thread's time at each tick (4-10 ms), so a
# window must span a few ticks for a spinning thread to show at all
CPU_WINDOW_S = 0.02
IDLE_CORES = 0.25       # a spinning thread shows >= 0.5 core over CPU_WINDOW_S at 100 Hz ticks
MAX_WAIT_S = 0.3        # OpenBLAS's default spin (2^28 cycles) ends within ~0.1 s at 2.5 GHz
TASKS = Path("/proc/self/task")


@dataclass(frozen=True)
class Settled:
    """How long we waited for the other threads, and how busy they still were at the end."""

    waited_s: float
    busy_threads: float   # most other threads seen running at once while waiting (cores, where from CPU time)
    settled: bool

    def text(self) -> str:
        return (f"{self.busy_threads:.3g} other thread(s) of ours still ran in {self.waited_s * 1e3:.0f} ms "
                f"of waiting for them")


def running_other_threads(tasks: Path = TASKS) -> int | None:
    """Threads of this process, other than the calling one, in state R now; None without /proc."""
    own = str(threading.get_native_id())
    try:
        names = [entry.name for entry in os.scandir(tasks)]
    except OSError:
        return None
    running = 0
    for name in names:
        if name == own:
            continue
        try:
            with open(tasks / name / "stat", "rb") as handle:
                text = handle.read()
        except OSError:
            continue  # a thread that ended meanwhile
        # "pid (comm) S ...": the name may hold spaces and parentheses; the state follows the last ')'
        state = text[text.rfind(b")") + 2:text.rfind(b")") + 3]
        running += state == b"R"
    return running


def other_threads_cpu_s() -> float:
    """CPU seconds of every thread of this process except the calling one."""
    return time.process_time() - time.thread_time()


def settle(max_wait_s: float = MAX_WAIT_S, tasks: Path = TASKS) -> Settled:
    """Wait (at most `max_wait_s`) until no other thread of ours is running."""
    start_s = time.perf_counter()
    quiet = most = 0
    while True:
        running = running_other_threads(tasks)
        if running is None:
            return _settle_by_cpu_time(max_wait_s)
        quiet = quiet + 1 if running == 0 else 0
        most = max(most, running)  # a thread that runs in bursts may be caught between two at the last look
        waited_s = time.perf_counter() - start_s
        if quiet >= QUIET_POLLS:
            return Settled(waited_s, 0, True)
        if waited_s >= max_wait_s:
            return Settled(waited_s, most, False)
        time.sleep(POLL_S)


def _settle_by_cpu_time(max_wait_s: float) -> Settled:
    start_s = last_s = time.perf_counter()
    last_cpu_s = other_threads_cpu_s()
    while True:
        time.sleep(CPU_WINDOW_S)
        now_s, now_cpu_s = time.perf_counter(), other_threads_cpu_s()
        busy = max(0.0, now_cpu_s - last_cpu_s) / max(now_s - last_s, 1e-9)
        if busy < IDLE_CORES:
            return Settled(now_s - start_s, busy, True)
        if now_s - start_s >= max_wait_s:
            return Settled(now_s - start_s, busy, False)
        last_s, last_cpu_s = now_s, now_cpu_s
