"""`accelbench setup` both ways: answering its prompts through a pipe, and --device --yes."""
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _setup(tmp_path, *args, answers=None):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("ACCELBENCH_DEVICE", None)
    return subprocess.run([sys.executable, "-m", "accelbench", "setup", *args], input=answers,
                          capture_output=True, text=True, env=env, timeout=120)


def _settings(tmp_path) -> Path:
    return tmp_path / "config" / "accelbench" / "settings.toml"


def test_interactive_lists_devices_reasks_on_bad_input_and_saves(tmp_path):
    done = _setup(tmp_path, answers="9\nnonsense\n1\n\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "   1 : cpu" in out  # numbered like plaidml-setup
    assert out.count("is not accepted") == 2 and out.count("Default device(s)?") == 3
    assert f"Saved to {_settings(tmp_path)}" in out.replace("\n", "")  # a long path folds at 80 columns
    assert all(len(line) <= 80 for line in out.splitlines())
    assert _settings(tmp_path).read_text().endswith('[run]\ndevices = ["cpu"]\n')


def test_end_of_input_cancels_without_change(tmp_path):
    _settings(tmp_path).parent.mkdir(parents=True)
    _settings(tmp_path).write_text('[run]\ndevices = ["cpu"]\n')
    done = _setup(tmp_path, answers="")
    assert done.returncode == 1 and "setup cancelled: settings unchanged" in done.stdout
    assert "[1]" in done.stdout  # the current choice is offered as the default answer
    assert _settings(tmp_path).read_text() == '[run]\ndevices = ["cpu"]\n'


# In-process from here (conftest points XDG_CONFIG_HOME at the test's own directory): no interpreter
# start and no repeated device inventory per test.

def _main(capsys, monkeypatch, *args, answers=None):
    from accelbench.cli.main import main

    monkeypatch.delenv("ACCELBENCH_DEVICE", raising=False)
    if answers is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(answers))
    code = main(["setup", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_declining_to_save_changes_nothing(tmp_path, capsys, monkeypatch):
    code, out, _ = _main(capsys, monkeypatch, answers="all\nn\n")
    assert code == 1 and "settings unchanged" in out and not _settings(tmp_path).exists()


@pytest.mark.parametrize("answer", ["1", "cpu"])
def test_numbers_and_ids_are_both_accepted(tmp_path, capsys, monkeypatch, answer):
    code, _, _ = _main(capsys, monkeypatch, "--yes", answers=f"{answer}\n")
    assert code == 0 and 'devices = ["cpu"]' in _settings(tmp_path).read_text()


def test_non_interactive_device_yes_and_show(tmp_path, capsys, monkeypatch):
    code, out, _ = _main(capsys, monkeypatch, "--device", "cpu", "--yes")
    assert code == 0 and f"Saved to {_settings(tmp_path)}" in out.replace("\n", "")
    assert 'devices = ["cpu"]' in _settings(tmp_path).read_text()
    code, out, _ = _main(capsys, monkeypatch, "--show")
    assert code == 0 and f"Default devices: cpu (from settings file {_settings(tmp_path)})" in out.replace("\n", "")
    code, out, _ = _main(capsys, monkeypatch, "--device", "all", "--yes")
    assert code == 0 and 'devices = "all"' in _settings(tmp_path).read_text()


def test_unknown_device_exits_2_naming_it_and_the_accepted_ids(tmp_path, capsys, monkeypatch):
    code, _, err = _main(capsys, monkeypatch, "--device", "cuda:7", "--yes")
    assert code == 2 and "'cuda:7'" in err and "accepted: cpu" in err
    assert not _settings(tmp_path).exists()


def test_malformed_settings_file_exits_2_with_file_and_line(tmp_path, capsys, monkeypatch):
    _settings(tmp_path).parent.mkdir(parents=True)
    _settings(tmp_path).write_text('[run]\ndevices = [cpu]\n')
    code, _, err = _main(capsys, monkeypatch, "--show")
    assert code == 2 and "Traceback" not in err
    assert f"{_settings(tmp_path)}:2: malformed settings file" in err
