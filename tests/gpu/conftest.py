"""GPU tests skip, with the reason, where no GPU answers: the GPU kit's CPU mode runs them too
(scripts/gpu_check.sh), and a machine without NVML's library must not fail them."""
from __future__ import annotations

from functools import lru_cache

import pytest


@lru_cache(maxsize=1)
def missing_gpu() -> str:
    """'' when a CUDA or ROCm device answers through torch or NVML, else why none does."""
    reasons = []
    try:
        import torch

        if torch.cuda.is_available() and torch.cuda.device_count() > 0:
            return ""
        reasons.append(f"torch {torch.__version__} sees no CUDA/ROCm device")
    except Exception as exc:  # noqa: BLE001 - any import failure is a reason, not an error
        reasons.append(f"torch unavailable ({type(exc).__name__}: {exc})")
    try:
        from accelbench.devices import nvidia

        if nvidia.probe():
            return ""
        reasons.append("NVML lists no GPU")
    except Exception as exc:  # noqa: BLE001 - e.g. NVML Shared Library Not Found
        reasons.append(f"NVML: {exc}")
    return "; ".join(reasons)


@pytest.fixture(autouse=True)
def _needs_a_gpu(request):
    if "gpu" in request.keywords:
        why = missing_gpu()
        if why:
            pytest.skip(f"no GPU here: {why}")
