"""The seams a contributor builds against are typed and checked (issue #29): Backend and Workload are
abstract classes whose contract is enforced when a plugin is loaded; the runner names what it is given
by type (never Any, never a bare dict); a rigor is resolved once, where a run starts; run_plan takes a
run configuration whose every field says what it is."""
from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.metadata
import inspect
import re
import textwrap
import tomllib
from pathlib import Path

import pytest

import accelbench
from accelbench.errors import UsageError
from accelbench.plugins import WORKLOADS_GROUP, entry_point_targets
from accelbench.runner.run_config import RunConfig
from accelbench.session import run_plan
from accelbench.timing.rigor import RIGORS, get_rigor
from accelbench.workloads import registry as workloads
from accelbench.workloads.base import REQUIRED_METHODS, Workload, missing_methods

SRC = Path(accelbench.__file__).resolve().parent
# the measuring path: what the runner is given, as it is given it
SEAM_MODULES = ("runner/execute.py", "runner/pairing.py", "runner/sync_check.py", "runner/reach.py",
                "runner/plan.py", "runner/audit.py", "runner/run_config.py", "timing/harness.py", "session.py",
                "workloads/base.py")
SEAM_PARAMETERS = {"backend", "backends", "workload", "prepared", "store", "rigor"}
# public entry points that take a rigor by name (resolved there, once)
RIGOR_BY_NAME = {("session.py", "run"), ("session.py", "check_arguments")}


