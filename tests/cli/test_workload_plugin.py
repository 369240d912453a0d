"""A third party adds a workload the way the built-ins are added: an `accelbench.workloads` entry point.

The package is written into a temporary folder with its own .dist-info (what `pip install` leaves),
put on PYTHONPATH, and the real CLI is run in a subprocess: it must be listed, run, be checked on
its timed outputs like a built-in, and never become a measured ceiling.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from plugin_site import install, run_cli

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out

PLUGIN = '''
"""y = a·x + y on any backend with an array namespace, checked against float64 on the host."""
import numpy as np

from accelbench.results import Check, Work
from accelbench.workloads.base import Workload
from accelbench.workloads.rotation import SEED_STRIDE, Rotation, Variant



class Axpy(Workload):
    name = "axpy"
    description = "a third party's y = a·x + y"
    size_param, size_unit = "n", "elements"
    dtypes = ("float64",)

    def grid(self, sizes, dtypes, quick):
        return [{"n": n, "dtype": "float64"} for n in (sizes or [200_000])]

    def work(self, params):
        return Work(flops=2.0 * params["n"], bytes_moved=24.0 * params["n"])

    def footprint_bytes(self, params):
        return 6 * 8 * params["n"]

    def prepare(self, backend, device, params, seed):
        xp = backend.namespace(device)

        def make(key):
            rng = np.random.default_rng(seed + key * SEED_STRIDE)
            x, y = rng.standard_normal(params["n"]), rng.standard_normal(params["n"])
            return Variant([backend.from_host(x, device), backend.from_host(y, device)], 2.5 * x + y)

        def judge(output, variant):
            error = float(np.max(np.abs(np.asarray(backend.to_host(output)) - variant.reference)))
            return Check(error < 1e-12, error, 1e-12, f"axpy max abs error {error:.1e}", backend.location(output))

        return Rotation(make, judge).prepared(backend, op=lambda v: xp.add(2.5 * v.inputs[0], v.inputs[1]))
'''

ENTRY_POINTS = """[accelbench.workloads]
axpy = thirdparty_axpy:Axpy
"""


@pytest.fixture()
def plugin_path(tmp_path: Path) -> Path:
    return install(tmp_path / "site", "thirdparty_axpy", PLUGIN, ENTRY_POINTS)


_cli = run_cli


def test_a_third_party_workload_is_listed_runs_and_is_checked_like_a_builtin(plugin_path, tmp_path):
    listing = _cli(plugin_path, "list", "--json")
    assert listing.returncode == 0, listing.stderr
    names = [w["name"] for w in json.loads(listing.stdout)["workloads"]]
    assert "axpy" in names and names.index("axpy") > names.index("matmul")

    db = tmp_path / "r.db"
    run = _cli(plugin_path, "run", "axpy", "--backend", "numpy", "--device", "cpu", "--rigor", "quick",
               "--db", str(db))
    assert run.returncode == 0, run.stdout + run.stderr
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT workload, verdict, check_passed, extra_json FROM results").fetchall()
    assert rows and all(workload == "axpy" and verdict in ("valid", "noisy") and passed
                        for workload, verdict, passed, _ in rows), rows
    # the call on never-seen inputs was timed: the same audit as a built-in's
    assert all("fresh_input_call_s" in json.loads(extra) for *_, extra in rows)

    ceilings = _cli(plugin_path, "ceilings", "--db", str(db), "--json")
    assert ceilings.returncode == 0, ceilings.stderr
    assert "axpy" not in ceilings.stdout  # a plugin's rate never becomes this machine's ceiling


def test_a_third_party_cannot_take_a_builtin_name(plugin_path, tmp_path):
    info = next(plugin_path.glob("*.dist-info"))
    (info / "entry_points.txt").write_text("[accelbench.workloads]\nmatmul = thirdparty_axpy:Axpy\n")
    listing = _cli(plugin_path, "list", "--json")
    matmul = [w for w in json.loads(listing.stdout)["workloads"] if w["name"] == "matmul"]
    assert matmul and "third party" not in matmul[0]["description"]


BROKEN = '''
"""A workload that forgot part of the contract: no footprint_bytes."""
from accelbench.results import Work
from accelbench.workloads.base import Workload


class Half(Workload):
    name = "half"
    description = "a third party's unfinished workload"

    def grid(self, sizes, dtypes, quick):
        return [{"n": 10, "dtype": "float64"}]

    def work(self, params):
        return Work(flops=1.0, bytes_moved=8.0)

    def prepare(self, backend, device, params, seed):
        raise NotImplementedError
'''


def test_list_shows_a_refused_plugin_with_the_reason(tmp_path):
    """issue 42: `accelbench list` once dropped a plugin that fails the contract without a word."""
    path = install(tmp_path / "site", "thirdparty_half", BROKEN, "[accelbench.workloads]\nhalf = thirdparty_half:Half\n")
    listing = _cli(path, "list", "--json")
    assert listing.returncode == 0, listing.stderr
    (half,) = [w for w in json.loads(listing.stdout)["workloads"] if w["name"] == "half"]
    assert "footprint_bytes" in half["refused"], half
    shown = _cli(path, "list")
    assert "half" in shown.stdout and "refused" in shown.stdout and "footprint_bytes" in " ".join(shown.stdout.split())
