"""AMD telemetry from recorded amdsmi answers: metrics, "N/A" gaps, the energy accumulator, failures."""
import copy
import importlib.util
import json

import pytest

from accelbench.telemetry import TelemetrySampler
from accelbench.telemetry.amd import AmdsmiSource, RecordedAmdTelemetry, energy_joules


class Clock:
    def __init__(self, t_s=100.0):
        self.t_s = t_s

    def __call__(self):
        return self.t_s


def recording(data_dir, name):
    return json.loads((data_dir / "amd" / f"{name}.json").read_text())


def with_telemetry(base, resolution_uj=15.3):
    rec = copy.deepcopy(base)
    for processor in rec["processors"]:
        processor["gpu_activity"] = {"series": [[0, {"gfx_activity": 10, "umc_activity": 5, "mm_activity": "N/A"}],
                                                [101, {"gfx_activity": 97, "umc_activity": 60, "mm_activity": "N/A"}]]}
        processor["vram_usage"] = {"vram_total": 65520, "vram_used": {"x": 1}}  # a malformed field is skipped
        processor["power_info"] = {"current_socket_power": 412, "average_socket_power": "N/A"}
        processor["temperature_edge_c"] = 38
        processor["temperature_hotspot_c"] = {"error": "not_supported"}
        processor["gfx_clock_info"] = {"series": [[0, {"clk": 1700, "max_clk": 1700}],
                                                  [102, {"cur_clk": 1500, "max_clk": 1700}]]}  # older key
        processor["mem_clock_info"] = {"clk": 1600}
        # 500 W: 500 J/s = 500e6 µJ/s, in ticks of resolution_uj every 10 ms
        processor["energy_count"] = {"series": [[100 + i * 0.01, {"energy_accumulator": round(i * 5e6 / resolution_uj),
                                                                  "counter_resolution": resolution_uj}]
                                                for i in range(1000)]}
    return rec


def sampler_for(rec, clock, wanted=("rocm:0",)):
    source = AmdsmiSource(list(wanted), amdsmi=RecordedAmdTelemetry(rec, clock), calibrate_s=0)
    return TelemetrySampler(list(wanted), 0.1, sources=[source], clock=clock).open()


def test_metrics_energy_and_na_fields(data_dir):
    clock = Clock(100.0)
    sampler = sampler_for(with_telemetry(recording(data_dir, "mi250x_amdsmi")), clock)
    with sampler.window() as w:
        for t in (100.5, 101.5, 102.5):
            clock.t_s = t
            sampler.poll()
        clock.t_s = 103.0
    gpu = w.summary()["devices"]["rocm:0"]
    assert gpu["name"] == "AMD Instinct MI250X"
    assert gpu["utilization_max_percent"] == 97 and gpu["metrics"]["utilization_percent"]["min"] == 10
    assert gpu["metrics"]["power_w"]["mean"] == pytest.approx(412)
    assert gpu["clock_min_mhz"] == 1500 and gpu["clock_metric"] == "gfx_clock_mhz"
    assert gpu["energy_j"] == pytest.approx(1500.0, rel=1e-3)  # 3 s at 500 W from the accumulator
    assert gpu["metrics"]["power_from_energy_w"]["mean"] == pytest.approx(500.0, rel=1e-3)
    assert "memory_used_bytes" in gpu["missing"] and "hotspot_temperature_c" in gpu["missing"]
    json.dumps(w.summary())


def test_energy_from_old_and_new_amdsmi_keys():
    assert energy_joules({"energy_accumulator": 1_000_000, "counter_resolution": 15.3}) == pytest.approx(
        (15.3, 2 ** 64 * 15.3e-6))
    assert energy_joules({"power": 2_000_000, "counter_resolution": 15.3})[0] == pytest.approx(30.6)
    assert energy_joules({"power": "N/A", "counter_resolution": 15.3}) is None


@pytest.mark.parametrize("name, status, words", [
    ("no_permission_amdsmi", "no_permission", "render"),
    ("driver_not_loaded_amdsmi", "no_driver", "amdgpu driver is not loaded"),
])
def test_init_failures_say_why(data_dir, name, status, words):
    sampler = sampler_for(recording(data_dir, name), Clock())
    (gap,) = sampler.no_data
    assert (gap.source, gap.status, gap.devices) == ("amdsmi", status, ("rocm:0",))
    assert words in gap.reason


def test_amdsmi_not_installed_here_is_said():
    if importlib.util.find_spec("amdsmi") is not None:
        pytest.skip("amdsmi is installed here")
    sampler = TelemetrySampler(["rocm:0"], 0.1).open()
    (gap,) = [g for g in sampler.no_data if g.source == "amdsmi"]
    assert gap.status == "not_installed" and "pip install accelbench[amd]" in gap.reason
