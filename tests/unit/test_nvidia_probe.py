import copy
import json
import sys
import types
from pathlib import Path

import pytest

from accelbench.backends.device_reach import with_backend_reach
from accelbench.devices import frameworks, nvidia
from accelbench.devices.model import ERROR, NO_DRIVER, NO_PERMISSION, NOT_INSTALLED, OK, VERSION_MISMATCH
from accelbench.devices.nvml_adapter import NvmlError, PynvmlAdapter, RecordedNvml
from accelbench.devices.probing import run_probe

DATA = Path(__file__).parents[1] / "data" / "nvml"


def recording(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def probe(name_or_recording, environ=None, **kwargs):
    rec = recording(name_or_recording) if isinstance(name_or_recording, str) else name_or_recording
    return nvidia.probe(RecordedNvml(rec), environ={} if environ is None else environ, **kwargs)


@pytest.fixture
def reach_torch_and_cupy(monkeypatch):
    """A CUDA build of torch and cupy installed, no jax GPU plugin: the backends say who reaches what."""
    monkeypatch.setattr(frameworks, "installed", lambda name: name in ("torch", "cupy"))
    monkeypatch.setattr(frameworks, "jax_has_gpu_plugin", lambda: False)
    monkeypatch.setattr(frameworks, "torch_build", lambda: {"version": "2.5.0", "cuda": "12.4", "hip": None})


def reached(devices):
    return list(with_backend_reach(devices))


# --- the seed's Tesla K40m -------------------------------------------------------------

def test_k40m_formula_peaks_replay_the_seed():
    k40, _ = probe("k40m")
    fp32 = k40.peak("fp32", "formula")
    assert fp32.value == pytest.approx(2880 * 0.745e9 * 2)
    assert fp32.value == pytest.approx(4.29e12, rel=1e-3)
    assert fp32.inputs["sm_count"] == 15 and fp32.inputs["cuda_cores_per_sm"] == 192
    assert "2880 cores" in fp32.detail and "0.745 GHz" in fp32.detail and "× 2" in fp32.detail
    fp64 = k40.peak("fp64", "formula")
    assert fp64.value == pytest.approx(fp32.value / 3)
    assert "1/3" in fp64.detail
    bandwidth = k40.peak("memory_bandwidth", "formula")
    assert bandwidth.value == pytest.approx(3004e6 * 2 * 48)
    assert bandwidth.value == pytest.approx(288.4e9, rel=1e-3)
    assert "3004 MHz" in bandwidth.detail and "384 bits" in bandwidth.detail


def test_k40m_formula_agrees_with_its_datasheet():
    k40, _ = probe("k40m")
    for metric in ("fp32", "fp64", "memory_bandwidth"):
        table = k40.peak(metric, "table")
        assert table is not None and "datasheet" in table.detail
        assert k40.peak(metric, "formula").value == pytest.approx(table.value, rel=0.01)


def test_k40m_properties_carry_units():
    k40, second = probe("k40m")
    assert (k40.id, k40.kind, k40.vendor, k40.name, k40.source) == ("cuda:0", "gpu", "NVIDIA", "Tesla K40m", "nvml")
    assert k40.memory_bytes == 11995578368
    p = k40.properties
    assert p["compute_capability"] == "3.5" and p["architecture"] == "Kepler"
    assert (p["sm_count"], p["cuda_cores"], p["cuda_cores_per_sm"]) == (15, 2880, 192)
    assert (p["max_sm_clock_mhz"], p["max_memory_clock_mhz"]) == (745, 3004)
    assert p["memory_total_bytes"] == 11995578368 and p["memory_free_bytes"] <= p["memory_total_bytes"]
    assert p["memory_bus_width_bits"] == 384
    assert p["pci_bus_id"] == "0000:1b:00.0" and second.properties["pci_bus_id"] == "0000:86:00.0"
    assert p["ecc_enabled"] is True
    assert "mig_enabled" not in p  # Kepler has no MIG: not supported, so absent rather than False
    assert (p["pcie_generation_max"], p["pcie_width_max_lanes"]) == (3, 16)
    assert p["power_limit_w"] == 235.0
    assert (p["driver_version"], p["cuda_driver_version"]) == ("384.90", "9.0")
    assert k40.warnings == ()


def test_probe_shuts_nvml_down():
    nvml = RecordedNvml(recording("k40m"))
    nvidia.probe(nvml, environ={})
    assert nvml.shutdown_calls == 1


def test_old_driver_without_core_count_gives_no_compute_formula():
    (k40,) = probe("k40m_old_driver")
    assert k40.peak("fp32", "formula") is None and k40.peak("fp64", "formula") is None
    assert k40.peak("memory_bandwidth", "formula") is None  # bus width missing too
    assert "sm_count" not in k40.properties and "cuda_cores" not in k40.properties
    assert any("SM count" in w and "Function Not Found" in w for w in k40.warnings)
    assert k40.peak("fp32", "table") is not None  # the datasheet still applies


# --- modern GPU, unknown GPU ----------------------------------------------------------

def test_h200_formula_and_table():
    devices = probe("h200")
    assert [d.id for d in devices] == ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]
    h200 = devices[0]
    assert h200.properties["sm_count"] == 132 and h200.properties["architecture"] == "Hopper"
    assert h200.properties["mig_enabled"] is False and h200.properties["cuda_driver_version"] == "12.4"
    fp32 = h200.peak("fp32", "formula")
    assert fp32.value == pytest.approx(16896 * 1.98e9 * 2)
    assert h200.peak("fp64", "formula").value == pytest.approx(fp32.value / 2)
    assert fp32.value == pytest.approx(h200.peak("fp32", "table").value, rel=0.02)
    assert h200.peak("bf16_matrix", "table") is not None


