"""Where the runs being compared come from: the results database, or an exported JSON file.

A file is read and validated in memory (accelbench.store.export), never imported: comparing a
colleague's results must not add them to your own history.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from accelbench.errors import UsageError
from accelbench.report.data import RunData
from accelbench.results import Measurement

FILE_SEPARATOR = "#"  # results.json#RUN picks one run out of a file that holds several


def looks_like_file(ref: str) -> bool:
    path = ref.split(FILE_SEPARATOR, 1)[0]
    return path.endswith(".json") or Path(path).is_file()


def load_run(ref: str, db: str | None = None) -> RunData:
    """A run from a database ref (id, unique prefix, latest, latest~N) or FILE.json[#RUN]."""
    if looks_like_file(ref):
        return load_file_run(ref)
    from accelbench.store.db import Store

    with Store(db, create=False) as store:  # reading only: no write lock, read-only media readable
        run_id = store.resolve_run(ref)
        info = store.run_info(run_id)
        return RunData(run_id=run_id, source=str(store.path), measurements=tuple(store.results(run_id)),
                       machine=store.machine(run_id), selection=dict(info.selection),
                       accelbench_version=info.accelbench_version, started_at=info.started_at,
                       status=info.status)


def load_file_run(ref: str) -> RunData:
    from accelbench.store.export import read_json, validate_document

    path, _, wanted = ref.partition(FILE_SEPARATOR)
    document = read_json(path)
    try:
        validate_document(document)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None
    run = _pick_run(path, document["runs"], wanted)
    return RunData(run_id=run["id"], source=path,
                   measurements=tuple(_measurement(r) for r in run["results"]),
                   machine=dict(run["machine"]), selection=dict(run.get("selection", {})),
                   accelbench_version=run["accelbench_version"], started_at=run["started_at"],
                   status=run["status"])


def _pick_run(path: str, runs: list[dict[str, Any]], wanted: str) -> dict[str, Any]:
    ids = [r["id"] for r in runs]
    if not runs:
        raise UsageError(f"{path}: the document holds no runs")
    if not wanted:
        if len(runs) == 1:
            return runs[0]
        raise UsageError(f"{path} holds {len(runs)} runs ({', '.join(ids[:10])}); pick one with "
                         f"{path}{FILE_SEPARATOR}RUN")
    matches = [r for r in runs if r["id"] == wanted] or [r for r in runs if r["id"].startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    what = "is ambiguous" if matches else "is not"
    raise UsageError(f"run {wanted!r} {what} in {path}; it holds: {', '.join(ids[:10])}")


def _measurement(data: dict[str, Any]) -> Measurement:
    check = dict(data["check"])
    if isinstance(check["max_rel_error"], str):  # export writes a NaN or infinite error as text
        check["max_rel_error"] = float(check["max_rel_error"])
    return Measurement.from_dict({**data, "check": check})
