"""The built-in workloads, loaded by name only when asked for."""
from __future__ import annotations

import importlib

from accelbench.errors import UsageError

WORKLOADS = {
    "matmul": "accelbench.workloads.matmul:Matmul",
    "stream": "accelbench.workloads.memory:Stream",
    "transfer": "accelbench.workloads.transfer:Transfer",
    "reduce": "accelbench.workloads.memory:Reduce",
    "elementwise": "accelbench.workloads.memory:Elementwise",
}
QUICK_SUITE = ("matmul", "stream", "transfer", "reduce", "elementwise")


def get_workload(name: str):
    if name not in WORKLOADS:
        raise UsageError(f"unknown workload {name!r}; accepted: {', '.join(WORKLOADS)}")
    module_name, class_name = WORKLOADS[name].split(":")
    return getattr(importlib.import_module(module_name), class_name)()