def test_unknown_compute_capability_warns_and_gives_no_number():
    (gpu,) = probe("unknown_cc")
    assert gpu.properties["compute_capability"] == "99.0"
    assert any("99.0" in w and "no FP32/FP64 formula peak" in w for w in gpu.warnings)
    assert not [p for p in gpu.peaks if p.metric in ("fp32", "fp64")]
    assert "sm_count" not in gpu.properties and "cuda_cores_per_sm" not in gpu.properties
    # bandwidth does not depend on the architecture table
    assert gpu.peak("memory_bandwidth", "formula").value == pytest.approx(16000e6 * 2 * 64)


def test_field_failures_are_absent_and_only_real_failures_warn():
    (gpu,) = probe("unknown_cc")
    assert "ecc_enabled" not in gpu.properties and "power_limit_w" not in gpu.properties
    assert any("power_limit_mw" in w and "no_permission" in w for w in gpu.warnings)
    assert not any("ecc" in w for w in gpu.warnings)  # not supported: expected, not a problem


# --- failures ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, status, advice", [
    ("driver_not_loaded", NO_DRIVER, "modprobe nvidia"),
    ("library_not_found", NO_DRIVER, "driver is not installed"),
    ("no_permission", NO_PERMISSION, "/dev/nvidia"),
    ("version_mismatch", VERSION_MISMATCH, "reboot"),
])
def test_failure_recordings_give_statuses(name, status, advice):
    report = run_probe("nvidia", lambda: probe(name))
    assert report.status == status
    assert advice in report.message
    assert report.devices == ()


def test_unexpected_init_error_is_an_error():
    rec = {"init": {"error": "gpu_is_lost", "message": "GPU is lost"}, "devices": []}
    report = run_probe("nvidia", lambda: probe(rec))
    assert report.status == ERROR and "GPU is lost" in report.message


def test_device_count_failure_is_classified():
    rec = {"init": None, "device_count": {"error": "no_permission", "message": "Insufficient Permissions"}}
    assert run_probe("nvidia", lambda: probe(rec)).status == NO_PERMISSION


def test_no_gpus_is_ok_and_empty():
    report = run_probe("nvidia", lambda: probe({"init": None, "devices": []}))
    assert report.status == OK and report.devices == ()


