"""The settings file and the device precedence: --device > ACCELBENCH_DEVICE > settings file > all."""
from pathlib import Path

import pytest

from accelbench import settings
from accelbench.errors import UsageError

AVAILABLE = ["cpu", "cuda:0", "cuda:1", "opencl:0:0"]


@pytest.fixture
def path(tmp_path):
    return tmp_path / "settings.toml"


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_default_is_all_available_devices(path):
    choice = settings.choose_devices(None, {}, AVAILABLE, path=path)
    assert (choice.devices, choice.origin, choice.warnings) == (None, "default", [])


def test_settings_file_is_used_when_nothing_else_is_set(path):
    write(path, '[run]\ndevices = ["cuda:1"]\n')
    assert settings.resolve_devices(None, {}, AVAILABLE, path=path) == (["cuda:1"], [])
    assert settings.choose_devices(None, {}, AVAILABLE, path=path).origin == f"settings file {path}"


def test_environment_beats_settings_file(path):
    write(path, '[run]\ndevices = ["cuda:1"]\n')
    choice = settings.choose_devices(None, {"ACCELBENCH_DEVICE": "cpu, cuda:0"}, AVAILABLE, path=path)
    assert (choice.devices, choice.origin) == (["cpu", "cuda:0"], "ACCELBENCH_DEVICE")


def test_command_line_beats_environment_and_file(path):
    write(path, '[run]\ndevices = ["cuda:1"]\n')
    env = {"ACCELBENCH_DEVICE": "cpu"}
    assert settings.resolve_devices("opencl:0:0", env, AVAILABLE, path=path) == (["opencl:0:0"], [])
    assert settings.resolve_devices("all", env, AVAILABLE, path=path) == (None, [])  # explicitly all
    assert settings.choose_devices(["cuda:0"], env, AVAILABLE, path=path).origin == "--device"


def test_empty_values_count_as_unset(path):
    write(path, '[run]\ndevices = ["cuda:1"]\n')
    assert settings.resolve_devices("", {"ACCELBENCH_DEVICE": " "}, AVAILABLE, path=path) == (["cuda:1"], [])


def test_settings_file_path_follows_the_environment_given(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOME": str(tmp_path)}
    write_to = tmp_path / "cfg" / "accelbench" / "settings.toml"
    write_to.parent.mkdir(parents=True)
    write(write_to, '[run]\ndevices = ["cpu"]\n')
    assert settings.resolve_devices(None, env, AVAILABLE) == (["cpu"], [])


def test_a_device_gone_from_the_machine_warns_and_falls_back(path):
    write(path, '[run]\ndevices = ["cuda:3", "cpu"]\n')
    devices, warnings = settings.resolve_devices(None, {}, AVAILABLE, path=path)
    assert devices == ["cpu"]
    assert len(warnings) == 1 and "cuda:3" in warnings[0] and "accelbench setup" in warnings[0]
    write(path, '[run]\ndevices = ["cuda:3"]\n')
    devices, warnings = settings.resolve_devices(None, {}, AVAILABLE, path=path)
    assert devices is None and "using all available devices" in warnings[0]


def test_unknown_devices_named_explicitly_are_usage_errors(path):
    with pytest.raises(UsageError, match=r"ACCELBENCH_DEVICE: unknown device 'cuda:9'; accepted: cpu, cuda:0"):
        settings.resolve_devices(None, {"ACCELBENCH_DEVICE": "cuda:9"}, AVAILABLE, path=path)
    with pytest.raises(UsageError, match=r"--device: unknown device 'tpu:0'"):
        settings.resolve_devices("tpu:0", {}, AVAILABLE, path=path)
    assert settings.resolve_devices("tpu:0", {}, None, path=path) == (["tpu:0"], [])  # nothing to check against


def test_malformed_file_names_the_file_and_line(path):
    write(path, '# mine\n[run]\ndevices = ["cpu",\nx = 1\n')
    with pytest.raises(UsageError) as caught:
        settings.resolve_devices(None, {}, AVAILABLE, path=path)
    assert str(caught.value).startswith(f"{path}:4: malformed settings file")


def test_wrong_type_names_the_line(path):
    write(path, '[run]\n\ndevices = 3\n')
    with pytest.raises(UsageError, match=rf"^{path}:3: \[run\] devices must be a list"):
        settings.load_settings(path)
    write(path, 'run = 1\n')
    with pytest.raises(UsageError, match=rf"^{path}:1: 'run' must be a table"):
        settings.load_settings(path)


def test_writer_round_trips_through_tomllib(path):
    tomllib = pytest.importorskip("tomllib")
    data = {"top": 3, "run": {"devices": ["cuda:0", 'odd "id"\\x\n'], "ratio": 0.5, "on": True},
            "a": {"b": {"c": -1}}, "weird key": {"k": "v"}}
    text = settings.dumps(data)
    assert tomllib.loads(text) == data
    assert text.index("top = 3") < text.index("[run]")  # top-level keys before any table


def test_saving_devices_keeps_other_settings_and_all_is_written_as_all(path):
    write(path, '[report]\ntheme = "dark"\n\n[run]\ndevices = ["cpu"]\n')
    settings.save_default_devices(["cuda:0", "cuda:1"], path)
    data = settings.load_settings(path)
    assert data == {"report": {"theme": "dark"}, "run": {"devices": ["cuda:0", "cuda:1"]}}
    settings.save_default_devices(None, path)
    assert settings.load_settings(path)["run"]["devices"] == "all"
    assert settings.resolve_devices(None, {}, AVAILABLE, path=path) == (None, [])
    assert not path.with_name("settings.toml.tmp").exists()


@pytest.mark.parametrize("platform, env, expected", [
    ("linux", {"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, "/x/accelbench/settings.toml"),
    ("linux", {"HOME": "/h", "XDG_CONFIG_HOME": "relative"}, "/h/.config/accelbench/settings.toml"),
    ("linux", {"HOME": "/h"}, "/h/.config/accelbench/settings.toml"),
    ("darwin", {"HOME": "/h"}, "/h/Library/Application Support/accelbench/settings.toml"),
    ("win32", {"APPDATA": "/a", "USERPROFILE": "/u"}, "/a/accelbench/settings.toml"),
])
def test_settings_path_per_platform(platform, env, expected):
    assert settings.settings_path(env, platform) == Path(expected)
