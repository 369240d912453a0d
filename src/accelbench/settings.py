"""The user's settings file, and which devices `accelbench run` uses when none are named.

The file is TOML in the user config directory: $XDG_CONFIG_HOME/accelbench/settings.toml (else
~/.config/accelbench) on Linux, ~/Library/Application Support/accelbench on macOS,
%APPDATA%\\accelbench on Windows. `accelbench setup` writes it:

    [run]
    devices = ["cuda:0"]      # or "all"

Precedence, first one set wins: the command line's --device, the ACCELBENCH_DEVICE environment
variable, the settings file, all available devices. A settings file naming a device this machine
no longer has warns and is ignored for that device; a malformed one is a UsageError naming the file
and the line. Read with tomllib (Python 3.11+; `tomli` on 3.10); written by the small writer below.
"""
from __future__ import annotations

import math
import sys
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.errors import UsageError
from accelbench.userdirs import user_config_dir

APP_DIR_NAME = "accelbench"
SETTINGS_FILE_NAME = "settings.toml"
DEVICE_ENV_VAR = "ACCELBENCH_DEVICE"
ALL = "all"


def settings_path(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    return user_config_dir(environ, platform) / APP_DIR_NAME / SETTINGS_FILE_NAME


def _tomllib() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
        return tomllib
    try:  # Python 3.10
        import tomli
    except ModuleNotFoundError:
        raise UsageError("reading the settings file on Python 3.10 needs tomli: pip install tomli") from None
    return tomli


def load_settings(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The settings as a dict; {} when the file does not exist. UsageError (file:line) if malformed."""
    from accelbench.safe_write import read_regular

    path = Path(path) if path is not None else settings_path()
    try:
        text = read_regular(path).decode("utf-8")  # a FIFO planted there must not hang `run`
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the settings file: {getattr(exc, 'strerror', None) or exc}") from exc
    toml = _tomllib()
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or _line_from_message(str(exc))
        raise UsageError(f"{path}:{line or '?'}: malformed settings file: {exc}; fix it, or run "
                         "`accelbench setup` to write a new one") from exc
    _validate(data, path, text)
    return data


def _line_from_message(message: str) -> int | None:
    match = re.search(r"at line (\d+)", message)
    return int(match.group(1)) if match else None


def _key_line(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return number
    return None


def _validate(data: dict[str, Any], path: Path, text: str) -> None:
    run = data.get("run", {})
    if not isinstance(run, dict):
        raise UsageError(f"{path}:{_key_line(text, 'run') or '?'}: 'run' must be a table ([run])")
    if "devices" not in run:
        return
    devices = run["devices"]
    valid = devices == ALL or (isinstance(devices, list) and devices
                               and all(isinstance(d, str) and d.strip() for d in devices))
    if not valid:
        raise UsageError(f"{path}:{_key_line(text, 'devices') or '?'}: [run] devices must be a list of device "
                         f"ids such as [\"cuda:0\"], or \"all\"; got {devices!r}")


def configured_devices(data: Mapping[str, Any]) -> list[str] | None:
    """The devices the settings name; None for "all" or when they name none."""
    devices = data.get("run", {}).get("devices")
    return None if devices in (None, ALL) else [d.strip() for d in devices]


# -- writing ---------------------------------------------------------------------------------------

def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return ("nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")) if not math.isfinite(value) \
            else repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        escaped = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", escaped)
        return f'"{escaped}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_value(key)


def dumps(data: Mapping[str, Any]) -> str:
    """TOML text for a dict of scalars, lists of scalars and (nested) tables."""
    lines: list[str] = []
    _write_table(data, [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _write_table(table: Mapping[str, Any], prefix: list[str], lines: list[str]) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
    tables = {k: v for k, v in table.items() if isinstance(v, Mapping)}
    if prefix and (scalars or not tables):
        lines += ["", "[" + ".".join(_toml_key(p) for p in prefix) + "]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in scalars.items()]
    for key, sub in tables.items():
        _write_table(sub, prefix + [key], lines)


def save_settings(data: Mapping[str, Any], path: str | os.PathLike[str] | None = None) -> Path:
    """Write the settings atomically (a crash leaves the old file or the new one, never half)."""
    path = Path(path) if path is not None else settings_path()
    from accelbench.safe_write import write_text

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the folder for the settings file {path}: {exc.strerror or exc}") from None
    text = "# accelbench settings: written by `accelbench setup`; edit freely (TOML)\n" + dumps(data)
    return write_text(path, text)


def save_default_devices(devices: Iterable[str] | None, path: str | os.PathLike[str] | None = None) -> Path:
    """Set [run] devices (None: "all"), keeping every other setting."""
    path = Path(path) if path is not None else settings_path()
    data = load_settings(path)
    run = dict(data.get("run", {}))
    run["devices"] = list(devices) if devices is not None else ALL
    data["run"] = run
    return save_settings(data, path)


# -- precedence ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeviceChoice:
    devices: list[str] | None    # None: every available device
    origin: str                  # "--device", "ACCELBENCH_DEVICE", "settings file <path>", "default"
    warnings: list[str] = field(default_factory=list)


def parse_device_list(value: str | Iterable[str] | None) -> list[str] | None:
    """"cuda:0, cpu" -> ["cuda:0", "cpu"]; "all" -> None; duplicates dropped, order kept."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    devices = list(dict.fromkeys(i.strip() for i in items if i and i.strip()))
    return None if devices == [ALL] or not devices else devices


def _given(value: str | Iterable[str] | None) -> bool:
    """An empty --device or ACCELBENCH_DEVICE counts as not set."""
    if value is None:
        return False
    items = value.split(",") if isinstance(value, str) else list(value)
    return any(i and i.strip() for i in items)


def _check_known(devices: list[str] | None, available: list[str] | None, origin: str) -> None:
    if devices is None or available is None:
        return
    unknown = [d for d in devices if d not in available]
    if unknown:
        raise UsageError(f"{origin}: unknown device {', '.join(map(repr, unknown))}; accepted: "
                         f"{', '.join(available) or 'none found'} (as `accelbench info` lists them), or all",
                         refused_devices=tuple(unknown))


def choose_devices(cli_value: str | Iterable[str] | None, environ: Mapping[str, str] | None = None,
                   available_ids: Iterable[str] | None = None, *,
                   path: str | os.PathLike[str] | None = None) -> DeviceChoice:
    """The devices to use and which level of the precedence chose them."""
    environ = os.environ if environ is None else environ
    available = list(available_ids) if available_ids is not None else None
    if _given(cli_value):
        devices = parse_device_list(cli_value)
        _check_known(devices, available, "--device")
        return DeviceChoice(devices, "--device")
    if _given(environ.get(DEVICE_ENV_VAR)):
        devices = parse_device_list(environ[DEVICE_ENV_VAR])
        _check_known(devices, available, DEVICE_ENV_VAR)
        return DeviceChoice(devices, DEVICE_ENV_VAR)
    file = Path(path) if path is not None else settings_path(environ)
    configured = configured_devices(load_settings(file))
    if configured is None:
        return DeviceChoice(None, f"settings file {file}" if file.exists() else "default")
    if available is None:
        return DeviceChoice(configured, f"settings file {file}")
    stale = [d for d in configured if d not in available]
    kept = [d for d in configured if d in available] or None
    warnings = []
    if stale:
        instead = ", ".join(kept) if kept else "all available devices"
        warnings.append(f"{file} names {', '.join(stale)}, which this machine does not have (available: "
                        f"{', '.join(available) or 'none'}); using {instead}; run `accelbench setup` to choose again")
    return DeviceChoice(kept, f"settings file {file}", warnings)


def resolve_devices(cli_value: str | Iterable[str] | None, environ: Mapping[str, str] | None = None,
                    available_ids: Iterable[str] | None = None, *,
                    path: str | os.PathLike[str] | None = None) -> tuple[list[str] | None, list[str]]:
    """(devices, warnings): --device > ACCELBENCH_DEVICE > settings file > None (all available)."""
    choice = choose_devices(cli_value, environ, available_ids, path=path)
    return choice.devices, choice.warnings
