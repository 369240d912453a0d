"""Every value the parser takes is one the code can use: a bad one ends in exit 2 and one line on
stderr naming it and what is accepted, with no traceback and no file created; good edge values
(seed 0) are kept; a closed pipe ends quietly."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench.cli.main import build_parser, main

HUGE = "9" * 400  # float() makes it inf, int() is fine: both must be refused by range
NUL = "a\x00b"

# (command and options before the bad value, option, bad values); {file}/{folder}/{link}/{device}
# are existing paths made by the `hostile` fixture.
BAD_VALUES = [
    (["run"], "--seed", ["-1", "4294967296", "1.5", "abc", "", " ", "0x10", "99999999999999999999", HUGE]),
    (["run"], "--sizes", ["", ",", "64x", "0", "-5", "1.5", "0.3K", "99999999999999999999", HUGE, "64i",
                          "1,,2", "1024,", "nan", "inf", "1e3", "2000000T"]),
    (["run"], "--dtype", ["", ",", "float8", "float32,", "FLOAT32"]),
    (["run"], "--backend", ["", "nope", "numpy,", ",numpy"]),
    (["run"], "--device", ["", ",", "cpu,", NUL]),
    (["run"], "--db", ["", " ", NUL]),
    (["run"], "--rigor", ["extreme", ""]),
    (["run"], "--timeout", ["0", "-1", "inf", "-inf", "nan", "", "abc", "86401", "1e999", "10s"]),
    (["run"], "--wait-quiet", ["0", "-5", "3601", "1.5", "abc", "inf"]),
    (["run"], "WORKLOAD", ["", "nosuch", "matmul,", ",stream", "matmul,nosuch", "matmul,,stream"]),
    (["runs"], "--limit", ["-1", "0", "1000001", "ten", "", "1e3", "99999999999999999999", HUGE]),
    (["runs"], "--db", ["", NUL]),
    (["check"], "--db", ["", NUL]),
    (["ceilings"], "--db", ["", NUL]),
    (["peak"], "--device", ["", " ", NUL]),
    (["peak"], "--backend", ["", "nope"]),
    (["peak"], "--dtype", ["", "float8"]),
    (["peak"], "--budget", ["0", "-1", "nan", "inf", "abc", ""]),
    (["peak"], "--orders", ["", "0", "8", "abc", "1,,2", "99999999"]),
    (["peak"], "--db", ["", NUL]),
    (["ceilings"], "--device", ["", " ", NUL]),
    (["export"], "--output", ["", "{folder}", "{link}", "{device}", NUL]),
    (["export"], "--db", [""]),
    (["show"], "--db", [""]),
    (["report"], "--output", ["", "{file}", "{file}/sub", NUL]),
    (["report"], "--db", [""]),
    (["compare"], "--fail-if-slower", ["-1", "nan", "inf", "-inf", "abc", "", "1e999"]),
    (["compare"], "--same-within", ["0", "100", "-5", "nan", "inf", "", "ten"]),
    (["compare"], "--reference", ["", " "]),
    (["compare"], "--db", [""]),
    (["project", "--to", "h100"], "--db", [""]),
    (["info"], "--probe", ["", ",", "quantum", "cpu,", "all,cpu"]),
    (["info"], "--db", ["", NUL]),
    (["monitor", "--once"], "--interval", ["0", "-1", "inf", "nan", "-inf", "1e999", "86401", "abc", ""]),
    (["monitor", "--once"], "--duration", ["0", "-1", "inf", "nan", ""]),
    (["monitor", "--once"], "--device", ["", ",", "nosuch", "cpu,nosuch"]),
    (["setup", "--yes"], "--device", ["", ",", "nosuch"]),
    (["setup", "--show"], "--settings", ["", "{folder}", "{device}"]),
    (["import"], "FILE", ["", NUL]),
    (["import", "{file}"], "--db", [""]),
    (["gather"], "--timeout", ["0", "-1", "inf", "nan"]),
    (["gather"], "--poll", ["0", "nan", "-2"]),
    (["gather"], "--submission", ["", " "]),
    (["gather"], "--db", [""]),
    (["gather"], "RESULTS_DIR", ["", NUL]),
    (["fleet"], "RESULTS_DIR", ["", NUL]),
    (["fleet"], "--submission", ["", " "]),
    (["fleet"], "--db", [""]),
    (["fleet"], "--fail-on", ["", ",", "sometimes", "outlier,sometimes", "none,outlier"]),
    (["fleet"], "--html", ["", "{file}", "{file}/sub", NUL]),
    (["submit", "--dry-run"], "--repeat", ["0", "-1", "1.5", HUGE]),
    (["submit", "--dry-run"], "--max-jobs", ["0", "-3"]),
    (["submit", "--dry-run"], "--cpus-per-task", ["0", "-2", "x"]),
    (["submit", "--dry-run"], "--timeout", ["inf", "0"]),
    (["submit", "--dry-run"], "--poll", ["nan"]),
    (["submit", "--dry-run"], "--seed", ["-1"]),
    (["submit", "--dry-run"], "--sizes", ["", "64x"]),
    (["submit", "--dry-run"], "--db", [""]),
    (["submit", "--dry-run"], "WORKLOAD", ["", "nosuch", "stream,nosuch"]),
    (["submit", "--dry-run"], "--dtype", ["", "float7"]),
    (["submit", "--dry-run"], "--device", ["", ","]),
    (["submit", "--dry-run"], "--backend", ["", "nope"]),
    (["submit", "--dry-run"], "--rigor", ["x"]),
]
CASES = [pytest.param(prefix, option, value, id=f"{' '.join(prefix[:1])} {option} {value[:12]!r}")
         for prefix, option, values in BAD_VALUES for value in values]

# options whose text is checked after parsing, each by code that names the value and lists the
# accepted ones (and tried below or in the files named)
CHECKED_LATER = {
    ("export", "runs"), ("report", "runs"), ("compare", "runs"), ("project", "run"), ("project", "--to"),
    ("show", "run"),
    ("import", "--tag"), ("submit", "--jobs-per"),
    # what goes into #SBATCH lines: cluster/ checks (tests/unit/test_slurm_script_injection.py)
    ("submit", "--partition"), ("submit", "--nodelist"), ("submit", "--gres"), ("submit", "--constraint"),
    ("submit", "--time"), ("submit", "--account"), ("submit", "--qos"), ("submit", "--sbatch-arg"),
    ("submit", "--results-dir"), ("submit", "--python"),
}
LATER_VALUES = [  # (argv, the bad value the message must name)
    (["export", ""], ""), (["export", "latest~x"], "latest~x"), (["report", "nosuchrun"], "nosuchrun"),
    (["show", "nosuchrun"], "nosuchrun"), (["show", "latest~x"], "latest~x"),
    (["compare", "", "latest"], ""), (["compare", "latest", "nosuchrun"], "nosuchrun"), (["project", "--to", ""], ""),
    (["project", "--to", "h9000"], "h9000"), (["project", "nosuchrun", "--to", "h100"], "nosuchrun"),
    (["import", "--tag", "=x", "{file}"], "=x"), (["import", "--tag", "novalue", "{file}"], "novalue"),
    (["submit", "--dry-run", "--jobs-per", "nodes"], "nodes"),
    (["run", "reduce", "--backend", "numpy", "--device", "nosuch"], "nosuch"),
]


@pytest.fixture
def hostile(tmp_path, monkeypatch) -> dict[str, str]:
    """Run in an empty folder beside a few existing paths; returns them by name."""
    fixtures = tmp_path / "existing"
    fixtures.mkdir()
    (fixtures / "file.txt").write_text("a file, not a folder")
    (fixtures / "folder").mkdir()
    (fixtures / "link").symlink_to(fixtures / "file.txt")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("ACCELBENCH_DB", str(work / "db" / "results.sqlite"))
    monkeypatch.setenv("XDG_DATA_HOME", str(work / "data"))
    return {"file": str(fixtures / "file.txt"), "folder": str(fixtures / "folder"),
            "link": str(fixtures / "link"), "device": os.devnull, "work": str(work), "fixtures": str(fixtures)}


def _tree(root: str) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_size if p.is_file() else -1)
                  for p in Path(root).rglob("*"))


def _assert_refused(argv: list[str], value: str, hostile: dict[str, str], capsys) -> str:
    before = (_tree(hostile["work"]), _tree(hostile["fixtures"]))
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, (argv, code, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    named = [value, *value.split(",")] if value else [value]  # the value, or its bad item
    assert any(repr(part) in err for part in named), err
    assert (_tree(hostile["work"]), _tree(hostile["fixtures"])) == before, "a file was created or changed"
    return err


@pytest.mark.parametrize(("prefix", "option", "value"), CASES)
def test_a_bad_value_is_refused_in_one_line_naming_it(prefix, option, value, hostile, capsys):
    value = value.format(**hostile)
    prefix = [part.format(**hostile) for part in prefix]
    # --option=value: a value that begins with '-' (-inf) reaches the check, not the option parser
    argv = prefix + [value] if option.isupper() else prefix + [f"{option}={value}"]
    err = _assert_refused(argv, value, hostile, capsys)
    if not option.isupper():
        assert option in err, err


@pytest.mark.parametrize(("argv", "bad"), LATER_VALUES, ids=[" ".join(a) for a, _ in LATER_VALUES])
def test_a_bad_value_checked_after_parsing_is_refused_the_same_way(argv, bad, hostile, capsys):
    from accelbench.store.db import Store

    with Store(hostile["work"] + "/db/results.sqlite") as store:  # a run, so a bad ref is what fails
        store.start_run({"hostname": "box"}, {})
    _assert_refused([part.format(**hostile) for part in argv], bad, hostile, capsys)


def test_every_option_that_takes_a_value_is_checked():
    """A new option with a bare type (str, int, float) would let the class back in."""
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    tried = {(prefix[0], option) for prefix, option, _ in BAD_VALUES}
    unchecked = []
    for command, parser in subparsers.choices.items():
        for action in parser._actions:
            if action.nargs == 0:
                continue
            name = action.option_strings[-1] if action.option_strings else action.dest
            if (command, name) in CHECKED_LATER:
                continue
            if action.type in (None, str, int, float) and action.choices is None:
                unchecked.append(f"{command} {name}")
            shown = name if action.option_strings else action.metavar
            if (command, shown) not in tried and action.choices is None:
                unchecked.append(f"{command} {shown} (no bad values tried)")
    assert unchecked == []


def test_seed_zero_is_a_seed_and_is_recorded(hostile, capsys):
    db = hostile["work"] + "/seed.sqlite"
    assert main(["run", "reduce", "--sizes", "1024", "--backend", "numpy", "--device", "cpu", "--rigor", "quick",
                 "--seed", "0", "--no-progress", "--db", db]) == 0
    capsys.readouterr()
    assert main(["runs", "--json", "--db", db]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert run["selection"]["seed"] == 0 and run["result_count"] >= 1


@pytest.mark.parametrize("argv", [["runs", "--limit", "1"], ["monitor", "--interval", "0.05", "--once", "--json"],
                                  ["compare", "--same-within", "99.5", "--fail-if-slower", "0", "--reference", "x"]])
def test_edge_values_inside_the_range_are_taken(argv, hostile, capsys):
    code = main(argv)
    err = capsys.readouterr().err
    assert "argument" not in err, err  # the parser took them; what follows may still say "no runs"
    assert code in (0, 2)


@pytest.mark.parametrize("argv", [["list", "--json"], ["info", "--json", "--probe", "cpu"], ["--help"],
                                  ["export"], ["runs", "--json"]])
def test_a_closed_pipe_ends_quietly_with_141(argv, tmp_path):
    env = {**os.environ, "ACCELBENCH_DB": str(tmp_path / "results.sqlite")}
    if argv == ["export"]:
        from accelbench.store.db import Store
        with Store(tmp_path / "results.sqlite") as store:
            store.start_run({"hostname": "box"}, {"workloads": ["reduce"]})
    process = subprocess.Popen([sys.executable, "-m", "accelbench", *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
    process.stdout.close()  # the reader is gone before the first write, as `| head -0` would do
    err = process.stderr.read().decode()
    # --help is short: it may be written into the pipe buffer before the reader's close is seen
    assert process.wait(timeout=120) in ((0, 141) if argv == ["--help"] else (141,)), err
    assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err, err


@pytest.mark.parametrize("command", ["run", "submit"])
def test_workloads_may_be_given_separated_by_commas_or_spaces(command):
    parse = build_parser().parse_args
    assert parse([command, "matmul,reduce", "stream"]).workloads == ["matmul", "reduce", "stream"]
    assert parse([command, "matmul", "reduce"]).workloads == ["matmul", "reduce"]
    assert parse([command]).workloads == []  # none named: the quick suite
