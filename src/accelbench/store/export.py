"""JSON export and import of stored runs, for sharing between machines and collecting cluster jobs.

The document is plain JSON (no NaN or Infinity tokens). Import only parses and validates it
(store/document_schema.py: types, ranges, lengths, depth) before anything is written: nothing in a
file is ever executed or unpickled, and the first bad field is reported by its JSON path.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accelbench._version import __version__
from accelbench.errors import UsageError
from accelbench.results import Measurement, finite
from accelbench.store.db import Store
from accelbench.store.document_check import FORMAT_NAME, FORMAT_VERSION
from accelbench.store.document_io import parse_json, read_bytes, skip_from_dict  # noqa: F401 - re-exported
from accelbench.store.document_schema import validate_document

# -- export -------------------------------------------------------------------------------


def _export_measurement(m: Measurement) -> dict[str, Any]:
    data = m.to_dict()
    error = data["check"]["max_rel_error"]
    if not math.isfinite(error):  # a failed check may have a NaN or infinite error: keep it, as text
        data["check"]["max_rel_error"] = "nan" if math.isnan(error) else "inf"
    # every free-form figure: a CI of ±inf (one sample) in a warning's figures failed the export
    for key in ("telemetry", "extra", "warnings", "verdict_reasons"):
        data[key] = finite(data[key])
    return data


def export_runs(store: Store, run_ids: Iterable[str]) -> dict[str, Any]:
    """A JSON document holding the given runs (ids or any ref resolve_run accepts), in order."""
    runs = []
    for run_id in dict.fromkeys(store.resolve_run(ref) for ref in run_ids):
        info = store.run_info(run_id)
        runs.append({
            "id": info.id, "started_at": info.started_at, "finished_at": info.finished_at,
            "status": info.status, "accelbench_version": info.accelbench_version,
            "selection": finite(info.selection), "machine": finite(store.machine(run_id)),
            "tags": store.tags(run_id),
            "results": [_export_measurement(m) for m in store.results(run_id)],
            "skips": [s.to_dict() for s in store.skips(run_id)],
        })
    return {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "accelbench_version": __version__, "runs": runs}


# -- import -------------------------------------------------------------------------------


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
    from accelbench.store.import_file import run_records

    # one transaction for the whole document: an interrupted or failed import stores nothing
    return store.restore_runs(run_records(doc["runs"], tags, phases=None))


# -- files --------------------------------------------------------------------------------


def write_json(path: str | os.PathLike[str], doc: Any) -> None:
    """Write `doc` atomically: a temporary file in the same folder, fsync, then rename over `path`."""
    try:
        text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    except ValueError as exc:
        raise UsageError(f"cannot write {Path(path)}: {exc} (plain JSON has no NaN or Infinity)") from None
    write_text(path, text)


def write_text(path: str | os.PathLike[str], text: str, inputs: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Write `text` whole or not at all, never through a link nor onto an input (safe_write.py)."""
    from accelbench.safe_write import write_text as write_whole

    write_whole(path, text, inputs)


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file (strictly: NaN and Infinity are refused), or raise UsageError naming it."""
    return parse_json(read_bytes(path), path)
