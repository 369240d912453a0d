"""CPU instruction-set features that matter for speed, and FLOP per cycle per core.

FLOP/cycle depends on the vector width *and* how many FMA pipes a core has, which flags alone do
not tell: the table below encodes the microarchitectures where it is known, says which assumption
it made, and returns None (unknown) rather than guess for the rest.

Sources: Intel 64 and IA-32 Architectures Optimization Reference Manual (2023) for FMA ports per
core; AMD Software Optimization Guide for family 17h / 19h / 1Ah processors; Arm Neoverse N1, N2,
V1, V2 Software Optimization Guides; Intel AMX figures from the Intel Xeon Scalable (4th gen)
product brief (1024 BF16 and 2048 INT8 operations per cycle per core).
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Flag -> the name shown to users. Order is the order shown.
X86_FEATURES = {
    "sse4_1": "SSE4.1", "sse4_2": "SSE4.2", "avx": "AVX", "avx2": "AVX2", "fma": "FMA",
    "f16c": "F16C", "avx512f": "AVX-512F", "avx512dq": "AVX-512DQ", "avx512bw": "AVX-512BW",
    "avx512vl": "AVX-512VL", "avx512_vnni": "AVX-512 VNNI", "avx512_bf16": "AVX-512 BF16",
    "avx512_fp16": "AVX-512 FP16", "avx_vnni": "AVX-VNNI", "amx_tile": "AMX-TILE",
    "amx_bf16": "AMX-BF16", "amx_int8": "AMX-INT8", "amx_fp16": "AMX-FP16",
}
ARM_FEATURES = {
    "asimd": "NEON", "fphp": "FP16", "asimdhp": "NEON FP16", "asimddp": "NEON dot product",
    "sve": "SVE", "sve2": "SVE2", "bf16": "BF16", "i8mm": "Int8 matmul", "sme": "SME",
}

# Arm (implementer, part) -> (name, fp64 FLOP/cycle/core): FMA pipes × lanes × 2
ARM_CORES = {
    (0x41, 0xD0C): ("Neoverse N1", 8),   # 2 × 128-bit FMA
    (0x41, 0xD49): ("Neoverse N2", 8),   # 2 × 128-bit SVE2
    (0x41, 0xD40): ("Neoverse V1", 16),  # 2 × 256-bit SVE
    (0x41, 0xD4F): ("Neoverse V2", 16),  # 4 × 128-bit SVE2
    (0x41, 0xD8E): ("Neoverse N3", 8),
    (0x41, 0xD84): ("Neoverse V3", 16),
    (0x41, 0xD0B): ("Cortex-A76", 8),
    (0x41, 0xD0D): ("Cortex-A77", 8),
    (0x41, 0xD41): ("Cortex-A78", 8),
    (0x61, 0x022): ("Apple M1 Icestorm", 16),
    (0x61, 0x023): ("Apple M1 Firestorm", 16),  # 4 × 128-bit FMA
}


@dataclass(frozen=True)
class FlopRates:
    """FLOP per cycle per core by precision; `assumption` says what the table could not see."""

    fp64: int
    fp32: int
    bf16: int | None = None
    fp16: int | None = None
    bf16_matrix: int | None = None
    int8_matrix: int | None = None
    basis: str = ""
    assumption: str = ""
    extra: dict = field(default_factory=dict)


def shown_features(flags: set[str], arm: bool) -> list[str]:
    table = ARM_FEATURES if arm else X86_FEATURES
    return [shown for flag, shown in table.items() if flag in flags]


def x86_flop_rates(vendor: str, family: int | None, model: int | None, flags: set[str]) -> FlopRates | None:
    amd = "AMD" in vendor.upper()
    if "avx512f" in flags:
        rates = _avx512_rates(amd, family)
    elif "avx2" in flags and "fma" in flags:
        zen1 = amd and family == 0x17 and (model or 0) < 0x30
        rates = (FlopRates(8, 16, basis="2 × 128-bit FMA pipes (Zen 1)") if zen1
                 else FlopRates(16, 32, basis="2 × 256-bit FMA pipes (AVX2)"))
    elif "avx" in flags:
        rates = FlopRates(8, 16, basis="one 256-bit add and one 256-bit multiply per cycle (AVX)")
    elif "sse2" in flags:
        rates = FlopRates(4, 8, basis="one 128-bit add and one 128-bit multiply per cycle (SSE2)")
    else:
        return None
    return _with_low_precision(rates, flags)


def _avx512_rates(amd: bool, family: int | None) -> FlopRates:
    if amd and family == 0x19:
        return FlopRates(16, 32, basis="AVX-512 on 2 × 256-bit FMA pipes (Zen 4)")
    if amd:
        return FlopRates(32, 64, basis="2 × 512-bit FMA pipes (Zen 5)",
                         assumption="mobile Zen 5 parts have 256-bit pipes: half of this")
    return FlopRates(32, 64, basis="2 × 512-bit FMA units (AVX-512)",
                     assumption="assumes 2 AVX-512 FMA units; some Xeon Silver/Bronze parts have 1")


def _with_low_precision(rates: FlopRates, flags: set[str]) -> FlopRates:
    bf16 = rates.fp32 * 2 if "avx512_bf16" in flags else None
    fp16 = rates.fp32 * 2 if "avx512_fp16" in flags else None
    bf16_matrix = 1024 if "amx_bf16" in flags else None
    int8_matrix = 2048 if "amx_int8" in flags else None
    return FlopRates(rates.fp64, rates.fp32, bf16, fp16, bf16_matrix, int8_matrix,
                     rates.basis, rates.assumption)


def arm_flop_rates(implementer: int | None, part: int | None) -> tuple[str | None, FlopRates | None]:
    known = ARM_CORES.get((implementer or -1, part or -1))
    if known is None:
        return None, None
    name, fp64 = known
    return name, FlopRates(fp64, fp64 * 2, basis=f"{name}: {fp64 // 2} fp64 FMA lanes per cycle")
