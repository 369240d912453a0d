"""Energy by counter difference (wrap-around, resets, resolution) and by integrated power; RAPL."""
import pytest

from accelbench.telemetry import TelemetrySampler
from accelbench.telemetry.energy import counter_delta_j, counter_energy, integrated_energy, rate_w, time_refresh
from accelbench.telemetry.model import CounterReading
from accelbench.telemetry.rapl import RaplSource

WRAP_J = 262143.328850  # a typical RAPL package max_energy_range_uj, in joules


def reading(t_s, energy_j, wrap_j=WRAP_J, update_s=0.001, counter="RAPL package-0", in_total=True):
    return CounterReading("cpu", counter, t_s, energy_j, wrap_j, update_s, in_total)


def test_delta_across_a_wrap():
    assert counter_delta_j(reading(0, WRAP_J - 2.0), reading(1, 3.0)) == pytest.approx(5.0)
    assert counter_delta_j(reading(0, 10.0), reading(1, 12.5)) == pytest.approx(2.5)


def test_a_counter_without_range_going_backwards_is_a_reset_not_energy():
    assert counter_delta_j(reading(0, 50.0, wrap_j=None), reading(1, 3.0, wrap_j=None)) is None
    result = counter_energy([reading(0, 50.0, wrap_j=None), reading(1, 3.0, wrap_j=None)], 1.0)
    assert result["energy_j"] is None and "went backwards" in result["energy_reason"]


def test_two_wraps_in_one_window_are_counted_through_the_intermediate_polls():
    # 600 kJ in 10 s: the counter wraps twice; polls every 2 s see each wrap
    series = [reading(t, (100.0 + 60000.0 * t) % WRAP_J) for t in range(0, 11, 2)]
    result = counter_energy(series, 10.0)
    assert result["energy_j"] == pytest.approx(600000.0)
    assert result["mean_power_w"] == pytest.approx(60000.0)


def test_dram_is_reported_apart_from_the_package_total():
    series = [reading(0, 10.0), reading(0, 5.0, counter="RAPL package-0/dram", in_total=False),
              reading(2, 40.0), reading(2, 9.0, counter="RAPL package-0/dram", in_total=False)]
    result = counter_energy(series, 2.0)
    assert result["energy_j"] == pytest.approx(30.0)
    assert result["energy_by_counter_j"] == {"RAPL package-0": pytest.approx(30.0),
                                             "RAPL package-0/dram": pytest.approx(4.0)}


def test_no_figure_for_a_window_shorter_than_the_counter_can_resolve():
    result = counter_energy([reading(0, 1.0, update_s=0.1), reading(0.5, 2.0, update_s=0.1)], 0.5)
    assert result["energy_j"] is None and "shorter than 2.00 s" in result["energy_reason"]
    ok = counter_energy([reading(0, 1.0, update_s=0.1), reading(2.5, 251.0, update_s=0.1)], 2.5)
    assert ok["energy_j"] == pytest.approx(250.0)
    assert ok["energy_uncertainty_j"] == pytest.approx(2 * 0.1 * 100.0)  # one refresh at each edge


def test_a_stuck_counter_gives_no_figure():
    result = counter_energy([reading(0, 7.0), reading(1.0, 7.0)], 1.0)
    assert result["energy_j"] is None and "did not advance" in result["energy_reason"]


def test_integrated_power_states_method_and_uncertainty():
    flat = integrated_energy([(t / 10, 100.0) for t in range(11)], 0.0, 1.0)
    assert flat["energy_j"] == pytest.approx(100.0) and flat["energy_uncertainty_j"] == pytest.approx(0.0)
    assert flat["power_sampling_period_s"] == pytest.approx(0.1)
    ramp = integrated_energy([(t / 10, 100.0 + 10 * t) for t in range(11)], 0.0, 1.0, accuracy=0.05)
    assert ramp["energy_j"] == pytest.approx(150.0)
    assert ramp["energy_uncertainty_j"] == pytest.approx(10 * 0.1 * 10 / 2 + 0.05 * 150)
    assert "±5%" in ramp["energy_note"]


