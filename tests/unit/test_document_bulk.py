"""Validation of long result lists goes field by field across all results first (document_check's
bulk pass); that pass only decides speed: every document gets the message item-by-item
validation gives, naming the first bad field in document order."""
from __future__ import annotations

import copy

import pytest

from accelbench.errors import UsageError
from accelbench.store import document_check, document_schema
from accelbench.store.document_schema import validate_document


def _result(i: int) -> dict:
    return {"spec": {"workload": "matmul", "backend": "numpy", "device": "cpu",
                     "params": {"n": 64 + i, "dtype": "float32", "fast": True, "note": None, "scale": 0.5}},
            "phases_s": {"compute": [1e-3 * (1 + k / 10) for k in range(20)], "to_device": [2e-3, 3]},
            "first_call_s": 0.01, "work": {"flops": 1e9, "bytes_moved": 3e6},
            "check": {"passed": i % 3 != 0, "max_rel_error": "nan" if i % 7 == 0 else 1e-7, "tolerance": 1e-3,
                      "device_seen": None if i % 2 else "cpu"},
            "warnings": ["w"] * (i % 3), "threads": 2, "telemetry": {"cpu": {"median": 50.0}} if i % 4 else {},
            "extra": {}, "verdict": "valid", "verdict_reasons": []}


def _document(results: int = 100) -> dict:
    return {"format": "accelbench-results", "format_version": 1, "runs": [
        {"id": "run-1", "started_at": "2025-01-01T00:00:00+00:00", "status": "complete",
         "accelbench_version": "1", "machine": {}, "results": [_result(i) for i in range(results)]}]}


def _message(doc: dict) -> str:
    try:
        validate_document(doc)
    except UsageError as exc:
        return str(exc)
    return "accepted"


def _item_by_item(doc: dict, monkeypatch) -> str:
    with monkeypatch.context() as patch:
        patch.setattr(document_check, "_BULK_FROM", 10**9)
        return _message(doc)


def _set(path: tuple, value):
    def change(doc):
        *parents, last = path
        target = doc["runs"][0]["results"]
        for step in parents:
            target = target[step]
        target[last] = value
    return change


def _delete(path: tuple):
    def change(doc):
        *parents, last = path
        target = doc["runs"][0]["results"]
        for step in parents:
            target = target[step]
        del target[last]
    return change


CHANGES = {
    "a NaN sample": _set((70, "phases_s", "compute", 5), float("nan")),
    "a true sample": _set((70, "phases_s", "to_device", 0), True),
    "a sample of 0": _set((70, "phases_s", "compute", 0), 0),
    "a sample of a year": _set((70, "phases_s", "compute", 0), 3.2e7),
    "an empty sample list": _set((70, "phases_s", "to_device"), []),
    "no compute phase": _delete((70, "phases_s", "compute")),
    "an unknown phase": _set((70, "phases_s", "cooldown"), [1.0]),
    "a negative flop count": _set((70, "work", "flops"), -1.0),
    "an infinite first call": _set((70, "first_call_s"), float("inf")),
    "a huge integer thread count": _set((70, "threads"), 10**400),
    "a float thread count": _set((70, "threads"), 2.0),
    "a string that passed": _set((70, "check", "passed"), "yes"),
    "a relative error of 'big'": _set((70, "check", "max_rel_error"), "big"),
    "a label with $": _set((70, "spec", "workload"), "ma$h"),
    "a parameter named device": _set((70, "spec", "params", "device"), "cpu"),
    "a list as parameter": _set((70, "spec", "params", "n"), [1]),
    "a parameter beyond 2**53": _set((70, "spec", "params", "n"), 2**60),
    "a long warning": _set((70, "warnings"), ["x" * 30_000]),
    "an unknown field": _set((70, "colour"), "red"),
    "a missing spec": _delete((70, "spec")),
    "deep telemetry": _set((70, "telemetry"), {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {
        "i": {"j": {"k": {"l": {"m": {"n": 1}}}}}}}}}}}}}}),
    "an unknown verdict": _set((70, "verdict"), "great"),
    "errors in two results: the earlier one named": lambda d: (_set((90, "spec", "device"), "a b")(d),
                                                             _set((20, "verdict_reasons"), [1])(d)),
    "a late field of an early result before an early field of a later one":
        lambda d: (_set((10, "verdict"), "great")(d), _set((11, "spec"), None)(d)),
    "an integer sample and a float one": _set((70, "phases_s", "compute", 1), 2),
    "a float64-like subclass sample": _set((70, "phases_s", "compute", 1), type("F", (float,), {})(1e-3)),
}


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_long_result_list_is_judged_as_item_by_item_validation_judges_it(name, monkeypatch):
    doc = _document()
    CHANGES[name](doc)
    alone = _item_by_item(copy.deepcopy(doc), monkeypatch)
    assert _message(doc) == alone


