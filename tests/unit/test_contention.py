"""Contention figures from recorded /proc files: the arithmetic, the verdict rule, what is shown."""
import pytest

from accelbench.results import Check, Measurement, Spec, Work
from accelbench.timing import contention
from accelbench.timing.contention import Interference, Snapshot, between, parse_proc_stat, parse_schedstat, run_notice


def read(data_dir, name):
    return (data_dir / "proc" / name).read_text()


def snap(data_dir, stat, wall_s, own_cpu_s, schedstat=None, load=None):
    threads = {"1": parse_schedstat(read(data_dir, schedstat))} if schedstat else {}
    return Snapshot(wall_s, parse_proc_stat(read(data_dir, stat)), own_cpu_s, threads, load)


def test_proc_stat_sums_the_per_core_lines_and_keeps_steal_apart(data_dir):
    ticks = parse_proc_stat(read(data_dir, "stat_busy_before.txt"))
    # cpu0: 387371+121+33113+0+222 busy, 610445+1737 idle, 10696 steal; cpu1 likewise
    assert ticks.cores == 2
    assert ticks.busy == (387371 + 121 + 33113 + 222) + (606933 + 131 + 56414 + 1569)
    assert ticks.idle == (610445 + 1737) + (364516 + 5123)
    assert ticks.steal == 10696 + 9378


def test_only_the_cores_this_process_may_use_count(data_dir):
    ticks = parse_proc_stat(read(data_dir, "stat_busy_before.txt"), cpus={1})
    assert (ticks.cores, ticks.busy, ticks.steal) == (1, 606933 + 131 + 56414 + 1569, 9378)
    assert parse_proc_stat(read(data_dir, "stat_busy_before.txt"), cpus={7}) is None


def test_recorded_busy_window_others_idle_and_run_queue_wait(data_dir):
    before = snap(data_dir, "stat_busy_before.txt", 0.0, 0.03, "schedstat_busy_before.txt", 1.0)
    after = snap(data_dir, "stat_busy_after.txt", 1.01, 0.34, "schedstat_busy_after.txt", 3.5)
    found = between(before, after)
    # 202 busy ticks (2.02 s) on 2 cores in 1.01 s, 0.31 s of it ours: others 1.71 s / 1.01 s
    assert found.others_cores == pytest.approx((2.02 - 0.31) / 1.01)
    assert found.others_share == pytest.approx(found.others_cores / 2)
    assert found.idle_cores == 0.0 and found.steal_share == 0.0 and found.load_1m == 3.5
    # schedstat: (353528926 - 40540599) ns on a CPU, (736939102 - 42984114) ns waiting
    on_cpu, wait = 353528926 - 40540599, 736939102 - 42984114
    assert found.run_wait_share == pytest.approx(wait / (on_cpu + wait))
    assert found.disturbed
    assert found.text().startswith("other processes used 85% of the 2 cores during this measurement (1.69 cores; "
                                   "steal 0%; our threads waited for a CPU 69% of the time)")


def test_steal_alone_makes_a_window_disturbed(data_dir):
    before = snap(data_dir, "stat_steal_before.txt", 0.0, 0.0)
    after = snap(data_dir, "stat_steal_after.txt", 1.0, 1.2)  # we used all the busy time but 0.1 s
    found = between(before, after)
    assert found.steal_share == pytest.approx(0.30 / 2.0)     # 30 of 200 ticks
    assert found.others_cores == pytest.approx(0.1)
    assert found.disturbed and found.text().startswith("the hypervisor took 15% of the cores' time (steal)")


def test_the_run_notice_names_steal_when_the_hypervisor_took_the_time():
    from types import SimpleNamespace

    stolen = SimpleNamespace(telemetry={"interference": {"compute": {"disturbed": True, "others_share": 0.0,
                                                                      "steal_share": 0.12}}})
    crowded = SimpleNamespace(telemetry={"interference": {"compute": {"disturbed": True, "others_share": 0.6,
                                                                       "steal_share": 0.0}}})
    quiet = SimpleNamespace(telemetry={})
    assert "hypervisor took 12%" in run_notice([stolen, quiet])
    assert "other processes used 60%" in run_notice([crowded, quiet]) and run_notice([quiet]) is None


def test_the_run_notice_averages_only_the_windows_that_could_measure_other_processes():
    """A window too short for CPU-time ticks has no share (None), not 0%: averaged as 0, a core
    spinning beside the quick suite read "other processes used 19% of the cores"."""
    from types import SimpleNamespace

    def disturbed(share):
        return SimpleNamespace(telemetry={"interference": {"compute": {
            "disturbed": True, "others_share": share, "steal_share": None if share is None else 0.0,
            "run_wait_share": 0.4, "top_other": "python (pid 7)"}}})

    line = run_notice([disturbed(0.5), disturbed(0.6), disturbed(None), disturbed(None)])
    assert "4 of 4 results" in line and "55% of the cores" in line and "in the 2 windows long enough" in line
    short_only = run_notice([disturbed(None), disturbed(None)])
    assert "our threads waited for a CPU 40%" in short_only and "2 of 2 results" in short_only


