"""Every kind of extension is declared the same way: pyproject.toml's entry points equal each kind's
built-in table (the stand-in without metadata), and a third party cannot take a built-in's name."""
from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from accelbench import plugins
from accelbench.backends.registry import BUILTIN_BACKENDS
from accelbench.devices.inventory import BUILTIN_PROBES, default_probes, probe_names
from accelbench.telemetry.sources import BUILTIN_SOURCES, source_classes
from accelbench.workloads.registry import BUILTIN_WORKLOADS

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
TABLES = {plugins.BACKENDS_GROUP: BUILTIN_BACKENDS, plugins.WORKLOADS_GROUP: BUILTIN_WORKLOADS,
          plugins.PROBES_GROUP: BUILTIN_PROBES, plugins.TELEMETRY_GROUP: BUILTIN_SOURCES}


def _entry_points(monkeypatch, group: str, *points: tuple[str, str]) -> None:
    found = [importlib.metadata.EntryPoint(name, value, group) for name, value in points]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: found)


def test_pyproject_declares_exactly_the_built_in_tables():
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]
    for group, table in TABLES.items():
        assert declared[group] == table, group


def test_built_ins_come_first_and_a_third_party_cannot_take_their_names(monkeypatch):
    _entry_points(monkeypatch, plugins.PROBES_GROUP, ("zeta", "zeta_probe:probe"), ("cpu", "evil:probe"),
                  ("alpha", "alpha_probe:probe"))
    found = plugins.plugin_targets(plugins.PROBES_GROUP, BUILTIN_PROBES)
    assert list(found) == [*BUILTIN_PROBES, "alpha", "zeta"]
    assert found["cpu"] == BUILTIN_PROBES["cpu"]


def test_the_framework_probes_run_only_when_asked_for():
    assert set(probe_names()) >= set(BUILTIN_PROBES)
    assert default_probes()[:5] == ("cpu", "nvidia", "amd", "apple", "opencl")
    assert "torch" not in default_probes() and "jax" not in default_probes()


def test_every_built_in_telemetry_source_names_the_families_it_watches():
    classes, broken = source_classes()
    assert not broken
    assert {name: cls.families for name, cls in classes.items() if name in BUILTIN_SOURCES} == {
        "psutil": ("cpu",), "rapl": ("cpu",), "nvml": ("cuda",), "amdsmi": ("rocm",), "ioreg": ("mps",)}


def test_a_telemetry_source_that_fails_to_load_is_named_not_fatal(monkeypatch):
    _entry_points(monkeypatch, plugins.TELEMETRY_GROUP, ("gone", "no_such_module_here:Source"))
    classes, broken = source_classes()
    assert "gone" not in classes and set(BUILTIN_SOURCES) <= set(classes)
    (said,) = broken
    assert said.source == "gone" and "ModuleNotFoundError" in said.reason
