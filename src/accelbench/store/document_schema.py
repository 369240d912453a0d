"""The shape of a results document, built from the checks in document_check.py; `validate_document`
is the one entry point (import, gather, compare of files all call it)."""
from __future__ import annotations

import math
from itertools import chain, repeat
from collections.abc import Iterator
from typing import Any

from accelbench.devices.model import DEVICE_KINDS, PEAK_METRICS, PROVENANCES
from accelbench.errors import UsageError
from accelbench.results import PHASES
from accelbench.store.check_description import (
    OPTIONAL,
    REQUIRED,
    WRITTEN,
    described,
    json_schema_of,
    referenced,
)
from accelbench.store.document_check import (
    PARAM_NAME,
    SPEC_NAMES,
    COUNT,
    DEVICE_ID,
    FORMAT_NAME,
    FORMAT_VERSION,
    LABEL,
    MAX_BYTES,
    MAX_ITEMS,
    MAX_LABEL,
    MAX_PEAK,
    MAX_SECONDS,
    MAX_TEXT,
    MIN_SAMPLE_S,
    NON_FINITE,
    RUN_ID,
    SAMPLE,
    SECONDS,
    SHOWN,
    WORK,
    Invalid,
    Where,
    all_pass,
    boolean,
    expected,
    fields,
    free_object,
    list_of,
    mapping,
    number,
    one_of,
    optional,
    pattern,
    text,
    time,
)
from accelbench.store.schema import RUN_STATUSES
from accelbench.verdict import VERDICTS
from accelbench.vocabulary import ROLES

PARAM_VALUE_CHARS = 200


def _param_value(value: Any, path: Where) -> Any:
    """A parameter is part of the spec's identity (hashed, compared, shown): a scalar only."""
    if isinstance(value, str):
        return LABEL(value, path) if value else value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return _WHOLE_PARAM(value, path)
    if isinstance(value, float):
        return _FLOAT_PARAM(value, path)
    raise expected(path, "a string, number, true, false or null (a parameter is one value)", value)


def _param_values(column: list) -> bool:
    checks = {str: LABEL, bool: None, type(None): None, int: _WHOLE_PARAM, float: _FLOAT_PARAM}
    for kind in set(map(type, column)):
        if kind not in checks:
            return False
        check = checks[kind]
        if check is not None and not all_pass(check, [v for v in column if type(v) is kind and v != ""]):
            return False
    return True


_param_value.bulk = _param_values  # type: ignore[attr-defined]


_WHOLE_PARAM, _FLOAT_PARAM = number(-2**53, 2**53, whole=True), number(-1e300, 1e300)
described(_param_value, {"anyOf": [{"const": ""}, json_schema_of(LABEL), json_schema_of(_FLOAT_PARAM),
                                   {"type": ["boolean", "null"]}]})
_PARAM_NAME = pattern(PARAM_NAME, "a parameter name (letters, digits, _; at most 64)")
_PARAM_MAPPING = mapping(_PARAM_NAME, _param_value, "an object of parameter -> value")


def _params(value: Any, path: Where) -> dict:
    _PARAM_MAPPING(value, path)
    for name in value:
        if name in SPEC_NAMES:  # would clash with Spec.make's own arguments
            raise Invalid((path, name), "a parameter may not be called " + ", ".join(SPEC_NAMES))
    return value


_params.bulk = lambda column: (  # type: ignore[attr-defined]
    all_pass(_PARAM_MAPPING, column) and set().union(*column).isdisjoint(SPEC_NAMES))
described(_params, {**json_schema_of(_PARAM_MAPPING), "propertyNames": {
    "allOf": [json_schema_of(_PARAM_NAME), {"not": {"enum": list(SPEC_NAMES)}}]}})


_check_samples_one_by_one = list_of(SAMPLE, non_empty=True)
_NUMBER_TYPES = frozenset((float, int))


