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


# workloads given as objects (a user's function through accelbench.bench) live here for the process
_INSTANCES: dict = {}


def register_workload(workload) -> None:
    if workload.name in WORKLOADS and workload.name not in _INSTANCES:
        raise UsageError(f"workload name {workload.name!r} is taken by a built-in workload; choose another name")
    _INSTANCES[workload.name] = workload
    WORKLOADS.setdefault(workload.name, "")


def get_workload(name: str):
    if name in _INSTANCES:
        return _INSTANCES[name]
    if name not in WORKLOADS or not WORKLOADS[name]:
        raise UsageError(f"unknown workload {name!r}; accepted: {', '.join(WORKLOADS)}")
    module_name, class_name = WORKLOADS[name].split(":")
    return getattr(importlib.import_module(module_name), class_name)()
