"""A workload declares its role (vocabulary.ROLES); the answer, the roofline's ceilings and the
speed-ups read the declaration, never a list of names: a third party's compute-bound workload, one
file and one entry point, takes the place a built-in of that role would. Each result stores the role
(schema v6, the document's `role`), so it keeps that place where the workload is not installed."""
from __future__ import annotations

import dataclasses
import importlib
import json
import shutil
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
from accelbench.store.db import Store
from accelbench.store.export import export_runs, import_document
from accelbench.runner.memory_levels import working_set_bytes
from accelbench.runner.speedups import VS_FLOAT32, wanted_speedups
from accelbench.vocabulary import ROLES
from accelbench.workloads.registry import BUILTIN_WORKLOADS, get_workload, role_of, workload_role

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

    assert "fma float32 n=" in cpu_sentence(rows)  # the CPU side names it too
    assert "stream triad float32 n=" in cpu_sentence(rows)

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


def _exported_from_where_fma_is_installed(tmp_path: Path) -> dict:
    """fma's results (and stream's) as the runner stores them where the plugin is installed, each with
    its workload's declared role (runner/execute.py), exported as `accelbench export` writes them."""
    declared = {"fma": "compute-bound", "stream": "memory-bound"}
    made = [dataclasses.replace(m, role=declared[m.spec.workload]) for m in _fma_and_stream()]
    with Store(tmp_path / "node17.sqlite") as store:
        run_id = store.start_run({"hostname": "node17"}, {}, None)
        store.add_results(run_id, made)
        store.finish_run(run_id, "complete")
        return json.loads(json.dumps(export_runs(store, [run_id])))


def _imported_here(document: dict, path: Path) -> list:
    with Store(path) as store:
        (run_id,) = import_document(store, document)
        return store.results(run_id)


def test_an_imported_result_keeps_its_role_where_its_workload_is_not_installed(tmp_path):
    assert workload_role("fma") is None  # no plugin named fma in this process
    document = _exported_from_where_fma_is_installed(tmp_path)
    assert {r["role"] for r in document["runs"][0]["results"] if r["spec"]["workload"] == "fma"} == {"compute-bound"}
    results = _imported_here(document, tmp_path / "here.sqlite")
    assert {m.role for m in results if m.spec.workload == "fma"} == {"compute-bound"}
    rows = analyse(results, DEVICES)

    (gpu,) = headline(rows).devices
    kinds = {c.kind: c for c in gpu.comparisons}
    assert set(kinds) == {"compute-bound", "memory-bound"}
    assert kinds["compute-bound"].what == "fma float32 n=2,000"
    assert "fma float32 n=" in cpu_sentence(rows)
    fma_gpu = next(r for r in rows if r.spec.workload == "fma" and r.spec.device == "cuda:0")
    assert device_ceilings(rows, "cuda:0", None)["compute"]["float32"] == pytest.approx(
        fma_gpu.measurement.work.flops / fma_gpu.summary.median_s)  # the roofline's compute ceiling
    halves = [dataclasses.replace(fma_gpu.measurement, spec=Spec.make("fma", "torch", "cuda:0", n=1000, dtype=d))
              for d in ("float32", "float16")]
    assert [w.kind for w in wanted_speedups(halves)] == [VS_FLOAT32]


def test_an_imported_result_from_before_roles_has_only_what_is_installed_here(tmp_path):
    """The same document without `role` (written before roles were): fma, not installed here, declares
    nothing, so it is neither the compute-bound comparison nor a ceiling; stream's role comes from the
    workload installed here."""
    document = _exported_from_where_fma_is_installed(tmp_path)
    for result in document["runs"][0]["results"]:
        del result["role"]
    results = _imported_here(document, tmp_path / "here.sqlite")
    assert {m.role for m in results} == {None}
    rows = analyse(results, DEVICES)
    (gpu,) = headline(rows).devices
    assert [c.kind for c in gpu.comparisons] == ["memory-bound"]
    assert "float32" not in device_ceilings(rows, "cuda:0", None)["compute"]
    assert {role_of(m) for m in results if m.spec.workload == "stream"} == {"memory-bound"}


def test_a_stored_role_wins_over_the_installed_declaration_and_a_v1_database_falls_back_to_it(tmp_path, data_dir):
    stream = _fma_and_stream()[3]
    assert role_of(stream) == "memory-bound"  # stored before roles: the installed stream's declaration
    assert role_of(dataclasses.replace(stream, role="model")) == "model"  # stored: as it was when it ran
    old = shutil.copy(data_dir / "db" / "v1.sqlite", tmp_path / "v1.sqlite")
    with Store(old) as store:
        assert store.migrated_from == 1 and store.schema_version >= 6
        results = [m for run in store.runs() for m in store.results(run.id)]
    assert results and {m.role for m in results} == {None}
    assert {role_of(m) for m in results if m.spec.workload == "matmul"} == {"compute-bound"}

