"""Hostile results documents: each is refused at import with exit 2 naming its JSON path, or
accepted, and then `report`, `compare`, `project --to h100` and `export` all end in exit 0 or 2
(`compare` of the document's two runs, which share no spec: 1, saying so)
with at most one line on stderr, no traceback, within a time limit."""
from __future__ import annotations

import copy
import json
import time

import pytest

from accelbench.cli.main import main

pytest.importorskip("matplotlib")

COMMAND_LIMIT_S = 60.0  # a 10 MB device id once made `report` run for more than 5 minutes


@pytest.fixture(scope="module")
def base_document(tmp_path_factory) -> dict:
    """A real export: matmul and stream on numpy, with the machine's inventory."""
    folder = tmp_path_factory.mktemp("base")
    db, out = str(folder / "base.sqlite"), str(folder / "base.json")
    for workload, size in (("matmul", "64"), ("stream", "65536")):
        assert main(["run", workload, "--sizes", size, "--backend", "numpy", "--rigor", "quick",
                     "--no-progress", "--no-telemetry", "--db", db]) == 0
    assert main(["export", "latest~1", "latest", "-o", out, "--db", db]) == 0
    with open(out, encoding="utf-8") as handle:
        return json.load(handle)


def _first_result(doc):
    return doc["runs"][0]["results"][0]


def _cpu(doc):
    return doc["runs"][0]["machine"]["inventory"]["devices"][0]


def _nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def _all_devices(doc, device_id: str) -> None:
    """Rename the cpu everywhere: inventory, results and skips."""
    for run in doc["runs"]:
        for entry in run["machine"]["inventory"]["devices"]:
            if entry["id"] == "cpu":
                entry["id"] = device_id
        for item in run["results"] + run.get("skips", []):
            if item["spec"]["device"] == "cpu":
                item["spec"]["device"] = device_id


# each: (name, a change to the document); both outcomes are allowed, a crash is not
MUTATIONS = {
    "params hold a list": lambda d: _first_result(d)["spec"]["params"].update(n=[64, 64]),
    "params hold an object": lambda d: _first_result(d)["spec"]["params"].update(dtype={"a": 1}),
    "param name with a dot": lambda d: _first_result(d)["spec"]["params"].update({"a.b": 1}),
    "inventory devices are numbers": lambda d: d["runs"][0]["machine"]["inventory"].update(devices=[1, 2]),
    "inventory devices is an object": lambda d: d["runs"][0]["machine"]["inventory"].update(devices={"cpu": {}}),
    "inventory is a list": lambda d: d["runs"][0]["machine"].update(inventory=[]),
    "all samples zero": lambda d: _first_result(d)["phases_s"].update(compute=[0.0] * 10),
    "one sample zero": lambda d: _first_result(d)["phases_s"]["compute"].__setitem__(0, 0),
    "samples 1e-300": lambda d: _first_result(d)["phases_s"].update(compute=[1e-300] * 10),
    "samples 1e308": lambda d: _first_result(d)["phases_s"].update(compute=[1e308] * 10),
    "flops 1e308": lambda d: _first_result(d)["work"].update(flops=1e308),
    "bytes 1e308": lambda d: _first_result(d)["work"].update(bytes_moved=1e308),
    "calls 2**63": lambda d: _first_result(d).update(calls_per_sample=2**63),
    "threads 2**63": lambda d: _first_result(d).update(threads=2**63),
    "first call 1e308": lambda d: _first_result(d).update(first_call_s=1e308),
    "tolerance 1e308": lambda d: _first_result(d)["check"].update(tolerance=1e308),
    "n = 2**63": lambda d: _first_result(d)["spec"]["params"].update(n=2**63),
    "n = 1e308": lambda d: _first_result(d)["spec"]["params"].update(n=1e308),
    "selection 500 deep": lambda d: d["runs"][0].update(selection=_nested(500)),
    "telemetry 500 deep": lambda d: _first_result(d).update(telemetry=_nested(500)),
    "environment 13 deep": lambda d: d["runs"][0]["machine"].update(environment=_nested(13)),
    "memory is a string": lambda d: _cpu(d).update(memory_bytes="24 GB"),
    "memory 2**80": lambda d: _cpu(d).update(memory_bytes=2**80),
    "memory negative": lambda d: _cpu(d).update(memory_bytes=-1),
    "peak value a string": lambda d: _cpu(d)["peaks"][0].update(value="fast"),
    "peak value 1e308": lambda d: _cpu(d)["peaks"][0].update(value=1e308),
    "peak value 0": lambda d: _cpu(d)["peaks"][0].update(value=0),
    "peak metric unknown": lambda d: _cpu(d)["peaks"][0].update(metric="fp8"),
    "properties usable_cpus huge": lambda d: _cpu(d)["properties"].update(usable_cpus=1e300),
    "properties usable_cpus text": lambda d: _cpu(d)["properties"].update(usable_cpus="two"),
    "reach holds a list": lambda d: _cpu(d).update(reach={"numpy": ["cpu"]}),
    "device id with $frac$": lambda d: _all_devices(d, "cpu$\\frac{$"),
    "device id with $ only": lambda d: _all_devices(d, "$x$"),
    "device id 10 MB": lambda d: _all_devices(d, "c" * 10_000_000),
    "device id with newline": lambda d: _all_devices(d, "cpu\n0"),
    "device id markup": lambda d: _all_devices(d, "[bold]cpu[/]"),
    "device name with $frac$": lambda d: _cpu(d).update(name="AMD $\\frac{$ EPYC"),
    "workload name with $": lambda d: _first_result(d)["spec"].update(workload="mat$mul$"),
    "workload name 10 MB": lambda d: _first_result(d)["spec"].update(workload="w" * 10_000_000),
    "backend name markup [/]": lambda d: _first_result(d)["spec"].update(backend="[/]"),
    "hostname 1 MB": lambda d: d["runs"][0]["machine"].update(hostname="h" * 1_000_000),
    "hostname markup link": lambda d: d["runs"][0]["machine"].update(hostname="[link=https://x]h[/link]"),
    "tag value 1 MB": lambda d: d["runs"][0].setdefault("tags", {}).update(k="v" * 1_000_000),
    "tag markup": lambda d: d["runs"][0].setdefault("tags", {}).update(k="[/]"),
    "warning 1 MB": lambda d: _first_result(d).update(warnings=["w" * 1_000_000]),
    "detail with $frac$": lambda d: _first_result(d)["check"].update(detail="$\\frac{$"),
    "started in year 1": lambda d: d["runs"][0].update(started_at="0001-01-01T00:00:00+00:00"),
    "started in year 9999": lambda d: d["runs"][0].update(started_at="9999-12-31T23:59:59+00:00"),
    "finished before started": lambda d: d["runs"][0].update(finished_at="2000-01-01T00:00:00+00:00"),
    "naive start time": lambda d: d["runs"][0].update(started_at="2026-01-01T00:00:00"),
    "no results": lambda d: d["runs"][0].update(results=[]),
    "max_rel_error inf text": lambda d: _first_result(d)["check"].update(max_rel_error="inf", passed=True),
    "verdict unknown": lambda d: _first_result(d).update(verdict="great"),
    "extra with a huge number": lambda d: _first_result(d).update(extra={"fresh_input_call_s": 1e300}),
    "extra 10**400": lambda d: _first_result(d).update(extra={"x": 10**400}),
    "status running": lambda d: d["runs"][0].update(status="running"),
    "tag key empty": lambda d: d["runs"][0].setdefault("tags", {}).update({"": "v"}),
    "derived is a list": lambda d: _first_result(d).update(derived=[1, 2]),
    "derived 500 deep": lambda d: _first_result(d).update(derived=_nested(500)),
}

