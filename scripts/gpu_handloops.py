"""Hand-written best-practice GPU measurements, independent of accelbench, for scripts/gpu_check.sh.

Each figure is timed with CUDA events around a loop of calls on one stream, after warm-up calls,
and `torch.cuda.synchronize()` before anything is read; the figure is the median of several
repeats, with the repeats' spread. accelbench's own figures are compared with these in
scripts/gpu_summary.py. Nothing here imports accelbench, so a bug there cannot hide here.

    python3 scripts/gpu_handloops.py --out hand.json     # measures, or writes why it cannot
    python3 scripts/gpu_handloops.py --detect mode.json  # only: is there a CUDA GPU?

Without a CUDA GPU (or without torch) the output says "no GPU" and the exit status is 0.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

MATMUL_ORDER = 8192            # accelbench's bf16 figure at this order is checked against this loop
COPY_BYTES = 64 * 2**20        # the largest size of accelbench's quick memcpy grid: the like-for-like copy
LARGE_COPY_BYTES = 2**30       # a copy long enough that launch overhead is negligible
REPEATS = 7                    # timed loops per figure; the median is reported, with the spread
TARGET_LOOP_S = 0.02           # each timed loop lasts about this long (sized from one warm-up call)


def detect() -> dict[str, Any]:
    """Whether torch reaches a CUDA GPU, and if not, why (the words every SKIP line repeats)."""
    try:
        import torch
    except ImportError as error:
        return {"gpu": False, "reason": f"torch is not installed ({error})"}
    versions = {"python": platform.python_version(), "torch": str(torch.__version__),
                "cuda": str(torch.version.cuda) if torch.version.cuda else None}
    if torch.version.cuda is None:
        return {"gpu": False, "reason": f"torch {torch.__version__} is built without CUDA", "versions": versions}
    try:
        available = torch.cuda.is_available() and torch.cuda.device_count() > 0
    except Exception as error:  # noqa: BLE001 - a broken driver is a reason, not a crash
        return {"gpu": False, "reason": f"CUDA does not initialise: {error}", "versions": versions}
    if not available:
        return {"gpu": False, "reason": "torch.cuda.is_available() is False (no driver or no visible GPU)",
                "versions": versions}
    versions["cudnn"] = str(torch.backends.cudnn.version())
    return {"gpu": True, "reason": "", "device_name": torch.cuda.get_device_name(0), "versions": versions}


def timed_per_call(torch, call: Callable[[], Any], repeats: int = REPEATS) -> dict[str, Any]:
    """Seconds per call: CUDA events around `iterations` calls, `repeats` times, after warm-up."""
    for _ in range(3):
        call()  # first calls: cuBLAS heuristics, allocator, clocks ramping up
    torch.cuda.synchronize()
    started = time.perf_counter()
    call()
    torch.cuda.synchronize()
    iterations = max(1, min(1000, round(TARGET_LOOP_S / max(time.perf_counter() - started, 1e-6))))
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_call = []
    for _ in range(repeats):
        begin.record()
        for _ in range(iterations):
            call()
        end.record()
        torch.cuda.synchronize()
        per_call.append(begin.elapsed_time(end) / 1e3 / iterations)  # elapsed_time is in ms
    median = statistics.median(per_call)
    return {"median_s": median, "min_s": min(per_call), "max_s": max(per_call),
            "spread": (max(per_call) - min(per_call)) / median, "repeats": repeats, "iterations": iterations}


def uniform(torch, shape: tuple[int, ...], dtype) -> Any:
    """uniform(-1, 1), as accelbench draws its inputs: the values change the power drawn, so the clocks."""
    return (torch.rand(shape, device="cuda:0", dtype=torch.float32) * 2 - 1).to(dtype)


def matmul(torch, dtype_name: str, n: int = MATMUL_ORDER, tf32: bool = False) -> dict[str, Any]:
    """C = A·B into a preallocated C; checked on a corner against float64 on the host."""
    dtype = getattr(torch, dtype_name)
    a, b = uniform(torch, (n, n), dtype), uniform(torch, (n, n), dtype)
    c = torch.empty((n, n), device="cuda:0", dtype=dtype)
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32  # fp32 is strict unless TF32 is asked for
    try:
        timing = timed_per_call(torch, lambda: torch.matmul(a, b, out=c))
        corner = (a[:64].double().cpu() @ b[:, :64].double().cpu())
        error = float((c[:64, :64].double().cpu() - corner).norm() / corner.norm())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    flops = 2.0 * n**3
    return {**timing, "n": n, "dtype": dtype_name, "tf32": tf32, "flops": flops,
            "tflops": flops / timing["median_s"] / 1e12, "corner_rel_error": error}


def device_copy(torch, nbytes: int) -> dict[str, Any]:
    """dst ← src on the GPU; bandwidth counts the read and the write (2 × bytes)."""
    count = nbytes // 4
    source = uniform(torch, (count,), torch.float32)
    target = torch.empty_like(source)
    timing = timed_per_call(torch, lambda: target.copy_(source))
    identical = bool(torch.equal(source, target))
    return {**timing, "bytes": nbytes, "bytes_moved": 2.0 * nbytes,
            "tb_per_s": 2.0 * nbytes / timing["median_s"] / 1e12, "identical": identical}


def host_to_device(torch, nbytes: int, pinned: bool) -> dict[str, Any]:
    """GPU ← host, from page-locked memory (asynchronous DMA) or from ordinary pageable memory."""
    count = nbytes // 4
    host = torch.empty((count,), dtype=torch.float32, pin_memory=pinned)
    host.uniform_(-1.0, 1.0)
    target = torch.empty((count,), dtype=torch.float32, device="cuda:0")
    timing = timed_per_call(torch, lambda: target.copy_(host, non_blocking=pinned))
    identical = bool(torch.equal(target.cpu(), host))
    return {**timing, "bytes": nbytes, "pinned": pinned,
            "gb_per_s": nbytes / timing["median_s"] / 1e9, "identical": identical}


def nvml_snapshot() -> dict[str, Any]:
    """Driver, clocks, power and utilisation of GPU 0 as NVML reads them now (for the record)."""
    try:
        import pynvml
    except ImportError as error:
        return {"error": f"pynvml is not installed ({error})"}
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        utilisation = pynvml.nvmlDeviceGetUtilizationRates(handle)
        snapshot = {
            "driver": _text(pynvml.nvmlSystemGetDriverVersion()),
            "name": _text(pynvml.nvmlDeviceGetName(handle)),
            "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "max_sm_clock_mhz": pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000,
            "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000,
            "utilization_percent": utilisation.gpu,
        }
        pynvml.nvmlShutdown()
        return snapshot
    except Exception as error:  # noqa: BLE001 - a missing NVML call is recorded, the rest still runs
        return {"error": f"{type(error).__name__}: {error}"}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def figures_of(torch, order: int = MATMUL_ORDER, copy_bytes: int = COPY_BYTES,
               large_copy_bytes: int = LARGE_COPY_BYTES) -> dict[str, Any]:
    """Every hand figure the summary compares, each under its own key (a failure is recorded there)."""
    plans: dict[str, Callable[[], dict[str, Any]]] = {
        "matmul_bfloat16": lambda: matmul(torch, "bfloat16", order),
        "matmul_float16": lambda: matmul(torch, "float16", order),
        "matmul_float32": lambda: matmul(torch, "float32", order),
        "matmul_tf32": lambda: matmul(torch, "float32", order, tf32=True),
        "d2d_copy": lambda: device_copy(torch, copy_bytes),
        "d2d_copy_large": lambda: device_copy(torch, large_copy_bytes),
        "h2d_pinned": lambda: host_to_device(torch, copy_bytes, pinned=True),
        "h2d_pageable": lambda: host_to_device(torch, copy_bytes, pinned=False),
    }
    figures: dict[str, Any] = {}
    for name, plan in plans.items():
        try:
            figures[name] = plan()
        except Exception as error:  # noqa: BLE001 - one failing loop must not lose the others
            figures[name] = {"error": f"{type(error).__name__}: {error}"}
        torch.cuda.empty_cache()
    return figures


def measure_all() -> dict[str, Any]:
    found = detect()
    if not found["gpu"]:
        return {**found, "status": "skip", "reason": f"no GPU: {found['reason']}"}
    import torch

    figures = figures_of(torch)
    return {"status": "ok", **found, "nvml": nvml_snapshot(), "figures": figures,
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", type=Path, help="write the hand-loop figures (JSON) here")
    what.add_argument("--detect", type=Path, help="only write whether a CUDA GPU is reachable (JSON)")
    args = parser.parse_args(argv)
    document = detect() if args.detect else measure_all()
    target = args.detect or args.out
    target.write_text(json.dumps(document, indent=2) + "\n")
    print("GPU: " + (document.get("device_name", "yes") if document.get("gpu") else f"none ({document['reason']})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
