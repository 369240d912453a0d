from fractions import Fraction

import pytest

from accelbench.devices import cuda_arch


@pytest.mark.parametrize("cc, architecture, cores_per_sm, fp64", [
    ("3.5", "Kepler", 192, Fraction(1, 3)),
    ("3.7", "Kepler", 192, Fraction(1, 3)),
    ("6.0", "Pascal", 64, Fraction(1, 2)),
    ("6.1", "Pascal", 128, Fraction(1, 32)),
    ("7.0", "Volta", 64, Fraction(1, 2)),
    ("7.5", "Turing", 64, Fraction(1, 32)),
    ("8.0", "Ampere", 64, Fraction(1, 2)),
    ("8.6", "Ampere", 128, Fraction(1, 64)),
    ("8.9", "Ada Lovelace", 128, Fraction(1, 64)),
    ("9.0", "Hopper", 128, Fraction(1, 2)),
    ("10.0", "Blackwell", 128, Fraction(1, 2)),
    ("12.0", "Blackwell", 128, Fraction(1, 64)),
])
def test_known_compute_capabilities(cc, architecture, cores_per_sm, fp64):
    arch, warning = cuda_arch.lookup(cc)
    assert warning is None
    assert arch.architecture == architecture
    assert arch.fp32_cores_per_sm == cores_per_sm
    assert arch.fp64_per_fp32 == fp64


def test_gk110_is_the_k40_chip_with_a_one_third_fp64_rate():
    arch, _ = cuda_arch.lookup((3, 5))
    assert "GK110" in arch.chips
    assert arch.fp64_ratio_text == "1/3"
    assert "1/24" in arch.note  # GeForce GK110 boards are slower, and the table says so


@pytest.mark.parametrize("cc", ["99.0", "7.2", "1.3", (11, 0), "garbage"])
def test_unknown_compute_capability_is_explicit_none_with_a_warning(cc):
    arch, warning = cuda_arch.lookup(cc)
    assert arch is None
    assert warning and cuda_arch.normalize(cc) in warning
    assert "no FP32/FP64 formula peak" in warning


@pytest.mark.parametrize("given, expected", [("8.6", "8.6"), ((8, 6), "8.6"), ([9, 0], "9.0"),
                                              ("sm_86", "8.6"), ("sm_100", "10.0"), (" 3.5 ", "3.5")])
def test_normalize(given, expected):
    assert cuda_arch.normalize(given) == expected


def test_every_entry_is_sourced_and_plausible():
    for cc in cuda_arch.known_compute_capabilities():
        arch, _ = cuda_arch.lookup(cc)
        assert arch.source, cc
        assert arch.fp32_cores_per_sm in (32, 48, 64, 128, 192), cc
        assert Fraction(1, 64) <= arch.fp64_per_fp32 <= Fraction(1, 2), cc


@pytest.mark.parametrize("arch_list, capability, runs", [
    (["sm_80"], (8, 6), True),          # a cubin runs on a newer minor of its major
    (["sm_86"], (8, 0), False),         # ... not on an older one
    (["sm_80"], (9, 0), False),         # ... nor on another major
    (["sm_80", "compute_80"], (9, 0), True),  # PTX is compiled by the driver for newer GPUs
    (["sm_37", "sm_50"], (3, 5), False),
    (["sm_35", "sm_50"], (3, 7), True),
    (["sm_90a"], (9, 0), True),
    (["sm_100", "sm_120"], (12, 0), True),
])
def test_arch_list_supports(arch_list, capability, runs):
    assert cuda_arch.arch_list_supports(arch_list, capability) is runs