# the classes the issue names must be refused (the others may be either, but never crash later)
MUST_REFUSE = {"params hold a list", "inventory devices are numbers", "all samples zero", "flops 1e308",
               "calls 2**63", "selection 500 deep", "memory is a string", "device id with $frac$",
               "device id 10 MB", "derived is a list"}


def _no_traceback(err: str, status: int) -> None:
    """No traceback ever; a refusal (exit 2) is one line (a success may print notes)."""
    assert "Traceback" not in err, err[-2000:]
    if status == 2:
        assert len(err.strip().splitlines()) == 1, err[-2000:]


def _timed(argv: list[str], capsys) -> tuple[int, str]:
    started_s = time.monotonic()
    status = main(argv)
    took_s = time.monotonic() - started_s
    err = capsys.readouterr().err
    assert took_s < COMMAND_LIMIT_S, f"{argv[0]} took {took_s:.0f} s"
    return status, err


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_a_hostile_document_is_refused_by_path_or_usable_by_every_command(name, base_document, tmp_path, capsys):
    doc = copy.deepcopy(base_document)
    MUTATIONS[name](doc)
    path, db = tmp_path / "hostile.json", str(tmp_path / "r.sqlite")
    path.write_text(json.dumps(doc), encoding="utf-8")
    status, err = _timed(["import", str(path), "--db", db], capsys)
    _no_traceback(err, status)
    if status == 2:
        assert "runs[0]" in err, err[:500]  # the JSON path of the bad field
        assert len(err) < 1000
        return
    assert status == 0, err
    assert name not in MUST_REFUSE, f"{name!r} was accepted"
    run_id = doc["runs"][0]["id"]
    for argv in (["report", run_id, "-o", str(tmp_path / "report")],
                 ["compare", run_id, "latest"],
                 ["compare", str(path), run_id],
                 ["project", run_id, "--to", "h100"],
                 ["export", run_id, "-o", str(tmp_path / "again.json")],
                 ["runs"]):
        status, err = _timed([*argv, "--db", db], capsys)
        # the document holds two runs (matmul, stream): compared with each other they share no spec (exit 1)
        nothing_shared = argv[0] == "compare" and status == 1 and "share no spec" in err
        assert status in (0, 2) or nothing_shared, (argv, err[-2000:])
        _no_traceback(err, status)
