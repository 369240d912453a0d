from accelbench.devices.inventory import merge_devices, parse_probe_names
from accelbench.devices.model import Device, PeakFigure
from accelbench.units import format_bytes, format_property, format_seconds, format_si, label


def test_formatting_carries_units():
    assert format_bytes(11440 * 2**20) == "11.2 GiB"
    assert format_si(4.29e12, "FLOP/s") == "4.29 TFLOP/s"
    assert format_si(288.4e9, "B/s") == "288 GB/s"
    assert format_seconds(0.00123) == "1.23 ms"
    assert format_property("max_sm_clock_mhz", 745) == "745 MHz"
    assert format_property("memory_bus_width_bits", 384) == "384 bit"
    assert format_property("power_limit_w", 235.0) == "235.0 W"
    assert label("max_sm_clock_mhz") == "Max SM clock"


def test_merge_fills_missing_and_never_overwrites():
    nvml = Device("cuda:0", "gpu", "NVIDIA", "Tesla K40m", "nvml", properties={"sm_count": None, "uuid": "GPU-1"},
                  peaks=(PeakFigure("fp32", 4.29e12, "formula", "x"),), reach={"cupy": "cuda:0"})
    torch = Device("cuda:0", "gpu", "NVIDIA", "Tesla K40m (torch)", "torch", properties={"sm_count": 15, "uuid": "other"},
                   peaks=(PeakFigure("fp32", 1.0, "formula", "y"), PeakFigure("fp64", 1.43e12, "formula", "z")),
                   reach={"torch": "cuda:0"})
    (merged,) = merge_devices([nvml, torch])
    assert merged.name == "Tesla K40m" and merged.properties == {"sm_count": 15, "uuid": "GPU-1"}
    assert merged.peak("fp32").value == 4.29e12 and merged.peak("fp64").value == 1.43e12
    assert merged.reach == {"cupy": "cuda:0", "torch": "cuda:0"} and merged.source == "nvml+torch"


def test_probe_names():
    assert parse_probe_names(None) == ("cpu", "nvidia", "amd", "apple", "opencl")
    assert "torch" in parse_probe_names("all")


def test_measured_above_formula_is_explained(monkeypatch):
    from accelbench.devices import inventory

    device = Device("cpu", "cpu", "Intel", "Xeon", "procfs",
                    peaks=(PeakFigure("fp32", 333e9, "formula", "2 cores × 2.6 GHz × 64 FLOP/cycle"),))
    from accelbench.results import Spec
    from accelbench.store.ceilings import MeasuredCeiling

    spec = Spec.make("matmul", "numpy", "cpu", n=1000, dtype="float32")
    result = inventory.add_measured_peaks(device, {("cpu", "fp32"): MeasuredCeiling("cpu", "fp32", 420e9, spec, "r1")})
    assert result.peak("fp32").provenance == "measured" and result.peak("fp32", "formula").value == 333e9
    assert any("exceeds the formula" in w and "26%" in w for w in result.warnings)
    lower = {("cpu", "fp32"): MeasuredCeiling("cpu", "fp32", 300e9, spec, "r1")}
    assert not inventory.add_measured_peaks(device, lower).warnings
    assert inventory.add_measured_peaks(device, {("gpu", "fp32"): lower[("cpu", "fp32")]}) is device
