"""Estimate the CPU's running clock from a dependent integer-multiply chain.

The nominal clock ("2.60GHz" in the model name) can be far from the running one under turbo.
A chain of `imul rax, rax`, each waiting on the last, runs at one multiply per 3 cycles on every
x86-64 core since Nehalem and Zen, so cycles = 3 × multiplies and GHz = cycles / seconds. An add
chain would over-report: adds can be fused or eliminated. The chain is a few bytes of machine
code placed in an executable page (x86-64 System V only); anywhere that is not possible the
estimate is simply absent, with the reason.
"""
from __future__ import annotations

import ctypes
import mmap
import platform
import sys
import time
from dataclasses import dataclass

IMUL_LATENCY_CYCLES = 3
_MULTIPLIES_PER_ITERATION = 8

# mov rax, 3 ; loop: imul rax, rax (×8) ; dec rdi ; jnz loop ; ret
_IMUL_RAX_RAX = bytes.fromhex("480fafc0")
_BODY = _IMUL_RAX_RAX * _MULTIPLIES_PER_ITERATION + bytes.fromhex("48ffcf")  # dec rdi
_JUMP_BACK = bytes([0x75, (-(len(_BODY) + 2)) & 0xFF])  # jnz rel8 to the loop's start
_CODE = bytes.fromhex("48c7c003000000") + _BODY + _JUMP_BACK + bytes([0xC3])


@dataclass(frozen=True)
class ClockEstimate:
    ghz: float | None
    method: str
    reason: str = ""


def _supported() -> str:
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        return f"no cycle-counting chain for {machine or 'this'} processors"
    if sys.platform not in ("linux", "darwin") and not sys.platform.startswith("freebsd"):
        return "the multiply chain uses the System V calling convention, not this OS's"
    return ""


def _make_chain():
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(_CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    chain = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64)(address)
    return page, chain


def estimate_running_clock(iterations: int = 400_000, repeats: int = 7) -> ClockEstimate:
    """Best of `repeats` timings of the chain (about 10 ms in all at 4 GHz)."""
    reason = _supported()
    if reason:
        return ClockEstimate(None, "imul-chain", reason)
    try:
        page, chain = _make_chain()
    except (OSError, ValueError, AttributeError) as exc:  # W^X policies forbid executable pages
        return ClockEstimate(None, "imul-chain", f"no executable memory: {exc}")
    try:
        chain(iterations // 4)  # wake the core up to its running clock first
        best_s = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            chain(iterations)
            best_s = min(best_s, time.perf_counter() - started)
    finally:
        del chain
        page.close()
    cycles = iterations * _MULTIPLIES_PER_ITERATION * IMUL_LATENCY_CYCLES
    return ClockEstimate(cycles / best_s / 1e9, "imul-chain")
