"""parse_json takes orjson's fast path where it can and must then read a document exactly as the
standard library does; what orjson refuses is parsed again by the standard library for its verdict."""
from __future__ import annotations

import json

import pytest

from accelbench.errors import UsageError
from accelbench.store import document_io

DOCUMENT = {"runs": [{"id": "r1", "values": [0.1, 1e-300, 2.5e300, -0.0, 123456789012345678, 2**63 - 1],
                      "name": "caf\u00e9 \u2713", "nested": {"a": [{"b": None, "c": True}]}}]}


def test_the_fast_and_the_standard_parse_agree_on_an_export():
    raw = json.dumps(DOCUMENT, indent=1).encode("ascii")  # as `accelbench export` writes: escaped, ASCII
    assert document_io.orjson_loads() is not None, "orjson is a dependency: the fast path must be taken"
    assert document_io.parse_json(raw, "x.json") == json.loads(raw) == DOCUMENT


@pytest.mark.parametrize("text, message", [
    ('{"a": NaN}', "NaN is not a number in plain JSON"),
    ('{"a": 1' + "0" * 400 + "}", None),  # a number orjson cannot hold: the standard library reads it
    ('{"a": [1, 2}', "not valid JSON (line 1, column 12"),
])
def test_what_the_fast_path_refuses_gets_the_standard_librarys_verdict(text, message):
    raw = text.encode("ascii")
    if message is None:
        assert document_io.parse_json(raw, "x.json") == json.loads(text)
        return
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        document_io.parse_json(raw, "x.json")
