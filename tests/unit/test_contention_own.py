"""Our own threads are not other programs: CPU time / wall time of our threads over a window, and a
wait caused by our own threads filling the cores told apart from one caused by other processes."""
import pytest

from accelbench.results import Check, Measurement, Spec, Work, cores_used, uses_claimed_threads
from accelbench.timing import contention
from accelbench.timing.contention import CpuTicks, Interference, Snapshot, between

SECOND_NS = 1_000_000_000


def snapshots(window_s, busy_s, own_s, threads_on_cpu_s, threads_wait_s, cores=2):
    """Two snapshots `window_s` apart: the cores busy `busy_s` core-seconds in all, `own_s` of it ours
    (os.times), our threads on a CPU and waiting for one as given (schedstat, one entry per thread)."""
    ticks = 100  # 10 ms ticks per second
    before = Snapshot(0.0, CpuTicks(0, 0, 0, cores), 0.0,
                      {str(i): (0, 0) for i in range(len(threads_on_cpu_s))}, None)
    idle_s = max(0.0, cores * window_s - busy_s)
    after = Snapshot(window_s, CpuTicks(round(busy_s * ticks), round(idle_s * ticks), 0, cores), own_s,
                     {str(i): (int(on * SECOND_NS), int(wait * SECOND_NS))
                      for i, (on, wait) in enumerate(zip(threads_on_cpu_s, threads_wait_s))}, None)
    return before, after


def test_own_cores_is_our_threads_cpu_time_over_the_window():
    # three threads: 0.9 + 0.8 + 0.3 s on a CPU in 1 s: 2.0 cores, others 0
    found = between(*snapshots(1.0, 2.0, 2.0, [0.9, 0.8, 0.3], [0.3, 0.2, 0.1]))
    assert found.own_cores == pytest.approx(2.0)
    assert found.to_dict()["own_cores"] == pytest.approx(2.0)


def test_own_threads_oversubscribing_the_cores_are_named_and_not_blamed_on_others():
    # our 3 threads wanted 3 cores of 2: 20% of their runnable time queued, nobody else ran
    found = between(*snapshots(1.0, 2.0, 2.0, [0.9, 0.8, 0.3], [0.3, 0.15, 0.05]))
    # 2.5 runnable threads on 2 cores wait 0.5/2.5 = 20% with nobody else: all of it is explained
    assert found.own_threads and found.foreign_wait_share == pytest.approx(0.0, abs=1e-9)
    assert not found.disturbed  # the backend's own threading is what it is: not noise
    assert found.to_dict()["own_threads"] is True
    assert contention.run_notice([measurement(found)]) is None  # no "close other programs" line


def test_waiting_beyond_what_our_own_threads_explain_is_still_named():
    # 50 ms, 2 threads wanting the 2 cores, each queued 30% of the time: no thread of ours took
    # their place (2 runnable on 2 cores), so something else did
    found = between(*snapshots(0.05, 0.1, 0.07, [0.035, 0.035], [0.015, 0.015]))
    assert found.not_measurable and not found.own_threads
    assert found.foreign_wait_share == pytest.approx(0.3) and found.disturbed
    assert found.text().startswith("our threads waited for a CPU 30% of the time")


def test_a_short_window_with_our_threads_filling_the_cores_is_ours_too():
    # 50 ms: too short for ticks, but schedstat's nanoseconds show our threads used both cores
    found = between(*snapshots(0.05, 0.1, 0.1, [0.05, 0.05, 0.0], [0.02, 0.02, 0.01]))
    assert found.not_measurable and found.own_cores == pytest.approx(2.0)
    # 2.5 runnable on 2 cores: the 20% wait is our own; a short window is not called busy for it
    assert found.own_threads and not found.disturbed
    assert contention.run_notice([measurement(found)]) is None


def test_a_little_waiting_of_our_own_full_threads_is_not_noise():
    found = between(*snapshots(1.0, 2.0, 2.0, [1.0, 1.0], [0.02, 0.02]))  # 2% queued: daemons, the sampler
    assert found.own_threads and not found.disturbed


def test_other_processes_on_our_cores_are_still_other_processes():
    # we used 1 core of 2, another process the other: our second thread queued behind it
    found = between(*snapshots(1.0, 2.0, 1.0, [0.6, 0.4], [0.4, 0.3]))
    assert found.own_cores == pytest.approx(1.0) and not found.own_threads
    assert found.disturbed and found.text().startswith("other processes used 50% of the 2 cores")
    assert "busy machine" in contention.run_notice([measurement(found)])


def test_a_short_window_where_we_used_one_core_is_still_judged_as_before():
    waited = Interference(0.09, 2, run_wait_share=0.45, not_measurable="a 90 ms window is too short",
                          own_cores=1.0)
    assert not waited.own_threads and waited.disturbed
    assert "busy machine" in contention.run_notice([measurement(waited)])


def measurement(interference=None, threads=None, device="cpu"):
    telemetry = {"interference": {"compute": interference.to_dict()}} if interference is not None else {}
    return Measurement(Spec("stream", "numpy", device, (("n", 8),)), {"compute": (1.0,)}, 0.0, Work(1.0, 1.0),
                       Check(True, 0.0, 1e-6), threads=threads, telemetry=telemetry)


@pytest.mark.parametrize("threads, own, device, holds", [
    (2, 1.0, "cpu", False),    # claims 2, used 1: not an all-cores figure
    (2, 1.9, "cpu", True),
    (4, 2.3, "cpu", False),
    (1, 1.0, "cpu", True),     # one thread claimed: nothing to check
    (2, None, "cpu", True),    # not measured: the claim stands
    (2, 1.0, "cuda:0", True),  # an accelerator's host thread count means nothing here
])
def test_uses_claimed_threads(threads, own, device, holds):
    window = Interference(1.0, 2, 0.0, 0.0, 0.0, 0.0, own_cores=own)
    m = measurement(window, threads=threads, device=device)
    assert cores_used(m) == own
    assert uses_claimed_threads(m) is holds
    assert uses_claimed_threads(measurement(None, threads=2))  # results stored before own_cores
