"""NVML telemetry from recorded libraries: sample-buffer draining, energy, failures, ordering."""
import copy
import json
import types

import pytest

from accelbench.devices.nvml_adapter import NvmlError
from accelbench.telemetry import TelemetrySampler
from accelbench.telemetry.nvml import NvmlSource, throttle_names
from accelbench.telemetry.nvml_calls import PynvmlTelemetry, RecordedTelemetryNvml


class Clock:
    def __init__(self, t_s=1000.0):
        self.t_s = t_s

    def __call__(self):
        return self.t_s


def recording(data_dir, name):
    return json.loads((data_dir / "nvml" / f"{name}.json").read_text())


def with_telemetry(base, start_s=1000.0, seconds=5.0, step_s=0.02, buffer_size=50, energy=True):
    """The recording plus sample buffers every step_s, and an energy counter rising 300 W."""
    rec = copy.deepcopy(base)
    for device in rec["devices"]:
        ticks = [start_s + i * step_s for i in range(int(seconds / step_s) + 1)]
        device["samples"] = {
            "gpu_utilization": [[round(t * 1e6), (i * 7) % 101] for i, t in enumerate(ticks)],
            "total_power": [[round(t * 1e6), 300000] for t in ticks],
        }
        device["sample_buffer_size"] = buffer_size
        device["temperature_c"] = 41
        device["memory_free_bytes"] = {"series": [[0, 150_000_000_000], [start_s + 2, 100_000_000_000]]}
        device["throttle_reasons"] = 0x4
        device["sm_clock_mhz"] = {"series": [[0, 1980], [start_s + 1, 1755]]}
        device["memory_clock_mhz"] = 2619
        if energy:  # 300 J/s, refreshed every 10 ms: a step function of time
            device["total_energy_mj"] = {"series": [[start_s + i * 0.01, 5_000_000 + i * 3000]
                                                    for i in range(int(seconds / 0.01) + 1)]}
    return rec


def sampler_for(rec, clock, wanted=None):
    source = NvmlSource(wanted, nvml=RecordedTelemetryNvml(rec, clock), calibrate_s=0)
    return TelemetrySampler(wanted, 0.1, sources=[source], clock=clock).open(), source


def test_draining_loses_no_sample_and_counts_none_twice(data_dir):
    clock = Clock(1000.0)
    rec = with_telemetry(recording(data_dir, "h200"))
    sampler, source = sampler_for(rec, clock, ["cuda:0"])
    seen = []
    for t in (1000.13, 1000.40, 1000.41, 1000.41, 1000.95, 1001.90):  # irregular, one repeated
        clock.t_s = t
        seen += [(s.t_s, s.values["utilization_percent"]) for s in sampler.poll()
                 if "utilization_percent" in s.values]
    expected = [(t / 1e6, float(v)) for t, v in rec["devices"][0]["samples"]["gpu_utilization"]
                if 1000.0 < t / 1e6 <= 1001.90]
    assert len(seen) == len(set(seen))           # none twice
    assert sorted(seen) == sorted(expected)      # none lost (every poll gap is under the 1 s buffer)
    asked = [last for _, kind, last in source._nvml.sample_calls if kind == "gpu_utilization"]
    newest_before_last_poll = max(t for t, _ in rec["devices"][0]["samples"]["gpu_utilization"] if t <= 1000.95e6)
    assert asked == sorted(asked) and asked[-1] == newest_before_last_poll  # always from the newest seen


def test_a_gap_longer_than_the_buffer_keeps_only_what_nvml_still_holds(data_dir):
    clock = Clock(1000.0)
    rec = with_telemetry(recording(data_dir, "h200"), buffer_size=10)
    sampler, _ = sampler_for(rec, clock, ["cuda:0"])
    clock.t_s = 1001.0  # 50 samples produced, the buffer holds 10
    got = [s for s in sampler.poll() if "utilization_percent" in s.values]
    assert len(got) == 10 and min(s.t_s for s in got) == pytest.approx(1000.82)
    assert any("buffer overflowed" in n for n in sampler.device_infos()["cuda:0"].notes)


