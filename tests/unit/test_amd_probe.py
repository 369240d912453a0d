import enum
import json
import sys
import types
from pathlib import Path

import pytest

from accelbench.backends.device_reach import with_backend_reach
from accelbench.devices import amd, frameworks
from accelbench.devices.model import NO_DRIVER, NO_PERMISSION, NOT_INSTALLED, OK
from accelbench.devices.probing import run_probe

DATA = Path(__file__).parents[1] / "data" / "amd"
SYSFS = DATA / "sysfs_mixed"
GIB = 1024 ** 3


def recorded(name: str) -> amd.RecordedAmdsmi:
    return amd.RecordedAmdsmi.from_file(DATA / f"{name}.json")


@pytest.fixture
def no_amdsmi(monkeypatch):
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # import amdsmi -> ModuleNotFoundError


@pytest.fixture
def rocm_torch(monkeypatch):
    monkeypatch.setattr(frameworks, "installed", lambda name: name == "torch")
    monkeypatch.setattr(frameworks, "torch_build", lambda: {"version": "2.5.0", "cuda": None, "hip": "6.2"})


def test_amdsmi_recording_lists_gcds_in_pci_order(tmp_path):
    devices = amd.probe(recorded("mi250x_amdsmi"), sysfs_root=str(tmp_path), environ={})
    assert [d.id for d in devices] == ["rocm:0", "rocm:1", "rocm:2", "rocm:3"]
    first = devices[0]
    assert (first.vendor, first.kind, first.source, first.name) == ("AMD", "gpu", "amdsmi", "AMD Instinct MI250X")
    p = first.properties
    assert p["pci_bus_id"] == "0000:c1:00.0" and p["gfx_target"] == "gfx90a"
    assert p["compute_unit_count"] == 110 and p["memory_bus_width_bits"] == 4096
    assert p["max_gfx_clock_mhz"] == 1700 and p["memory_type"] == "HBM2E" and p["driver_version"] == "6.7.0"
    assert first.memory_bytes == 68702699520


def test_amdsmi_order_is_by_bus_id_whatever_amdsmi_says(tmp_path):
    rec = json.loads((DATA / "mi250x_amdsmi.json").read_text())
    rec["processors"].reverse()
    devices = amd.probe(amd.RecordedAmdsmi(rec), sysfs_root=str(tmp_path), environ={})
    assert [d.properties["pci_bus_id"] for d in devices] == sorted(d.properties["pci_bus_id"] for d in devices)


def test_mi250x_table_peaks_are_per_gcd(tmp_path):
    gcd = amd.probe(recorded("mi250x_amdsmi"), sysfs_root=str(tmp_path), environ={})[0]
    fp64 = gcd.peak("fp64", "table")
    assert fp64.value == pytest.approx(47.9e12 / 2) and "MI250X" in fp64.detail
    assert gcd.peak("fp64", "formula") is None  # no AMD formula: nothing is guessed


def test_amdsmi_no_permission(tmp_path):
    report = run_probe("amd", lambda: amd.probe(recorded("no_permission_amdsmi"), sysfs_root=str(tmp_path)))
    assert report.status == NO_PERMISSION and "render" in report.message


def test_amdsmi_without_driver_and_empty_sysfs(tmp_path):
    report = run_probe("amd", lambda: amd.probe(recorded("driver_not_loaded_amdsmi"), sysfs_root=str(tmp_path)))
    assert report.status == NO_DRIVER


def test_amdsmi_failure_falls_back_to_sysfs():
    devices = amd.probe(recorded("driver_not_loaded_amdsmi"), sysfs_root=str(SYSFS), environ={})
    assert [d.source for d in devices] == ["sysfs", "sysfs"]
    assert all(any("amdsmi could not start" in w for w in d.warnings) for d in devices)


def test_sysfs_fallback_when_amdsmi_is_missing(no_amdsmi):
    mi300x, radeon = amd.probe(sysfs_root=str(SYSFS), environ={})
    assert (mi300x.id, mi300x.name, mi300x.source) == ("rocm:0", "AMD Instinct MI300X", "sysfs")
    assert mi300x.properties["pci_bus_id"] == "0000:11:00.0"
    assert mi300x.memory_bytes == 206141652992
    assert mi300x.properties["max_gfx_clock_mhz"] == 2100
    assert mi300x.peak("memory_bandwidth", "table").value == pytest.approx(5.3e12)
    assert radeon.id == "rocm:1" and "0x744c" in radeon.name  # no product_name: named by PCI id
    assert radeon.peaks == ()
    assert all(any("pip install accelbench[amd]" in w for w in d.warnings) for d in (mi300x, radeon))


