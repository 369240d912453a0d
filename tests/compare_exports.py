"""Runs stored in a real SQLite database and exported as CI compares them, for the `compare` gate tests:
one run's export, a copy with its timings (and machine reference, and all-cores probes) scaled, and the
gate's answer through the CLI."""
from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence

from accelbench.cli.main import main
from accelbench.results import Measurement
from accelbench.store.db import Store
from accelbench.store.export import export_runs, write_json
from accelbench.timing import all_cores_probe, machine_reference

MACHINE = {"hostname": "node1", "os": "Linux 6.1", "python": "3.11.7", "software": {"numpy": "2.4.6"},
           "environment": {"OMP_NUM_THREADS": "1"},
           "inventory": {"devices": [{"id": "cpu", "name": "AMD EPYC", "properties": {"usable_cpus": 2}}]}}


def reference_record(factor: float = 1.0) -> dict:
    """Three readings 1% apart, as a quiet machine gives, every time × factor."""
    return machine_reference.record([machine_reference.Reading(at, 0.005 * f * factor, 0.009 * f * factor)
                                     for at, f in zip(machine_reference.POINTS, (1.0, 1.01, 0.995))])


def export_run(tmp_path, name: str, measurements: Sequence[Measurement], *, reference: float | None = 1.0) -> str:
    """The measurements as one complete run (with a machine reference × `reference`; None: without one),
    exported to NAME.json."""
    machine = {**MACHINE, **({} if reference is None else {machine_reference.KEY: reference_record(reference)})}
    with Store(str(tmp_path / f"{name}.sqlite")) as store:
        run_id = store.start_run(machine, {"rigor": "quick"})
        store.add_results(run_id, list(measurements))
        store.finish_run(run_id, "complete")
        document = export_runs(store, [run_id])
    path = str(tmp_path / f"{name}.json")
    write_json(path, document)
    return path


def scaled_copy(tmp_path, path_a: str, name: str, *, factor: float = 1.0, only: int | None = None,
                reference: float = 1.0, probe: float = 1.0, pick: Callable[[dict], bool] | None = None) -> str:
    """A copy of the export as another run: the timings of result `only` (every one: None; those `pick`
    accepts, where given) × factor, and their all-cores probes × probe; the machine reference × reference."""
    with open(path_a, encoding="utf-8") as handle:
        document = json.load(handle)
    run = copy.deepcopy(document["runs"][0])
    run["id"] = run["id"][:-6] + "b0b0b0"
    for i, result in enumerate(run["results"]):
        if (only is None or i == only) and (pick is None or pick(result)):
            result["phases_s"] = {k: [x * factor for x in v] for k, v in result["phases_s"].items()}
            reading = (result.get("telemetry") or {}).get(all_cores_probe.KEY)
            if reading:
                reading["before_s"] *= probe
                reading["after_s"] *= probe
    for reading in (run["machine"].get(machine_reference.KEY) or {}).get("readings", []):
        for part in ("matmul_s", "memory_s", "total_s"):
            reading[part] *= reference
    document["runs"] = [run]
    path = str(tmp_path / f"{name}.json")
    write_json(path, document)
    return path


def gate(capsys, a: str, b: str) -> tuple[int, dict, str]:
    """`compare A B --fail-if-slower 10 --json`: its exit code, its document, its stderr (wrapped to
    80 columns there, joined into one line of words here)."""
    code = main(["compare", a, b, "--fail-if-slower", "10", "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), " ".join(captured.err.split())
