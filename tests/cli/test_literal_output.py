"""Stored and user-given strings are printed as themselves: never read as rich markup (a `[/]` tag
crashed `accelbench runs`, a `[link=...]` became a link), never sent to the terminal as raw control
characters (shown escaped instead). Each output path gets every member of the class below, stored
in a real SQLite file or given on the command line, and is driven through the real CLI entry.
"""
from __future__ import annotations

import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from accelbench.cli.main import main
from accelbench.cluster.manifest import JobRecord, add_jobs
from accelbench.cluster.targets import Target
from accelbench.devices.inventory import Inventory
from accelbench.devices.model import Device, ProbeReport
from accelbench.results import Skip, Spec
from accelbench.store.db import Store
from accelbench.store.export import export_runs, write_json
from accelbench.terminal import console, literal, printable

# stored value -> how it must appear on screen
HOSTILE = {
    "[/]": "[/]",
    "[bold]x": "[bold]x",
    "[link=https://e.com]y[/link]": "[link=https://e.com]y[/link]",
    "\x1b[31mred\x1b[0m": "\\x1b[31mred\\x1b[0m",
    "\x1b]8;;https://e.com\x07z": "\\x1b]8;;https://e.com\\x07z",  # OSC 8: a terminal hyperlink
    "a\x00b\rc\u202ed\x9b": "a\\x00b\\rc\\u202ed\\x9b",
    "x\\[/]": "x\\[/]",  # a backslash before a tag: rich's own escape character
}
FIRST_LINE = {value: shown.split("\\r")[0] for value, shown in HOSTILE.items()}  # logs split lines at \r too
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # \n is layout


def _shown(output: str, stored: str) -> None:
    assert HOSTILE[stored] in output, f"{stored!r} not shown literally in:\n{output}"


def _clean(output: str) -> None:
    assert not RAW_CONTROL.search(output), repr(RAW_CONTROL.search(output))


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "500")  # no folding: each value stays on one line of the table


def _store_run(db: Path, hostname: str, **tags) -> str:
    with Store(db) as store:
        run_id = store.start_run({"hostname": hostname}, {"workloads": ["reduce"]})
        store.finish_run(run_id, "complete")
        if tags:
            store.add_tags(run_id, tags)
    return run_id


