"""`accelbench import` of a whole export file, fast: 100,000 results in seconds, in ONE transaction.

The samples are most of a file (a hundred numbers per result). They are parsed and validated like
everything else, but not written out again: each result's `phases_s` object is stored as the text
the file already holds, whitespace removed. That text is found by a pattern over the raw bytes and
used only when its matches are exactly the results' own `phases_s` keys, one each, in document
order (a count that differs by one falls back to serialising the parsed values).
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from functools import lru_cache
from typing import Any

from accelbench.bulk import frozen_heap
from accelbench.errors import UsageError
from accelbench.store.db import Store
from accelbench.store.document_io import parse_json, read_bytes, skip_from_dict  # noqa: F401 - read_bytes re-exported
from accelbench.store.document_schema import validate_document, validated_runs
from accelbench.store.row_builder import RowBuilder, worth_a_child
from accelbench.store.schema import dumps
from accelbench.verdict import caveats_from_json, caveats_to_json

# Every result has this key once; a valid phases object holds phase names and lists of numbers,
# so no brace inside it. Any other occurrence (in a string, under `extra`, a duplicate key) makes
# the count differ from the number of results, and the file's text is not used.
PHASES_KEY = b'"phases_s"'
JSON_WHITESPACE = b" \t\n\r"
_KEY_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str).encode  # as Spec.key writes it


def import_file(store: Store, path: str | os.PathLike[str], tags: Mapping[str, Any] | None = None) -> list[str]:
    """Validate the export file at `path` completely, then store its runs in one transaction.

    Same contract as export.import_document (ids added; runs already stored skipped; the first bad
    field named by its JSON path, prefixed with the file name)."""

    raw = read_bytes(path)
    with frozen_heap(collect=False):  # millions of new objects and no cycles among them
        if worth_a_child(len(raw)):  # validated and built on another core while this one stores
            with RowBuilder(_validated_records, raw, str(path), tags) as builder:
                texts = phases_texts(raw)  # while the child parses and validates
                builder.tell(None if texts is None else len(texts))
                del raw
                return store.restore_runs(_with_phases(builder.records(), texts), bulk=True)
        doc = _validated(raw, path)
        phases = stored_phases(raw, doc)
        del raw
        added = store.restore_runs(run_records(doc["runs"], tags, phases), bulk=True)
        # freed here, while the collector is off: with it back on, its first pass over the young
        # generation would walk the millions of objects the document is made of (seconds at 100,000 results)
        del doc, phases
    return added


def _validated(raw: bytes, path: str | os.PathLike[str]) -> dict[str, Any]:
    doc = parse_json(raw, path)
    try:
        validate_document(doc)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None
    return doc


def _validated_records(raw: bytes, path: str, tags: Mapping[str, Any] | None,
                       told: Callable[[], Any]) -> Iterator[dict[str, Any]]:
    """restore_runs' arguments from the file's bytes, in the row builder's process (a UsageError
    there is raised in the parent). Each run is sent once it and all before it are valid
    (validated_runs), so storing starts while later runs are checked; the parent commits only after
    the last. The parent finds the samples' text meanwhile and tells how many it found: one per
    result, phases_json is left None for it to fill (the text need not cross the pipe); otherwise
    it is written from the values."""
    doc = parse_json(raw, path)
    runs = doc.get("runs") if isinstance(doc, dict) else None
    results = sum(len(run["results"]) for run in runs if isinstance(run, dict) and isinstance(run.get("results"), list)
                  ) if isinstance(runs, list) else None  # if the document proves invalid, nothing is kept
    yield from run_records(_checked_runs(doc, path), tags, repeat(None) if told() == results else None)


def _checked_runs(doc: Any, path: str) -> Iterator[dict[str, Any]]:
    try:
        yield from validated_runs(doc)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None


def _with_phases(records: Iterator[dict[str, Any]], texts: list[str] | None) -> Iterator[dict[str, Any]]:
    """The parent's side of _validated_records: each row's phases_json left None is the next text."""
    pending = iter(texts or ())
    at = RESULT_COLUMNS.index("phases_json")
    for record in records:
        columns, rows = record["result_rows"]
        record["result_rows"] = (columns, [row if row[at] is not None else (*row[:at], next(pending), *row[at + 1:])
                                           for row in rows])
        yield record


def stored_phases(raw: bytes, doc: dict[str, Any]) -> list[str] | None:
    """Each result's phases_s as compact JSON text from the file, in document order; None when the
    key's occurrences are not exactly one object per result (then the parsed values are written)."""
    results = sum(len(run["results"]) for run in doc["runs"])
    texts = phases_texts(raw, results)
    return texts if texts is not None and len(texts) == results else None


def phases_texts(raw: bytes, most: int | None = None) -> list[str] | None:
    """The compact text of every `"phases_s": {...}` object in the file, in order; None where such a
    key is followed by anything else, or occurs more than `most` times.

    Plain byte searches (memchr speed), not a regular expression, which would step through the
    hundreds of megabytes of samples one character at a time."""
    spans: list[bytes] = []
    at = raw.find(PHASES_KEY)
    while at != -1:
        after_key = at + len(PHASES_KEY)
        opening = raw.find(b"{", after_key, after_key + 64)
        if opening == -1 or raw[after_key:opening].strip(JSON_WHITESPACE) != b":":
            return None
        closing = raw.find(b"}", opening)
        if closing == -1 or raw.find(b"{", opening + 1, closing) != -1 or len(spans) == most:
            return None
        spans.append(raw[opening:closing + 1].translate(None, JSON_WHITESPACE))
        at = raw.find(PHASES_KEY, closing)
    try:
        return [span.decode("ascii") for span in spans]
    except UnicodeDecodeError:  # a non-ASCII phase name, which validation refuses
        return None


