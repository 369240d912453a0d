"""One schema source (issue #29): the shipped JSON Schema is generated from the import's checks
(store/results_json_schema.py), so the two cannot say different things. Checked both ways: the file
is what the checks generate now, a real export passes both, and what the import refuses for a type,
a range, a missing field or a word outside its list, the JSON Schema refuses too."""
from __future__ import annotations

import copy
import json
import math

import pytest

from accelbench.cli.main import main
from accelbench.errors import UsageError
from accelbench.results import Check, Measurement, Skip, Spec, Work
from accelbench.schemas import load_schema
from accelbench.store import document_check
from accelbench.store.db import Store
from accelbench.store.document_schema import validate_document
from accelbench.store.results_json_schema import SCHEMA_FILE, results_json_schema, schema_text

jsonschema = pytest.importorskip("jsonschema")


def test_the_shipped_file_is_what_the_checks_generate():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "src/accelbench/schemas/results.schema.json is stale: python -m accelbench.store.results_json_schema --write")
    assert load_schema("results") == results_json_schema()


def test_the_generated_schema_is_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(results_json_schema())


def test_the_schemas_bounds_are_the_checks_own_constants():
    """The schema's figures come from the checks' constants, not from a copy of them."""
    samples = results_json_schema()["$defs"]["result"]["properties"]["phases_s"]["additionalProperties"]
    assert (samples["items"]["minimum"], samples["items"]["maximum"]) == (
        document_check.MIN_SAMPLE_S, document_check.MAX_SECONDS)
    label = results_json_schema()["$defs"]["spec"]["properties"]["workload"]
    assert f"{{1,{document_check.MAX_LABEL}}}" in label["pattern"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict:
    """A real `accelbench export` document of stored results (nothing is measured)."""
    folder = tmp_path_factory.mktemp("export")
    db, out = folder / "r.sqlite", folder / "r.json"
    spec = Spec.make("matmul", "numpy", "cpu", n=64, dtype="float64", threads=1)
    failed = Check(False, math.nan, 1e-12, "NaN in the output", "cpu")
    with Store(db) as store:
        run_id = store.start_run({"hostname": "node1", "inventory": {"devices": [{"id": "cpu", "kind": "cpu"}]}},
                                 {"workloads": ["matmul"]}, None)
        for check, n in ((Check(True, 1e-15, 1e-12, "ok", "cpu"), 64), (failed, 128)):
            store.add_result(run_id, Measurement(
                spec=Spec.make("matmul", "numpy", "cpu", n=n, dtype="float64", threads=1),
                phases_s={"compute": tuple(1e-3 * (1 + 0.01 * i) for i in range(20))}, first_call_s=2e-3,
                work=Work(2 * n**3, 24 * n**2), check=check, threads=1, workload_version="1"))
        store.add_skip(run_id, Skip(spec, "not installed"))
        store.finish_run(run_id, "complete")
    assert main(["export", "--db", str(db), "-o", str(out)]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def _export_schema() -> dict:
    schema = results_json_schema()
    return {"$defs": schema["$defs"], "$ref": "#/$defs/export_document"}


def test_a_real_export_passes_both(exported):
    validate_document(exported)
    jsonschema.validate(exported, _export_schema())
    assert exported["runs"][0]["results"][1]["check"]["max_rel_error"] == "nan"  # the export's way of saying it


def _result(doc: dict) -> dict:
    return doc["runs"][0]["results"][0]


# what the import refuses, by kind of rule: each must be refused by the JSON Schema too
REFUSED = {
    "a sample of 0 s": lambda d: _result(d)["phases_s"]["compute"].__setitem__(0, 0.0),
    "a sample of a year": lambda d: _result(d)["phases_s"]["compute"].__setitem__(0, 3.2e7),
    "no samples": lambda d: _result(d)["phases_s"].update(compute=[]),
    "an unknown phase": lambda d: _result(d)["phases_s"].update(warmup=[1.0]),
    "no compute phase": lambda d: _result(d)["phases_s"].pop("compute"),
    "flops 1e30": lambda d: _result(d)["work"].update(flops=1e30),
    "a text for calls": lambda d: _result(d).update(calls_per_sample="4"),
    "threads 0": lambda d: _result(d).update(threads=0),
    "an unknown verdict": lambda d: _result(d).update(verdict="great"),
    "an unknown result field": lambda d: _result(d).update(cpu_temperature_c=71),
    "no check": lambda d: _result(d).pop("check"),
    "a device id with a space": lambda d: _result(d)["spec"].update(device="cuda 0"),
    "a workload named with $": lambda d: _result(d)["spec"].update(workload="$x$"),
    "a parameter called backend": lambda d: _result(d)["spec"]["params"].update(backend="numpy"),
    "a parameter holding a list": lambda d: _result(d)["spec"]["params"].update(n=[64]),
    "a caveat without its kind": lambda d: _result(d).update(warnings=[{"text": "x"}]),
    "an unknown run status": lambda d: d["runs"][0].update(status="paused"),
    "a run id latest": lambda d: d["runs"][0].update(id="latest"),
    "a time that is no time": lambda d: d["runs"][0].update(started_at=17),
    "another format": lambda d: d.update(format="other-results"),
    "format version 2": lambda d: d.update(format_version=2),
    "an unknown peak metric": lambda d: d["runs"][0]["machine"]["inventory"]["devices"][0].update(
        peaks=[{"metric": "vibes", "value": 1.0}]),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_import_refuses_the_json_schema_refuses(exported, name):
    doc = copy.deepcopy(exported)
    REFUSED[name](doc)
    with pytest.raises(UsageError):
        validate_document(doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, _export_schema())


def test_a_field_written_now_is_required_by_the_schema_and_still_optional_on_import(exported):
    """WRITTEN: new output always has it, so a reader may count on it; an older document lacks it."""
    doc = copy.deepcopy(exported)
    del _result(doc)["workload_version"]
    validate_document(doc)
    with pytest.raises(jsonschema.ValidationError, match="workload_version"):
        jsonschema.validate(doc, _export_schema())
