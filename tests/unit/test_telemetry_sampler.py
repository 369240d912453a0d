"""The sampler thread, windows, the monitor() API, the CPU source and the Apple/OpenCL statements."""
import json
import subprocess
import sys
import time
from collections import namedtuple

import pytest

from accelbench.telemetry import TelemetrySampler, monitor
from accelbench.telemetry.apple import IoregSource, parse_performance_statistics
from accelbench.telemetry.cpu import busy_percent
from accelbench.telemetry.model import DeviceInfo, NoData, Sample, Source


class Clock:
    def __init__(self, t_s=0.0):
        self.t_s = t_s

    def __call__(self):
        return self.t_s


class Scripted(Source):
    """A source whose readings the test sets; it can be told to fail."""

    name, vendor = "scripted", "Test"

    def __init__(self):
        super().__init__()
        self.value, self.fail, self.polls = 0.0, False, 0

    def open(self, now_s):
        self.devices = {"dev:0": DeviceInfo("dev:0", self.name, metrics=("utilization_percent", "power_w"))}

    def poll(self, now_s):
        self.polls += 1
        if self.fail:
            raise RuntimeError("sensor gone")
        return [Sample("dev:0", now_s, {"utilization_percent": self.value})]


def test_window_polls_at_both_edges_and_keeps_only_its_own_samples():
    clock, source = Clock(5.0), Scripted()
    sampler = TelemetrySampler(None, 0.1, sources=[source], clock=clock).open()
    source.value = 99.0
    sampler.poll()  # before the window: not part of it
    with sampler.window() as w:
        clock.t_s, source.value = 6.0, 10.0
        sampler.poll()
        clock.t_s, source.value = 7.0, 30.0
    after = sampler.poll()
    stats = w.summary()["devices"]["dev:0"]["metrics"]["utilization_percent"]
    assert (stats["samples"], stats["min"], stats["max"], stats["mean"]) == (2, 10.0, 30.0, 20.0)
    assert w.window_s == pytest.approx(2.0) and after  # polls after the window still work
    missing = w.summary()["devices"]["dev:0"]["missing"]
    assert "power_w" in missing and "no sample inside the 2.00 s window" in missing["power_w"]


def test_summary_for_one_device_keeps_its_section_and_its_gaps():
    clock, source = Clock(1.0), Scripted()
    sampler = TelemetrySampler(["dev:0", "opencl:0:0"], 0.1, sources=[source], clock=clock,
                               no_data=[NoData("opencl", "OpenCL", "no_telemetry_api", "none", ("opencl:0:0",))]).open()
    with sampler.window() as w:
        clock.t_s = 2.0
    assert list(w.summary_for("dev:0")["devices"]) == ["dev:0"] and w.summary_for("dev:0")["no_data"] == []
    only_gap = w.summary_for("opencl:0:0")
    assert only_gap["devices"] == {} and only_gap["no_data"][0]["reason"] == "none"
    assert only_gap["window_s"] == pytest.approx(1.0)


def test_a_source_that_keeps_failing_is_dropped_with_its_error():
    source = Scripted()
    sampler = TelemetrySampler(None, 0.1, sources=[source], clock=Clock()).open()
    source.fail = True
    for _ in range(4):
        sampler.poll()
    assert source.polls == 3 and sampler.sources == []
    assert "sensor gone" in sampler.no_data[-1].reason and sampler.no_data[-1].devices == ("dev:0",)


def test_background_thread_samples_while_work_runs():
    with TelemetrySampler(["cpu"], 0.02) as sampler:
        with sampler.window() as w:
            deadline = time.perf_counter() + 0.3
            while time.perf_counter() < deadline:
                sum(range(1000))
    cpu = w.summary()["devices"]["cpu"]
    assert cpu["samples"] >= 2  # the closing poll, plus at least one from the thread
    assert cpu["memory_peak_bytes"] > 0 and cpu["process_rss_peak_bytes"] > 0


def test_monitor_api_for_users_code_is_json_ready():
    with monitor(interval=0.05) as m:
        deadline = time.perf_counter() + 0.2
        while time.perf_counter() < deadline:
            pass
    summary = m.summary()
    json.dumps(summary)
    cpu = summary["devices"]["cpu"]
    assert "utilization_percent" in cpu["metrics"] and cpu["utilization_max_percent"] > 0
    accounted = {g["source"] for g in summary["no_data"]}
    accounted |= {s for device in summary["devices"].values() for s in device["source"].split("+")}
    assert {"psutil", "rapl", "nvml", "amdsmi", "ioreg", "opencl"} <= accounted  # data, or the reason for none
    assert cpu["energy_j"] is not None or cpu["energy_reason"]  # a figure, or the reason for none


def test_opencl_devices_are_said_to_have_no_telemetry():
    sampler = TelemetrySampler(["opencl:0:0"], 0.1).open()
    (gap,) = sampler.no_data
    assert gap.devices == ("opencl:0:0",) and "OpenCL has no API" in gap.reason
    assert sampler.device_infos() == {}


def test_busy_percent_from_cpu_times():
    Times = namedtuple("Times", "user nice system idle iowait irq softirq steal guest guest_nice")
    before = Times(10, 0, 5, 80, 5, 0, 0, 0, 2, 0)
    after = Times(16, 0, 7, 86, 6, 0, 0, 0, 4, 0)  # guest +2 is inside user +6: not counted twice
    assert busy_percent(before, after) == pytest.approx(100 * 8 / 15)
    assert busy_percent(before, before) is None  # no tick elapsed


IOREG = '''+-o AGXAcceleratorG14X  <class AGXAcceleratorG14X, id 0x1000004c3>
    {
      "PerformanceStatistics" = {"In use system memory (driver)"=0,"Alloc system memory"=1234567890,"Tiler Utilization %"=7,"Renderer Utilization %"=12,"Device Utilization %"=13,"In use system memory"=402653184}
      "model" = "Apple M2"
    }'''


def test_apple_gpu_from_ioreg_without_root():
    assert parse_performance_statistics(IOREG) == {"utilization_percent": 13.0, "renderer_utilization_percent": 12.0,
                                                   "tiler_utilization_percent": 7.0, "memory_used_bytes": 402653184.0}
    clock = Clock(1.0)
    sampler = TelemetrySampler(["mps"], 0.1, sources=[IoregSource(run=lambda: IOREG, system="Darwin")],
                               clock=clock).open()
    with sampler.window() as w:
        clock.t_s = 2.0
    gpu = w.summary()["devices"]["mps"]
    assert gpu["utilization_max_percent"] == 13.0
    assert gpu["energy_j"] is None and "root" in gpu["energy_reason"]
    off_mac = TelemetrySampler(["mps"], 0.1, sources=[IoregSource(run=lambda: IOREG, system="Linux")]).open()
    assert off_mac.no_data[0].status == "not_supported"


def test_importing_telemetry_loads_no_vendor_library():
    code = ("import sys, accelbench.telemetry, accelbench.cli.monitor_cmd, accelbench.cli.setup_cmd\n"
            "print([m for m in ('pynvml', 'amdsmi', 'psutil', 'rich', 'torch') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
