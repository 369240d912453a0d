"""A workload declares its role (workloads/base.py ROLES); the answer, the roofline's ceilings and the
speed-ups read the declaration, never a list of names: a third party's compute-bound workload, one
file and one entry point, takes the place a built-in of that role would."""
from __future__ import annotations

import dataclasses
import importlib
import sys
from pathlib import Path

import pytest
from synthetic_runs import DEVICES, measurement

from accelbench.plugins import entry_point_targets
from accelbench.report.analysis import analyse
from accelbench.report.cpu_text import cpu_sentence
from accelbench.report.headline import headline
from accelbench.report.roofline import device_ceilings
from accelbench.results import Spec
from accelbench.runner.memory_levels import working_set_bytes
from accelbench.runner.speedups import VS_FLOAT32, wanted_speedups
from accelbench.workloads.base import ROLES
from accelbench.workloads.registry import BUILTIN_WORKLOADS, get_workload, workload_role

PLUGIN = '''
"""A third party's fused multiply-add chain: arithmetic-limited, and it says so."""
from accelbench.results import Work
from accelbench.workloads.base import Workload


class Fma(Workload):
    name = "fma"
    description = "a third party's compute-bound kernel"
    role = "compute-bound"

    def grid(self, sizes, dtypes, quick):
        return [{"n": n, "dtype": "float32"} for n in (sizes or [1000])]

    def work(self, params):
        return Work(flops=2.0 * params["n"] ** 3, bytes_moved=12.0 * params["n"] ** 2)

    def footprint_bytes(self, params):
        return 12 * params["n"] ** 2

    def prepare(self, backend, device, params, seed):
        raise NotImplementedError("never run here: only its results are read")
'''


@pytest.fixture()
def fma_installed(tmp_path: Path, monkeypatch):
    """The plugin as `pip install` leaves it (tests/cli/plugin_site.py's layout), found in-process."""
    site = tmp_path / "site"
    (site / "thirdparty_fma").mkdir(parents=True)
    (site / "thirdparty_fma" / "__init__.py").write_text(PLUGIN)
    info = site / "thirdparty_fma-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-fma\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[accelbench.workloads]\nfma = thirdparty_fma:Fma\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    entry_point_targets.cache_clear()
    yield sys.modules.get("thirdparty_fma") or importlib.import_module("thirdparty_fma")
    entry_point_targets.cache_clear()


def _as(workload: str, m):
    """`m` (a synthetic matmul result) as a result of `workload`, same parameters and samples."""
    spec = Spec.make(workload, m.spec.backend, m.spec.device, **dict(m.spec.params))
    return dataclasses.replace(m, spec=spec)


def _fma_and_stream(n: int = 2000, dtype: str = "float32"):
    """fma on numpy (all cores, one core) and torch@cuda:0, 8× faster there; STREAM triad beside it."""
    cpu_s = 1e-10 * n**3
    matmul_like = [measurement("matmul", "numpy", "cpu", compute_s=cpu_s, threads=2, n=n, dtype=dtype),
                   measurement("matmul", "numpy", "cpu", compute_s=cpu_s * 1.9, threads=1, n=n, dtype=dtype),
                   measurement("matmul", "torch", "cuda:0", compute_s=cpu_s / 8, n=n, dtype=dtype)]
    stream = [measurement("stream", "numpy", "cpu", compute_s=0.010, threads=2, kernel="triad", n=1 << 24, dtype=dtype),
              measurement("stream", "numpy", "cpu", compute_s=0.012, threads=1, kernel="triad", n=1 << 24, dtype=dtype),
              measurement("stream", "torch", "cuda:0", compute_s=0.001, kernel="triad", n=1 << 24, dtype=dtype)]
    return [_as("fma", m) for m in matmul_like] + stream


