"""Every kind of extension is declared the same way: pyproject.toml's entry points are the only list
of the built-ins (read from the source tree, or the installed metadata), and a third party cannot
take a built-in's name."""
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


def test_the_built_ins_are_pyprojects_entry_points_and_listed_nowhere_else():
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]
    for group, table in TABLES.items():
        assert table == declared[group] and list(table) == list(declared[group]), group
    targets = {target for table in TABLES.values() for target in table.values()}
    assert len(targets) > 35
    source = Path(plugins.__file__).resolve().parent
    copies = [(str(path.relative_to(source)), target) for path in sorted(source.rglob("*.py"))
              for target in targets if f'"{target}"' in path.read_text(encoding="utf-8")]
    assert copies == []  # a second list of them in the code would drift from pyproject.toml's


def test_a_built_in_added_to_pyproject_alone_is_a_built_in(monkeypatch, tmp_path):
    """One file and one entry point: the entry point in pyproject.toml is all a new built-in needs."""
    text = PYPROJECT.read_text().replace('[project.entry-points."accelbench.workloads"]\n',
                                         '[project.entry-points."accelbench.workloads"]\n'
                                         'saxpy = "accelbench.workloads.saxpy:Saxpy"\n'
                                         'elsewhere = "thirdparty.kernels:Elsewhere"\n')
    (tmp_path / "pyproject.toml").write_text(text)
    monkeypatch.setattr(plugins, "SOURCE_PYPROJECT", tmp_path / "pyproject.toml")
    plugins.builtin_targets.cache_clear()
    try:
        found = plugins.builtin_targets(plugins.WORKLOADS_GROUP)
        assert list(found)[:2] == ["saxpy", "matmul"] and found["saxpy"] == "accelbench.workloads.saxpy:Saxpy"
        assert "elsewhere" not in found  # not accelbench's own: a third party's, wherever it is declared
    finally:
        plugins.builtin_targets.cache_clear()


def test_an_installed_package_reads_its_built_ins_from_its_metadata(monkeypatch, tmp_path):
    """A wheel has no pyproject.toml: its metadata, written from pyproject.toml, says the same."""
    points = [importlib.metadata.EntryPoint("numpy", BUILTIN_BACKENDS["numpy"], plugins.BACKENDS_GROUP),
              importlib.metadata.EntryPoint("matmul", BUILTIN_WORKLOADS["matmul"], plugins.WORKLOADS_GROUP)]

    class Installed:
        entry_points = points

    monkeypatch.setattr(plugins, "SOURCE_PYPROJECT", tmp_path / "absent.toml")
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Installed)
    plugins.builtin_targets.cache_clear()
    try:
        assert plugins.builtin_targets(plugins.BACKENDS_GROUP) == {"numpy": BUILTIN_BACKENDS["numpy"]}
    finally:
        plugins.builtin_targets.cache_clear()


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