def _seam_annotations():
    for module in SEAM_MODULES:
        tree = ast.parse((SRC / module).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in node.args.args + node.args.kwonlyargs:
                    if arg.arg in SEAM_PARAMETERS:
                        yield module, node.name, arg.arg, ast.unparse(arg.annotation) if arg.annotation else None


def test_every_seam_parameter_is_typed_without_any():
    found = list(_seam_annotations())
    assert len(found) > 20  # the scan sees the runner's functions
    untyped = [f"{m} {f}({p}: {a})" for m, f, p, a in found
               if a is None or "Any" in a or a in ("dict", "object") or a.startswith("dict |")]
    assert untyped == []


# the seam modules mypy checks with no Any (pyproject.toml's override), and the classes in them
NO_ANY_MODULES = ("accelbench.backends.base", "accelbench.workloads.base", "accelbench.runner.sinks",
                  "accelbench.runner.plan", "accelbench.runner.audit", "accelbench.runner.run_config")
BARE_GENERIC = re.compile(r"\b(dict|list|tuple|set|Callable|Mapping|Sequence)\b(?!\[)")


def _seam_signatures():
    """(where, annotation or None) for every parameter and return of the seams: the contracts'
    methods and fields, the sinks, the run configuration, and the functions of the seam modules."""
    from accelbench.backends.base import Backend
    from accelbench.runner.sinks import ResultSink, SpeedupSink
    from accelbench.workloads.base import Prepared

    for cls in (Prepared, RunConfig):
        for f in dataclasses.fields(cls):
            yield f"{cls.__name__}.{f.name}", str(f.type)
    functions = [(f"{cls.__name__}.{name}", member) for cls in (Backend, Workload, Prepared, ResultSink, SpeedupSink)
                 for name, member in vars(cls).items() if inspect.isfunction(member) and not name.startswith("__")]
    for module in NO_ANY_MODULES[3:5]:  # plan.py and audit.py: what the runner hands a workload's instance
        found = importlib.import_module(module)
        functions += [(f"{module}.{name}", member) for name, member in vars(found).items()
                      if inspect.isfunction(member) and member.__module__ == module]
    for where, function in functions:
        annotations = inspect.get_annotations(function)
        for parameter in [*inspect.signature(function).parameters, "return"]:
            if parameter not in ("self", "cls"):
                yield f"{where}({parameter})", annotations.get(parameter)


def test_the_seams_name_no_Any_written_or_implied():
    """A device array is DeviceArray (object: opaque, handed back to its backend), a host array
    HostArray, parameters Params: no Any written, none implied by an untyped parameter or a bare dict."""
    found = dict(_seam_signatures())
    assert len(found) > 150  # the scan sees the contracts' methods and fields, the sinks, plan and audit
    assert "DeviceArray" in found["Backend.from_host(return)"] and found["Workload.work(params)"] == "Params"
    assert [where for where, annotation in found.items() if annotation is None] == []
    assert [where for where, a in found.items() if a and ("Any" in a or BARE_GENERIC.search(a))] == []


def test_mypy_checks_the_seam_modules_with_no_Any():
    """What the scan above cannot see (a value typed Any inside a body), mypy refuses in these modules."""
    config = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    overrides = config["tool"]["mypy"]["overrides"]
    strict = [o for o in overrides if o.get("disallow_any_explicit")]
    assert len(strict) == 1 and set(strict[0]["module"]) == set(NO_ANY_MODULES)
    assert all(strict[0].get(flag) is True for flag in ("disallow_any_generics", "disallow_untyped_defs",
                                                        "disallow_incomplete_defs"))


def test_a_rigor_is_a_Rigor_inside_and_a_name_only_where_a_run_starts():
    by_name = [(m, f) for m, f, p, a in _seam_annotations() if p == "rigor" and a != "Rigor"]
    assert set(by_name) == RIGOR_BY_NAME
    assert inspect.signature(accelbench.run).parameters["rigor"].default == "quick"
    assert inspect.signature(accelbench.bench).parameters["rigor"].default == "quick"
    assert inspect.signature(RunConfig).parameters["rigor"].annotation == "Rigor"
    assert get_rigor("rigorous") is RIGORS["rigorous"]
    with pytest.raises(UsageError, match="unknown rigor 'thorough'"):
        get_rigor("thorough")


def test_run_plan_takes_a_run_configuration_whose_every_field_is_documented():
    assert list(inspect.signature(run_plan).parameters) == ["plan", "backends", "config"]
    source = textwrap.dedent(inspect.getsource(RunConfig))
    body = ast.parse(source).body[0].body
    fields = [node.target.id for node in body if isinstance(node, ast.AnnAssign)]
    documented = [node.target.id for node, after in zip(body, body[1:]) if isinstance(node, ast.AnnAssign)
                  and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                  and isinstance(after.value.value, str) and after.value.value.strip()]
    assert fields == documented and len(fields) >= 10
    assert set(fields) >= {"rigor", "db", "seed", "selection", "tags", "inventory", "on_start", "on_done", "debug",
                           "telemetry", "timeout"}


def test_public_entry_points_keep_their_arguments():
    assert list(inspect.signature(accelbench.run).parameters) == [
        "workloads", "sizes", "dtypes", "devices", "backends", "threads", "rigor", "quick", "db", "seed", "tags",
        "timeout"]
    assert list(inspect.signature(accelbench.bench).parameters)[:2] == ["fn", "inputs"]


PARTIAL_WORKLOAD = '''
from accelbench.results import Work
from accelbench.workloads.base import Workload

class NoFootprint(Workload):
    name = "nofootprint"
    def grid(self, sizes, dtypes, quick):
        return [{"n": 8, "dtype": "float64"}]
    def work(self, params):
        return Work(8.0, 64.0)
    def prepare(self, backend, device, params, seed):
        raise AssertionError("never reached: refused when loaded")

class Duck:
    name = "duck"
'''


def test_a_workload_plugin_missing_a_method_is_refused_when_loaded_naming_it(monkeypatch, tmp_path):
    (tmp_path / "partial_workload.py").write_text(PARTIAL_WORKLOAD)
    monkeypatch.syspath_prepend(str(tmp_path))
    points = [importlib.metadata.EntryPoint("nofootprint", "partial_workload:NoFootprint", WORKLOADS_GROUP),
              importlib.metadata.EntryPoint("duck", "partial_workload:Duck", WORKLOADS_GROUP)]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: points if group == WORKLOADS_GROUP else [])
    entry_point_targets.cache_clear()  # read once per process: read the stand-in table now, and after
    try:
        with pytest.raises(UsageError) as caught:
            workloads.get_workload("nofootprint")
        assert str(caught.value) == ("workload 'nofootprint' ('partial_workload:NoFootprint') does not implement "
                                     "footprint_bytes (required of every workload: accelbench.workloads.base.Workload)")
        with pytest.raises(UsageError, match="'duck' .* is not a subclass of accelbench.workloads.base.Workload"):
            workloads.get_workload("duck")
    finally:
        entry_point_targets.cache_clear()


def test_the_workload_contract_is_the_abstract_methods_and_every_builtin_keeps_it():
    assert REQUIRED_METHODS == ("footprint_bytes", "grid", "prepare", "work")
    assert missing_methods(object) == REQUIRED_METHODS
    for name, target in workloads.BUILTIN_WORKLOADS.items():
        cls = workloads.builtin_workload_class(name)
        if cls is None:  # its framework is not installed here
            continue
        assert issubclass(cls, Workload) and missing_methods(cls) == (), target
        assert isinstance(cls.version, str) and cls.version, target
