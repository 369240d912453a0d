"""The one validation of a results document (`accelbench export` writes it; import, gather and
compare read it): types, ranges, string lengths and nesting depth.

The rule: whatever passes can be stored, reported, compared, projected and exported again, so
every bound below is one some later step relies on: names and ids that go into file names,
figure labels (matplotlib reads `$...$` as mathematics) and terminal tables have a plain
character set; numbers stay inside ranges where rates, ratios and sums are finite; free-form
objects are shallow and strings short, so nothing downstream recurses or renders for minutes.
The first bad field is reported by its JSON path, e.g. `runs[0].results[3].phases_s.compute[2]`.
Nothing in a document is executed.

Each check carries the JSON Schema of what it accepts (`json_schema_of`): the shipped schema is generated
from them (store/results_json_schema.py). Some rules JSON Schema cannot say stay the import's alone
(nesting depth, run ids unique in a document, 1.0 not a whole number).
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from itertools import chain
from operator import itemgetter
from typing import Any

from accelbench.store.check_description import OPTIONAL, REQUIRED, Presence, described, json_schema_of, or_null

FORMAT_NAME = "accelbench-results"
FORMAT_VERSION = 1
NON_FINITE = ("nan", "inf")           # how a failed check's max_rel_error is written

MAX_DEPTH = 12                        # nesting of free-form objects (selection, telemetry, ...)
MAX_TEXT = 20_000                     # characters in a free-text string (a detail, a warning)
MAX_LABEL = 200                       # ... in a name shown in tables and figures
MAX_ITEMS = 1_000_000                 # items in one list (samples included)
MAX_MAGNITUDE = 1e300                 # free-form numbers: products of two stay finite-ish
MAX_SECONDS = 1e7                     # a sample, a first call: under four months
MIN_SAMPLE_S = 1e-15                  # a sample of 0 s makes every rate infinite
MAX_WORK = 1e24                       # FLOPs or bytes per call: a rate stays under 1e39/s
MAX_COUNT = 2**53                     # whole numbers exact as floats (JSON readers, SQLite REAL)
MAX_BYTES = 2**62                     # device memory
MAX_PEAK = 1e21                       # FLOP/s or B/s: a zettaflop device is fiction today

_RUN_ID = re.compile(r"(?!latest)[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")   # "latest" is a ref word
_DEVICE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")          # cpu, cuda:0, opencl:0:0
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# a label: printable text without `$` (figure mathematics) and `\`; what a user names a function
_LABEL = re.compile(rf"[^\x00-\x1f\x7f-\x9f$\\]{{1,{MAX_LABEL}}}")
SPEC_NAMES = ("cls", "workload", "backend", "device")


# Where a value sits: a string, or (parent, key), (parent, index) or (parent, key, SHOWN), joined
# into `runs[0].results[3].spec` only when an error is raised (most documents raise none).
Where = str | tuple
SHOWN = True  # the key itself is being checked: shown shortened (shown_key)


def where(path: Where) -> str:
    if isinstance(path, str):
        return path
    base, step = where(path[0]), path[1]
    if len(path) > 2:
        return f"{base}.{shown_key(step)}"
    return f"{base}[{step}]" if type(step) is int else f"{base}.{step}"


class Invalid(Exception):
    def __init__(self, path: Where, message: str):
        super().__init__(f"{where(path) or '(top level)'}: {message}")


Check = Callable[[Any, Where], Any]


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)) and len(json.dumps(value, default=str)) > 60:
        return f"a {'list' if isinstance(value, list) else 'object'} of {len(value)} item(s)"
    if isinstance(value, str) and len(value) > 60:
        return json.dumps(value[:40]) + f"... ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**20:
        return f"a {len(str(abs(value)))}-digit number"
    return json.dumps(value, default=lambda v: f"<{type(v).__name__}>")


def shown_key(name: Any) -> str:
    """A key as a path shows it: a 10 MB key must not make a 10 MB message."""
    name = str(name)
    return name if len(name) <= 40 else f"{name[:30]}...({len(name):,} characters)"


def expected(path: Where, what: str, value: Any) -> Invalid:
    return Invalid(path, f"expected {what}, got {_show(value)}")


# -- all at once ------------------------------------------------------------------------------
# A list of many results is first checked field by field across all of them, in C loops (a set of
# types, min, max); a check's `bulk(column)` says True only when every value would pass it. Any
# False, or any surprise, and the list is checked item by item as before, which names the first
# bad field: the bulk pass decides nothing but speed.

_BULK_FROM = 64  # shorter lists: item by item


def _types(column: list) -> set:
    return set(map(type, column))


def all_pass(check: Check, column: list) -> bool:
    """Whether check(value, path) passes for every value of column (never raises)."""
    try:
        bulk = getattr(check, "bulk", None)
        if bulk is not None:
            return bool(bulk(column))
        for value in column:
            check(value, "")
        return True
    except Exception:  # noqa: BLE001 - whatever it was, the item-by-item pass meets it in order
        return False


def _with_bulk(check: Check, bulk: Callable[[list], bool], schema: dict[str, Any]) -> Check:
    check.bulk = bulk  # type: ignore[attr-defined]
    return described(check, schema)


# -- scalars --------------------------------------------------------------------------------

def number(low: float, high: float, *, above: bool = False, whole: bool = False) -> Check:
    """A number in [low, high] ((low, high] with above=True); whole=True: an integer."""
    kind = "a whole number" if whole else "a number"
    plain = (int,) if whole else (int, float)  # exact types: bool is not one
    bounded = math.isfinite(low) and math.isfinite(high)  # then in range means finite

    def check(value: Any, path: Where) -> Any:
        if type(value) in plain and bounded and (low < value if above else low <= value) and value <= high:
            return value  # the usual case; anything else is told apart below
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            raise expected(path, kind, value)
        try:
            finite = math.isfinite(value)
        except OverflowError:  # an integer too large for a float
            finite = False
        if not finite:
            raise expected(path, f"a finite number from {low:g} to {high:g}", value)
        if not (low < value if above else low <= value):
            raise expected(path, f"{kind} {'>' if above else '>='} {low:g} (and <= {high:g})", value)
        if value > high:
            raise expected(path, f"{kind} <= {high:g} (and {'>' if above else '>='} {low:g})", value)
        return value

    def bulk(column: list) -> bool:
        if not column:
            return True
        if not (bounded and _types(column) <= set(plain) and math.isfinite(sum(column))):
            return False  # a NaN hides from min and max, not from the sum
        least = min(column)
        return (low < least if above else low <= least) and max(column) <= high
    lower = "exclusiveMinimum" if above else "minimum"
    return _with_bulk(check, bulk, {"type": "integer" if whole else "number", lower: low, "maximum": high})


def optional(check: Check) -> Check:
    return _with_bulk(lambda value, path: None if value is None else check(value, path),
                      lambda column: all_pass(check, [v for v in column if v is not None]),
                      or_null(json_schema_of(check)))


def text(max_chars: int = MAX_TEXT, *, non_empty: bool = False) -> Check:
    def check(value: Any, path: Where) -> str:
        if type(value) is str and len(value) <= max_chars and not non_empty:
            return value
        if not isinstance(value, str):
            raise expected(path, "a string", value)
        if len(value) > max_chars or (non_empty and not value.strip()):
            raise expected(path, f"{'a non-empty' if non_empty else 'a'} string of at most "
                                 f"{max_chars:,} characters", value)
        return value

    def bulk(column: list) -> bool:
        return (not column or _types(column) == {str} and max(map(len, column)) <= max_chars
                and (not non_empty or all(map(str.strip, column))))
    schema: dict[str, Any] = {"type": "string", "maxLength": max_chars}
    return _with_bulk(check, bulk, {**schema, "pattern": r"\S"} if non_empty else schema)


def pattern(regex: re.Pattern, what: str) -> Check:
    matches = regex.fullmatch

    def check(value: Any, path: Where) -> str:
        if not isinstance(value, str) or not matches(value):
            raise expected(path, what, value)
        return value
    # names repeat: each distinct one is matched once; the check matches whole strings, a JSON
    # Schema pattern anywhere in them unless anchored
    return _with_bulk(check, lambda column: _types(column) <= {str} and all(map(matches, set(column))),
                      {"type": "string", "pattern": f"^(?:{regex.pattern})$", "description": what})


def one_of(choices: tuple, what: str | None = None) -> Check:
    def check(value: Any, path: Where) -> Any:
        if not isinstance(value, str) or value not in choices:
            raise expected(path, what or "one of " + ", ".join(f'"{c}"' for c in choices), value)
        return value
    return _with_bulk(check, lambda column: _types(column) <= {str} and set(column) <= set(choices),
                      {"enum": list(choices)})


def boolean(value: Any, path: Where) -> bool:
    if not isinstance(value, bool):
        raise expected(path, "true or false", value)
    return value


boolean.bulk = lambda column: _types(column) <= {bool}  # type: ignore[attr-defined]
described(boolean, {"type": "boolean"})


def time(value: Any, path: Where) -> str:
    try:
        parsed = datetime.fromisoformat(text(40)(value, path))
    except ValueError:
        parsed = None
    if parsed is None or not 1970 <= parsed.year <= 9000:
        raise expected(path, "an ISO 8601 time such as 2025-01-31T12:00:00+00:00", value)
    return value


described(time, {"type": "string", "format": "date-time", "maxLength": 40})


LABEL = pattern(_LABEL, f"a name of 1 to {MAX_LABEL} printable characters without $ or \\")
DEVICE_ID = pattern(_DEVICE_ID, "a device id such as cpu, cuda:0 or opencl:0:0 "
                                "(letters, digits, _ . : -; at most 64)")
RUN_ID = pattern(_RUN_ID, "a run id (letters, digits, . _ : -; at most 64; not latest...)")
SECONDS = number(0, MAX_SECONDS)
SAMPLE = number(MIN_SAMPLE_S, MAX_SECONDS)
WORK = number(0, MAX_WORK)
COUNT = number(1, MAX_COUNT, whole=True)


# -- containers -----------------------------------------------------------------------------

def free_json(value: Any, path: Where, depth: int = 0) -> Any:
    """Any plain JSON value for free-form fields: shallow, short strings, bounded numbers."""
    if depth > MAX_DEPTH:
        raise Invalid(path, f"nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, dict):
        for key, item in value.items():
            _LABEL_TEXT(key, (path, key, SHOWN))
            free_json(item, (path, key), depth + 1)
    elif isinstance(value, list):
        if len(value) > MAX_ITEMS:
            raise expected(path, f"a list of at most {MAX_ITEMS:,} items", value)
        for i, item in enumerate(value):
            free_json(item, (path, i), depth + 1)
    elif isinstance(value, str):
        _FREE_TEXT(value, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _FREE_NUMBER(value, path)
    elif value is not None and not isinstance(value, bool):
        raise expected(path, "a JSON value", value)
    return value


_LABEL_TEXT, _FREE_TEXT, _FREE_NUMBER = text(MAX_LABEL), text(), number(-MAX_MAGNITUDE, MAX_MAGNITUDE)


def free_object(value: Any, path: Where) -> dict:
    if not isinstance(value, dict):
        raise expected(path, "an object", value)
    return free_json(value, path)


def _free_objects(column: list) -> bool:
    for value in column:
        if value or type(value) is not dict:  # an empty one needs no look
            free_object(value, "")
    return True


free_object.bulk = _free_objects  # type: ignore[attr-defined]
described(free_object, {"type": "object"})  # depth and sizes: the import's own rules


def list_of(check: Check, *, non_empty: bool = False, max_items: int = MAX_ITEMS) -> Check:
    def check_list(value: Any, path: Where) -> list:
        if not isinstance(value, list):
            raise expected(path, "a list", value)
        if (non_empty and not value) or len(value) > max_items:
            raise expected(path, f"a {'non-empty ' if non_empty else ''}list of at most {max_items:,} items",
                           value)
        if len(value) >= _BULK_FROM and all_pass(check, value):
            return value
        for i, item in enumerate(value):
            check(item, (path, i))
        return value

    def bulk(column: list) -> bool:
        if not column:
            return True
        if _types(column) != {list} or max(map(len, column)) > max_items or (non_empty and not all(column)):
            return False
        return all_pass(check, list(chain.from_iterable(column)))
    schema = {"type": "array", "items": json_schema_of(check), "maxItems": max_items}
    return _with_bulk(check_list, bulk, {**schema, "minItems": 1} if non_empty else schema)


def mapping(key: Check, item: Check, what: str) -> Check:
    def check(value: Any, path: Where) -> dict:
        if not isinstance(value, dict):
            raise expected(path, what, value)
        for name, entry in value.items():
            key(name, (path, name, SHOWN))
            item(entry, (path, name))
        return value

    def bulk(column: list) -> bool:
        return (_types(column) <= {dict} and all_pass(key, list(chain.from_iterable(column)))
                and all_pass(item, list(chain.from_iterable(map(dict.values, column)))))
    return _with_bulk(check, bulk, {"type": "object", "description": what, "propertyNames": json_schema_of(key),
                                    "additionalProperties": json_schema_of(item)})


def fields(spec: Mapping[str, tuple[Check, Presence]], *, open_ended: bool = False) -> Check:
    """An object with known fields: name -> (check, presence); open_ended keeps others as
    free-form JSON instead of refusing them."""
    entries = tuple((name, check, presence == REQUIRED) for name, (check, presence) in spec.items())
    known = frozenset(spec)

    def check_object(value: Any, path: Where) -> dict:
        if not isinstance(value, dict):
            raise expected(path, "an object", value)
        for name, check, required in entries:
            if name in value:
                check(value[name], (path, name) if path else name)
            elif required:
                raise Invalid((path, name) if path else name, "missing (required)")
        if value.keys() <= known:
            return value
        unknown = [k for k in value if k not in known]
        if not open_ended:
            at = (path, str(unknown[0])) if path else str(unknown[0])[:MAX_LABEL]
            raise Invalid(at, f"unknown field (accepted: {', '.join(spec)})")
        for name in unknown:
            _LABEL_TEXT(name, (path, name, SHOWN))
            free_json(value[name], (path, name), 1)
        return value

    def bulk(column: list) -> bool:
        if not column:
            return True
        if _types(column) != {dict} or not set().union(*column) <= known:
            return False  # fields no spec names (even where open-ended): item by item
        for name, check, required in entries:
            try:
                values = list(map(itemgetter(name), column))
            except KeyError:
                if required:
                    return False
                values = [value[name] for value in column if name in value]
            if not all_pass(check, values):
                return False
        return True
    schema: dict[str, Any] = {"type": "object", "required": [n for n, (_, p) in spec.items() if p != OPTIONAL],
                              "properties": {name: json_schema_of(check) for name, (check, _) in spec.items()}}
    return _with_bulk(check_object, bulk, schema if open_ended else {**schema, "additionalProperties": False})

