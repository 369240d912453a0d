"""The CPU probe on recorded machines (Arm Graviton2, Intel Sapphire Rapids) and on this one."""
import os

import pytest

from accelbench.devices import cpu
from accelbench.devices.sysfs import SysReader, parse_cpu_list, parse_size_bytes


def _probe(data_dir, name):
    (device,) = cpu.probe(SysReader(data_dir / "cpu" / name), measure_clock=False, live=False)
    return device


def test_arm_neoverse_n1_recording(data_dir):
    device = _probe(data_dir, "graviton2")
    p = device.properties
    assert device.vendor == "Arm" and device.name == "Neoverse N1"
    assert p["architecture"] == "aarch64"
    assert {"NEON", "NEON dot product"} <= set(p["features"]) and "SVE" not in p["features"]
    assert (p["sockets"], p["physical_cores"], p["logical_cores"]) == (1, 4, 4)
    assert p["l1d_cache_bytes"] == 64 * 1024 and p["l1d_cache_instances"] == 4
    assert p["l3_cache_bytes"] == 32 * 1024**2 and p["l3_cache_instances"] == 1
    assert p["max_clock_mhz"] == 2500 and p["nominal_clock_mhz"] is None
    assert device.memory_bytes == 16095308 * 1024
    fp64 = device.peak("fp64", "formula")
    # 4 cores × 2.5 GHz × 8 FLOP/cycle (2 × 128-bit FMA)
    assert fp64.value == pytest.approx(4 * 2.5e9 * 8)
    assert device.peak("fp32").value == pytest.approx(2 * fp64.value)
    assert "4 cores × 2.5 GHz × 8 FLOP/cycle" in fp64.detail


def test_intel_sapphire_rapids_nominal_formula_matches_the_brief(data_dir):
    device = _probe(data_dir, "xeon-spr")
    p = device.properties
    assert p["nominal_clock_mhz"] == 2600 and p["nominal_clock_source"] == "model name"
    assert {"AVX-512F", "AMX-BF16", "AVX-512 FP16", "AVX-VNNI"} <= set(p["features"])
    # the nominal-clock formula: 2 cores × 2.6 GHz × 64 FLOP/cycle = 333 GFLOP/s fp32
    assert device.peak("fp32", "formula").value == pytest.approx(332.8e9)
    assert device.peak("fp64", "formula").value == pytest.approx(166.4e9)
    assert device.peak("bf16_matrix", "formula").value == pytest.approx(2 * 2.6e9 * 1024)
    assert "Xeon Silver" in device.peak("fp32").detail  # the assumption is stated, not hidden


def test_unknown_arm_core_gives_no_number_and_a_warning(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_text(
        "processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xfff\n")
    (device,) = cpu.probe(SysReader(tmp_path), measure_clock=False, live=False)
    assert device.peaks == ()
    assert any("FLOP per cycle unknown" in w for w in device.warnings)


def test_this_machine(data_dir):
    (device,) = cpu.probe()
    p = device.properties
    assert p["logical_cores"] == os.cpu_count()
    assert p["physical_cores"] >= 1 and p["memory_total_bytes"] > 2**30
    libraries = p["blas_libraries"]
    assert any(lib["api"] == "blas" and lib["threads"] >= 1 and lib["version"] for lib in libraries)
    if os.uname().machine == "x86_64":
        assert "SSE4.2" in p["features"]
        # the imul chain: a running clock between 0.5 and 7 GHz is physically plausible
        assert p["running_clock_mhz"] and 500 < p["running_clock_mhz"] < 7000


def test_thread_environment_is_reported(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    (device,) = cpu.probe(measure_clock=False)
    assert device.properties["thread_environment"]["OPENBLAS_NUM_THREADS"] == "1"


def test_sysfs_parsers():
    assert parse_cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpu_list("") == []
    assert parse_size_bytes("48K") == 48 * 1024 and parse_size_bytes("32M") == 32 * 1024**2
    assert parse_size_bytes("junk") is None
