"""The backend registry: names from entry points (or the built-in table), lazy loading, availability."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import textwrap

import pytest

from accelbench.backends import registry
from accelbench.backends.base import Availability, Backend
from accelbench.errors import UsageError
from fakes import HostArrayBackend

BUILTINS = ["numpy", "torch", "jax", "cupy", "pyopencl", "keras-torch", "keras-jax"]


@pytest.fixture(autouse=True)
def _fresh_registry():
    registry.clear_cache()
    yield
    registry.clear_cache()


def _entry_points(monkeypatch, *points: tuple[str, str]) -> None:
    found = [importlib.metadata.EntryPoint(name, value, registry.ENTRY_POINT_GROUP) for name, value in points]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: found)


def test_lists_all_built_ins_in_order():
    assert registry.backend_names()[:len(BUILTINS)] == BUILTINS


def test_installed_metadata_registers_the_built_ins():
    found = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=registry.ENTRY_POINT_GROUP)}
    if not found:
        pytest.skip("running without installed metadata")
    assert {name: found[name] for name in BUILTINS} == registry.BUILTIN_BACKENDS


def test_without_metadata_the_built_in_table_stands_in(monkeypatch):
    _entry_points(monkeypatch)
    assert registry.backend_names() == BUILTINS
    assert registry.get_backend("numpy").name == "numpy"


def test_unreadable_metadata_does_not_stop_discovery(monkeypatch):
    def broken(group=None):
        raise OSError("corrupt RECORD")

    monkeypatch.setattr(importlib.metadata, "entry_points", broken)
    assert registry.backend_names() == BUILTINS


def test_a_third_party_backend_is_found_through_its_entry_point(monkeypatch, tmp_path):
    (tmp_path / "thirdparty_backend.py").write_text(textwrap.dedent("""
        from accelbench.backends.base import Availability
        from fakes import HostArrayBackend

        class Accel(HostArrayBackend):
            name = "accel"
            def availability(self):
                return Availability(True)
            def device_ids(self):
                return ["accel:0"]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    _entry_points(monkeypatch, ("accel", "thirdparty_backend:Accel"), ("numpy", registry.BUILTIN_BACKENDS["numpy"]))
    assert registry.backend_names() == BUILTINS + ["accel"]
    backend = registry.get_backend("accel")
    assert backend.device_ids() == ["accel:0"] and registry.available_backends()["accel"] == Availability(True)


def test_get_backend_caches_one_instance():
    assert registry.get_backend("numpy") is registry.get_backend("numpy")


def test_unknown_name_is_a_usage_error_listing_the_accepted_names():
    with pytest.raises(UsageError) as caught:
        registry.get_backend("tensorflow")
    message = str(caught.value)
    assert "'tensorflow'" in message
    assert "accepted: numpy, torch, jax, cupy, pyopencl" in message


def test_available_backends_reports_every_backend_without_raising():
    report = registry.available_backends()
    assert list(report)[:len(BUILTINS)] == BUILTINS
    assert all(isinstance(a, Availability) for a in report.values())
    assert report["numpy"].ok
    for name in ("jax", "cupy", "pyopencl"):
        assert report[name].ok or report[name].reason, name  # a "no" always says why
    if importlib.util.find_spec("jax") is None:
        assert report["jax"] == Availability(False, "jax is not installed: pip install accelbench[jax]")
    if importlib.util.find_spec("cupy") is None:
        assert report["cupy"] == Availability(False, "cupy is not installed: pip install accelbench[cupy]")


