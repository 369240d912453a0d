"""Threads observed, not assumed: a CPU result that claims N threads but runs on one is flagged, and
numpy's all-cores baseline really uses all the usable cores (CPU time / wall time, under taskset)."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys

import pytest

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.results import Spec, cores_demanded, cores_used, uses_claimed_threads
from accelbench.runner.speedups import cpu_baselines
from accelbench.runner.execute import TrustContext, _one
from accelbench.runner.plan import PlanItem
from accelbench.timing.rigor import get_rigor

N = 1 << 23  # 64 MiB per float64 array (the quick suite's): the pool's hand-out is a small share of a call


class OneCoreNumpy(NumpyBackend):
    """numpy whose element-wise ops ignore the thread count (what numpy did before its pool)."""

    name = "one-core-numpy"

    def cpu_threads(self):
        return 1


def _measured(backend, threads, workload="stream", **params):
    params = params or {"kernel": "triad", "n": N, "dtype": "float64"}
    spec = Spec.make(workload, backend.name, "cpu", **params, threads=threads)
    return _one(PlanItem(spec, threads), backend, get_rigor("quick"), 11, False,
                trust=TrustContext(probe_sync=False))


def test_a_baseline_that_claims_two_threads_but_runs_on_one_is_flagged():
    m = _measured(OneCoreNumpy(), 2)
    ran = cores_demanded(m)
    assert ran is not None and ran < 2 * 0.6, m.telemetry["interference"]
    assert not uses_claimed_threads(m)
    # the time is right, so the verdict stands; the claim is a warning and it is no all-cores baseline
    assert m.warnings[0].startswith(f"threads: claims 2 but ran {ran:.1f} at a time")
    one = _measured(OneCoreNumpy(), 1)
    all_cores, one_core = cpu_baselines([dataclasses.replace(x, spec=Spec.make(
        x.spec.workload, "numpy", "cpu", **dict(x.spec.params))) for x in (m, one)])
    assert not all_cores and len(one_core) == 1
    assert m.extra["implementation"] == "numpy, 1 thread, blocked"  # what it really ran


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 usable cores")
def test_the_numpy_baseline_on_two_threads_uses_both_cores():
    m = _measured(NumpyBackend(), 2)
    compute = m.telemetry["interference"]["compute"]
    if compute.get("disturbed"):
        pytest.skip(f"a busy machine: {m.verdict_reasons}")
    assert uses_claimed_threads(m) and cores_used(m) >= 1.5, compute
    assert m.extra["implementation"] == "numpy, 2 threads, blocked"
    assert not any(w.startswith("threads: claims") for w in m.warnings)


# run under taskset: the numpy all-cores baseline (threads(None)) of STREAM and of a statistics
# workload, printing its threads' CPU time / wall time and what other processes took meanwhile
_SCRIPT = """
import json, sys
from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.results import Spec, cores_demanded, cores_used
from accelbench.runner.execute import TrustContext, _one
from accelbench.runner.plan import PlanItem
from accelbench.timing.rigor import get_rigor
out = {}
for workload, params in [("stream", {"kernel": "triad", "n": %d, "dtype": "float64"}),
                         ("montecarlo", {"n": 1 << 20, "dtype": "float64"})]:
    spec = Spec.make(workload, "numpy", "cpu", **params)
    m = _one(PlanItem(spec, None), NumpyBackend(), get_rigor("quick"), 11, False, trust=TrustContext(probe_sync=False))
    compute = m.telemetry["interference"]["compute"]
    out[workload] = [cores_demanded(m) or cores_used(m), bool(compute.get("disturbed")), m.check.passed]
print(json.dumps(out))
""" % N


@pytest.mark.skipif(shutil.which("taskset") is None or len(os.sched_getaffinity(0)) < 2,
                    reason="needs taskset and 2 usable cores")
@pytest.mark.parametrize("cpus, cores", [("0", 1), ("0,1", 2)])
def test_all_cores_means_the_cores_taskset_gives(cpus, cores):
    if not {int(c) for c in cpus.split(",")} <= os.sched_getaffinity(0):
        pytest.skip(f"cores {cpus} are not ours")
    done = subprocess.run(["taskset", "-c", cpus, sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                          timeout=60, check=True)
    for workload, (used, disturbed, passed) in json.loads(done.stdout.strip().splitlines()[-1]).items():
        assert passed, workload
        if disturbed:
            continue  # a busy machine: the cores were not ours to fill
        # runnable time / wall time ≈ usable cores (the harness's own single-threaded moments between
        # calls, and the pool's hand-out, pull it down a little)
        assert 0.7 * cores <= used <= cores + 0.3, (workload, used, cores)