def test_energy_over_a_window_is_the_counter_difference(data_dir):
    clock = Clock(1000.0)
    sampler, _ = sampler_for(with_telemetry(recording(data_dir, "h200")), clock, ["cuda:0", "cuda:1"])
    clock.t_s = 1000.5
    with sampler.window() as w:
        for t in (1000.8, 1001.3, 1002.2, 1002.9):  # gaps under the 1 s the buffer holds
            clock.t_s = t
            sampler.poll()
        clock.t_s = 1003.5
    summary = w.summary(calls=10)
    gpu = summary["devices"]["cuda:0"]
    assert gpu["energy_j"] == pytest.approx(900.0)  # 3 s at 300 W
    assert gpu["energy_per_call_j"] == pytest.approx(90.0)
    assert gpu["energy_uncertainty_j"] == pytest.approx(2 * 0.1 * 300)  # refresh not timed: 100 ms assumed
    assert "counter difference" in gpu["energy_method"]
    assert gpu["memory_peak_bytes"] == 150754820096 - 100_000_000_000
    assert gpu["clock_min_mhz"] == 1755 and gpu["clock_metric"] == "sm_clock_mhz"
    assert gpu["throttle_reasons"] == ["sw_power_cap"] and gpu["throttled"] is True
    assert gpu["metrics"]["power_w"]["mean"] == pytest.approx(300.0)
    assert gpu["metrics"]["utilization_percent"]["samples"] == 150  # every buffered one in the 3 s
    json.dumps(summary)  # JSON-serialisable as stored with a result


def test_no_energy_figure_for_a_window_the_counter_cannot_resolve(data_dir):
    clock = Clock(1000.0)
    sampler, _ = sampler_for(with_telemetry(recording(data_dir, "h200")), clock, ["cuda:0"])
    clock.t_s = 1001.0
    with sampler.window() as w:
        clock.t_s = 1001.3
    gpu = w.summary()["devices"]["cuda:0"]
    assert gpu["energy_j"] is None
    assert "shorter than" in gpu["energy_reason"] and "NVML total energy" in gpu["energy_reason"]


def test_a_board_without_energy_counter_integrates_buffered_power(data_dir):
    clock = Clock(1000.0)
    sampler, _ = sampler_for(with_telemetry(recording(data_dir, "k40m"), energy=False), clock, ["cuda:0"])
    clock.t_s = 1000.5
    with sampler.window() as w:
        clock.t_s = 1001.5
        sampler.poll()
        clock.t_s = 1002.5
    gpu = w.summary()["devices"]["cuda:0"]
    assert gpu["energy_j"] == pytest.approx(600.0, rel=0.01)  # 2 s at 300 W
    assert "integrated power" in gpu["energy_method"]
    assert gpu["energy_uncertainty_j"] == pytest.approx(0.05 * gpu["energy_j"], rel=0.05)  # NVML's ±5%


@pytest.mark.parametrize("name, status, words", [
    ("driver_not_loaded", "no_driver", "driver is not loaded"),
    ("no_permission", "no_permission", "permission"),
    ("library_not_found", "no_driver", "libnvidia-ml.so"),
])
def test_init_failures_are_reported_with_the_reason(data_dir, name, status, words):
    clock = Clock()
    sampler, _ = sampler_for(recording(data_dir, name), clock, ["cuda:0"])
    (gap,) = sampler.no_data
    assert (gap.source, gap.status, gap.devices) == ("nvml", status, ("cuda:0",))
    assert words in gap.reason
    with sampler.window() as w:
        pass
    assert w.summary()["no_data"][0]["status"] == status and "cuda:0" not in w.summary()["devices"]


def test_a_device_that_is_not_there_is_said_to_be_absent(data_dir):
    sampler, _ = sampler_for(with_telemetry(recording(data_dir, "k40m")), Clock(), ["cuda:0", "cuda:5"])
    assert [g.devices for g in sampler.no_data] == [("cuda:5",)]
    assert "NVML sees 2 GPU(s)" in sampler.no_data[0].reason


def test_ids_follow_pci_bus_order_like_the_inventory(data_dir):
    rec = with_telemetry(recording(data_dir, "k40m"))
    rec["devices"].reverse()  # NVML index 0 is now the board on bus 0x86
    rec["devices"][1]["temperature_c"] = 55  # the one on bus 0x1b
    sampler, _ = sampler_for(rec, Clock(1000.5), None)
    sampler.poll()
    assert sampler.latest["cuda:0"]["temperature_c"] == 55.0


def test_throttle_bits_are_named():
    assert throttle_names(0x1 | 0x40 | 0x100) == ["gpu_idle", "hw_thermal_slowdown", "display_clock_setting"]


