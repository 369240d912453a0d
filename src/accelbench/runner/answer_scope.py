"""Which results the answer states, chosen once: the answer (report/headline.py) reads them, and at
quick rigor the paired rounds time only their speed-ups (runner/pairing.py).

For each device series, the answer states its compute-bound work (the first workload of that role,
its preferred dtype, its largest size) and its memory-bound work (likewise, STREAM's triad where
measured); deep learning against its own framework on the CPU; and where neither kind ran, the
first two workloads the user chose.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from accelbench.results import Measurement
from accelbench.vocabulary import Role
from accelbench.workloads.registry import workloads_of_role

DTYPE_PREFERENCE = ("float32", "float64", "bfloat16", "float16")  # float32 first: what accelerators are bought for
SIZE_PARAMS = ("n", "bytes")  # the parameter that sets a workload's problem size


def size_of(spec) -> float | None:
    for name in SIZE_PARAMS:
        value = spec.param(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def largest(measurements: Iterable[Measurement]) -> Measurement | None:
    """The one of the largest size; a workload without a size (deep learning) gives its first."""
    found = list(measurements)
    sized = [m for m in found if size_of(m.spec) is not None]
    return max(sized, key=lambda m: size_of(m.spec) or 0.0) if sized else (found[0] if found else None)


def preferred(measurements: Sequence[Measurement]) -> list[Measurement]:
    """Those of the preferred dtype (DTYPE_PREFERENCE), or all where none has a dtype listed there."""
    dtypes = {str(m.spec.param("dtype")) for m in measurements}
    for dtype in DTYPE_PREFERENCE:
        if dtype in dtypes:
            return [m for m in measurements if str(m.spec.param("dtype")) == dtype]
    return list(measurements)


def of_role(measurements: Sequence[Measurement], role: Role) -> list[Measurement]:
    """Those of the first workload of `role` among them (registry order: built-ins first)."""
    names = workloads_of_role(measurements, role)
    return [m for m in measurements if m.spec.workload == names[0]] if names else []


def stated(compared: Sequence[Measurement], framework_baseline: Iterable[str] = ()) -> list[tuple[str, Measurement]]:
    """(what kind of work, the result) the answer states for one device series, from its results
    that have a CPU comparison; `framework_baseline`: the workloads read against their own framework
    on the CPU (deep learning)."""
    found = []
    compute = largest(preferred(of_role(compared, "compute-bound")))
    if compute is not None:
        found.append(("compute-bound", compute))
    candidates = of_role(compared, "memory-bound")
    triads = [m for m in candidates if m.spec.param("kernel") in (None, "triad")]
    memory = largest(preferred(triads or candidates))
    if memory is not None:
        found.append(("memory-bound", memory))
    for workload in sorted({m.spec.workload for m in compared} & set(framework_baseline)):
        chosen = largest(preferred([m for m in compared if m.spec.workload == workload]))
        if chosen is not None:
            found.append(("deep learning", chosen))
    if not found:  # neither kind was run: the user's own choice of work, two at most
        for workload in sorted({m.spec.workload for m in compared})[:2]:
            chosen = largest(preferred([m for m in compared if m.spec.workload == workload]))
            if chosen is not None:
                found.append((workload, chosen))
    return found
