"""A third party adds a backend and a workload as the built-ins are added: one module each (here one
package), one entry point each; nothing inside accelbench names them (issue #29).

One backend computes on numpy arrays, which accelbench's own numpy observer reads: its results are
valid, and as the workload declares its role (memory-bound), the answer compares that backend with
the CPU on it. Another keeps its data in its own array type and brings its own placement observer:
it is asked and named, but is the plugin's word (accelbench can neither read nor poison such an
array itself, docs/truth.md), so those results stay unverified, as a third's without an observer. The real CLI runs in a subprocess with the package
on PYTHONPATH (tests/cli/plugin_site.py).
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from plugin_site import install, run_cli

from accelbench.cli.main import main
from accelbench.report.analysis import analyse
from accelbench.report.headline import headline
from accelbench.store.db import Store
from accelbench.workloads.registry import workload_role

pytestmark = pytest.mark.slow  # seconds: `pytest -m "not slow"` leaves it out

PLUGIN = '''
"""A third party's boxed arrays on the CPU, and y = 2.5·x + y on any backend with a triad."""
import numpy as np

from accelbench.backends.base import Availability, Backend
from accelbench.results import Check, Work
from accelbench.workloads.base import Workload
from accelbench.workloads.rotation import SEED_STRIDE, Rotation, Variant


class Box:
    """The plugin's own array: host memory in a box no framework accelbench knows."""

    def __init__(self, data):
        self.data = data

    def __setitem__(self, index, value):
        self.data[index] = value


class Crate(Box):
    """Another array type, that only a blind backend makes."""


class Shelf(Backend):
    """Plain numpy arrays on the CPU: accelbench's own numpy observer reads where they live."""

    name = "shelf"

    def wrap(self, data):
        return data

    def unwrap(self, array):
        return array

    def availability(self):
        return Availability(True)

    def device_ids(self):
        return ["cpu"]

    def from_host(self, array, device, pinned=False):
        return self.wrap(np.array(array, copy=True))

    def to_host(self, array):
        return np.array(self.unwrap(array), copy=True)

    def location(self, array):
        return "cpu"

    def random(self, shape, dtype, device, seed):
        return self.wrap(np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype))

    def empty(self, shape, dtype, device):
        return self.wrap(np.empty(shape, dtype=dtype))

    def astype(self, array, dtype):
        return self.wrap(self.unwrap(array).astype(dtype))

    def triad(self, a, b, scalar, out):
        a, b, data = self.unwrap(a), self.unwrap(b), self.unwrap(out)
        np.multiply(b, scalar, out=data)
        np.add(data, a, out=data)
        return out


class Boxes(Shelf):
    """Its arrays in boxes, and its own observer for them."""

    name = "boxes"

    def wrap(self, data):
        return Box(data)

    def unwrap(self, array):
        return array.data

    def observe_placement(self, array):
        # read from the box itself: a numpy array inside is host memory
        return "cpu" if type(array) is Box and isinstance(array.data, np.ndarray) else None


class BlindBoxes(Boxes):
    """The same in crates, without an observer."""

    name = "blind-boxes"

    def wrap(self, data):
        return Crate(data)

    def observe_placement(self, array):
        return None


class Axpy(Workload):
    name = "axpy"
    description = "a third party's y = 2.5·x + y"
    role = "memory-bound"
    dtypes = ("float64",)

    def grid(self, sizes, dtypes, quick):
        return [{"n": n, "dtype": "float64"} for n in (sizes or [1_000_000])]

    def work(self, params):
        return Work(flops=2.0 * params["n"], bytes_moved=24.0 * params["n"])

    def footprint_bytes(self, params):
        return 6 * 8 * params["n"]

    def prepare(self, backend, device, params, seed):
        n = params["n"]

        def make(key):
            rng = np.random.default_rng(seed + key * SEED_STRIDE)
            x, y = rng.standard_normal(n), rng.standard_normal(n)
            return Variant([backend.from_host(y, device), backend.from_host(x, device)], y + 2.5 * x,
                           out=backend.empty((n,), "float64", device))

        def judge(output, variant):
            error = float(np.max(np.abs(np.asarray(backend.to_host(output)) - variant.reference)))
            return Check(error < 1e-12, error, 1e-12, f"axpy max abs error {error:.1e}", backend.location(output))

        op = lambda v: backend.triad(v.inputs[0], v.inputs[1], 2.5, v.out)  # noqa: E731
        return Rotation(make, judge).prepared(backend, op=op)
'''

ENTRY_POINTS = """[accelbench.backends]
shelf = thirdparty_boxes:Shelf
boxes = thirdparty_boxes:Boxes
blind-boxes = thirdparty_boxes:BlindBoxes

[accelbench.workloads]
axpy = thirdparty_boxes:Axpy
"""


@pytest.fixture()
def plugin_path(tmp_path: Path) -> Path:
    return install(tmp_path / "site", "thirdparty_boxes", PLUGIN, ENTRY_POINTS)


def test_third_party_backends_and_a_workload_each_one_entry_point_read_as_the_builtins_are(plugin_path, tmp_path):
    db = tmp_path / "r.db"
    run = run_cli(plugin_path, "run", "axpy", "--backend", "numpy,shelf,boxes,blind-boxes", "--device", "cpu",
                  "--rigor", "quick", "--json", "--no-progress", "--no-telemetry", "--db", str(db))
    assert run.returncode == 0, run.stdout + run.stderr
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT backend, verdict, check_passed, device_seen, verdict_reasons_json "
                                  "FROM results WHERE workload = 'axpy'").fetchall()
        roles = {role for (role,) in connection.execute("SELECT role FROM results WHERE workload = 'axpy'")}
    assert roles == {"memory-bound"}  # stored with each result, as the workload declared it
    seen = {backend: (verdict, passed, device, reasons) for backend, verdict, passed, device, reasons in rows}
    verdict, passed, device, _ = seen["shelf"]
    assert passed and verdict in ("valid", "noisy") and device == "cpu", seen  # numpy's arrays: observed
    # its own array type: its own observer is asked and named, but it is the plugin's word, as
    # location() is; without one, no observer reads the array at all
    assert seen["boxes"][0] == "unverified" and "only the boxes backend's own observer" in seen["boxes"][3], seen
    assert seen["blind-boxes"][0] == "unverified" and "no backend's placement observer" in seen["blind-boxes"][3]

    answer = json.loads(run.stdout)["headline"]
    shelf = [d for d in answer["devices"] if d["series"].startswith("shelf@cpu")]
    assert shelf, answer
    (comparison,) = [c for c in shelf[0]["comparisons"] if c["kind"] == "memory-bound"]
    assert comparison["what"].startswith("axpy float64")  # its declared role put it in the answer

    # exported, then imported here, where the plugin is not installed: its stored role keeps it in the answer
    exported = tmp_path / "r.json"
    assert run_cli(plugin_path, "export", "--db", str(db), "-o", str(exported)).returncode == 0
    assert workload_role("axpy") is None
    here = tmp_path / "here.db"
    assert main(["import", str(exported), "--db", str(here)]) == 0
    with Store(here) as store:
        (run_id,) = [r.id for r in store.runs()]
        devices = headline(analyse(store.results(run_id), {})).devices
    (shelf,) = [d for d in devices if d.series.startswith("shelf@cpu")]
    assert [c.what.split()[0] for c in shelf.comparisons if c.kind == "memory-bound"] == ["axpy"]
