"""Prove, once per backend and device in a run, that the backend's synchronize() waits.

The known-long work is the backend's own matrix product, grown until one launch takes a few
milliseconds (timing/sync_probe.py compares it followed by synchronize() with it followed by
reading the output back). A backend without a matrix product cannot be probed; its results say so.
"""
from __future__ import annotations

import numpy as np

from accelbench.timing.clock import PerfCounterClock
from accelbench.timing.sync_probe import MIN_WORK_S, SyncProbe, probe

ORDERS = (256, 512, 1024, 2048)
UNTESTED = "synchronisation untested"


def probe_backend(backend, device: str, clock=None) -> SyncProbe:
    clock = clock or PerfCounterClock()
    try:
        dtypes = backend.dtypes(device)
        dtype = "float32" if "float32" in dtypes else dtypes[0]
        for n in ORDERS:
            host = np.random.default_rng(n).uniform(-1.0, 1.0, (n, n)).astype(dtype)
            a = backend.from_host(host, device)

            def launch(a=a):
                return backend.matmul(a, a)

            out = launch()  # first call: compilation, allocation
            backend.to_host(out)
            backend.synchronize(device)
            start_s = clock.now()
            backend.to_host(launch())
            if clock.now() - start_s >= 2 * MIN_WORK_S or n == ORDERS[-1]:
                return probe(launch, lambda: backend.synchronize(device), backend.to_host, clock)
    except Exception as error:  # noqa: BLE001 - a backend without matmul (or a broken one) is untested
        return SyncProbe(True, f"{UNTESTED}: its matrix product could not run ({type(error).__name__}: {error})")
    return SyncProbe(True, UNTESTED)
