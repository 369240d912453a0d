"""Hostile values for `accelbench submit`: none becomes a command, none cuts the #SBATCH block.

Each option gets several members of the class (newline, carriage return, NUL, escape, shell
syntax, sbatch's own comment and quote characters); every refusal is one line on stderr naming
the option and what it accepts, before any file is written. Values an option does accept, however
odd, are written into a real script that is read the way sbatch reads it and run by real bash,
with a stub interpreter that records what it was asked to run.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench.cli.main import main
from accelbench.cluster.sbatch_values import check_option
from accelbench.cluster.script import JobSettings, render_script
from accelbench.cluster.targets import Target
from accelbench.errors import UsageError

INJECTED = "INJECTED"  # the file every injected command tries to create


def sbatch_directives(script: str) -> list[str]:
    """The options sbatch takes from a script, read as sbatch reads them (src/sbatch/opt.c):
    only lines starting `#SBATCH`, up to the first line that is neither a comment nor blank;
    each split at whitespace outside quotes, backslash escaping, an unquoted `#` ending it."""
    found = []
    for line in script.split("\n")[1:]:
        if not line.startswith("#SBATCH"):
            if line.strip() and not line.startswith("#"):
                break  # the first command: sbatch reads no further
            continue
        found += _arguments(line[len("#SBATCH"):])
    return found


def _arguments(text: str) -> list[str]:
    words, word, quote, escaped, started = [], "", "", False, False
    for char in text:
        if escaped:
            word, escaped, started = word + char, False, True
        elif char == "\\":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
            else:
                word += char
        elif char in "\"'":
            quote, started = char, True
        elif char == "#":
            break
        elif char.isspace():
            if started:
                words.append(word)
            word, started = "", False
        else:
            word, started = word + char, True
    return words + ([word] if started else [])


# -- refusals ------------------------------------------------------------------------------------

HOSTILE = ["x\nrm -rf ~", "x\r\n#SBATCH --exclusive", "x\x00y", "x\x1b[31m", "x\u2028touch INJECTED",
           "x #comment", "x$(touch INJECTED)", "x`touch INJECTED`", "x'y", 'x"y', "x\\y", "x;touch INJECTED"]
OPTIONS = {
    "--partition": HOSTILE + ["gpu, gpu long", "gpu\t"],
    "--time": HOSTILE + ["30 minutes", "1:00:00:00:00", "1:00:00\n", "-5"],
    "--account": HOSTILE + ["proj,other", "proj x"],
    "--qos": HOSTILE + ["high prio", "high,low"],
    "--gres": HOSTILE + ["gpu:1 gpu:2", ":1", "gpu::1:", "gpu:1\n#SBATCH --mem=1T"],
    "--constraint": HOSTILE + ["a100 h100", "a100\n"],
    "--nodelist": HOSTILE + ["gpu[01-04]\n", "n1,\tn2"],
    "--sbatch-arg": [f"--comment={v}" for v in HOSTILE] + ["mem=1G", "--mem 16G", "--comment='a b'", "-"],
}
CASES = [(option, value) for option, values in OPTIONS.items() for value in values]


def _submit(tmp_path, *args) -> int:
    return main(["submit", "reduce", "--results-dir", str(tmp_path / "results"), "--dry-run", *args])


@pytest.mark.parametrize("option, value", CASES, ids=[f"{o}-{i}" for i, (o, _) in enumerate(CASES)])
def test_a_value_its_sbatch_option_cannot_take_exits_2_naming_both(tmp_path, capsys, monkeypatch, option, value):
    monkeypatch.chdir(tmp_path)
    assert _submit(tmp_path, f"{option}={value}") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"accelbench submit: error: {option} ")
    assert "accepted" in err and repr(value)[1:-1] in err  # the value shown, control characters escaped
    assert not (tmp_path / "results").exists() and not (tmp_path / INJECTED).exists()


@pytest.mark.parametrize("folder", ["a\nb", "a\rb", "a b", "a#b", "a$(touch INJECTED)", "a`id`", "a%j",
                                    "a\x1bb", "a'b", "a\\b"])
def test_a_current_directory_sbatch_cannot_chdir_to_is_refused_not_written(tmp_path, capsys, monkeypatch, folder):
    workdir = tmp_path / folder
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    assert main(["submit", "reduce", "--results-dir", str(tmp_path / "results"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the current directory (sbatch --chdir)" in err and "accepted" in err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("folder", ["r\nx", "r x", "r#x", "r%j", "r$HOME", "r\x00x", "r'x"])
def test_a_results_folder_sbatch_cannot_read_is_refused(tmp_path, capsys, monkeypatch, folder):
    monkeypatch.chdir(tmp_path)
    assert main(["submit", "reduce", "--results-dir", str(tmp_path / folder), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--results-dir" in err and "accepted" in err
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.parametrize("args, option", [
    (["--device", "cpu\ntouch INJECTED"], "accelbench run"), (["--device", "cpu\x1b[2J"], "accelbench run"),
    (["--python", "/usr/bin/python3\nid"], "--python"), (["--python", "python\x00"], "--python")])
def test_control_characters_in_values_that_reach_bash_are_refused_too(tmp_path, capsys, monkeypatch, args, option):
    monkeypatch.chdir(tmp_path)
    assert _submit(tmp_path, *args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and option in err and "control characters" in err


def _settings(tmp_path, **changes):
    base = {"run_args": ("reduce",), "python": sys.executable, "results_dir": tmp_path / "results",
            "workdir": tmp_path}
    return JobSettings(**{**base, **changes})


@pytest.mark.parametrize("settings_changes, target", [
    ({"time": "1:00\ntouch INJECTED"}, Target()), ({"account": "a\n"}, Target()), ({"qos": "q #x"}, Target()),
    ({"extra_sbatch": ("--mem=1G\nid",)}, Target()), ({"extra_sbatch": ("--comment=a b",)}, Target()),
    ({"workdir": Path("/tmp/a\nb")}, Target()), ({"results_dir": Path("/tmp/r x")}, Target()),
    ({"python": "py\nid"}, Target()), ({"run_args": ("reduce", "--device", "cpu\rid")}, Target()),
    ({}, Target(partition="p\nid")), ({}, Target(node="n1\nid")), ({}, Target(node="n[1")),
    ({}, Target(gres="gpu:1 x")), ({}, Target(constraint="a\x00")),
])
def test_render_script_refuses_what_the_cli_would_for_api_callers(tmp_path, settings_changes, target):
    with pytest.raises(UsageError, match="accepted|cannot be written|control characters"):
        render_script(_settings(tmp_path, **settings_changes), target, "note")


def test_a_note_with_control_characters_stays_one_comment_line(tmp_path):
    text = render_script(_settings(tmp_path), Target(), "job 1\ntouch INJECTED\x1b[2J")
    assert "# job 1?touch INJECTED?[2J\n" in text and "\ntouch" not in text


# -- accepted values: what sbatch reads, what bash runs ---------------------------------------------

@pytest.mark.parametrize("option, value", [
    ("--time", "30"), ("--time", "30:00"), ("--time", "1:00:00"), ("--time", "2-0"), ("--time", "2-12:00"),
    ("--time", "2-12:00:00"), ("--time", "UNLIMITED"), ("--gres", "gpu"), ("--gres", "gpu:1"),
    ("--gres", "gpu:a100:2"), ("--gres", "gpu:tesla_v100-sxm2:1"), ("--gres", "gpu:1,mps:50"),
    ("--gres", "shard:2"), ("--constraint", "a100"), ("--constraint", "a100|h100"),
    ("--constraint", "[rack1*2&rack2*4]"), ("--constraint", "intel&(knl|haswell)"),
    ("--nodelist", "gpu[01-04,07],cpu1"), ("--partition", "gpu, gpu-long"), ("--account", "proj_x.1"),
    ("--qos", "high-prio"), ("--sbatch-arg", "--mem=16G"), ("--sbatch-arg", "--exclusive"),
    ("--sbatch-arg", "--mail-user=a@b.example"), ("--sbatch-arg", "-N1"),
])
def test_what_slurm_accepts_is_accepted(option, value):
    assert check_option(option, value) == value.strip(" ")


STUB = """#!/bin/sh
exec {python} -c 'import json, os, sys; open(os.environ["ARGV_LOG"], "a").write(json.dumps(sys.argv[1:]) + "\\n")' "$@"
"""

ODD_BUT_ACCEPTED = [
    # (results folder name, --device, sbatch args, partition, constraint, gres)
    ("r;>INJECTED&(x)|y<z>", "cpu;touch INJECTED", "--comment=$(touch_INJECTED)", "gpu,gpu-long",
     "[rack1*2&rack2*2]", "gpu:a100:2,mps:50"),
    ("r*?~!{a,b}|>INJECTED", "$(touch INJECTED)", "--mail-user=a@b.example", "debug", "a100|h100", "gpu"),
    ("r&&>INJECTED", "`touch INJECTED`", "--mem=16G", "p_1.x", "intel&(knl|haswell)", "gpu:1"),
]


@pytest.mark.parametrize("folder, device, sbatch_arg, partition, constraint, gres", ODD_BUT_ACCEPTED)
def test_odd_but_accepted_values_reach_sbatch_whole_and_bash_as_data(tmp_path, capsys, monkeypatch, folder,
                                                                     device, sbatch_arg, partition, constraint, gres):
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    stub = tmp_path / "python-stub"
    stub.write_text(STUB.format(python=sys.executable))
    stub.chmod(0o755)
    results = tmp_path / folder
    assert main(["submit", "reduce", f"--device={device}", f"--sbatch-arg={sbatch_arg}", "--partition", partition,
                 "--jobs-per", "gres", "--constraint", constraint, "--gres", gres, "--time", "1-00:00:00",
                 "--account", "proj", "--qos", "normal", "--nodelist", "n1", "--exclusive",
                 "--python", str(stub), "--results-dir", str(results), "--dry-run"]) == 0
    capsys.readouterr()
    [script] = (results / "scripts").glob("*.sbatch")
    text = script.read_text()
    assert sbatch_directives(text) == [
        "--job-name=accelbench", f"--output={results}/logs/%j.out", f"--error={results}/logs/%j.err",
        f"--chdir={workdir}", "--nodes=1", "--ntasks=1", f"--partition={partition}", "--nodelist=n1",
        f"--gres={gres}", f"--constraint={constraint}", "--exclusive", "--time=1-00:00:00",
        "--account=proj", "--qos=normal", sbatch_arg]  # every directive present, none cut

    log = tmp_path / "argv.log"
    for sub in ("jobs", "logs"):
        (results / sub).mkdir(exist_ok=True)
    env = {**os.environ, "SLURM_JOB_ID": "77", "SLURMD_NODENAME": "n1", "TMPDIR": str(tmp_path),
           "ARGV_LOG": str(log)}
    done = subprocess.run(["bash", str(script)], cwd=workdir, env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    run_argv, export_argv = [json.loads(line) for line in log.read_text().splitlines()]
    db = f"{tmp_path}/accelbench-job-77.sqlite"
    assert run_argv == ["-m", "accelbench", "run", "reduce", "--device", device, "--db", db]
    assert export_argv == ["-m", "accelbench", "export", "latest", "--db", db, "--output", f"{results}/jobs/77.json"]
    status = json.loads((results / "jobs" / "77.status.json").read_text())
    assert status["job_id"] == "77" and status["run_exit_code"] == 0
    assert not [p for p in tmp_path.rglob(f"*{INJECTED}*") if p.name == INJECTED]  # no injected command ran
    assert not Path(INJECTED).exists()
