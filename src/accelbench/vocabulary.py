"""The words every layer shares, written once: dtypes and their facts, the CPU baseline rule, the
default seed, the rigor names, the CPUs this process may use. Standard library only."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class DType:
    name: str          # as accelbench writes it: "float32"
    itemsize: int      # bytes per element
    tolerance: float   # relative error a correct result stays under, against float64
    peak_metric: str   # the vector peak it is read against: "fp32"


# tolerances: fp32 ~1e-5, so tf32-level errors (~3e-4) fail fp32 on purpose
DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("float64", 8, 1e-10, "fp64"),
    DType("float32", 4, 1e-5, "fp32"),
    DType("float16", 2, 1e-2, "fp16"),
    DType("bfloat16", 2, 2e-2, "bf16"),
)}
ITEMSIZE: dict[str, int] = {name: d.itemsize for name, d in DTYPES.items()}
TOLERANCE: dict[str, float] = {name: d.tolerance for name, d in DTYPES.items()}
PEAK_METRIC: dict[str, str] = {name: d.peak_metric for name, d in DTYPES.items()}

DEFAULT_SEED = 20261202
RIGOR_NAMES = ("quick", "standard", "rigorous")

# the CPU every speed-up is read against is the fastest implementation measured on BASELINE_DEVICE
# (runner/speedups.py cpu_baselines); numpy, measured on all usable cores and on one, is always among them
BASELINE_BACKEND, BASELINE_DEVICE = "numpy", "cpu"


def is_cpu_baseline(backend: str, device: str) -> bool:
    return backend == BASELINE_BACKEND and device == BASELINE_DEVICE


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, e.g. a Slurm allocation), not the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1

#: What a workload's figures say about a device (Workload.role, and stored with each result), a closed vocabulary:
#: "compute-bound": limited by arithmetic (matmul): the answer's compute-bound comparison, the
#: roofline's compute ceiling, and a speed-up against float32 in every dtype;
#: "memory-bound": limited by memory bandwidth (stream, reduce, elementwise): the answer's
#: memory-bound comparison; "transfer": moving data between host and device (memcpy);
#: "model": a whole model or application (deep learning, statistics), read on its own figures.
Role = Literal["compute-bound", "memory-bound", "transfer", "model"]
ROLES: tuple[Role, ...] = ("compute-bound", "memory-bound", "transfer", "model")