def test_errors_still_name_their_result_and_field():
    doc = _document()
    _set((70, "phases_s", "compute", 5), float("nan"))(doc)
    assert _message(doc).startswith("runs[0].results[70].phases_s.compute[5]: expected a finite number")


def test_the_bulk_pass_accepts_valid_results_and_refuses_a_bad_one():
    assert _message(_document()) == "accepted"
    results = _document()["runs"][0]["results"]
    assert document_check.all_pass(document_schema.RESULT, results)
    results[50]["work"]["bytes_moved"] = float("nan")
    assert not document_check.all_pass(document_schema.RESULT, results)


def _one_pass(doc) -> str:
    """The whole document checked in one pass (how validate_document worked before it streamed runs)."""
    try:
        if isinstance(doc, dict) and "format" in doc:
            document_schema._FORMAT_NAME(doc["format"], "format")
        document_schema.DOCUMENT(doc, "")
        seen = set()
        for i, run in enumerate(doc["runs"]):
            if run["id"] in seen:
                return f"runs[{i}].id: run {run['id']!r} appears twice in the document"
            seen.add(run["id"])
    except document_check.Invalid as exc:
        return str(exc)
    return "accepted"


def _three_runs() -> dict:
    doc = _document(5)
    doc["runs"] += [dict(copy.deepcopy(doc["runs"][0]), id=f"run-{k}") for k in (2, 3)]
    return doc


def _bad_result(doc, run):
    doc["runs"][run]["results"][1]["first_call_s"] = -1


STREAMED = {
    "valid": lambda d: None,
    "bad run 2 of 3": lambda d: _bad_result(d, 1),
    "bad runs 2 and 3": lambda d: (_bad_result(d, 2), _bad_result(d, 1)),
    "unknown top-level field and a bad run": lambda d: (d.update(zzz=1), _bad_result(d, 2)),
    "unknown top-level field only": lambda d: d.update(zzz=1),
    "bad version and a bad run": lambda d: (d.update(format_version=7), _bad_result(d, 0)),
    "bad exported_at after runs in the file": lambda d: (d.pop("runs"), d.update(runs=_three_runs()["runs"],
                                                                                   exported_at="yesterday")),
    "a run id twice and a bad later run": lambda d: (d["runs"][1].update(id="run-1"), _bad_result(d, 2)),
    "a run id twice": lambda d: d["runs"][2].update(id="run-1"),
    "runs not a list": lambda d: d.update(runs={"a": 1}),
    "runs missing": lambda d: d.pop("runs"),
    "a bad run that is not an object": lambda d: d["runs"].insert(1, [1, 2]),
    "foreign format": lambda d: d.update(format="other", runs=3),
}


@pytest.mark.parametrize("name", list(STREAMED))
def test_runs_checked_one_at_a_time_give_the_one_pass_message(name):
    """validated_runs lets an import store run 1 while run 2 is checked: the message of a bad
    document, and what is accepted, stay those of checking it all at once."""
    doc = _three_runs()
    STREAMED[name](doc)
    expected = _one_pass(doc)
    assert _message(doc) == expected
    yielded = []
    try:
        for run in document_schema.validated_runs(doc):
            yielded.append(run["id"])
    except UsageError as exc:
        assert str(exc) == expected
    else:
        assert expected == "accepted" and yielded == ["run-1", "run-2", "run-3"]
    assert (expected == "accepted") == (name == "valid")  # every mutation is refused
