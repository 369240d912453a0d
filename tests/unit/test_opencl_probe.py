"""The OpenCL probe: the real PoCL device where installed, recorded platforms everywhere.

Recorded platforms use pyopencl's attribute names, so the probe reads them exactly as it reads
pyopencl's own objects; an entry {"error": ...} raises on every read, as a broken driver does.
"""
from __future__ import annotations

import json
import sys
from types import ModuleType

import pytest

from accelbench.devices import opencl
from accelbench.devices.model import ERROR, NO_DRIVER, NOT_INSTALLED, OK
from accelbench.devices.probing import run_probe

GPU, CPU, ACCELERATOR = opencl.DEVICE_TYPE_GPU, opencl.DEVICE_TYPE_CPU, opencl.DEVICE_TYPE_ACCELERATOR


def _device(**overrides):
    fields = {
        "name": "NVIDIA A100-SXM4-40GB", "vendor": "NVIDIA Corporation", "type": GPU,
        "max_compute_units": 108, "max_clock_frequency": 1410, "global_mem_size": 42_298_834_944,
        "local_mem_size": 49_152, "max_mem_alloc_size": 10_574_708_736, "max_constant_buffer_size": 65_536,
        "global_mem_cache_size": 3_538_944, "max_work_group_size": 1024, "max_work_item_sizes": [1024, 1024, 64],
        "preferred_vector_width_float": 1, "address_bits": 64, "host_unified_memory": 0,
        "driver_version": "550.54.15", "version": "OpenCL 3.0 CUDA", "opencl_c_version": "OpenCL C 1.2 ",
        "extensions": "cl_khr_fp64 cl_khr_fp16 cl_nv_device_attribute_query", "double_fp_config": 63,
        "local_mem_type": 1, "compute_capability_major_nv": 8, "compute_capability_minor_nv": 0,
    }
    fields.update(overrides)
    return fields


NVIDIA = {"name": "NVIDIA CUDA", "vendor": "NVIDIA Corporation", "version": "OpenCL 3.0 CUDA 12.4.131",
          "devices": [_device()]}
POCL = {"name": "Portable Computing Language", "vendor": "The pocl project", "version": "OpenCL 3.0 PoCL 3.0",
        "devices": [_device(name="pthread-AMD EPYC", vendor="AuthenticAMD", type=CPU, max_compute_units=2,
                            max_clock_frequency=2596, extensions="cl_khr_fp64", local_mem_type=2,
                            compute_capability_major_nv=None)]}


def test_real_probe_lists_the_pocl_device_with_fp64_and_limits():
    pytest.importorskip("pyopencl", reason="pyopencl is not installed: pip install accelbench[opencl]")
    report = run_probe("opencl", opencl.probe)
    assert report.status == OK, report.message
    pocl = [d for d in report.devices if d.properties["platform_name"] == "Portable Computing Language"]
    if not pocl:
        pytest.skip("PoCL is absent: pip install pocl-binary-distribution")
    device = pocl[0]
    p_index, d_index = device.properties["platform_index"], device.properties["device_index"]
    assert device.id == f"opencl:{p_index}:{d_index}" and device.reach == {"pyopencl": device.id}
    assert device.kind == "cpu" and device.source == "pyopencl"
    props = device.properties
    assert props["fp64"] is True and "cl_khr_fp64" in props["extensions"]
    for name in ("compute_units", "max_clock_mhz", "global_memory_bytes", "local_memory_bytes",
                 "max_work_group_size"):
        assert isinstance(props[name], int) and props[name] > 0, name
    assert len(props["max_work_item_sizes"]) == 3
    assert props["opencl_version"].startswith("OpenCL") and props["driver_version"]
    assert props["platform_vendor"] == "The pocl project"
    assert device.memory_bytes == props["global_memory_bytes"]
    assert device.peaks == () and "CPU" in props["peak_note"]  # a CPU device's peak is the CPU's
    json.dumps([d.to_dict() for d in report.devices])


def test_recording_replays_to_the_same_devices():
    pytest.importorskip("pyopencl", reason="pyopencl is not installed")
    recording = json.loads(json.dumps(opencl.record()))
    live = opencl.probe()
    replayed = opencl.probe(opencl.recorded_platforms(recording))
    assert [d.to_dict() for d in replayed] == [d.to_dict() for d in live]


