"""Recorded GPU inventories and a fake CUDA build of torch, for the tests of the tutorial trap.

Import with `from recorded_gpus import nvml_devices, fake_cuda_torch` (tests/ on sys.path).
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

from accelbench.devices import nvidia
from accelbench.devices.nvml_adapter import RecordedNvml

NVML = Path(__file__).parent / "data" / "nvml"
SM_50_TO_90 = ["sm_50", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]


def nvml_devices(name: str, environ: dict | None = None, capability: list[int] | None = None):
    """The Devices the real NVML probe makes from tests/data/nvml/NAME.json (capability overridden)."""
    recording = json.loads((NVML / f"{name}.json").read_text())
    if capability is not None:
        recording = copy.deepcopy(recording)
        for device in recording["devices"]:
            device["compute_capability"] = capability
    return nvidia.probe(RecordedNvml(recording), environ=environ or {})


def fake_cuda_torch(*, gpus: int, capability: tuple[int, int], arch_list: list[str]):
    """What a CUDA build of torch answers: the devices it sees, their capability, its sm_XY list."""
    return SimpleNamespace(
        __version__="2.5.1+cu121", version=SimpleNamespace(cuda="12.1", hip=None),
        device=lambda kind, index=None: (kind, index),
        cuda=SimpleNamespace(is_available=lambda: gpus > 0, device_count=lambda: gpus, init=lambda: None,
                             get_device_capability=lambda index: capability, get_arch_list=lambda: list(arch_list)),
        backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: False)),
    )