@pytest.mark.parametrize("value", list(HOSTILE))
def test_runs_lists_an_imported_tag_and_hostname_literally(tmp_path, capsys, value):
    source = tmp_path / "source.sqlite"
    run_id = _store_run(source, value)
    with Store(source) as store:
        write_json(tmp_path / "run.json", export_runs(store, [run_id]))
    db = tmp_path / "local.sqlite"
    assert main(["import", str(tmp_path / "run.json"), "--tag", f"k={value}", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    _shown(out, value)
    assert out.count(HOSTILE[value]) == 2  # the host and the tag
    _clean(out)


@pytest.mark.parametrize("name", ["[bold]x.json", "[red]x[\\].json", "\x1b[31mred.json", "tab\there.json", "\u202egnp.json"])
def test_export_and_import_name_their_files_literally(tmp_path, capsys, name):
    db = tmp_path / "db.sqlite"
    _store_run(db, "h")
    path = tmp_path / name
    assert main(["export", "latest", "-o", str(path), "--db", str(db)]) == 0
    err = capsys.readouterr().err
    assert main(["import", str(path), "--db", str(tmp_path / "other.sqlite")]) == 0
    out = capsys.readouterr().out
    shown = printable(name)
    assert f"to {tmp_path}/{shown}" in err and out.startswith(f"{tmp_path}/{shown}: 1 run(s) imported")
    _clean(err + out)


def _inventory(value: str) -> Inventory:
    device = Device(id="opencl:0:0", kind="gpu", vendor=value, name=value, source="opencl",
                    properties={"driver_version": value}, reach={"pyopencl": value}, warnings=(value,))
    host = {"hostname": value, "os": value, "os_release": "1", "machine": "x86_64", "python": "3", "accelbench": "0"}
    probe = ProbeReport(probe="opencl", status="error", message=value, devices=(device,), debug=f"Traceback\n{value}")
    return Inventory(host=host, probes=(probe,), devices=(device,))


@pytest.mark.parametrize("value", list(HOSTILE))
def test_info_shows_device_names_and_probe_messages_literally(capsys, value):
    from accelbench.cli.info_render import render_inventory

    render_inventory(_inventory(value), debug=True)  # as `accelbench info --debug` does
    out = capsys.readouterr().out
    _shown(out, value)
    assert out.count(HOSTILE[value]) >= 8  # host, os, title (name, vendor), property, reach, warning, probe, debug
    _clean(out)


@pytest.mark.parametrize("value", list(HOSTILE))
def test_run_summary_shows_skip_reasons_and_paths_literally(capsys, value):
    """The one screen (skip reasons folded into one line) and the details (`--details`): both literal."""
    from accelbench.cli.run_cmd import _print_details, _print_screen
    from accelbench.report.headline import headline

    spec = Spec.make("reduce", "numpy", f"cpu{value}", n=4096)
    results = SimpleNamespace(rows=[], skips=[Skip(spec, f"cannot: {value}")], measurements=[],
                              findings=list, run_id="r1", db_path=f"/tmp/{value}.sqlite", devices={},
                              machine={}, rigor="quick", headline=lambda: headline(
                                  [], unreached=[f"GPU{value} (cuda:0) found, not measured: driver {value}"]))
    _print_screen(results, suite=True)
    out = capsys.readouterr().out
    assert "cannot" in out and f"saved in /tmp/{HOSTILE[value]}.sqlite" in " ".join(out.split())
    _clean(out)
    # the devices found and not measured: named before the first measurement, and on a stored run's screen
    from accelbench.report.run_screen import render_screen
    from accelbench.terminal import console
    render_screen(results.headline(), console(), run_line="r1")
    out = capsys.readouterr().out
    assert f"driver {FIRST_LINE[value]}" in out  # the headline's lines, literally
    _clean(out)
    _print_details(results)
    out = capsys.readouterr().out
    assert f"cannot: {FIRST_LINE[value]}" in out and f"reduce numpy@cpu{HOSTILE[value]} n=4096" in out
    assert f"saved in /tmp/{HOSTILE[value]}.sqlite" in out
    _clean(out)


@pytest.mark.parametrize("value", list(HOSTILE))
def test_compare_shows_recorded_settings_literally(tmp_path, capsys, value):
    db = tmp_path / "db.sqlite"
    first = _store_run(db, value)
    second = _store_run(db, "plain-host")
    assert main(["compare", first, second, "--db", str(db)]) == 1  # two runs without results share no spec
    out = capsys.readouterr().out
    assert f"hostname: {HOSTILE[value]} → plain-host" in out
    _clean(out)


@pytest.mark.parametrize("value", list(HOSTILE))
def test_errors_naming_a_bad_value_show_it_escaped(tmp_path, capsys, value):
    db = tmp_path / "db.sqlite"
    _store_run(db, "h")
    assert main(["compare", f"nosuch{value}", "latest", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nosuch" in err
    _clean(err)


@pytest.mark.parametrize("value", list(HOSTILE))
def test_gather_shows_job_logs_and_states_as_text(tmp_path, capsys, monkeypatch, value):
    results = tmp_path / "results"
    add_jobs(results, [JobRecord("s1", 1, Target(), "s", "t", (), job_id="12",
                                 last_state={"state": "FAILED", "source": "squeue", "reason": value, "node": value})])
    (results / "logs").mkdir()
    (results / "logs" / "12.err").write_text(f"log line {value}\n")
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm"))  # the files decide
    assert main(["gather", str(results), "--db", str(tmp_path / "db.sqlite")]) == 1
    out = capsys.readouterr().out
    assert f"| 12.err: log line {FIRST_LINE[value]}" in out and f"FAILED ({HOSTILE[value]}; from manifest)" in out
    _clean(out)


def test_the_console_escapes_control_characters_a_call_site_forgot():
    from rich.table import Table

    stream = io.StringIO()
    table = Table(title="title\x1b[2J")
    table.add_column("head\x1b[1m")
    table.add_row("cell\x1b]8;;https://e.com\x07")
    out = console(file=stream, width=200)
    out.print(table)
    out.print("plain\x1b[31m", markup=False)
    text = stream.getvalue()
    assert "title\\x1b[2J" in text and "head\\x1b[1m" in text and "cell\\x1b]8;;https://e.com\\x07" in text
    assert "plain\\x1b[31m" in text
    _clean(text)


@pytest.mark.parametrize("value", list(HOSTILE))
def test_literal_renders_back_to_exactly_the_shown_form(value):
    stream = io.StringIO()
    console(file=stream, width=500).print(f"[bold]<[/]{literal(value)}[bold]>[/]")
    assert stream.getvalue() == f"<{HOSTILE[value]}>\n"


def test_json_output_keeps_stored_strings_exact(tmp_path, capsys):
    db = tmp_path / "db.sqlite"
    values = list(HOSTILE)
    for value in values:
        _store_run(db, value)
    assert main(["runs", "--json", "--limit", "50", "--db", str(db)]) == 0
    assert sorted(r["hostname"] for r in json.loads(capsys.readouterr().out)) == sorted(values)