def test_a_broken_platform_and_a_broken_device_leave_the_rest_listed():
    broken_platform = {"error": "clGetPlatformInfo failed: OUT_OF_HOST_MEMORY"}
    platform = dict(NVIDIA, devices=[_device(), {"error": "clGetDeviceInfo failed: INVALID_DEVICE"}])
    devices = opencl.probe(opencl.recorded_platforms([broken_platform, platform, POCL]))
    assert [d.id for d in devices] == ["opencl:1:0", "opencl:2:0"]  # indices do not shift
    for device in devices:
        assert any("platform 0 skipped" in w and "OUT_OF_HOST_MEMORY" in w for w in device.warnings)
        assert any("opencl:1:1" in w and "INVALID_DEVICE" in w for w in device.warnings)


def test_every_platform_broken_is_an_error_not_an_empty_list():
    report = run_probe("opencl", lambda: opencl.probe(opencl.recorded_platforms([{"error": "boom"}])))
    assert report.status == ERROR and "boom" in report.message


def test_an_unreadable_field_is_missing_with_a_warning():
    fields = _device()
    del fields["max_clock_frequency"]
    (device,) = opencl.probe(opencl.recorded_platforms([dict(NVIDIA, devices=[fields])]))
    assert device.properties["max_clock_mhz"] is None
    assert device.warnings == ("could not read: max_clock_frequency",)
    assert device.peaks == ()  # no clock, no formula


def test_gpu_kind_properties_and_fp32_formula_peak():
    (device,) = opencl.probe(opencl.recorded_platforms([NVIDIA]))
    assert device.kind == "gpu" and device.vendor == "NVIDIA Corporation"
    props = device.properties
    assert props["fp16"] is True and props["fp64"] is True and props["compute_capability"] == "8.0"
    assert props["local_memory_type"] == "local" and props["host_unified_memory"] is False
    peak = device.peak("fp32")
    assert peak.provenance == "formula" and peak.value == pytest.approx(19.49e12, rel=1e-3)  # A100 datasheet: 19.5
    assert "108 compute units" in peak.detail and peak.inputs["lanes_per_unit"] == 64


def test_accelerator_and_unknown_gpu_get_no_guessed_peak():
    accelerator = dict(NVIDIA, devices=[_device(type=ACCELERATOR, extensions="", name="FPGA emulator",
                                                compute_capability_major_nv=None)])
    intel = dict(NVIDIA, devices=[_device(name="Intel(R) Arc(TM) A770", extensions="cl_khr_fp16")])
    (fpga,), (arc,) = opencl.probe(opencl.recorded_platforms([accelerator])), \
        opencl.probe(opencl.recorded_platforms([intel]))
    assert fpga.kind == "accelerator" and fpga.properties["fp64"] is True  # double_fp_config says so
    for device in (fpga, arc):
        assert device.peaks == () and "lanes" in device.properties["peak_note"]


def test_amd_gcn_formula_uses_64_lanes_per_compute_unit():
    mi100 = _device(name="gfx908:sramecc+:xnack-", vendor="Advanced Micro Devices, Inc.", max_compute_units=120,
                    max_clock_frequency=1502, extensions="cl_khr_fp64")
    (device,) = opencl.probe(opencl.recorded_platforms([dict(NVIDIA, devices=[mi100])]))
    assert device.peak("fp32").value == pytest.approx(23.07e12, rel=1e-3)  # MI100 datasheet: 23.1


def test_missing_pyopencl_is_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyopencl", None)  # import now raises ModuleNotFoundError
    report = run_probe("opencl", opencl.probe)
    assert report.status == NOT_INSTALLED
    assert report.message == "pyopencl is not installed: pip install accelbench[opencl]"


def _fake_pyopencl(get_platforms) -> ModuleType:
    module = ModuleType("pyopencl")

    class Error(Exception):
        code = None

    class LogicError(Error):
        code = -1001

    module.Error, module.LogicError = Error, LogicError
    module.get_platforms = lambda: get_platforms(module)
    return module


def test_no_platform_is_no_driver_naming_the_icd_loader(monkeypatch):
    def raise_not_found(module):
        raise module.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")

    monkeypatch.setitem(sys.modules, "pyopencl", _fake_pyopencl(raise_not_found))
    report = run_probe("opencl", opencl.probe)
    assert report.status == NO_DRIVER and "ICD loader" in report.message
    monkeypatch.setitem(sys.modules, "pyopencl", _fake_pyopencl(lambda module: []))
    assert run_probe("opencl", opencl.probe).status == NO_DRIVER
