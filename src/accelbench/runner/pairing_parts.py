"""A group's speed-ups split into parts whose workload instances fit in memory together (issue 28).

A part's rounds interleave the blocks of all its sides (A B | B A ...), so every workload instance
a part times is prepared before its first round; it is released before the next part unless that
part times it too (the baseline). Prepared for a whole group at once, they held every backend's
inputs together (elementwise on numpy, torch, jax and two PoCL devices: 13 GB resident). A part holds as many of the group's speed-ups as fit in
PART_BUDGET_BYTES of declared footprint (Workload.footprint_bytes), and always at least one: its
baseline and its candidate, the two sides a paired ratio needs. A baseline shared by several parts
is timed again in each, paired with that part's candidates: each speed-up's two sides still come
from the same rounds. Small problems (matmul at n = 256) stay one part, as before.
"""
from __future__ import annotations

from typing import Callable, Sequence

from accelbench.results import Measurement
from accelbench.runner.speedups import Wanted
from accelbench.workloads.registry import get_workload

# declared footprint of the instances one part prepares together: two quick-suite STREAM or
# elementwise instances (384 MiB each) do not fit, so each of those parts is one speed-up's two sides
PART_BUDGET_BYTES = 256 * 2**20

InstanceKey = tuple


def group_params(m: Measurement) -> tuple:
    """The parameters an instance is prepared with: the spec's, without its thread count."""
    return tuple((k, v) for k, v in m.spec.params if k != "threads")


def instance_key(m: Measurement) -> InstanceKey:
    """One workload instance per spec without its thread count (numpy on 1 and on all threads share it)."""
    return (m.spec.workload, m.spec.backend, m.spec.device, group_params(m))


def footprint_bytes(key: InstanceKey) -> int:
    """What the workload declares its instance needs (0 when it cannot say)."""
    try:
        return int(get_workload(key[0]).footprint_bytes(dict(key[3])))
    except Exception:  # noqa: BLE001 - a plugin's estimate that fails packs its instance alone
        return PART_BUDGET_BYTES


def parts(items: Sequence[Wanted], budget_bytes: int | None = None,
          footprint: Callable[[InstanceKey], int] = footprint_bytes) -> list[list[Wanted]]:
    """The speed-ups in parts, in their order: each joins the first part whose instances, its own
    added, stay within the budget (or that already holds both of its instances), else starts one."""
    budget = PART_BUDGET_BYTES if budget_bytes is None else budget_bytes
    sizes: dict[InstanceKey, int] = {}

    def size(key: InstanceKey) -> int:
        if key not in sizes:
            sizes[key] = footprint(key)
        return sizes[key]

    found: list[tuple[set[InstanceKey], list[Wanted]]] = []
    for w in items:
        need = {instance_key(w.baseline), instance_key(w.candidate)}
        for keys, members in found:
            joined = keys | need
            if joined == keys or sum(size(k) for k in joined) <= budget:
                keys |= need
                members.append(w)
                break
        else:
            found.append((need, [w]))
    return [members for _, members in found]