def test_a_window_shorter_than_a_few_ticks_is_not_measurable(data_dir):
    before = snap(data_dir, "stat_busy_before.txt", 0.0, 0.03)
    after = snap(data_dir, "stat_busy_after.txt", 0.05, 0.34)
    found = between(before, after)
    assert found.others_cores is None and not found.disturbed
    assert "too short for 10 ms CPU-time ticks" in found.not_measurable
    assert found.to_dict()["not_measurable"] == found.not_measurable


@pytest.mark.parametrize("others, idle, wait, steal, disturbed", [
    (0.30, 0.10, None, 0.0, True),     # others took a core share while the cores were full
    (0.30, 1.50, 0.00, 0.0, False),    # ... but on a spare core, and we never waited: not against us
    (0.30, 1.50, 0.05, 0.0, True),     # ... we had to queue for a CPU
    (0.20, 0.00, 0.50, 0.0, False),    # under a quarter of a core: within the noise we accept
    (0.00, 0.00, 0.00, 0.06, True),    # the hypervisor took 6%
])
def test_the_verdict_rule(others, idle, wait, steal, disturbed):
    assert Interference(1.0, 2, others, idle, steal, wait).disturbed is disturbed


def test_a_live_window_is_measured_and_recorded_whole():
    with contention.watch() as watched:
        for _ in range(3_000_000):
            pass
    found = watched.result
    assert found is not None and found.window_s > 0
    if not found.not_measurable:  # a slow window on a fast machine: measurable
        assert found.cores >= 1 and 0.0 <= found.others_cores <= found.cores + 0.5


def measurement(interference=None, device="cpu", devices=None):
    telemetry = {"devices": devices or {}}
    if interference is not None:
        telemetry["interference"] = {"compute": interference.to_dict()}
    return Measurement(Spec("matmul", "numpy", device, (("n", 8),)), {"compute": (1.0,)}, 0.0, Work(1.0, 1.0),
                       Check(True, 0.0, 1e-6), telemetry=telemetry)


def test_attach_names_the_cause_first_and_stores_every_window():
    busy, quiet = Interference(1.0, 2, 0.96, 0.0, 0.0, 0.3), Interference(1.0, 2, 0.0, 2.0, 0.0, 0.0)
    m, findings = contention.attach(measurement(), ["earlier"], {"compute": busy, "to_host": quiet,
                                                                  "end_to_end": busy}, "cpu")
    assert [f.reason for f in findings[:2]] == [busy.text(), "end_to_end: " + busy.text()]
    assert findings[0].status == "noisy" and findings[-1] == "earlier"
    assert "other processes used 48% of the 2 cores" in findings[0].reason
    assert set(m.telemetry["interference"]) == {"compute", "to_host", "end_to_end"}
    assert m.telemetry["interference"]["to_host"]["disturbed"] is False


def test_run_notice_counts_the_disturbed_results_and_says_what_helps():
    busy, quiet = Interference(1.0, 2, 1.0, 0.0, 0.0, 0.3), Interference(1.0, 2, 0.0, 2.0, 0.0, 0.0)
    line = contention.run_notice([measurement(busy), measurement(quiet), measurement()])
    assert "1 of 3 results" in line and "50% of the cores" in line
    assert "nice" in line and "--rigor rigorous" in line and "taskset" in line
    assert contention.run_notice([measurement(quiet)]) is None


def test_device_reasons_from_a_telemetry_window():
    devices = {"cuda:0": {"metrics": {"other_processes": {"max": 2}},
                          "throttle_reasons": ["sw_power_cap", "hw_thermal_slowdown"]},
               "cuda:1": {"metrics": {"other_processes": {"max": 0}}, "throttle_reasons": ["sw_power_cap"]}}
    telemetry = {"devices": devices}
    assert contention.device_reasons(telemetry, "cuda:0") == [
        "2 other processes used cuda:0 during this measurement (NVML process list)",
        "cuda:0 slowed its clocks during this measurement (hw_thermal_slowdown)"]
    assert contention.device_reasons(telemetry, "cuda:1") == []  # its own power cap is normal under load
    m, findings = contention.attach(measurement(device="cuda:0", devices=devices), [], {}, "cuda:0")
    assert len(findings) == 2 and all(f.status == "noisy" for f in findings)


def test_a_short_window_is_judged_on_our_threads_wait_for_a_cpu():
    """Too short for 10 ms ticks to say who else ran, but schedstat's nanoseconds show we waited."""
    waited = Interference(0.09, 2, run_wait_share=0.45, not_measurable="a 90 ms window is too short")
    calm = Interference(0.09, 2, run_wait_share=0.01, not_measurable="a 90 ms window is too short")
    assert waited.disturbed and waited.text().startswith("our threads waited for a CPU 45% of the time")
    assert not calm.disturbed and calm.text().startswith("interference not measurable")


def test_run_notice_names_our_threads_wait_when_the_windows_were_too_short_for_ticks():
    waited = Interference(0.001, 2, run_wait_share=0.4, not_measurable="window shorter than a tick")
    assert waited.disturbed
    line = contention.run_notice([measurement(waited), measurement()])
    assert "our threads waited for a CPU 40% of the time" in line and "other processes used 0%" not in line
