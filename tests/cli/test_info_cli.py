"""`accelbench info` as a user types it."""
import json
import subprocess
import sys

import pytest

from accelbench.cli.main import main
from accelbench.schemas import load_schema


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_validates_against_the_documented_schema(capsys):
    jsonschema = pytest.importorskip("jsonschema")
    code, out, _ = _run(capsys, "info", "--json")
    assert code == 0
    document = json.loads(out)
    jsonschema.validate(document, load_schema("info"))
    (cpu,) = [d for d in document["devices"] if d["id"] == "cpu"]
    assert cpu["properties"]["blas_libraries"][0]["threads"] >= 1
    assert {p["probe"] for p in document["probes"]} >= {"cpu", "nvidia", "opencl"}


def test_schema_rejects_what_it_should(capsys):
    jsonschema = pytest.importorskip("jsonschema")
    _, out, _ = _run(capsys, "info", "--json", "--probe", "cpu")
    document = json.loads(out)
    document["devices"][0]["peaks"].append({"metric": "fp32", "value": -1, "unit": "FLOP/s",
                                            "provenance": "guess", "detail": "x", "inputs": {}})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, load_schema("info"))


def test_pocl_device_is_listed_when_opencl_is_installed(capsys):
    pytest.importorskip("pyopencl")
    code, out, _ = _run(capsys, "info", "--json", "--probe", "opencl")
    document = json.loads(out)
    opencl = [d for d in document["devices"] if d["id"].startswith("opencl:")]
    assert code == 0 and opencl, document["probes"]
    assert opencl[0]["reach"] == {"pyopencl": opencl[0]["id"]}


def test_human_output_shows_cpu_blas_and_threads():
    out = subprocess.run([sys.executable, "-m", "accelbench", "info", "--probe", "cpu,opencl"],
                         capture_output=True, text=True, env={"COLUMNS": "120", "PATH": "/usr/bin:/bin"},
                         check=True).stdout
    assert "cpu" in out and "BLAS" in out and "threads" in out and "Probes" in out
    assert "GFLOP/s" in out  # peaks carry their unit


def test_missing_library_gives_a_status_line_and_exit_0(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # as if jax were not installed
    code, out, _ = _run(capsys, "info", "--probe", "jax")
    assert code == 0
    assert "jax" in out and "not_installed" in out
    assert "Traceback" not in out


def test_json_reports_missing_library_status(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    _, out, _ = _run(capsys, "info", "--json", "--probe", "jax")
    (report,) = json.loads(out)["probes"]
    assert report["status"] == "not_installed" and "debug" not in report


def test_bad_option_exits_2_naming_it(capsys):
    assert main(["info", "--frobnicate"]) == 2  # main(argv) returns the status, as documented
    assert "--frobnicate" in capsys.readouterr().err


def test_unknown_probe_exits_2_listing_accepted(capsys):
    code, _, err = _run(capsys, "info", "--probe", "cpu,quantum")
    assert code == 2
    assert "'quantum'" in err and "nvidia" in err


def test_schema_flag_prints_the_schema(capsys):
    code, out, _ = _run(capsys, "info", "--schema")
    assert code == 0 and json.loads(out)["properties"]["schema_version"]["const"] == 1
