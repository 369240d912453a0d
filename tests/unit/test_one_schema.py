"""One schema for a result (issue #29): what Measurement.to_dict writes, what the shipped JSON Schema
(schemas/results.schema.json) declares, what an import accepts (store/document_schema.py) and what
docs/results-schema.md lists are the same fields, checked both ways; every result records its
workload's version, old ones load as unknown, and `compare` names a changed version."""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from accelbench.report.compare import compare_runs
from accelbench.report.compare.metadata import UNKNOWN_VERSION, differences
from accelbench.report.compare.sources import RunData
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.schemas import load_schema
from accelbench.store import schema as layout
from accelbench.store.db import Store
from accelbench.store.document_schema import RESULT_FIELDS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "results-schema.md"
DERIVED = "derived"  # the figures derived from the samples: added beside the measurement, never stored


def _measurement(version: str | None = "1", median_s: float = 1e-3, **spec) -> Measurement:
    return Measurement(spec=Spec.make("matmul", "numpy", "cpu", n=spec.get("n", 64), dtype="float64", threads=1),
                       phases_s={"compute": tuple(median_s * (1 + 0.001 * i) for i in range(20))},
                       first_call_s=median_s, work=Work(2 * 64**3, 3 * 8 * 64**2),
                       check=Check(True, 1e-15, 1e-12, "ok", "cpu"), threads=1, workload_version=version)


def mismatches(written: set[str], declared: dict, required: set[str]) -> list[str]:
    """Each way the written fields and a schema object's declaration disagree ([] when they agree)."""
    found = [f"{name}: written by to_dict, not in the schema" for name in sorted(written - set(declared))]
    found += [f"{name}: in the schema, not written by to_dict" for name in sorted(set(declared) - written)]
    found += [f"{name}: written every time, not required by the schema" for name in sorted(written - required)]
    return found


def _result_schema() -> dict:
    return load_schema("results")["$defs"]["result"]


def _written() -> set[str]:
    return set(_measurement().to_dict()) | {DERIVED}


def test_the_json_schema_declares_exactly_what_a_result_writes():
    result = _result_schema()
    assert mismatches(_written(), result["properties"], set(result["required"])) == []


def test_a_field_added_on_either_side_alone_is_caught(monkeypatch):
    result = _result_schema()
    plain = Measurement.to_dict
    monkeypatch.setattr(Measurement, "to_dict", lambda self: {**plain(self), "cpu_temperature_c": 71.0})
    assert mismatches(_written(), result["properties"], set(result["required"])) == [
        "cpu_temperature_c: written by to_dict, not in the schema",
        "cpu_temperature_c: written every time, not required by the schema"]
    monkeypatch.setattr(Measurement, "to_dict", plain)
    declared = {**result["properties"], "gpu_temperature_c": {"type": "number"}}
    assert mismatches(_written(), declared, set(result["required"])) == [
        "gpu_temperature_c: in the schema, not written by to_dict"]


@pytest.mark.parametrize("part, written", [
    ("spec", set(Spec.make("matmul", "numpy", "cpu", n=1).to_dict())),
    ("check", set(Check(True, 0.0, 1e-12).to_dict())),
    ("work", set(Work(1.0, 1.0).to_dict())),
])
def test_the_parts_of_a_result_match_their_schema_too(part, written):
    declared = _result_schema()["properties"][part]
    declared = load_schema("results")["$defs"]["spec"] if "$ref" in declared else declared
    assert mismatches(written, declared["properties"], set(declared["required"])) == []


def test_an_import_accepts_exactly_the_fields_a_result_writes():
    assert set(RESULT_FIELDS) == _written()


def test_the_documentation_lists_every_field_of_a_result():
    text = DOCS.read_text(encoding="utf-8")
    table = text.split("## Result: the raw measurement", 1)[1].split("\n## ", 1)[0]
    listed = {name for line in table.splitlines() if line.startswith("| `")
              for name in re.findall(r"`([a-z_]+)`", line.split("|")[1])}
    assert listed == _written()


def test_each_result_keeps_its_workload_version_through_the_store_and_old_ones_are_unknown(tmp_path):
    path = tmp_path / "r.sqlite"
    with Store(path) as store:
        run_id = store.start_run({"hostname": "h"}, {}, None)
        store.add_result(run_id, _measurement("2"))
        store.add_result(run_id, _measurement(None, n=128))  # as a result from before versions reads
        assert [m.workload_version for m in store.results(run_id)] == ["2", None]
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT workload_version FROM results ORDER BY id")] == ["2", None]
    conn.close()
    old = {k: v for k, v in _measurement().to_dict().items() if k != "workload_version"}
    assert Measurement.from_dict(old).workload_version is None
    assert layout.MIGRATIONS[5] == ("ALTER TABLE results ADD COLUMN workload_version TEXT",)


def _run(run_id: str, version: str | None) -> RunData:
    return RunData(run_id, source="test", measurements=(_measurement(version),), machine={"hostname": "node1"},
                   selection={"rigor": "quick"}, accelbench_version="0.1.0")


def test_compare_names_a_changed_workload_version_as_a_difference():
    changed = compare_runs(_run("a", "1"), _run("b", "2"))
    assert [d.to_dict() for d in changed.differences] == [{"field": "workload matmul.version", "a": "1", "b": "2"}]
    assert changed.differences[0].text() == "workload matmul.version: 1 → 2"  # as `compare` prints it
    assert changed.to_dict()["metadata_differences"] == [{"field": "workload matmul.version", "a": "1", "b": "2"}]
    assert differences(_run("a", "1"), _run("b", "1")) == []
    assert [d.b for d in differences(_run("a", None), _run("b", "1"))] == ["1"]
    assert [d.a for d in differences(_run("a", None), _run("b", "1"))] == [UNKNOWN_VERSION]
