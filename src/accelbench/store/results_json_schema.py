"""The JSON Schema of accelbench's results (`run --json`, `export`), built from the import's own checks.

One source: a result, its spec, check and caveats, a skip and the whole export document are described by
store/document_schema.py's checks, each carrying its JSON Schema (store/check_description.py). What only
`run --json` writes and import never reads (the headline, findings, the `derived` figures) has no check,
and is described here alone. The shipped file (src/accelbench/schemas/results.schema.json) is this
module's output; a test regenerates it and compares. After changing a check or a part below:

    python -m accelbench.store.results_json_schema --write
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from accelbench.store.check_description import definition_of, json_schema_of
from accelbench.store.document_schema import DOCUMENT, RESULT, SKIP, SPEC, caveat
from accelbench.verdict import VERDICTS

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schemas" / "results.schema.json"
STRING: dict[str, Any] = {"type": "string"}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


def _list(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _object(properties: dict[str, Any], *, closed: bool = True, **more: Any) -> dict[str, Any]:
    """An object whose every field is required; closed: no others."""
    schema = {"type": "object", "required": list(properties), "properties": properties, **more}
    return {**schema, "additionalProperties": False} if closed else schema


def _nullable(kind: str, **bounds: Any) -> dict[str, Any]:
    return {"type": [kind, "null"], **bounds}


_FRACTION = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}
_SPEEDUP = {**_object({
    "ratio": _ref("number_or_null"), "ci_low": _ref("number_or_null"), "ci_high": _ref("number_or_null"),
    "confidence": _FRACTION, "verdict": {"enum": ["faster", "slower", "same", "inconclusive", "contaminated"]},
    "paired": {"type": "boolean"}, "pairs": {"type": "integer", "minimum": 0}, "method": STRING}),
    "type": ["object", "null"]}
_SPEEDUP["properties"].update({  # written, not required: documents from before them stay valid
    "text": {**STRING, "description": "the ratio as the terminal says it: '3.17× slower [3.00–3.30]', "
                                      "never '0.32× slower' (report/ratio_text.py)"},
    "contaminated": {**STRING, "description": "'' or why the paired rounds cannot be trusted "
                                              "(runner/paired_check.py): no verdict then"},
    "load_moved": {**STRING, "description": "'' or, for an unpaired ratio, why a side's median was moved while it "
                                            "was measured: only the verdict that move could not have made stands "
                                            "(runner/load_bias.py)"}})
_SPEEDUP_KINDS = ("vs_cpu_all_cores", "vs_cpu_one_core", "end_to_end_vs_cpu_all_cores", "float32_vs_this_dtype")

# report/derived.py writes it; import ignores it (every figure is recomputed from the samples)
_DERIVED = _object({
    "median_s": _ref("seconds"), "ci_low_s": _ref("seconds_or_null"), "ci_high_s": _ref("seconds_or_null"),
    "confidence": _FRACTION, "ci_method": {"enum": ["order statistics", "batch medians"]},
    "relative_spread": _nullable("number", minimum=0), "n_samples": {"type": "integer", "minimum": 1},
    "min_s": _ref("seconds"), "max_s": _ref("seconds"), "mean_s": _ref("seconds"),
    "stdev_s": {"type": "number", "minimum": 0}, "iqr_s": {"type": "number", "minimum": 0},
    "rate": _nullable("number", exclusiveMinimum=0), "rate_unit": {"enum": ["GFLOP/s", "GB/s"]},
    "peak_metric": _nullable("string"), "percent_of_measured_peak": _ref("percent_or_null"),
    "percent_of_datasheet_peak": _ref("percent_or_null"), "datasheet_provenance": {"enum": ["table", "formula", None]},
    "baseline_role": {"enum": ["cpu_all_cores", "cpu_one_thread", None]},
    "speedups": _object({kind: _ref("speedup") for kind in _SPEEDUP_KINDS}),
    "end_to_end_median_s": _ref("seconds_or_null"),
    "transfer_percent_of_end_to_end": _nullable("number", minimum=0, maximum=100)})

_COMPARISON = _object({"kind": STRING, "what": STRING, "vs_cpu_all_cores": _ref("speedup"),
                       "vs_cpu_one_core": _ref("speedup")})
_HEADLINE_DEVICE = _object({
    "series": STRING, "device": STRING, "description": STRING, "comparisons": _list(_COMPARISON),
    "break_even": _nullable("string"),
    "transfer_share": {**_object({"where": STRING, "share": {"type": "number", "minimum": 0, "maximum": 1}},
                                 closed=False), "type": ["object", "null"]},
    "verdicts": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
                 "propertyNames": {"enum": list(VERDICTS)}},
    "confidence": STRING, "text": STRING})
_HEADLINE = _object({"devices": _list(_HEADLINE_DEVICE), "unreached": _list(STRING), "caveats": _list(STRING)},
                    description="The answer first (report/headline.py): each measured backend@device against the CPU")
_HEADLINE["properties"]["cpu"] = _nullable(  # written, not required
    "string", description="what the CPU side of the answer is and what it reached (report/cpu_text.py)")

# `run --json`'s own top level
_RUN_OUTPUT = _object({
    "schema_version": {"const": 1}, "run_id": STRING, "started_at": _nullable("string", format="date-time"),
    "db": STRING, "interrupted": {"type": "boolean"}, "headline": _ref("headline"), "results": _list(_ref("result")),
    "findings": _list(_object({"kind": STRING, "severity": STRING, "text": STRING, "numbers": {"type": "object"}},
                              closed=False)),
    "skips": _list(json_schema_of(SKIP))}, closed=False)
_RUN_OUTPUT["properties"].update({  # written, not required
    "unreached_devices": _list(_object({
        "name": STRING, "device_ids": _list(STRING), "count": {"type": "integer", "minimum": 0},
        "reasons": _list({"type": "object"}), "text": STRING}, closed=False)),
    "busy_machine": _nullable("string")})


def results_json_schema() -> dict[str, Any]:
    """The JSON Schema of `run --json` (its top level), with `$defs/export_document` for `export`."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "accelbench/results/1",
        "title": "accelbench run --json",
        "description": "One run's results: raw samples and the figures derived from them. Documented in "
                       "docs/results-schema.md. `accelbench export` documents ($defs/export_document) carry the "
                       "same results, each with its `derived` block ($defs/derived). Generated from the import's "
                       "checks (accelbench.store.results_json_schema): do not edit by hand.",
        **_RUN_OUTPUT,
        "$defs": {
            "caveat": definition_of(caveat), "spec": definition_of(SPEC),
            "seconds": {"type": "number", "exclusiveMinimum": 0},
            "seconds_or_null": _nullable("number", minimum=0), "number_or_null": _nullable("number"),
            "percent_or_null": _nullable("number", minimum=0),
            "result": definition_of(RESULT), "speedup": _SPEEDUP, "derived": _DERIVED, "headline": _HEADLINE,
            "export_document": json_schema_of(DOCUMENT)},
    }


def schema_text() -> str:
    """The file's text: stable key order, plain JSON (no NaN, no Infinity), one newline at the end."""
    return json.dumps(results_json_schema(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print("usage: python -m accelbench.store.results_json_schema --write", file=sys.stderr)
        return 2
    SCHEMA_FILE.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
