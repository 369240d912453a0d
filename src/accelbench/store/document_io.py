"""Reading an export document from disk: bytes, strict JSON (NaN and Infinity refused), skips.
Shared by `store/export.py` and the fast file import (`store/import_file.py`)."""
from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from accelbench.errors import UsageError
from accelbench.results import Skip, Spec
from accelbench.safe_write import clean_values, read_regular


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # a \\uD800-\\uDFFF escape in JSON text


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    source = Path(path)
    try:
        return read_regular(source)  # neither /dev/zero (never ends) nor a FIFO (blocks the open)
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}; "
                         f"accepted: a readable JSON file made by `accelbench export`") from None


def skip_from_dict(data: dict[str, Any]) -> Skip:
    return Skip(Spec.from_dict(data["spec"]), data["reason"])


@cache
def orjson_loads() -> Callable[[bytes | str], Any] | None:
    """orjson parses a large export about twice as fast as the standard library, and is just as
    strict (NaN and Infinity refused, UTF-8 checked); the standard library stands in without it."""
    try:
        import orjson
    except ImportError:
        return None
    return orjson.loads


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number in plain JSON")


def parse_json(raw: bytes, path: str | os.PathLike[str]) -> Any:
    """Parse the bytes of the JSON file at `path`, as read_json does."""
    source = Path(path)
    fast_loads = orjson_loads()
    if fast_loads is not None and raw.isascii():  # exports are ASCII
        try:
            return fast_loads(raw)
        except ValueError:  # refused: the standard library parses it again, for the same verdict and message
            pass
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        # a lone surrogate (\\udcff) parses, but SQLite and UTF-8 output cannot take it: escaped
        return clean_values(doc) if _SURROGATE_ESCAPE.search(raw) else doc
    except UnicodeDecodeError:
        raise UsageError(f"{source}: not UTF-8 text; accepted: a JSON file made by "
                         f"`accelbench export`") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg})") from None
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{source}: not valid JSON ({exc})") from None
