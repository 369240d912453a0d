"""Per-user folders of this platform (standard library only: the rules are short and stable).

Each function takes the environment and platform as arguments so tests can point them elsewhere;
the app's own folder name is added by the caller.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path


def home(environ: Mapping[str, str]) -> Path:
    for name in ("HOME", "USERPROFILE"):
        if environ.get(name):
            return Path(environ[name])
    return Path.home()


def _xdg(environ: Mapping[str, str], variable: str, fallback: Path) -> Path:
    value = environ.get(variable, "")
    # the XDG spec says a relative value is invalid and must be ignored
    return Path(value) if value and os.path.isabs(value) else fallback


def user_data_dir(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """Where per-user data lives (results databases): XDG_DATA_HOME, ~/Library/Application Support, %LOCALAPPDATA%."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if platform.startswith("win"):
        local = environ.get("LOCALAPPDATA")
        return Path(local) if local else home(environ) / "AppData" / "Local"
    if platform == "darwin":
        return home(environ) / "Library" / "Application Support"
    return _xdg(environ, "XDG_DATA_HOME", home(environ) / ".local" / "share")


def user_config_dir(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """Where per-user settings live: XDG_CONFIG_HOME, ~/Library/Application Support, %APPDATA%."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if platform.startswith("win"):
        appdata = environ.get("APPDATA")
        return Path(appdata) if appdata else home(environ) / "AppData" / "Roaming"
    if platform == "darwin":
        return home(environ) / "Library" / "Application Support"
    return _xdg(environ, "XDG_CONFIG_HOME", home(environ) / ".config")
