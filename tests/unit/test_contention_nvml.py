"""Other processes on a GPU, from NVML's process list replayed from a recording, to a noisy verdict."""
import copy
import json
import os
import types

import pytest

from accelbench.devices.nvml_adapter import NvmlError
from accelbench.telemetry import TelemetrySampler
from accelbench.telemetry.nvml import NvmlSource, other_process_count
from accelbench.telemetry.nvml_calls import PynvmlTelemetry, RecordedTelemetryNvml
from accelbench.timing import contention

OWN = os.getpid()


class Clock:
    def __init__(self, t_s):
        self.t_s = t_s

    def __call__(self):
        return self.t_s


def h200_with_processes(data_dir, processes):
    rec = copy.deepcopy(json.loads((data_dir / "nvml" / "h200.json").read_text()))
    for device in rec["devices"]:
        device["processes"] = processes
        device["throttle_reasons"] = 0x4  # sw_power_cap: its own load's steady state, not a disturbance
    return rec


def window_summary(rec, times):
    clock = Clock(1000.0)
    source = NvmlSource(["cuda:0"], nvml=RecordedTelemetryNvml(rec, clock), calibrate_s=0)
    sampler = TelemetrySampler(["cuda:0"], 0.1, sources=[source], clock=clock).open()
    with sampler.window() as window:
        for t in times:
            clock.t_s = t
            sampler.poll()
    return window.summary()


def test_a_process_that_joins_the_gpu_mid_window_makes_it_noisy(data_dir):
    ours, theirs = [OWN, 1_000_000_000], [4242, 2_000_000_000]
    rec = h200_with_processes(data_dir, {"series": [[0, [ours]], [1001.0, [ours, theirs]]]})
    summary = window_summary(rec, (1000.5, 1001.5, 1002.0))
    gpu = summary["devices"]["cuda:0"]
    assert gpu["metrics"]["other_processes"]["max"] == 1 and gpu["metrics"]["other_processes"]["min"] == 0
    assert contention.device_reasons(summary, "cuda:0") == [
        "1 other process used cuda:0 during this measurement (NVML process list)"]


def test_alone_on_the_gpu_is_not_flagged(data_dir):
    summary = window_summary(h200_with_processes(data_dir, [[OWN, 1_000_000_000]]), (1000.5, 1001.0))
    assert summary["devices"]["cuda:0"]["metrics"]["other_processes"]["max"] == 0
    assert contention.device_reasons(summary, "cuda:0") == []


def test_a_board_without_a_process_list_says_so(data_dir):
    rec = h200_with_processes(data_dir, {"error": "not_supported", "message": "Not Supported"})
    summary = window_summary(rec, (1000.5,))
    assert "other_processes" in summary["devices"]["cuda:0"]["missing"]
    assert contention.device_reasons(summary, "cuda:0") == []


def test_in_a_container_our_own_pid_is_not_listed_so_one_entry_is_taken_as_ours():
    assert other_process_count([OWN, 4242], {OWN}) == 1
    assert other_process_count([91234], {OWN}) == 0          # only us, under a host pid
    assert other_process_count([91234, 4242], {OWN}) == 1
    assert other_process_count([], {OWN}) == 0


def fake_pynvml(compute, graphics):
    class NVMLError(Exception):
        def __init__(self, value):
            self.value = value

    def listing(found):
        if isinstance(found, int):
            def fail(handle):
                raise NVMLError(found)
            return fail
        return lambda handle: [types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in found]

    return types.SimpleNamespace(NVMLError=NVMLError, NVML_ERROR_NOT_SUPPORTED=3, nvmlDeviceGetHandleByIndex=lambda i: i,
                                 nvmlDeviceGetComputeRunningProcesses=listing(compute),
                                 nvmlDeviceGetGraphicsRunningProcesses=listing(graphics))


def test_real_adapter_merges_compute_and_graphics_contexts():
    adapter = PynvmlTelemetry(fake_pynvml([(10, 5 << 20), (11, None)], [(10, 5 << 20), (12, 1 << 20)]))
    assert adapter.running_processes(0) == [(10, 5 << 20), (11, None), (12, 1 << 20)]
    only_compute = PynvmlTelemetry(fake_pynvml([(10, 1)], 3))  # no graphics list on this board
    assert only_compute.running_processes(0) == [(10, 1)]
    with pytest.raises(NvmlError) as caught:
        PynvmlTelemetry(fake_pynvml(3, [])).running_processes(0)
    assert caught.value.code == "not_supported"