def _samples(value: Any, path: Where) -> list:
    """Samples are most of a document: the common case is checked in bulk (C loops), anything
    unusual item by item, to name it."""
    if isinstance(value, list) and value and len(value) <= MAX_ITEMS and set(map(type, value)) <= _NUMBER_TYPES:
        try:
            # min skips a NaN, the sum does not; all positive and their sum at most half the bound:
            # each is below it, whatever the sum's rounding (one pass fewer than max)
            if min(value) >= MIN_SAMPLE_S and sum(value) <= MAX_SECONDS / 2:
                return value
            if min(value) >= MIN_SAMPLE_S and max(value) <= MAX_SECONDS and math.isfinite(sum(value)):
                return value
        except OverflowError:  # an integer too large for a float
            pass
    return _check_samples_one_by_one(value, path)


described(_samples, json_schema_of(_check_samples_one_by_one))


def _phases(value: Any, path: Where) -> dict:
    if not isinstance(value, dict):
        raise expected(path, "an object of phase -> samples", value)
    for phase, samples in value.items():
        if phase not in PHASES:
            raise Invalid((path, phase, SHOWN), f"unknown phase (accepted: {', '.join(PHASES)})")
        _samples(samples, (path, phase))
    if "compute" not in value:
        raise Invalid((path, "compute"), "missing (required)")
    return value


def _all_phases(column: list) -> bool:
    """_phases for many results at once (True only when each passes)."""
    if set(map(type, column)) != {dict} or not set().union(*column) <= set(PHASES):
        return False
    if not all(map(dict.__contains__, column, repeat("compute"))):
        return False
    for samples in chain.from_iterable(map(dict.values, column)):  # list by list: each stays in cache
        if not (type(samples) is list and 0 < len(samples) <= MAX_ITEMS
                and set(map(type, samples)) <= _NUMBER_TYPES and min(samples) >= MIN_SAMPLE_S
                and sum(samples) <= MAX_SECONDS / 2):  # all positive: each below the bound
            return False
    return True


_phases.bulk = _all_phases  # type: ignore[attr-defined]
described(_phases, {"type": "object", "required": ["compute"], "propertyNames": {"enum": list(PHASES)},
                    "additionalProperties": json_schema_of(_samples)})


def _rel_error(value: Any, path: Where) -> Any:
    if isinstance(value, str):
        return _NON_FINITE_ERROR(value, path)
    return _FINITE_ERROR(value, path)


_NON_FINITE_ERROR, _FINITE_ERROR = one_of(NON_FINITE, 'a number >= 0, "nan" or "inf"'), number(0, 1e300)
_rel_error.bulk = lambda column: (  # type: ignore[attr-defined]
    all_pass(_NON_FINITE_ERROR, [v for v in column if isinstance(v, str)])
    and all_pass(_FINITE_ERROR, [v for v in column if not isinstance(v, str)]))
# `run --json` writes a NaN or infinite error as null (no NaN in its JSON); import reads exports only
described(_rel_error, {"anyOf": [json_schema_of(_FINITE_ERROR), json_schema_of(_NON_FINITE_ERROR), {"type": "null"}],
                       "description": 'null (run --json) or "nan" / "inf" (export) when the error was not finite'})


def _ignored_object(value: Any, path: Where) -> dict:
    """A result's `derived` figures (docs/results-schema.md): an object, read by nothing here.
    Import and compare recompute every figure from the samples, so it is neither stored nor shown."""
    if not isinstance(value, dict):
        raise expected(path, "an object", value)
    return value


_ignored_object.bulk = lambda column: all(type(v) is dict for v in column)  # type: ignore[attr-defined]
described(_ignored_object, {"$ref": "#/$defs/derived"})  # its layout: results_json_schema.py, as report/derived.py writes it


_SHORT = text(MAX_LABEL)
_WARNINGS = list_of(text(), max_items=10_000)
_TEXT, _KINDED = text(), fields({"text": (text(), REQUIRED), "kind": (text(MAX_LABEL), REQUIRED),
                                 "figures": (free_object, OPTIONAL)})