def fake_pynvml(samples):
    """Enough of the pynvml module for the telemetry adapter's sample-buffer call."""
    class NVMLError(Exception):
        def __init__(self, value):
            self.value = value

    def get_samples(handle, kind, last_seen):
        fresh = [s for s in samples if s.timeStamp > last_seen]
        if not fresh:
            raise NVMLError(6)
        return 1, fresh

    return types.SimpleNamespace(NVMLError=NVMLError, NVML_ERROR_NOT_FOUND=6, NVML_ERROR_NOT_SUPPORTED=3,
                                 NVML_GPU_UTILIZATION_SAMPLES=1, nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
                                 nvmlDeviceGetSamples=get_samples)


def test_real_adapter_decodes_samples_and_maps_not_found():
    raw = [types.SimpleNamespace(timeStamp=t, sampleValue=types.SimpleNamespace(uiVal=v)) for t, v in
           ((10, 5), (20, 6))]
    adapter = PynvmlTelemetry(fake_pynvml(raw))
    assert adapter.samples(0, "gpu_utilization", 0) == [(10, 5.0), (20, 6.0)]
    assert adapter.samples(0, "gpu_utilization", 10) == [(20, 6.0)]
    with pytest.raises(NvmlError) as caught:
        adapter.samples(0, "gpu_utilization", 20)
    assert caught.value.code == "not_found"
    with pytest.raises(NvmlError) as caught:
        adapter.samples(0, "total_power", 0)  # this fake module lacks the constant
    assert caught.value.code == "function_not_found"


def test_a_buffer_that_stays_empty_is_read_directly_once_it_is_stale(data_dir):
    """An H200's SM clock buffer said 'supported' and gave nothing for a whole run: the clock is then
    read once per poll, while a buffer that keeps delivering is never read a second way."""
    from accelbench.telemetry.nvml import BUFFER_STALE_S

    clock = Clock(1000.0)
    rec = with_telemetry(recording(data_dir, "h200"))
    rec["devices"][0]["samples"]["processor_clock"] = []   # supported, never filled
    sampler, source = sampler_for(rec, clock, ["cuda:0"])
    assert "sm_clock_mhz" not in sampler.device_infos()["cuda:0"].missing
    polls = [1000.0 + 0.2 * k for k in range(1, 16)]
    clocks, utilisation = [], []
    for t in polls:
        clock.t_s = t
        for s in sampler.poll():
            if "sm_clock_mhz" in s.values:
                clocks.append((s.t_s, s.values["sm_clock_mhz"]))
            if "utilization_percent" in s.values:
                utilisation.append(s.t_s)
    # read directly from the first poll BUFFER_STALE_S after opening, at the poll's own time
    assert [t for t, _ in clocks] == [t for t in polls if t - 1000.0 >= BUFFER_STALE_S - 1e-9]
    assert {v for t, v in clocks} == {1755.0}                # the series' value after start + 1 s
    expected = [t / 1e6 for t, _ in rec["devices"][0]["samples"]["gpu_utilization"] if 1000.0 < t / 1e6 <= polls[-1]]
    assert sorted(utilisation) == sorted(expected)          # every buffered sample, none read twice


def test_a_buffer_that_falls_silent_is_read_directly_until_it_delivers_again(data_dir):
    clock = Clock(1000.0)
    rec = with_telemetry(recording(data_dir, "h200"))
    samples = rec["devices"][0]["samples"]["gpu_utilization"]
    rec["devices"][0]["samples"]["gpu_utilization"] = [s for s in samples if not 1000.5e6 < s[0] <= 1002.5e6]
    rec["devices"][0]["samples"]["memory_utilization"] = [[t, 30] for t, _ in samples]  # never silent
    rec["devices"][0]["utilization"] = [88, 40]  # what nvmlDeviceGetUtilizationRates answers
    sampler, _ = sampler_for(rec, clock, ["cuda:0"])
    direct = []
    for k in range(1, 31):
        clock.t_s = 1000.0 + 0.1 * k
        for s in sampler.poll():
            if "utilization_percent" in s.values and "temperature_c" in s.values:  # the poll's own reads
                direct.append(round(clock.t_s, 1))
                assert s.values["utilization_percent"] == 88.0 and s.values["memory_utilization_percent"] == 40.0
    # silent after 1000.5: direct reads from a second later until samples come again after 1002.5
    assert direct and min(direct) == pytest.approx(1001.5) and max(direct) <= 1002.5