def test_missing_pynvml_with_a_driver_says_so(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ModuleNotFoundError
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n")
    report = run_probe("nvidia", lambda: nvidia.probe(proc_driver_version=str(proc)))
    assert report.status == NOT_INSTALLED
    assert "535.104.05" in report.message and "driver is loaded" in report.message
    assert "pip install accelbench[nvidia]" in report.message


def test_missing_pynvml_without_a_driver(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    report = run_probe("nvidia", lambda: nvidia.probe(proc_driver_version=str(tmp_path / "absent")))
    assert report.status == NOT_INSTALLED
    assert "no NVIDIA driver" in report.message and "pip install accelbench[nvidia]" in report.message


@pytest.mark.parametrize("text, version", [
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.90  Tue Sep 19 19:17:35 PDT 2017", "384.90"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build", "550.54.14"),
])
def test_driver_version_from_proc(tmp_path, text, version):
    path = tmp_path / "version"
    path.write_text(text + "\nGCC version:  gcc version 11.4.0\n")
    assert nvidia.driver_version_from_proc(str(path)) == version


# --- the real adapter, against a stand-in pynvml module ---------------------------------

def fake_pynvml(init_error_code=None):
    class NVMLError(Exception):
        def __init__(self, value):
            super().__init__(f"NVML error {value}")
            self.value = value

    def raise_if(code):
        if code is not None:
            raise NVMLError(code)

    pci = types.SimpleNamespace(busId=b"00000000:3B:00.0")
    memory = types.SimpleNamespace(total=25757220864, free=25000000000, used=757220864)

    def not_supported(*_):
        raise NVMLError(3)

    return types.SimpleNamespace(
        NVMLError=NVMLError, NVML_ERROR_NOT_SUPPORTED=3, NVML_ERROR_NO_PERMISSION=4,
        NVML_ERROR_DRIVER_NOT_LOADED=9, NVML_ERROR_LIBRARY_NOT_FOUND=12, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2,
        nvmlInit=lambda: raise_if(init_error_code), nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: b"535.104.05", nvmlSystemGetCudaDriverVersion=lambda: 12020,
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda i: f"handle{i}",
        nvmlDeviceGetName=lambda h: b"NVIDIA GeForce RTX 4090", nvmlDeviceGetUUID=lambda h: "GPU-abc",
        nvmlDeviceGetPciInfo=lambda h: pci, nvmlDeviceGetCudaComputeCapability=lambda h: (8, 9),
        nvmlDeviceGetMaxClockInfo=lambda h, clock: {1: 3105, 2: 10501}[clock],
        nvmlDeviceGetMemoryInfo=lambda h: memory, nvmlDeviceGetMemoryBusWidth=lambda h: 384,
        nvmlDeviceGetCurrPcieLinkGeneration=lambda h: 1, nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 4,
        nvmlDeviceGetCurrPcieLinkWidth=lambda h: 16, nvmlDeviceGetMaxPcieLinkWidth=lambda h: 16,
        nvmlDeviceGetEccMode=not_supported, nvmlDeviceGetMigMode=not_supported,
        nvmlDeviceGetPowerManagementLimit=lambda h: 450000,
        # no nvmlDeviceGetNumGpuCores: an nvidia-ml-py older than that call
    )


@pytest.mark.parametrize("code, status", [(12, NO_DRIVER), (9, NO_DRIVER), (4, NO_PERMISSION)])
def test_pynvml_adapter_maps_init_errors(code, status):
    adapter = PynvmlAdapter(fake_pynvml(init_error_code=code))
    assert run_probe("nvidia", lambda: nvidia.probe(adapter, environ={})).status == status


def test_pynvml_adapter_reads_a_device():
    (gpu,) = nvidia.probe(PynvmlAdapter(fake_pynvml()), environ={})
    assert gpu.name == "NVIDIA GeForce RTX 4090" and gpu.properties["pci_bus_id"] == "0000:3b:00.0"
    assert gpu.properties["driver_version"] == "535.104.05" and gpu.properties["cuda_driver_version"] == "12.2"
    assert gpu.properties["pcie_generation_current"] == 1 and gpu.properties["power_limit_w"] == 450.0
    assert gpu.peak("fp32", "formula") is None  # no core count from this nvidia-ml-py: nothing invented
    assert gpu.peak("memory_bandwidth", "formula").value == pytest.approx(10501e6 * 2 * 48)
    assert gpu.peak("fp32", "table").value == pytest.approx(82.6e12)


def test_pynvml_adapter_raises_nvml_error_with_a_code():
    adapter = PynvmlAdapter(fake_pynvml())
    adapter.init()
    with pytest.raises(NvmlError) as caught:
        adapter.ecc_mode(0)
    assert caught.value.code == "not_supported"


# --- order and visibility ---------------------------------------------------------------

def test_ids_follow_pci_bus_order_not_nvml_order():
    rec = recording("k40m")
    rec["devices"].reverse()  # NVML listing 86:00.0 before 1b:00.0
    first, second = probe(rec)
    assert (first.id, first.properties["pci_bus_id"], first.properties["nvml_index"]) == ("cuda:0", "0000:1b:00.0", 1)
    assert (second.id, second.properties["pci_bus_id"]) == ("cuda:1", "0000:86:00.0")


def test_reach_without_cuda_visible_devices(reach_torch_and_cupy):
    devices = reached(probe("h200"))
    assert [d.reach for d in devices] == [{"torch": f"cuda:{i}", "cupy": f"cuda:{i}"} for i in range(4)]


def test_cuda_visible_devices_indices_reorder_and_hide(reach_torch_and_cupy):
    devices = {d.id: d for d in reached(probe("h200", environ={"CUDA_VISIBLE_DEVICES": "2,0"}))}
    assert devices["cuda:2"].reach == {"torch": "cuda:0", "cupy": "cuda:0"}
    assert devices["cuda:0"].reach == {"torch": "cuda:1", "cupy": "cuda:1"}
    assert devices["cuda:2"].properties["cuda_visible_index"] == 0
    for hidden in ("cuda:1", "cuda:3"):
        assert devices[hidden].reach == {}
        assert devices[hidden].properties["cuda_visible_index"] is None
        assert any("hidden by CUDA_VISIBLE_DEVICES" in w for w in devices[hidden].warnings)


def test_cuda_visible_devices_by_uuid_prefix(reach_torch_and_cupy):
    devices = {d.id: d for d in reached(probe("h200", environ={"CUDA_VISIBLE_DEVICES": "GPU-3f405162,GPU-1d2e"}))}
    assert devices["cuda:3"].reach["torch"] == "cuda:0"
    assert devices["cuda:1"].reach["torch"] == "cuda:1"
    assert devices["cuda:0"].reach == {}


def test_cuda_visible_devices_stops_at_an_invalid_entry(reach_torch_and_cupy):
    devices = {d.id: d for d in reached(probe("h200", environ={"CUDA_VISIBLE_DEVICES": "1,7,0"}))}
    assert devices["cuda:1"].reach["torch"] == "cuda:0"
    assert devices["cuda:0"].reach == {}  # after the invalid 7, so hidden
    assert any("'7'" in w and "matches no GPU" in w for w in devices["cuda:1"].warnings)


def test_empty_cuda_visible_devices_hides_everything(reach_torch_and_cupy):
    assert all(d.reach == {} for d in reached(probe("h200", environ={"CUDA_VISIBLE_DEVICES": ""})))


def test_mixed_gpus_without_pci_bus_id_order_warn():
    rec = copy.deepcopy(recording("h200"))
    rec["devices"][1]["name"] = "NVIDIA H100 80GB HBM3"
    assert all(any("CUDA_DEVICE_ORDER" in w for w in d.warnings) for d in probe(rec))
    quiet = probe(rec, environ={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert not any("CUDA_DEVICE_ORDER" in w for d in quiet for w in d.warnings)


def test_the_frameworks_that_reach_an_nvidia_gpu_follow_the_torch_build(monkeypatch):
    present = {"torch", "cupy"}
    monkeypatch.setattr(frameworks, "installed", lambda name: name in present)
    monkeypatch.setattr(frameworks, "jax_has_gpu_plugin", lambda: False)
    monkeypatch.setattr(frameworks, "torch_build", lambda: {"version": "2.5.0", "cuda": "12.4", "hip": None})
    assert sorted(reached(probe("h200"))[0].reach) == sorted(("torch", "cupy"))
    monkeypatch.setattr(frameworks, "torch_build", lambda: {"version": "2.5.0", "cuda": None, "hip": None})
    monkeypatch.setattr(frameworks, "jax_has_gpu_plugin", lambda: True)
    assert sorted(reached(probe("h200"))[0].reach) == sorted(("cupy", "jax"))


@pytest.mark.parametrize("given, expected", [
    ("00000000:1B:00.0", "0000:1b:00.0"), ("0000:86:00.0", "0000:86:00.0"), ("3b:00.0", "0000:3b:00.0"),
    ("garbage", None),
])
def test_normalize_pci_bus_id(given, expected):
    assert nvidia.normalize_pci_bus_id(given) == expected


@pytest.mark.parametrize("encoded, text", [(9000, "9.0"), (11080, "11.8"), (12040, "12.4"), (13000, "13.0")])
def test_cuda_version_text(encoded, text):
    assert nvidia.cuda_version_text(encoded) == text


def test_cuda_visible_devices_repeated_entry_stops_the_list(reach_torch_and_cupy):
    devices = {d.id: d for d in reached(probe("h200", environ={"CUDA_VISIBLE_DEVICES": "0,0,1"}))}
    assert devices["cuda:0"].reach["torch"] == "cuda:0"
    assert devices["cuda:1"].reach == {}
    assert any("repeats" in w for w in devices["cuda:0"].warnings)
