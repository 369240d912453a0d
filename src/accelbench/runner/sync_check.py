"""Prove, once per backend and device in a run, that the backend's synchronize() waits.

The known-long work is the backend's own matrix product of order 512, launched as often as it
takes to fill a block (timing/sync_probe.py compares the block ended by synchronize() with the
block ended by reading the output back). A backend without a matrix product cannot be probed; its results say so.
It refuses a backend only on consistent evidence (4 of 5 interleaved rounds); the proof that
counts for each result is made on the workload's own timed call (runner/audit.py `_sync_proven`).
"""
from __future__ import annotations

import numpy as np

from accelbench.backends.base import Backend
from accelbench.timing.clock import Clock, PerfCounterClock
from accelbench.timing.sync_probe import SyncProbe, probe

ORDER = 512
UNTESTED = "synchronisation untested"


def probe_backend(backend: Backend, device: str, clock: Clock | None = None) -> SyncProbe:
    clock = clock or PerfCounterClock()
    try:
        dtypes = backend.dtypes(device)
        dtype = "float32" if "float32" in dtypes else dtypes[0]
        host = np.random.default_rng(ORDER).uniform(-1.0, 1.0, (ORDER, ORDER)).astype(dtype)
        a = backend.from_host(host, device)
        found = probe(lambda: backend.matmul(a, a), lambda: backend.synchronize(device), backend.to_host, clock)
        if not found.ok:  # a busy machine can fake it once; a synchronize() that does not wait fails again
            found = probe(lambda: backend.matmul(a, a), lambda: backend.synchronize(device), backend.to_host, clock)
        return found
    except Exception as error:  # noqa: BLE001 - a backend without matmul (or a broken one) is untested
        return SyncProbe(True, f"{UNTESTED}: its matrix product could not run ({type(error).__name__}: {error})",
                         tested=False)