def test_read_sysfs_skips_other_vendors_and_connectors():
    records = amd.read_sysfs(str(SYSFS))
    assert sorted(r["drm_card"] for r in records) == ["card1", "card2"]


def test_kfd_without_readable_gpus_is_not_installed(no_amdsmi, tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "kfd").touch()
    report = run_probe("amd", lambda: amd.probe(sysfs_root=str(tmp_path)))
    assert report.status == NOT_INSTALLED and "/dev/kfd" in report.message


def test_nothing_at_all_is_no_driver(no_amdsmi, tmp_path):
    report = run_probe("amd", lambda: amd.probe(sysfs_root=str(tmp_path)))
    assert report.status == NO_DRIVER and "no AMD GPU" in report.message


def test_amdsmi_with_no_gpus_is_no_driver(tmp_path):
    empty = amd.RecordedAmdsmi({"init": None, "processors": []})
    assert run_probe("amd", lambda: amd.probe(empty, sysfs_root=str(tmp_path))).status == NO_DRIVER


def test_rocm_torch_reaches_with_the_cuda_device_type(rocm_torch, tmp_path):
    devices = with_backend_reach(amd.probe(recorded("mi250x_amdsmi"), sysfs_root=str(tmp_path), environ={}))
    assert [d.reach for d in devices] == [{"torch": f"cuda:{i}"} for i in range(4)]


def test_hip_visible_devices(rocm_torch, tmp_path):
    env = {"HIP_VISIBLE_DEVICES": "3,1"}
    devices = {d.id: d for d in with_backend_reach(amd.probe(recorded("mi250x_amdsmi"), sysfs_root=str(tmp_path),
                                                              environ=env))}
    assert devices["rocm:3"].reach == {"torch": "cuda:0"}
    assert devices["rocm:1"].reach == {"torch": "cuda:1"}
    assert devices["rocm:0"].reach == {} and any("hidden" in w for w in devices["rocm:0"].warnings)


def test_rocr_then_hip_visible_devices_compose(rocm_torch, tmp_path):
    env = {"ROCR_VISIBLE_DEVICES": "1,2,3", "HIP_VISIBLE_DEVICES": "2"}
    devices = {d.id: d for d in with_backend_reach(amd.probe(recorded("mi250x_amdsmi"), sysfs_root=str(tmp_path),
                                                              environ=env))}
    assert devices["rocm:3"].reach == {"torch": "cuda:0"}
    assert [d.id for d in devices.values() if d.reach] == ["rocm:3"]


def fake_amdsmi_module(init_status=None):
    class AmdSmiException(Exception):
        pass

    class AmdSmiLibraryException(AmdSmiException):
        def __init__(self, err_code):
            super().__init__(f"error {err_code}")
            self.err_code = err_code

    class AmdSmiRetCode(enum.IntEnum):
        STATUS_NOT_SUPPORTED = 2
        STATUS_NO_PERM = 10

    def init():
        if init_status is not None:
            raise AmdSmiLibraryException(init_status)

    return types.SimpleNamespace(AmdSmiException=AmdSmiException, AmdSmiRetCode=AmdSmiRetCode,
                                 amdsmi_init=init, amdsmi_shut_down=lambda: None,
                                 amdsmi_get_processor_handles=lambda: [])


def test_amdsmi_adapter_maps_status_codes(tmp_path):
    adapter = amd.AmdsmiAdapter(fake_amdsmi_module(init_status=10))
    report = run_probe("amd", lambda: amd.probe(adapter, sysfs_root=str(tmp_path)))
    assert report.status == NO_PERMISSION


def test_amdsmi_adapter_with_no_processors(tmp_path):
    adapter = amd.AmdsmiAdapter(fake_amdsmi_module())
    assert run_probe("amd", lambda: amd.probe(adapter, sysfs_root=str(tmp_path))).status == NO_DRIVER


def test_status_ok_for_the_sysfs_snapshot(no_amdsmi):
    report = run_probe("amd", lambda: amd.probe(sysfs_root=str(SYSFS), environ={}))
    assert report.status == OK and len(report.devices) == 2