def caveat(value: Any, path: Where) -> Any:
    """A warning or a verdict reason: {"text", "kind"[, "figures"]} (accelbench.verdict.Caveat), or
    a plain text (results stored before kinds)."""
    return _KINDED(value, path) if isinstance(value, dict) else _TEXT(value, path)


referenced("caveat", described(caveat, {
    "description": "A warning or a verdict reason: its text, its kind (what verdicts and advice read) and its "
                   "figures; a plain string in results stored before kinds",
    "oneOf": [json_schema_of(_TEXT), json_schema_of(_KINDED)]}))
_CAVEATS = list_of(caveat, max_items=10_000)
SPEC = referenced("spec", fields({"workload": (LABEL, REQUIRED), "backend": (LABEL, REQUIRED),
                                   "device": (DEVICE_ID, REQUIRED), "params": (_params, WRITTEN)}))
_CHECK = fields({"passed": (boolean, REQUIRED), "max_rel_error": (_rel_error, REQUIRED),
                 "tolerance": (number(0, 1e300), REQUIRED), "detail": (text(), WRITTEN),
                 "device_seen": (optional(_SHORT), WRITTEN)})
# a result as Measurement.to_dict writes it (plus the `derived` block an export adds, ignored here);
# tests/unit/test_one_schema.py holds these names equal to to_dict's and to results.schema.json's
_WORKLOAD_VERSION = optional(_SHORT)
described(_WORKLOAD_VERSION, {**json_schema_of(_WORKLOAD_VERSION), "description": (
    "the version of the workload's code that made the result (Workload.version); null: unknown, "
    "stored before workloads had versions")})
_ROLE = optional(one_of(ROLES))
described(_ROLE, {**json_schema_of(_ROLE), "description": (
    "what its figures say about a device, as its workload declared it (Workload.role): the answer, the "
    "roofline and the speed-ups read it; null: declared none, or stored before roles were")})
# WRITTEN: in every result written now, accepted missing from documents written before it
RESULT_FIELDS = {
    "spec": (SPEC, REQUIRED), "phases_s": (_phases, REQUIRED), "first_call_s": (SECONDS, REQUIRED),
    "work": (fields({"flops": (WORK, REQUIRED), "bytes_moved": (WORK, REQUIRED)}), REQUIRED),
    "check": (_CHECK, REQUIRED), "warnings": (_CAVEATS, WRITTEN),
    "calls_per_sample": (COUNT, WRITTEN), "target_met": (boolean, WRITTEN),
    "threads": (optional(number(1, 2**20, whole=True)), WRITTEN), "telemetry": (free_object, WRITTEN),
    "extra": (free_object, WRITTEN), "verdict": (one_of(("", *VERDICTS)), WRITTEN),
    "verdict_reasons": (_CAVEATS, WRITTEN), "workload_version": (_WORKLOAD_VERSION, WRITTEN),
    "role": (_ROLE, WRITTEN), "derived": (_ignored_object, WRITTEN)}
RESULT = referenced("result", fields(RESULT_FIELDS))
SKIP = fields({"spec": (SPEC, REQUIRED), "reason": (text(), REQUIRED)})

# the inventory snapshot (as `accelbench info --json` writes it): devices are rebuilt from it for
# reports and projections, so their fields are typed; the rest is free-form
_PEAK = fields({"metric": (one_of(PEAK_METRICS), REQUIRED), "value": (number(0, MAX_PEAK, above=True), REQUIRED),
                "unit": (_SHORT, OPTIONAL), "provenance": (one_of(PROVENANCES), OPTIONAL),
                "detail": (text(), OPTIONAL), "inputs": (free_object, OPTIONAL)})
_DEVICE = fields({"id": (DEVICE_ID, REQUIRED), "kind": (one_of(DEVICE_KINDS), OPTIONAL), "vendor": (_SHORT, OPTIONAL),
                  "name": (LABEL, OPTIONAL), "source": (_SHORT, OPTIONAL),
                  "memory_bytes": (optional(number(0, MAX_BYTES, whole=True)), OPTIONAL),
                  "properties": (free_object, OPTIONAL), "peaks": (list_of(_PEAK, max_items=100), OPTIONAL),
                  "reach": (mapping(_SHORT, _SHORT, "an object of backend -> device id"), OPTIONAL),
                  "warnings": (_WARNINGS, OPTIONAL)}, open_ended=True)
