"""The GPU's load step, run as a child process (`python -m accelbench.health.gpu_load`) so that a
device that hangs is killed at its deadline: a memory pattern test, a matmul, a device-to-device
copy and a pinned host-to-device copy, through torch. Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

PATTERNS = (0x00, 0xFF, 0x55, 0xAA)   # all bits off, on, and alternating both ways


def _timed(torch, fn, repeats: int) -> float:
    fn()
    torch.cuda.synchronize()
    start_s = time.perf_counter()
    for _ in range(repeats):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start_s) / repeats


def pattern_errors(torch, device, n_bytes: int) -> int:
    """Bytes that read back differently from the pattern written, over every pattern."""
    buffer = torch.empty(n_bytes, dtype=torch.uint8, device=device)
    errors = 0
    for pattern in PATTERNS:
        buffer.fill_(pattern)
        errors += int((buffer != pattern).sum().item())
    ramp = torch.arange(n_bytes, device=device, dtype=torch.int64).remainder_(251).to(torch.uint8)
    buffer.copy_(ramp)
    errors += int((buffer != ramp).sum().item())
    return errors


def measure(index: int, order: int, memory_bytes: int, repeats: int) -> dict:
    import torch

    device = torch.device("cuda", index)
    result: dict = {"pattern_bytes": memory_bytes, "pattern_errors": pattern_errors(torch, device, memory_bytes)}
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    a, b = (torch.randn(order, order, device=device, dtype=dtype) for _ in range(2))
    result["matmul_dtype"] = str(dtype).removeprefix("torch.")
    result["matmul_flop_s"] = 2 * order**3 / _timed(torch, lambda: a @ b, repeats)
    src = torch.empty(memory_bytes // 2, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    result["d2d_bytes_s"] = 2 * src.numel() / _timed(torch, lambda: dst.copy_(src), repeats)
    host = torch.empty(min(memory_bytes // 2, 2**30), dtype=torch.uint8).pin_memory()
    target = torch.empty(host.numel(), dtype=torch.uint8, device=device)
    result["h2d_bytes_s"] = host.numel() / _timed(torch, lambda: target.copy_(host, non_blocking=True), repeats)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=int, required=True, help="torch's index of the GPU")
    parser.add_argument("--order", type=int, default=8192)
    parser.add_argument("--memory-bytes", type=int, default=2**30)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.index, args.order, args.memory_bytes, args.repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
