"""JSON export and import of stored runs, for sharing between machines and collecting cluster jobs.

The document is plain JSON (no NaN or Infinity tokens). Import only parses and validates it, field
by field, before anything is written: nothing in a file is ever executed or unpickled, and the
first bad field is reported by its JSON path, e.g. `runs[0].results[3].phases_s.compute[2]`.
"""
from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accelbench._version import __version__
from accelbench.errors import UsageError
from accelbench.results import PHASES, Measurement, Skip, Spec
from accelbench.store.db import Store
from accelbench.store.schema import RUN_STATUSES
from accelbench.verdict import VERDICTS

FORMAT_NAME = "accelbench-results"
FORMAT_VERSION = 1
_SPEC_NAMES = ("cls", "workload", "backend", "device")
_RUN_ID = re.compile(r"^(?!latest)[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")  # "latest" is a ref word
_NON_FINITE = ("nan", "inf")  # how a failed check's max_rel_error is written

# -- export -------------------------------------------------------------------------------


def _finite_json(value: Any) -> Any:
    """Free-form JSON (telemetry, extra) with NaN/inf as null: plain JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_json(v) for v in value]
    return value


def _export_measurement(m: Measurement) -> dict[str, Any]:
    data = m.to_dict()
    error = data["check"]["max_rel_error"]
    if not math.isfinite(error):  # a failed check may have a NaN or infinite error: keep it, as text
        data["check"]["max_rel_error"] = "nan" if math.isnan(error) else "inf"
    data["telemetry"] = _finite_json(data["telemetry"])
    data["extra"] = _finite_json(data["extra"])
    return data


def export_runs(store: Store, run_ids: Iterable[str]) -> dict[str, Any]:
    """A JSON document holding the given runs (ids or any ref resolve_run accepts), in order."""
    runs = []
    for run_id in dict.fromkeys(store.resolve_run(ref) for ref in run_ids):
        info = store.run_info(run_id)
        runs.append({
            "id": info.id, "started_at": info.started_at, "finished_at": info.finished_at,
            "status": info.status, "accelbench_version": info.accelbench_version,
            "selection": _finite_json(info.selection), "machine": _finite_json(store.machine(run_id)),
            "tags": store.tags(run_id),
            "results": [_export_measurement(m) for m in store.results(run_id)],
            "skips": [s.to_dict() for s in store.skips(run_id)],
        })
    return {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "accelbench_version": __version__, "runs": runs}


# -- validation: each checker takes (value, path) and returns the value or raises ------------


class _Invalid(Exception):
    def __init__(self, path: str, message: str):
        super().__init__(f"{path or '(top level)'}: {message}")


def _show(value: Any) -> str:
    text = json.dumps(value, default=lambda v: f"<{type(v).__name__}>")
    return text if len(text) <= 60 else text[:57] + "..."


def _expected(path: str, what: str, value: Any) -> _Invalid:
    return _Invalid(path, f"expected {what}, got {_show(value)}")


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _expected(path, "a number", value)
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        finite = False
    if not finite:
        raise _expected(path, "a finite number", value)
    return value


def _non_negative(value: Any, path: str) -> float:
    if _number(value, path) < 0:
        raise _expected(path, "a number >= 0", value)
    return value


def _rel_error(value: Any, path: str) -> Any:
    if isinstance(value, str):
        if value in _NON_FINITE:
            return value
        raise _expected(path, 'a number >= 0, "nan" or "inf"', value)
    return _non_negative(value, path)


def _count(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _expected(path, "a whole number >= 1", value)
    return value


def _optional_count(value: Any, path: str) -> int | None:
    return None if value is None else _count(value, path)


def _boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _expected(path, "true or false", value)
    return value


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _expected(path, "a string", value)
    return value


def _name(value: Any, path: str) -> str:
    if not _string(value, path).strip():
        raise _expected(path, "a non-empty string", value)
    return value


def _optional_string(value: Any, path: str) -> str | None:
    return None if value is None else _string(value, path)


def _time(value: Any, path: str) -> str:
    try:
        datetime.fromisoformat(_string(value, path))
    except ValueError:
        raise _expected(path, "an ISO 8601 time such as 2025-01-31T12:00:00+00:00", value) from None
    return value


def _optional_time(value: Any, path: str) -> str | None:
    return None if value is None else _time(value, path)


def _json_value(value: Any, path: str) -> Any:
    """Any plain JSON value (for free-form fields): no other Python objects, no NaN."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise _expected(path, "an object with string keys", key)
            _json_value(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _json_value(item, f"{path}[{i}]")
    elif isinstance(value, float):
        _number(value, path)
    elif value is not None and not isinstance(value, (str, int, bool)):
        raise _expected(path, "a JSON value", value)
    return value


def _json_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _expected(path, "an object", value)
    return _json_value(value, path)


def _list_of(check: Callable[[Any, str], Any], non_empty: bool = False) -> Callable[[Any, str], list]:
    def check_list(value: Any, path: str) -> list:
        if not isinstance(value, list):
            raise _expected(path, "a list", value)
        if non_empty and not value:
            raise _expected(path, "a non-empty list", value)
        return [check(item, f"{path}[{i}]") for i, item in enumerate(value)]
    return check_list


def _fields(spec: Mapping[str, tuple[Callable[[Any, str], Any], bool]], open_ended: bool = False):
    """A checker for an object with known fields: name -> (checker, required)."""
    def check_object(value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _expected(path, "an object", value)
        for name, (check, required) in spec.items():
            where = f"{path}.{name}" if path else name
            if name in value:
                check(value[name], where)
            elif required:
                raise _Invalid(where, "missing (required)")
        unknown = [k for k in value if k not in spec]
        if unknown and not open_ended:
            where = f"{path}.{unknown[0]}" if path else str(unknown[0])
            raise _Invalid(where, f"unknown field (accepted: {', '.join(spec)})")
        if open_ended:
            _json_value({k: value[k] for k in unknown}, path)
        return value
    return check_object


def _params(value: Any, path: str) -> dict[str, Any]:
    _json_object(value, path)
    for name in value:
        if name in _SPEC_NAMES:  # would clash with Spec.make's own arguments
            raise _Invalid(f"{path}.{name}", "a parameter may not be called " + ", ".join(_SPEC_NAMES))
    return value


_check_samples_one_by_one = _list_of(_non_negative, non_empty=True)


def _samples(value: Any, path: str) -> list:
    """A non-empty list of finite numbers >= 0. Samples are most of an export, so the common
    case is checked in bulk (C loops); anything unusual is checked item by item, to name it."""
    if isinstance(value, list) and value and set(map(type, value)) <= {float, int}:
        try:
            if min(value) >= 0 and math.isfinite(sum(value)):
                return value
        except OverflowError:  # an integer too large for a float
            pass
    return _check_samples_one_by_one(value, path)


def _phases(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _expected(path, "an object of phase -> samples", value)
    if "compute" not in value:
        raise _Invalid(f"{path}.compute", "missing (required)")
    for phase, items in value.items():
        if phase not in PHASES:
            raise _Invalid(f"{path}.{phase}", f"unknown phase (accepted: {', '.join(PHASES)})")
        _samples(items, f"{path}.{phase}")
    return value


def _verdict(value: Any, path: str) -> str:
    if value not in ("", *VERDICTS):
        raise _expected(path, f"one of {', '.join(VERDICTS)}", value)
    return value


def _tags(value: Any, path: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _expected(path, "an object of tag -> text", value)
    for key, item in value.items():
        _name(key, path)
        _string(item, f"{path}.{key}")
    return value


_SPEC = _fields({"workload": (_name, True), "backend": (_name, True), "device": (_name, True),
                 "params": (_params, False)})
_CHECK = _fields({"passed": (_boolean, True), "max_rel_error": (_rel_error, True),
                  "tolerance": (_non_negative, True), "detail": (_string, False),
                  "device_seen": (_optional_string, False)})
_WORK = _fields({"flops": (_non_negative, True), "bytes_moved": (_non_negative, True)})
_RESULT = _fields({
    "spec": (_SPEC, True), "phases_s": (_phases, True), "first_call_s": (_non_negative, True),
    "work": (_WORK, True), "check": (_CHECK, True), "warnings": (_list_of(_string), False),
    "calls_per_sample": (_count, False), "target_met": (_boolean, False),
    "threads": (_optional_count, False), "telemetry": (_json_object, False),
    "extra": (_json_object, False), "verdict": (_verdict, False),
    "verdict_reasons": (_list_of(_string), False)})
_SKIP = _fields({"spec": (_SPEC, True), "reason": (_string, True)})
_MACHINE = _fields({"hostname": (_string, False), "os": (_string, False), "python": (_string, False),
                    "inventory": (_json_object, False), "software": (_json_object, False),
                    "environment": (_json_object, False)}, open_ended=True)


def _run_id(value: Any, path: str) -> str:
    if not isinstance(value, str) or not _RUN_ID.match(value):
        raise _expected(path, "a run id (letters, digits, . _ : -; at most 64; not latest...)", value)
    return value


def _status(value: Any, path: str) -> str:
    if value not in RUN_STATUSES:
        raise _expected(path, " or ".join(f'"{s}"' for s in RUN_STATUSES), value)
    return value


_RUN = _fields({
    "id": (_run_id, True), "started_at": (_time, True), "finished_at": (_optional_time, False),
    "status": (_status, True), "accelbench_version": (_string, True),
    "selection": (_json_object, False), "machine": (_MACHINE, True), "tags": (_tags, False),
    "results": (_list_of(_RESULT), True), "skips": (_list_of(_SKIP), False)})


def _format_version(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _expected(path, "a whole number", value)
    if value != FORMAT_VERSION:
        raise _Invalid(path, f"this accelbench reads version {FORMAT_VERSION}, got {value}"
                             + (" (upgrade accelbench)" if value > FORMAT_VERSION else ""))
    return value


def _format_name(value: Any, path: str) -> str:
    if value != FORMAT_NAME:
        raise _expected(path, f'"{FORMAT_NAME}"', value)
    return value


_DOCUMENT = _fields({"format": (_format_name, True), "format_version": (_format_version, True),
                     "exported_at": (_optional_time, False), "accelbench_version": (_string, False),
                     "runs": (_list_of(_RUN), True)})


def validate_document(doc: Any) -> None:
    """Raise UsageError naming the JSON path of the first bad field; return None if all is well."""
    try:
        if isinstance(doc, dict) and "format" in doc:
            _format_name(doc["format"], "format")  # a foreign document: say so before anything else
        _DOCUMENT(doc, "")
        seen: set[str] = set()
        for i, run in enumerate(doc["runs"]):
            if run["id"] in seen:
                raise _Invalid(f"runs[{i}].id", f"run {run['id']!r} appears twice in the document")
            seen.add(run["id"])
    except _Invalid as exc:
        raise UsageError(str(exc)) from None


# -- import -------------------------------------------------------------------------------


def _skip_from_dict(data: dict[str, Any]) -> Skip:
    return Skip(Spec.from_dict(data["spec"]), data["reason"])


def import_document(store: Store, doc: Any, tags: Mapping[str, Any] | None = None,
                    source: str | None = None) -> list[str]:
    """Validate `doc` completely, then store its runs under their own ids.

    Returns the ids of the runs that were added; runs already in the store are left as they are
    and not returned (importing the same file twice adds nothing). `tags` are added to every
    imported run on top of its own (e.g. {"imported_from": "node17.json"}). `source` (a file
    name) prefixes error messages.
    """
    try:
        validate_document(doc)
    except UsageError as exc:
        raise UsageError(f"{source}: {exc}" if source else str(exc)) from None
    # one transaction for the whole document: an interrupted or failed import stores nothing
    return store.restore_runs(_run_records(doc["runs"], tags))


def _run_records(runs: list[dict[str, Any]], tags: Mapping[str, Any] | None):
    for run in runs:  # converted one run at a time, as restore_runs stores them
        yield {"run_id": run["id"], "started_at": run["started_at"], "finished_at": run.get("finished_at"),
               "status": run["status"], "accelbench_version": run["accelbench_version"],
               "selection": run.get("selection", {}), "machine": run["machine"],
               "tags": {**run.get("tags", {}), **dict(tags or {})},
               "results": [Measurement.from_dict(r) for r in run["results"]],
               "skips": [_skip_from_dict(s) for s in run.get("skips", [])]}


# -- files --------------------------------------------------------------------------------


def write_json(path: str | os.PathLike[str], doc: Any) -> None:
    """Write `doc` atomically: a temporary file in the same folder, fsync, then rename over `path`."""
    target = Path(path)
    try:
        text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    except ValueError as exc:
        raise UsageError(f"cannot write {target}: {exc} (plain JSON has no NaN or Infinity)") from None
    tmp_name = None
    try:
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except OSError as exc:
        if tmp_name is not None and os.path.exists(tmp_name):
            os.unlink(tmp_name)
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}; "
                         f"accepted: a file path in an existing, writable folder") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number in plain JSON")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file (strictly: NaN and Infinity are refused), or raise UsageError naming it."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}; "
                         f"accepted: a readable JSON file made by `accelbench export`") from None
    except UnicodeDecodeError:
        raise UsageError(f"{source}: not UTF-8 text; accepted: a JSON file made by "
                         f"`accelbench export`") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg})") from None
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{source}: not valid JSON ({exc})") from None
