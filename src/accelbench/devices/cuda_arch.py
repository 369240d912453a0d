"""NVIDIA GPU architectures by CUDA compute capability: what the peak formulas need.

Per compute capability: the architecture, FP32 cores ("CUDA cores") per SM and the FP64 rate
relative to FP32. Sources: the "Arithmetic Instructions" throughput table of the CUDA C++
Programming Guide (results per clock per SM), cross-checked against each architecture's
whitepaper. A compute capability missing here is reported as unknown with a warning: the
numbers differ too much between generations (64 vs 128 vs 192 cores per SM, FP64 from 1/2 to
1/64) for a guess to be better than no number.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

PROGRAMMING_GUIDE = "CUDA C++ Programming Guide, arithmetic instruction throughput table"


@dataclass(frozen=True)
class CudaArch:
    compute_capability: str
    architecture: str
    chips: str
    fp32_cores_per_sm: int
    fp64_per_fp32: Fraction
    source: str
    note: str = ""

    @property
    def fp64_ratio_text(self) -> str:
        return f"{self.fp64_per_fp32.numerator}/{self.fp64_per_fp32.denominator}"


def _arch(cc: str, name: str, chips: str, cores: int, fp64: tuple[int, int], source: str,
          note: str = "") -> CudaArch:
    return CudaArch(cc, name, chips, cores, Fraction(*fp64), source, note)


_TABLE: dict[str, CudaArch] = {a.compute_capability: a for a in (
    _arch("2.0", "Fermi", "GF100, GF110", 32, (1, 2), "NVIDIA Fermi Compute Architecture whitepaper (2009)",
          "GeForce Fermi boards run FP64 at 1/8"),
    _arch("2.1", "Fermi", "GF104, GF106, GF108, GF114, GF116", 48, (1, 12), PROGRAMMING_GUIDE),
    _arch("3.0", "Kepler", "GK104, GK106, GK107", 192, (1, 24), "NVIDIA GeForce GTX 680 (GK104) whitepaper (2012)"),
    _arch("3.2", "Kepler", "GK20A (Tegra K1)", 192, (1, 24), PROGRAMMING_GUIDE),
    _arch("3.5", "Kepler", "GK110, GK110B, GK208", 192, (1, 3),
          "NVIDIA Kepler GK110 architecture whitepaper (2012)",
          "1/3 is the Tesla/Titan rate; GeForce GTX 780 boards and GK208 parts run FP64 at 1/24"),
    _arch("3.7", "Kepler", "GK210 (Tesla K80)", 192, (1, 3), "NVIDIA Tesla K80 board specification (2015)"),
    _arch("5.0", "Maxwell", "GM107, GM108", 128, (1, 32), "NVIDIA GeForce GTX 750 Ti (GM107) whitepaper (2014)"),
    _arch("5.2", "Maxwell", "GM200, GM204, GM206", 128, (1, 32), "NVIDIA GeForce GTX 980 (GM204) whitepaper (2014)"),
    _arch("5.3", "Maxwell", "GM20B (Tegra X1)", 128, (1, 32), PROGRAMMING_GUIDE),
    _arch("6.0", "Pascal", "GP100", 64, (1, 2), "NVIDIA Tesla P100 whitepaper (2016)"),
    _arch("6.1", "Pascal", "GP102, GP104, GP106, GP107, GP108", 128, (1, 32),
          "NVIDIA GeForce GTX 1080 whitepaper (2016)"),
    _arch("6.2", "Pascal", "GP10B (Tegra X2)", 128, (1, 32), PROGRAMMING_GUIDE),
    _arch("7.0", "Volta", "GV100", 64, (1, 2), "NVIDIA Tesla V100 GPU Architecture whitepaper (2017)"),
    _arch("7.5", "Turing", "TU102, TU104, TU106, TU116, TU117", 64, (1, 32),
          "NVIDIA Turing GPU Architecture whitepaper (2018)"),
    _arch("8.0", "Ampere", "GA100", 64, (1, 2), "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020)"),
    _arch("8.6", "Ampere", "GA102, GA103, GA104, GA106, GA107", 128, (1, 64),
          "NVIDIA Ampere GA102 GPU Architecture whitepaper (2020)"),
    _arch("8.7", "Ampere", "GA10B (Jetson Orin)", 128, (1, 64), PROGRAMMING_GUIDE),
    _arch("8.9", "Ada Lovelace", "AD102, AD103, AD104, AD106, AD107", 128, (1, 64),
          "NVIDIA Ada GPU Architecture whitepaper (2022)"),
    _arch("9.0", "Hopper", "GH100", 128, (1, 2), "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022)"),
    _arch("10.0", "Blackwell", "GB100, GB102 (B100, B200, GB200)", 128, (1, 2),
          "NVIDIA Blackwell Architecture Technical Brief (2024)"),
    _arch("12.0", "Blackwell", "GB202, GB203, GB205, GB206, GB207", 128, (1, 64),
          "NVIDIA RTX Blackwell GPU Architecture whitepaper (2025)"),
)}


def normalize(compute_capability: str | Sequence[int]) -> str:
    """"8.6" from "8.6", (8, 6), [8, 6] or "sm_86"."""
    if isinstance(compute_capability, (tuple, list)):
        major, minor = compute_capability
        return f"{int(major)}.{int(minor)}"
    text = str(compute_capability).strip().lower()
    if text.startswith("sm_") and text[3:].isdigit() and len(text) >= 5:
        return f"{int(text[3:-1])}.{int(text[-1])}"
    return text


def lookup(compute_capability: str | Sequence[int]) -> tuple[CudaArch | None, str | None]:
    """(architecture, None) for a known compute capability, (None, warning) for an unknown one."""
    key = normalize(compute_capability)
    arch = _TABLE.get(key)
    if arch is not None:
        return arch, None
    known = ", ".join(_TABLE)
    return None, (
        f"compute capability {key} is not in accelbench's architecture table (known: {known}); "
        "cores per SM and the FP64 rate are unknown, so no FP32/FP64 formula peak is given"
    )


def known_compute_capabilities() -> tuple[str, ...]:
    return tuple(_TABLE)


# -- compute capabilities as builds and drivers write them ------------------------------------------
def parse_cuda_target(arch: str) -> tuple[str, tuple[int, int]] | None:
    """"sm_90" -> ("sm", (9, 0)); "compute_120" -> ("compute", (12, 0)); "sm_90a" -> ("sm", (9, 0))."""
    found = re.fullmatch(r"(sm|compute)_(\d+)(\d)[a-z]?", arch.strip())
    return (found.group(1), (int(found.group(2)), int(found.group(3)))) if found else None


def arch_list_supports(arch_list: list[str], capability: tuple[int, int]) -> bool:
    """Whether a build for `arch_list` (torch.cuda.get_arch_list()) runs on a GPU of `capability`:
    a cubin (sm_XY) runs on the same major version at an equal or newer minor; PTX (compute_XY)
    is compiled by the driver for any equal or newer GPU."""
    for target in filter(None, map(parse_cuda_target, arch_list)):
        kind, (major, minor) = target
        if kind == "sm" and major == capability[0] and minor <= capability[1]:
            return True
        if kind == "compute" and (major, minor) <= tuple(capability):
            return True
    return False


def parse_capability(value: Any) -> tuple[int, int] | None:
    """"3.5" or (3, 5) -> (3, 5); anything else -> None."""
    parts = str(value).split(".") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else []
    try:
        return (int(parts[0]), int(parts[1])) if len(parts) == 2 else None
    except (TypeError, ValueError):
        return None
