"""`memcpy`: host↔device copies over a size sweep, pageable and pinned where the backend allows."""
from __future__ import annotations

import inspect

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Check, Work
from accelbench.workloads.base import Prepared, Workload

MIB = 1024**2


class Memcpy(Workload):
    name = "memcpy"
    description = "host→device and device→host copies (pageable and pinned host memory)"
    size_param, size_unit = "bytes", "bytes"
    dtypes = ("float32",)

    def grid(self, sizes, dtypes, quick):
        sizes = sizes or ([1 * MIB, 64 * MIB] if quick else [1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB])
        return [{"direction": d, "bytes": s, "pinned": p}
                for p in (False, True) for d in ("h2d", "d2h") for s in sizes]

    def work(self, params):
        return Work(flops=0.0, bytes_moved=float(params["bytes"]))

    def footprint_bytes(self, params):
        return int(params["bytes"])

    def prepare(self, backend, device, params, seed):
        if backend.shares_host_memory(device):
            raise Unsupported(f"{device} computes on host memory: there is nothing to transfer")
        pinned = bool(params["pinned"])
        if pinned and not backend.supports_pinned(device):
            raise Unsupported(f"{backend.name} has no pinned host memory for {device}")
        count = max(1, int(params["bytes"]) // 4)
        host = backend.host_buffer((count,), "float32", pinned=pinned)
        host[...] = np.random.default_rng(seed).uniform(-1.0, 1.0, size=count).astype(np.float32)
        expected = np.array(host, copy=True)
        resident = backend.from_host(host, device, pinned=pinned)
        state = {"device": resident}

        if params["direction"] == "h2d":
            def compute():
                state["device"] = backend.from_host(host, device, pinned=pinned)
                return state["device"]
        elif _accepts_out(backend.to_host):
            def compute():  # into the same host buffer each time: a copy, not page faults of a new array
                return backend.to_host(resident, out=host)
        else:
            def compute():
                return backend.to_host(resident)

        def verify():
            out = compute()
            backend.synchronize(device)
            seen = backend.location(state["device"])
            back = backend.to_host(out) if params["direction"] == "h2d" else np.asarray(out)
            identical = back.shape == expected.shape and bool(np.array_equal(back, expected))
            problems = [] if identical else ["data changed in transit"]
            if seen != device:
                problems.append(f"ran on {seen}, asked for {device}")
            return Check(not problems, 0.0 if identical else float("inf"), 0.0,
                         "; ".join(problems) or "bit-identical round trip", seen)

        return Prepared(compute=compute, verify=verify)


def _accepts_out(method) -> bool:
    try:
        return "out" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