def test_integrated_power_refuses_too_few_samples_or_too_short_a_window():
    assert "too few" in integrated_energy([(0.5, 80.0)], 0.0, 1.0)["energy_reason"]
    short = integrated_energy([(0.0, 80.0), (0.01, 80.0)], 0.0, 0.01, sensor_period_s=0.1)
    assert short["energy_j"] is None and "two power-sensor periods" in short["energy_reason"]


def test_rate_from_two_samples():
    assert rate_w(reading(1.0, WRAP_J - 1.0), reading(3.0, 9.0)) == pytest.approx(5.0)


def test_refresh_is_timed_from_observed_ticks():
    clock = iter(i * 0.001 for i in range(100000))
    now = [0.0]

    def tick():
        now[0] = next(clock)
        return now[0]
    counter = {"a": lambda: int(now[0] / 0.01), "stuck": lambda: 4}  # "a" changes every 10 ms
    refresh = time_refresh(counter, 0.2, clock=tick)
    assert refresh["a"] == pytest.approx(0.01, abs=0.003) and refresh["stuck"] is None


def powercap(root, package_uj, dram_uj, max_uj=262143328850):
    for zone, name, energy in (("intel-rapl:0", "package-0", package_uj), ("intel-rapl:0:0", "dram", dram_uj),
                               ("intel-rapl:0:1", "core", 1), ("intel-rapl:1", "psys", 1)):
        path = root / zone
        path.mkdir(exist_ok=True)
        (path / "name").write_text(name + "\n")
        (path / "energy_uj").write_text(f"{energy}\n")
        (path / "max_energy_range_uj").write_text(f"{max_uj}\n")
    (root / "intel-rapl-mmio:0").mkdir(exist_ok=True)  # a duplicate of the package: never read


class Clock:
    def __init__(self, t_s=0.0):
        self.t_s = t_s

    def __call__(self):
        return self.t_s


def test_rapl_window_energy_with_wrap_and_dram_apart(tmp_path):
    powercap(tmp_path, 262143328850 - 1_000_000, 5_000_000)
    clock = Clock(10.0)
    sampler = TelemetrySampler(["cpu"], 0.1, sources=[RaplSource(str(tmp_path))], clock=clock).open()
    with sampler.window() as w:
        clock.t_s = 11.0
        powercap(tmp_path, 2_000_000, 5_500_000)  # wrapped: 3 J in the package, 0.5 J in DRAM
        sampler.poll()
        clock.t_s = 12.0
        powercap(tmp_path, 5_000_000, 6_000_000)
    cpu = w.summary()["devices"]["cpu"]
    assert cpu["energy_j"] == pytest.approx(6.0)
    assert cpu["energy_by_counter_j"]["RAPL package-0/dram"] == pytest.approx(1.0)
    assert cpu["metrics"]["power_w"]["max"] == pytest.approx(3.0)  # rate between polls, across the wrap
    assert set(cpu["energy_by_counter_j"]) == {"RAPL package-0", "RAPL package-0/dram"}  # no core, psys, mmio


def test_rapl_not_present_says_why(tmp_path):
    sampler = TelemetrySampler(["cpu"], 0.1, sources=[RaplSource(str(tmp_path / "none"))]).open()
    (gap,) = sampler.no_data
    assert gap.status == "not_present" and "no RAPL zones" in gap.reason and gap.devices == ("cpu",)


def test_rapl_without_permission_says_why(tmp_path):
    powercap(tmp_path, 1, 1)

    def read(path):
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(path))
        return path.read_text().strip()
    sampler = TelemetrySampler(["cpu"], 0.1, sources=[RaplSource(str(tmp_path), read=read)]).open()
    (gap,) = sampler.no_data
    assert gap.status == "no_permission" and "root" in gap.reason and "energy_uj" in gap.reason


def test_this_machine_says_why_there_is_no_cpu_energy_when_rapl_is_unreadable():
    sampler = TelemetrySampler(["cpu"], 0.1).open()
    rapl = [g for g in sampler.no_data if g.source == "rapl"]
    with sampler.window() as w:
        pass
    cpu = w.summary()["devices"]["cpu"]
    if rapl:  # this VM: no /sys/class/powercap at all
        assert cpu["energy_j"] is None and rapl[0].reason in cpu["energy_reason"]
    else:
        assert cpu["energy_j"] is not None or "shorter than" in cpu["energy_reason"]
