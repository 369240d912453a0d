"""A call of known cost measured while real processes compete for the CPU: the reported 95%
interval holds the cost, or the result is `noisy` with the interference that explains it.

The call spins until its own thread has used 2 ms of CPU time (time.thread_time), so its cost on
a free core is 2 ms whatever the machine's speed, and only losing the CPU can make it take longer:
exactly what a competing process does to real compute-bound work.
"""
import contextlib
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import accelbench
from accelbench.timing import contention, stats
from accelbench.timing.bursts import burst_warnings

COST_S = 2e-3
# the call also pays the run's own frames around it (the input rotation, the capture, the output
# array, thread_time's overshoot): 20-100 µs on a 2-vCPU Zen 3 VM (a sample 2.02-2.10 ms where the
# harness alone times the spin at 2.004 ms), so an interval reaching down to 5% above 2 ms holds it
OVERHEAD_SLACK = 0.05
MEASURED_INTERFERENCE_WORDS = ("other processes used", "steal", "waited for a CPU")
INTERFERENCE_WORDS = (*MEASURED_INTERFERENCE_WORDS, "bursts:")

pytestmark = pytest.mark.slow


def spin_2ms(x):
    end_s = time.thread_time() + COST_S
    while time.thread_time() < end_s:
        pass
    return x + 0.0  # a new array, as real work returns


def measured(db):
    """One result per CPU thread setting the plan makes (one thread, all cores): the call is single-threaded."""
    results = accelbench.bench(spin_2ms, [np.ones(4)], reference=lambda x: x, devices="cpu", backends="numpy",
                               rigor="quick", db=str(db), name="spin_2ms")
    assert results.measurements
    return results.measurements


def holds_cost(m) -> bool:
    s = stats.summarize(m.samples_s)
    return s.ci_low_s <= COST_S * (1 + OVERHEAD_SLACK) and s.ci_high_s >= COST_S


def explained(m) -> bool:
    return m.verdict == "noisy" and any(w in r for r in m.verdict_reasons for w in INTERFERENCE_WORDS)


class busy:
    """`count` real processes spinning on the CPU for as long as the block lasts. They are started
    detached (the shell that starts them exits), so they are another user's programs, not this
    process's children, whose CPU time a measurement counts as its own (DDP workers are that)."""

    def __init__(self, count):
        self.count, self.pids = count, []

    def __enter__(self):
        spin = f"{sys.executable} -c 'while True: pass' > /dev/null 2>&1 & echo $!"
        self.pids = [int(subprocess.run(["sh", "-c", spin], capture_output=True, text=True, check=True).stdout)
                     for _ in range(self.count)]
        time.sleep(0.2)  # running before the measurement starts
        return self

    def __exit__(self, *exc):
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return False


@pytest.mark.parametrize("competitors", [1, 2])
def test_under_load_the_interval_holds_the_cost_or_the_result_says_why(tmp_path, competitors):
    for trial in range(3):
        with busy(competitors):
            results = measured(tmp_path / f"{competitors}-{trial}.sqlite")
        for m in results:
            s = stats.summarize(m.samples_s)
            compute = m.telemetry["interference"]["compute"]
            summary = (f"{competitors} busy: median {s.median_s * 1e3:.3f} ms [{s.ci_low_s * 1e3:.3f}, "
                       f"{s.ci_high_s * 1e3:.3f}], {m.verdict}: {m.verdict_reasons}; {compute}")
            print(summary)
            assert holds_cost(m) or explained(m), summary
            if "not_measurable" not in compute:  # the competitors are seen: each spins a core's worth
                # (each competitor spins a core, but shares it with us: at least 40% of a core each)
                assert compute["others_cores"] >= 0.4 * min(competitors, compute["cores"]), summary


def test_a_quiet_measurement_is_flagged_only_with_the_figures_that_justify_it(tmp_path):
    for m in measured(tmp_path / "quiet.sqlite"):
        check_quiet(m)


def check_quiet(m):
    compute = m.telemetry["interference"]["compute"]
    assert set(compute) >= {"others_cores", "steal_share", "run_wait_share", "load_1m", "disturbed"}
    interference = [r for r in m.verdict_reasons if any(w in r for w in MEASURED_INTERFERENCE_WORDS)]
    if any("bursts:" in r for r in m.verdict_reasons):
        # a claim about the samples, justified by them: on a VM the host's bursts show in no figure here
        assert burst_warnings(stats.summarize(m.samples_s), m.samples_s), m.verdict_reasons
    if interference:  # a shared CI machine may really be busy: then the figures must say so
        assert compute["disturbed"] and ((compute["others_cores"] or 0) >= contention.OTHERS_CORES_LIMIT
                                         or (compute["steal_share"] or 0) >= contention.STEAL_LIMIT
                                         or (compute["run_wait_share"] or 0) >= contention.SHORT_WINDOW_WAIT_LIMIT)
    else:
        assert not compute["disturbed"]
    assert holds_cost(m) or explained(m) or m.verdict == "noisy"
