"""What a check of a results document (store/document_check.py) says about itself in JSON Schema, and
whether a field may be missing: what store/results_json_schema.py builds the shipped schema from."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, TypeVar

Described = TypeVar("Described", bound=Callable[..., Any])

# Whether a field of an object may be missing: import refuses a REQUIRED one missing; a WRITTEN one is in
# every document accelbench writes now but missing from older ones (import accepts its absence; the JSON
# Schema requires it, so a reader of new output may count on it); an OPTIONAL one may be missing.
Presence = Literal["required", "written", "optional"]
REQUIRED: Presence = "required"
WRITTEN: Presence = "written"
OPTIONAL: Presence = "optional"


def json_schema_of(check: Callable[..., Any]) -> dict[str, Any]:
    """The JSON Schema of what `check` accepts (a copy: the caller may change it)."""
    schema = getattr(check, "json_schema", None)
    if schema is None:
        raise TypeError(f"{getattr(check, '__name__', check)!r} has no json_schema: describe it beside its check")
    return json.loads(json.dumps(schema))


def described(check: Described, schema: dict[str, Any]) -> Described:
    """`check`, carrying the JSON Schema of what it accepts."""
    check.json_schema = schema  # type: ignore[attr-defined]
    return check


def or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, null allowed too (the bounds of a number or a string do not apply to null)."""
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], None]}
    if isinstance(schema.get("type"), str):
        return {**schema, "type": [schema["type"], "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def referenced(name: str, check: Described) -> Described:
    """`check`, shown in the JSON Schema as a reference to `$defs/<name>`, where results_json_schema puts
    its whole schema (definition_of): a part used in several places is described once."""
    check.definition = json_schema_of(check)  # type: ignore[attr-defined]
    return described(check, {"$ref": f"#/$defs/{name}"})


def definition_of(check: Callable[..., Any]) -> dict[str, Any]:
    """The whole JSON Schema of a `referenced` check (its json_schema is only the reference)."""
    return json.loads(json.dumps(getattr(check, "definition")))