def run_records(runs: Iterable[dict[str, Any]], tags: Mapping[str, Any] | None,
                phases: Iterable[str | None] | None) -> Iterator[dict[str, Any]]:
    """restore_runs' arguments for each validated run, with its result rows already built; each
    result's phases_json from `phases` in order (None: written from its values)."""

    texts = iter(phases) if phases is not None else None
    for run in runs:
        yield {"run_id": run["id"], "started_at": run["started_at"], "finished_at": run.get("finished_at"),
               "status": run["status"], "accelbench_version": run["accelbench_version"],
               "selection": run.get("selection", {}), "machine": run["machine"],
               "tags": {**run.get("tags", {}), **dict(tags or {})},
               "result_rows": (RESULT_COLUMNS, [tuple(_row(run["id"], r, texts).values()) for r in run["results"]]),
               "skips": [skip_from_dict(s) for s in run.get("skips", [])]}


RESULT_COLUMNS = ("run_id", "spec_key", "workload", "backend", "device", "params_json", "phases_json",
                  "first_call_s", "flops", "bytes_moved", "check_passed", "max_rel_error", "tolerance",
                  "check_detail", "device_seen", "warnings_json", "calls_per_sample", "target_met", "threads",
                  "extra_json", "telemetry_json", "verdict", "verdict_reasons_json", "workload_version", "role")  # _row's keys


def _row(run_id: str, result: dict[str, Any], texts: Iterator[str | None] | None) -> dict[str, Any]:
    """schema.result_row(run_id, Measurement.from_dict(result)), built straight from the validated
    dict: the same columns and values (a test holds them equal), without the objects in between."""
    spec, check = result["spec"], result["check"]
    spec_key, params_json = _spec_texts(spec)
    error = float(check["max_rel_error"])  # "nan" and "inf" are how an export writes those
    threads = result.get("threads")
    return {
        "run_id": run_id,
        "spec_key": spec_key,
        "workload": spec["workload"], "backend": spec["backend"], "device": spec["device"],
        "params_json": params_json,
        "phases_json": next(texts) if texts is not None else dumps(
            {k: [float(x) for x in v] for k, v in result["phases_s"].items()}),
        "first_call_s": float(result["first_call_s"]), "flops": float(result["work"]["flops"]),
        "bytes_moved": float(result["work"]["bytes_moved"]), "check_passed": int(bool(check["passed"])),
        "max_rel_error": None if math.isnan(error) else error, "tolerance": float(check["tolerance"]),
        "check_detail": str(check.get("detail", "")), "device_seen": check.get("device_seen"),
        "warnings_json": _dumps_caveats(result.get("warnings")),
        "calls_per_sample": int(result.get("calls_per_sample", 1)),
        "target_met": int(bool(result.get("target_met", True))),
        "threads": None if threads is None else int(threads),
        "extra_json": _dumps_object(result.get("extra")),
        "telemetry_json": _dumps_object(result.get("telemetry")),
        "verdict": str(result.get("verdict") or "") or ("valid" if check["passed"] else "invalid"),
        "verdict_reasons_json": _dumps_caveats(result.get("verdict_reasons")),
        "workload_version": None if result.get("workload_version") in (None, "") else str(result["workload_version"]),
        "role": result.get("role"),  # one of ROLES or null: the document was validated
    }


def _spec_texts(spec: dict[str, Any]) -> tuple[str, str]:
    """The spec's key and its params as JSON text; the runs of a file repeat each other's specs, so
    each distinct spec is encoded once (specs whose values cannot be hashed every time)."""
    params = sorted(spec.get("params", {}).items())
    # the types belong to the key: 1, 1.0 and True are equal as keys but are written differently
    typed = tuple((name, type(value), value) for name, value in params)
    try:
        return _encoded_spec(spec["workload"], spec["backend"], spec["device"], typed)
    except TypeError:  # a list or object among the values
        return _encode_spec(spec["workload"], spec["backend"], spec["device"], typed)


def _encode_spec(workload: str, backend: str, device: str,
                 typed: Sequence[tuple[str, type, Any]]) -> tuple[str, str]:
    params = [(name, value) for name, _, value in typed]
    return (_KEY_ENCODE([workload, backend, device, [list(p) for p in params]]), dumps(dict(params)))


# a run measures each spec once, so one run of 10,000 results holds 10,000 specs and the next run
# repeats them: a cache smaller than a run's specs never hits (4,096 entries: 0 hits in 100,000)
_encoded_spec = lru_cache(maxsize=1 << 16)(_encode_spec)


def _dumps_caveats(items: list | None) -> str:
    """Warnings or verdict reasons as schema.result_row stores them: {"text", "kind"} or a plain text."""
    return dumps(caveats_to_json(caveats_from_json(items))) if items else "[]"  # most results: none


def _dumps_object(value: dict | None) -> str:
    return dumps(dict(value)) if value else "{}"