def test_every_builtin_declares_a_role_from_the_closed_vocabulary():
    for name in BUILTIN_WORKLOADS:
        try:
            role = get_workload(name).role
        except Exception:  # noqa: BLE001 - a built-in whose framework is not installed here
            continue
        assert role in ROLES, name
    assert workload_role("matmul") == "compute-bound" and workload_role("stream") == "memory-bound"
    assert workload_role("memcpy") == "transfer" and workload_role("no-such-workload") is None  # never raises


def test_a_third_party_compute_bound_workload_is_in_the_answer_the_roofline_and_the_speedups(fma_installed):
    assert workload_role("fma") == "compute-bound"  # read from the installed plugin's own class
    rows = analyse(_fma_and_stream(), DEVICES)

    (gpu,) = headline(rows).devices
    kinds = {c.kind: c for c in gpu.comparisons}
    assert set(kinds) == {"compute-bound", "memory-bound"}
    assert kinds["compute-bound"].what == "fma float32 n=2,000"
    assert kinds["compute-bound"].vs_all_cores.ratio == pytest.approx(8, rel=0.02)

    assert "fma float32 on numpy" in cpu_sentence(rows)  # the CPU side names it too
    assert "stream triad float32 on numpy" in cpu_sentence(rows)

    ceilings = device_ceilings(rows, "cuda:0", None)
    fma_gpu = next(r for r in rows if r.spec.workload == "fma" and r.spec.device == "cuda:0")
    assert ceilings["compute"]["float32"] == pytest.approx(fma_gpu.measurement.work.flops / fma_gpu.summary.median_s)

    # float16 of compute-bound work is compared with float32, as matmul's is (float64 alone elsewhere)
    halves = [_as("fma", measurement("matmul", "torch", "cuda:0", compute_s=0.1, n=1000, dtype=d))
              for d in ("float32", "float16")]
    assert [w.kind for w in wanted_speedups(halves)] == [VS_FLOAT32]


def test_the_same_results_without_the_declaration_are_not_read_as_compute_bound(fma_installed, monkeypatch):
    """The test above would fail if the declaration were ignored: undeclared, fma is only named."""
    monkeypatch.setattr(fma_installed.Fma, "role", None)
    rows = analyse(_fma_and_stream(), DEVICES)
    (gpu,) = headline(rows).devices
    assert [c.kind for c in gpu.comparisons] == ["memory-bound"]  # stream ran: fma is not the user's only work
    assert "fma" not in (cpu_sentence(rows) or "")
    assert "float32" not in device_ceilings(rows, "cuda:0", None)["compute"]
    halves = [_as("fma", measurement("matmul", "torch", "cuda:0", compute_s=0.1, n=1000, dtype=d))
              for d in ("float32", "float16")]
    assert wanted_speedups(halves) == []


def test_a_builtin_of_the_role_comes_first_and_an_uninstalled_workload_never_breaks_the_answer(fma_installed):
    n = 2000
    matmuls = [measurement("matmul", "numpy", "cpu", compute_s=0.8, threads=2, n=n, dtype="float32"),
               measurement("matmul", "numpy", "cpu", compute_s=1.5, threads=1, n=n, dtype="float32"),
               measurement("matmul", "torch", "cuda:0", compute_s=0.04, n=n, dtype="float32")]
    (gpu,) = headline(analyse(_fma_and_stream() + matmuls, DEVICES)).devices
    assert gpu.comparisons[0].what == "matmul float32 n=2,000"  # the registry's order: built-ins first
    gone = [_as("gone", m) for m in matmuls]  # a stored run's third-party workload, not installed here
    (gpu,) = headline(analyse(gone, DEVICES)).devices
    assert [c.kind for c in gpu.comparisons] == ["gone"]  # named by itself, as an undeclared workload


def test_a_third_party_memory_bound_workload_is_bounded_by_its_memory_level(fma_installed, monkeypatch):
    fma = _fma_and_stream()[0]
    assert working_set_bytes(fma) is None  # compute-bound: no memory level bounds its rate
    monkeypatch.setattr(fma_installed.Fma, "role", "memory-bound")
    assert working_set_bytes(fma) == 2 * fma.work.bytes_moved  # both rotated input sets, as stream's
