import re

import pytest

from accelbench.devices import datasheets
from accelbench.devices.model import PEAK_METRICS

GIB = 1024 ** 3


@pytest.mark.parametrize("name, key", [
    ("Tesla K40m", "tesla-k40"),
    ("Tesla K40c", "tesla-k40"),
    ("Tesla V100-SXM2-32GB", "v100-sxm2"),
    ("Tesla V100-PCIE-16GB", "v100-pcie"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
    ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 SXM5", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H200", "h200-sxm"),
    ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("Apple M1", "apple-m1"),
    ("Apple M2 GPU", "apple-m2"),
    ("Apple M3", "apple-m3"),
    ("AMD Instinct MI250X", "mi250x"),
    ("AMD Instinct MI300X", "mi300x"),
    ("Intel(R) UHD Graphics 630", "intel-uhd-630"),
    ("Intel Inc. Intel(R) UHD Graphics 630", "intel-uhd-630"),
    ("AMD Radeon Pro 5300M", "radeon-pro-5300m"),
    ("AMD AMD Radeon Pro 5300M Compute Engine", "radeon-pro-5300m"),
])
def test_lookup_matches_driver_names(name, key):
    row = datasheets.lookup(name)
    assert row is not None and row.key == key


@pytest.mark.parametrize("name", [
    "NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA GH200 480GB", "Tesla V100S-PCIE-32GB",
    "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 4090 Laptop GPU", "Apple M1 Pro", "Apple M2 Max",
    "AMD Instinct MI250X/MI250", "AMD Instinct MI250", "Tesla K80", "", "llvmpipe",
])
def test_lookup_refuses_look_alikes(name):
    assert datasheets.lookup(name) is None
    assert datasheets.table_peaks(name) == ()


def test_every_row_is_sourced_and_uses_known_metrics():
    for row in datasheets.rows():
        assert row.source and re.search(r"\((19|20)\d\d\)", row.source), row.key
        assert set(row.peaks) <= set(PEAK_METRICS), row.key
        assert row.peaks, row.key


def test_rows_are_internally_plausible():
    for row in datasheets.rows():
        p = row.peaks
        if "fp64" in p and "fp32" in p:
            assert p["fp64"] <= p["fp32"], row.key
        if "fp16_matrix" in p and "fp32" in p:
            assert p["fp16_matrix"] >= p["fp32"], row.key
        assert 1e10 < p["memory_bandwidth"] < 1e13, row.key


def test_every_name_matches_at_most_one_row():
    for row in datasheets.rows():
        assert datasheets.candidates(row.name) == (row,), row.key


def test_table_peaks_are_table_figures_naming_their_source():
    figures = {f.metric: f for f in datasheets.table_peaks("Tesla K40m")}
    assert figures["fp32"].value == pytest.approx(4.29e12)
    assert figures["fp64"].value == pytest.approx(1.43e12)
    assert figures["memory_bandwidth"].value == pytest.approx(288e9)
    for figure in figures.values():
        assert figure.provenance == "table"
        assert "Tesla K40 GPU Accelerator datasheet (2013)" in figure.detail
        assert figure.inputs["row"] == "tesla-k40"


def test_h100_sxm_tensor_figures_are_dense():
    figures = {f.metric: f.value for f in datasheets.table_peaks("NVIDIA H100 80GB HBM3")}
    assert figures["bf16_matrix"] == pytest.approx(989.5e12)
    assert figures["fp32"] == pytest.approx(67e12)
    assert figures["memory_bandwidth"] == pytest.approx(3.35e12)


def test_mi250x_figures_are_per_gcd():
    per_device = {f.metric: f for f in datasheets.table_peaks("AMD Instinct MI250X")}
    assert per_device["fp64"].value == pytest.approx(47.9e12 / 2)
    assert per_device["fp64"].inputs["package_value"] == pytest.approx(47.9e12)
    assert "÷ 2" in per_device["fp64"].detail
    assert datasheets.table_memory_bytes("AMD Instinct MI250X") == 64 * GIB


def test_memory_size_follows_the_board_variant():
    assert datasheets.table_memory_bytes("Tesla V100-SXM2-16GB") == 16 * GIB
    assert datasheets.table_memory_bytes("Tesla V100-SXM2-32GB") == 32 * GIB
    assert datasheets.table_memory_bytes("Tesla V100 SXM2") is None  # which board? not said
    assert datasheets.table_memory_bytes("NVIDIA A100-SXM4-80GB") == 80 * GIB


def test_a_row_with_an_unknown_metric_is_rejected():
    raw = {"key": "x", "name": "X", "vendor": "V", "source": "S (2020)", "match": ["x"],
           "peaks_tera": {"fp33": 1.0, "memory_bandwidth": 0.1}}
    with pytest.raises(ValueError, match="fp33"):
        datasheets._row(raw)


def test_normalize_name():
    assert datasheets.normalize_name("Intel(R) UHD Graphics 630") == "intel uhd graphics 630"
    assert datasheets.normalize_name("NVIDIA A100-SXM4-40GB") == "nvidia a100 sxm4 40gb"
