"""A test-only workload whose speed depends on the node it runs on: a slow node made to order.

Each call sums a small array (checked against float64 like any workload) and then waits
PACE_S; on a node named in ACCELBENCH_TEST_SLOW_NODES (compared with SLURMD_NODENAME, which
slurmd sets in every job) it waits ACCELBENCH_TEST_SLOW_FACTOR times as long; on a node named in
ACCELBENCH_TEST_BROKEN_NODES it fails before measuring. Waiting, not
computing, so that jobs sharing two cores do not slow each other down: the only difference
between nodes is the one the test asked for. Installed for tests/cluster/test_fleet_real.py by
putting this folder (with its .dist-info) on PYTHONPATH, which sbatch passes on to the jobs.
"""
import os
import time

import numpy as np

from accelbench.results import Check, Work
from accelbench.workloads.base import Workload
from accelbench.workloads.rotation import SEED_STRIDE, Rotation, Variant

PACE_S = 0.004


def _here_in(variable: str) -> bool:
    return os.environ.get("SLURMD_NODENAME", "") in {n for n in os.environ.get(variable, "").split(",") if n}


def pace_s() -> float:
    factor = float(os.environ.get("ACCELBENCH_TEST_SLOW_FACTOR", "3"))
    return PACE_S * (factor if _here_in("ACCELBENCH_TEST_SLOW_NODES") else 1.0)


class NodePace(Workload):
    name = "nodepace"
    description = "test only: a sum, then a wait whose length depends on the node"
    size_param, size_unit = "n", "elements"
    dtypes = ("float64",)

    def grid(self, sizes, dtypes, quick):
        return [{"n": n, "dtype": "float64"} for n in (sizes or [4096])]

    def work(self, params):
        return Work(flops=float(params["n"]), bytes_moved=8.0 * params["n"])

    def footprint_bytes(self, params):
        return 3 * 8 * params["n"]

    def prepare(self, backend, device, params, seed):
        if _here_in("ACCELBENCH_TEST_BROKEN_NODES"):  # a node whose benchmark cannot even start
            raise RuntimeError(f"nodepace: node {os.environ['SLURMD_NODENAME']} is broken (test)")
        xp = backend.namespace(device)
        wait_s = pace_s()

        def make(key):
            x = np.random.default_rng(seed + key * SEED_STRIDE).standard_normal(params["n"])
            return Variant([backend.from_host(x, device)], np.array([x.sum()]))

        def judge(output, variant):
            value = np.asarray(backend.to_host(output), dtype=np.float64).reshape(-1)
            error = float(np.max(np.abs(value - variant.reference)) / max(1.0, abs(variant.reference[0])))
            return Check(bool(error < 1e-9), error, 1e-9, f"sum relative error {error:.1e}", backend.location(output))

        def op(variant):
            total = xp.sum(variant.inputs[0])
            time.sleep(wait_s)
            return xp.reshape(total, (1,))

        return Rotation(make, judge).prepared(backend, op=op)