def test_a_broken_plugin_is_unavailable_with_its_error(monkeypatch, tmp_path):
    (tmp_path / "broken_backend.py").write_text("raise OSError('libaccel.so: cannot open shared object file')\n")
    (tmp_path / "flaky_backend.py").write_text(textwrap.dedent("""
        from fakes import HostArrayBackend

        class Flaky(HostArrayBackend):
            name = "flaky"
            def availability(self):
                raise RuntimeError("driver crashed while probing")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    _entry_points(monkeypatch, ("broken", "broken_backend:Broken"), ("flaky", "flaky_backend:Flaky"),
                  ("missing", "no_such_module:Backend"))
    report = registry.available_backends()
    assert not report["broken"].ok and "libaccel.so: cannot open shared object file" in report["broken"].reason
    assert not report["flaky"].ok and "driver crashed while probing" in report["flaky"].reason
    assert not report["missing"].ok and "no_such_module" in report["missing"].reason
    with pytest.raises(registry.BackendLoadError):
        registry.get_backend("broken")


def test_register_backend_in_process():
    class Fake(HostArrayBackend):
        name = "fake"

        def availability(self):
            return Availability(True)

    registry.register_backend("fake", Fake)
    assert "fake" in registry.backend_names() and isinstance(registry.get_backend("fake"), Fake)


PARTIAL_PLUGIN = """
from accelbench.backends.base import Availability, Backend

class Partial(Backend):
    name = "partial"
    def availability(self):
        return Availability(True)
    def device_ids(self):
        return ["cpu"]
    def from_host(self, array, device, pinned=False):
        return array
    def to_host(self, array):
        return array
    def random(self, shape, dtype, device, seed):
        return None
    def empty(self, shape, dtype, device):
        return None

class NotABackend:
    name = "duck"
"""


def test_a_plugin_missing_a_required_method_is_refused_when_loaded_naming_it_and_the_method(monkeypatch, tmp_path):
    from accelbench.session import load_backends

    (tmp_path / "partial_backend.py").write_text(PARTIAL_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    _entry_points(monkeypatch, ("partial", "partial_backend:Partial"), ("duck", "partial_backend:NotABackend"))
    with pytest.raises(registry.BackendLoadError) as caught:
        registry.backend_class("partial")
    assert str(caught.value) == ("backend 'partial' (partial_backend:Partial) does not implement astype, location "
                                 "(required of every backend: accelbench.backends.base.Backend)")
    report = registry.available_backends()  # listed as unavailable, with that reason: never a skip mid-run
    assert not report["partial"].ok and "does not implement astype, location" in report["partial"].reason
    assert not report["duck"].ok and "is not a subclass of accelbench.backends.base.Backend" in report["duck"].reason
    loaded = load_backends(["partial", "numpy"])
    assert not isinstance(loaded["partial"], Backend) and not loaded["partial"].availability().ok
    assert loaded["partial"].device_ids() == [] and isinstance(loaded["numpy"], Backend)


def test_registering_a_class_missing_a_required_method_fails_at_once():
    class NoLocation(HostArrayBackend):
        pass

    del_location = {k: v for k, v in vars(HostArrayBackend).items() if k != "location"}
    incomplete = type("Incomplete", (Backend,), del_location)
    with pytest.raises(registry.BackendLoadError, match=r"backend 'incomplete' \(.*Incomplete\) does not "
                                                       r"implement location \("):
        registry.register_backend("incomplete", incomplete)
    assert "incomplete" not in registry.backend_names()
    registry.register_backend("complete", NoLocation)  # inherits every method it needs: accepted
    assert registry.get_backend("complete").location(None) == "cpu"


def test_importing_listing_and_creating_backends_loads_no_framework():
    heavy = ("torch", "jax", "cupy", "pyopencl")
    code = ("from accelbench.backends import registry; registry.backend_names(); "
            "[registry.get_backend(n) for n in ('numpy', 'torch', 'jax', 'cupy')]\n"
            f"import sys, json; print(json.dumps([m for m in {heavy!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_workload_descriptions_name_their_origin_in_words_not_project_history():
    """`accelbench list` speaks of the tutorials a user knows, never of "seed NNN" or issue numbers."""
    import re

    from accelbench.workloads.registry import get_workload, workload_names

    for name in workload_names():
        try:
            description = get_workload(name).description
        except Exception:  # noqa: BLE001 - a workload whose extra is missing is not listed either
            continue
        assert not re.search(r"\bseed \d{3}\b|issue #\d+", description, flags=re.I), (name, description)


def test_a_third_party_cannot_take_a_built_in_backends_name(monkeypatch):
    # the CPU baseline and the measured ceilings are read from the built-ins: no package replaces them
    _entry_points(monkeypatch, ("numpy", "thirdparty_backend:Accel"))
    assert registry.backend_class("numpy").__module__ == "accelbench.backends.numpy_backend"
