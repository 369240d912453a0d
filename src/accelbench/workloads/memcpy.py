"""`memcpy`: host↔device copies over a size sweep, pageable and pinned where the backend allows, and
device-to-device copies (one buffer into another on the same device).

A host↔device copy moves its bytes once over the link; a device-to-device copy reads and writes
device memory, so it counts 2 × bytes (STREAM's copy convention), comparable with the memory bandwidth.
"""
from __future__ import annotations

import inspect

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Work
from accelbench.workloads.base import Workload
from accelbench.workloads.rotation import SEED_STRIDE, Rotation, Variant
from accelbench.workloads.sampled_check import Expectation

MIB = 1024**2
WHOLE_UP_TO = 1 << 16  # a copy's expected values cost nothing: outputs this small are judged whole


class Memcpy(Workload):
    name = "memcpy"
    role = "transfer"
    description = "host→device and device→host copies (pageable and pinned host memory), device→device copies"
    size_param, size_unit = "bytes", "bytes"
    dtypes = ("float32",)

    def grid(self, sizes, dtypes, quick):
        # quick: one size well past any cache, the link's bandwidth (a sweep shows its latency too)
        sizes = sizes or ([64 * MIB] if quick else [1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB])
        # pinned host memory means nothing to a copy that never touches the host
        return ([{"direction": d, "bytes": s, "pinned": p}
                 for p in (False, True) for d in ("h2d", "d2h") for s in sizes]
                + [{"direction": "d2d", "bytes": s, "pinned": False} for s in sizes])

    def work(self, params):
        reads_and_writes = 2 if params["direction"] == "d2d" else 1
        return Work(flops=0.0, bytes_moved=float(reads_and_writes * params["bytes"]))

    def footprint_bytes(self, params):
        return 3 * 3 * int(params["bytes"])  # host, device and out buffers of three input sets

    def cannot_run(self, backend, device, params):
        if backend.shares_host_memory(device):
            return f"{device} computes on host memory: there is nothing to transfer"
        if params["pinned"] and params["direction"] == "d2d":
            return "a device-to-device copy never touches host memory: pinned does not apply"
        if params["pinned"] and not backend.supports_pinned(device):
            return f"{backend.name} has no pinned host memory for {device}"
        return None

    def prepare(self, backend, device, params, seed):
        if (why := self.cannot_run(backend, device, params)) is not None:
            raise Unsupported(why)
        pinned = bool(params["pinned"])
        count = max(1, int(params["bytes"]) // 4)
        if params["direction"] == "d2d":
            return _device_to_device(backend, device, count, seed)
        to_device = params["direction"] == "h2d"

        def make(index: int) -> Variant:
            host = backend.host_buffer((count,), "float32", pinned=pinned)
            rng = np.random.default_rng(seed + index * SEED_STRIDE)
            host[...] = rng.uniform(-1.0, 1.0, size=count).astype(np.float32)
            first = np.array(host, copy=True)
            # d2h copies into a host buffer of its own: a copy, not page faults of a new array
            out = None if to_device else backend.host_buffer((count,), "float32", pinned=pinned)
            # h2d reads the host buffer (its values change); d2h reads the device copy
            return Variant([backend.from_host(host, device, pinned=pinned)], None, out=out, hosts=[host],
                           base=[first], reads_hosts=to_device)

        expect = _copied(count, "bit-identical round trip",
                         placed=None if to_device else (lambda output, variant: variant.inputs[0]))
        rotation = Rotation(make, typed=True, expect=expect, device=device)
        if to_device:
            def op(v):
                return backend.from_host(v.hosts[0], device, pinned=pinned)
        elif _accepts_out(backend.to_host):
            def op(v):
                return backend.to_host(v.inputs[0], out=v.out)
        else:
            def op(v):
                return backend.to_host(v.inputs[0])

        def placed(output):
            return output if to_device else rotation.current.inputs[0]

        return rotation.prepared(backend, op=op, placed=placed)


def _copied(count: int, what: str, placed=None) -> Expectation:
    """A copy's output: its input's first values with the signs its changes flipped, bit for bit."""
    return Expectation(lambda v, flat: v.values(0, flat),
                       size=lambda v: count, limit=lambda v: 0.0, what=what, exact=True, placed=placed,
                       whole_up_to=WHOLE_UP_TO)


def _device_to_device(backend, device: str, count: int, seed: int):
    """out ← input, both on `device`: the copy a framework makes between two of its buffers."""
    def make(index: int) -> Variant:
        rng = np.random.default_rng(seed + index * SEED_STRIDE)
        host = rng.uniform(-1.0, 1.0, size=count).astype(np.float32)
        return Variant([backend.from_host(host, device)], None, out=backend.empty((count,), "float32", device),
                       hosts=[host])

    rotation = Rotation(make, typed=True, expect=_copied(count, "bit-identical device copy"), device=device)
    return rotation.prepared(backend, op=lambda v: backend.copy(v.inputs[0], v.out))


def _accepts_out(method) -> bool:
    try:
        return "out" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
