"""One name for each thing (issue #29): a class name means one thing across the package, a result's
verdict has one attribute, and the whole device inventory one builder."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import accelbench
from accelbench.results import Measurement
from accelbench.store.ceilings import measured_inventory

SRC = Path(accelbench.__file__).resolve().parent


def _top_level_definitions() -> dict[str, list[str]]:
    """name -> the modules that define a class or function of that name at their top level."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                found[node.name].append(str(path.relative_to(SRC)))
    return found


def test_a_finding_is_one_class():
    """verdict.Finding (a reason and the verdict it gives: now VerdictReason) and health's (one check of
    one device: now HealthFinding) shared the report's name: a reader, and an import, took the wrong one."""
    definitions = _top_level_definitions()
    assert definitions["Finding"] == ["report/findings.py"]
    assert definitions["VerdictReason"] == ["verdict.py"] and definitions["HealthFinding"] == ["health/model.py"]


def test_a_verdict_is_read_by_one_name():
    """Measurement.verdict; the alias `status` is gone (a reader met both for one value)."""
    assert "verdict" in Measurement.__dataclass_fields__
    assert not hasattr(Measurement, "status")


def test_the_whole_inventory_has_one_builder():
    """collect_inventory gives what the probes find (the devices layer, below backends and store);
    measured_inventory adds what the backends reach and the measured peaks: a run, `info` and
    accelbench.inventory() all take it, and nothing else builds an Inventory."""
    definitions = _top_level_definitions()
    builders = sorted(name for name in definitions
                      if name.endswith("inventory") and not name.startswith(("_", "render_")))  # render: shows one
    assert builders == ["collect_inventory", "measured_inventory"], builders
    assert accelbench.inventory is measured_inventory