_INVENTORY = fields({"devices": (list_of(_DEVICE, max_items=1000), OPTIONAL)}, open_ended=True)
_MACHINE = fields({"hostname": (text(255), WRITTEN), "os": (_SHORT, WRITTEN), "python": (_SHORT, WRITTEN),
                   "inventory": (_INVENTORY, WRITTEN), "software": (free_object, WRITTEN),
                   "environment": (free_object, WRITTEN)}, open_ended=True)
_TAGS = mapping(text(MAX_LABEL, non_empty=True), text(MAX_TEXT), "an object of tag -> text")
_RUN = fields({
    "id": (RUN_ID, REQUIRED), "started_at": (time, REQUIRED), "finished_at": (optional(time), WRITTEN),
    "status": (one_of(RUN_STATUSES), REQUIRED), "accelbench_version": (_SHORT, REQUIRED),
    "selection": (free_object, WRITTEN), "machine": (_MACHINE, REQUIRED), "tags": (_TAGS, WRITTEN),
    "results": (list_of(RESULT), REQUIRED), "skips": (list_of(SKIP), WRITTEN)})


def _format_version(value: Any, path: Where) -> int:
    number(0, 2**31, whole=True)(value, path)
    if value != FORMAT_VERSION:
        raise Invalid(path, f"this accelbench reads version {FORMAT_VERSION}, got {value}"
                            + (" (upgrade accelbench)" if value > FORMAT_VERSION else ""))
    return value


described(_format_version, {"const": FORMAT_VERSION})
_FORMAT_NAME = one_of((FORMAT_NAME,), f'"{FORMAT_NAME}"')
_DOCUMENT_FIELDS = {"format": (_FORMAT_NAME, REQUIRED), "format_version": (_format_version, REQUIRED),
                    "exported_at": (optional(time), WRITTEN), "accelbench_version": (_SHORT, WRITTEN),
                    "results_schema_version": (number(1, 2**31, whole=True), WRITTEN),
                    "runs": (list_of(_RUN), REQUIRED)}  # runs last: validated_runs relies on it
DOCUMENT = fields(_DOCUMENT_FIELDS)


def validate_document(doc: Any) -> None:
    """Raise UsageError naming the JSON path of the first bad field; return None if all is well."""
    for _ in validated_runs(doc):
        pass


def validated_runs(doc: Any) -> Iterator[dict[str, Any]]:
    """validate_document a run at a time: yields each run once it and all before it are valid, so
    work on it may start while later runs are checked. The error raised (UsageError) is the one
    validate_document raises, the first bad field in document order: the document's own fields,
    then each run in turn, then run ids that appear twice."""
    try:
        if isinstance(doc, dict) and "format" in doc:
            _FORMAT_NAME(doc["format"], "format")  # a foreign document: say so before anything else
        runs = doc.get("runs") if isinstance(doc, dict) else None
        if not isinstance(runs, list) or len(runs) > MAX_ITEMS:
            DOCUMENT(doc, "")  # says what is wrong with the document or its runs field
            runs = []
        # one pass checks the known fields in order (runs last), then refuses unknown ones
        DOCUMENT({**{k: v for k, v in doc.items() if k in _DOCUMENT_FIELDS}, "runs": []}, "")
        for i, run in enumerate(runs):
            _RUN(run, ("runs", i))
            yield run
        DOCUMENT({**doc, "runs": []}, "")
        seen: set[str] = set()
        for i, run in enumerate(runs):
            if run["id"] in seen:
                raise Invalid(f"runs[{i}].id", f"run {run['id']!r} appears twice in the document")
            seen.add(run["id"])
    except Invalid as exc:
        raise UsageError(str(exc)) from None
