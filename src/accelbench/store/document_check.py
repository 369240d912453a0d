"""The one validation of a results document (`accelbench export` writes it; import, gather and
compare read it): types, ranges, string lengths and nesting depth.

The rule: whatever passes can be stored, reported, compared, projected and exported again, so
every bound below is one some later step relies on: names and ids that go into file names,
figure labels (matplotlib reads `$...$` as mathematics) and terminal tables have a plain
character set; numbers stay inside ranges where rates, ratios and sums are finite; free-form
objects are shallow and strings short, so nothing downstream recurses or renders for minutes.
The first bad field is reported by its JSON path, e.g. `runs[0].results[3].phases_s.compute[2]`.
Nothing in a document is executed.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

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
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# a label: printable text without `$` (figure mathematics) and `\`; what a user names a function
_LABEL = re.compile(rf"[^\x00-\x1f\x7f-\x9f$\\]{{1,{MAX_LABEL}}}")
_SPEC_NAMES = ("cls", "workload", "backend", "device")


class Invalid(Exception):
    def __init__(self, path: str, message: str):
        super().__init__(f"{path or '(top level)'}: {message}")


Check = Callable[[Any, str], Any]


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


def expected(path: str, what: str, value: Any) -> Invalid:
    return Invalid(path, f"expected {what}, got {_show(value)}")


# -- scalars --------------------------------------------------------------------------------

def number(low: float, high: float, *, above: bool = False, whole: bool = False) -> Check:
    """A number in [low, high] ((low, high] with above=True); whole=True: an integer."""
    kind = "a whole number" if whole else "a number"

    def check(value: Any, path: str) -> Any:
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
    return check


def optional(check: Check) -> Check:
    return lambda value, path: None if value is None else check(value, path)


def text(max_chars: int = MAX_TEXT, *, non_empty: bool = False) -> Check:
    def check(value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise expected(path, "a string", value)
        if len(value) > max_chars or (non_empty and not value.strip()):
            raise expected(path, f"{'a non-empty' if non_empty else 'a'} string of at most "
                                 f"{max_chars:,} characters", value)
        return value
    return check


def pattern(regex: re.Pattern, what: str) -> Check:
    def check(value: Any, path: str) -> str:
        if not isinstance(value, str) or not regex.fullmatch(value):
            raise expected(path, what, value)
        return value
    return check


def one_of(choices: tuple, what: str | None = None) -> Check:
    def check(value: Any, path: str) -> Any:
        if not isinstance(value, str) or value not in choices:
            raise expected(path, what or "one of " + ", ".join(f'"{c}"' for c in choices), value)
        return value
    return check


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise expected(path, "true or false", value)
    return value


def time(value: Any, path: str) -> str:
    try:
        parsed = datetime.fromisoformat(text(40)(value, path))
    except ValueError:
        parsed = None
    if parsed is None or not 1970 <= parsed.year <= 9000:
        raise expected(path, "an ISO 8601 time such as 2025-01-31T12:00:00+00:00", value)
    return value


LABEL = pattern(_LABEL, f"a name of 1 to {MAX_LABEL} printable characters without $ or \\")
DEVICE_ID = pattern(_DEVICE_ID, "a device id such as cpu, cuda:0 or opencl:0:0 "
                                "(letters, digits, _ . : -; at most 64)")
RUN_ID = pattern(_RUN_ID, "a run id (letters, digits, . _ : -; at most 64; not latest...)")
SECONDS = number(0, MAX_SECONDS)
SAMPLE = number(MIN_SAMPLE_S, MAX_SECONDS)
WORK = number(0, MAX_WORK)
COUNT = number(1, MAX_COUNT, whole=True)


# -- containers -----------------------------------------------------------------------------

def free_json(value: Any, path: str, depth: int = 0) -> Any:
    """Any plain JSON value for free-form fields: shallow, short strings, bounded numbers."""
    if depth > MAX_DEPTH:
        raise Invalid(path, f"nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, dict):
        for key, item in value.items():
            text(MAX_LABEL)(key, f"{path}.{shown_key(key)}")
            free_json(item, f"{path}.{key}", depth + 1)
    elif isinstance(value, list):
        if len(value) > MAX_ITEMS:
            raise expected(path, f"a list of at most {MAX_ITEMS:,} items", value)
        for i, item in enumerate(value):
            free_json(item, f"{path}[{i}]", depth + 1)
    elif isinstance(value, str):
        text()(value, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number(-MAX_MAGNITUDE, MAX_MAGNITUDE)(value, path)
    elif value is not None and not isinstance(value, bool):
        raise expected(path, "a JSON value", value)
    return value


def free_object(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        raise expected(path, "an object", value)
    return free_json(value, path)


def list_of(check: Check, *, non_empty: bool = False, max_items: int = MAX_ITEMS) -> Check:
    def check_list(value: Any, path: str) -> list:
        if not isinstance(value, list):
            raise expected(path, "a list", value)
        if (non_empty and not value) or len(value) > max_items:
            raise expected(path, f"a {'non-empty ' if non_empty else ''}list of at most {max_items:,} items",
                           value)
        for i, item in enumerate(value):
            check(item, f"{path}[{i}]")
        return value
    return check_list


def mapping(key: Check, item: Check, what: str) -> Check:
    def check(value: Any, path: str) -> dict:
        if not isinstance(value, dict):
            raise expected(path, what, value)
        for name, entry in value.items():
            key(name, f"{path}.{shown_key(name)}")
            item(entry, f"{path}.{name}")
        return value
    return check


def fields(spec: Mapping[str, tuple[Check, bool]], *, open_ended: bool = False) -> Check:
    """An object with known fields: name -> (check, required); open_ended keeps others as
    free-form JSON instead of refusing them."""
    def check_object(value: Any, path: str) -> dict:
        if not isinstance(value, dict):
            raise expected(path, "an object", value)
        for name, (check, required) in spec.items():
            where = f"{path}.{name}" if path else name
            if name in value:
                check(value[name], where)
            elif required:
                raise Invalid(where, "missing (required)")
        unknown = [k for k in value if k not in spec]
        if unknown and not open_ended:
            where = f"{path}.{unknown[0]}" if path else str(unknown[0])[:MAX_LABEL]
            raise Invalid(where, f"unknown field (accepted: {', '.join(spec)})")
        for name in unknown:
            text(MAX_LABEL)(name, f"{path}.{shown_key(name)}")
            free_json(value[name], f"{path}.{name}", 1)
        return value
    return check_object
