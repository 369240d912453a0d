"""JSON schemas of accelbench's machine-readable outputs, shipped with the package."""
from __future__ import annotations

import json
from importlib import resources


def load_schema(name: str) -> dict:
    """The schema for `name` ("info", ...) as a dict."""
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)
