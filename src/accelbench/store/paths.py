"""Where the results database lives: an explicit path, else $ACCELBENCH_DB, else the user data dir.

Standard library only (no platformdirs): the rules are short and stable enough to keep here.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

ENV_VAR = "ACCELBENCH_DB"
APP_DIR_NAME = "accelbench"
DB_FILE_NAME = "results.sqlite"


def _home(environ: Mapping[str, str]) -> Path:
    # Read HOME/USERPROFILE from the given mapping so tests can point it elsewhere.
    for name in ("HOME", "USERPROFILE"):
        if environ.get(name):
            return Path(environ[name])
    return Path.home()


def user_data_dir(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """The per-user data directory of this platform (not yet including the app's folder)."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if platform.startswith("win"):
        local = environ.get("LOCALAPPDATA")
        return Path(local) if local else _home(environ) / "AppData" / "Local"
    if platform == "darwin":
        return _home(environ) / "Library" / "Application Support"
    xdg = environ.get("XDG_DATA_HOME", "")
    # The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
    if xdg and os.path.isabs(xdg):
        return Path(xdg)
    return _home(environ) / ".local" / "share"


def default_db_path(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """The database used when neither an explicit path nor $ACCELBENCH_DB is given."""
    return user_data_dir(environ, platform) / APP_DIR_NAME / DB_FILE_NAME


def resolve_db_path(explicit: str | os.PathLike[str] | None = None,
                    environ: Mapping[str, str] | None = None,
                    platform: str | None = None) -> Path:
    """The database to open: explicit path > $ACCELBENCH_DB > default (an empty value counts as unset)."""
    environ = os.environ if environ is None else environ
    if explicit is not None and str(explicit) != "":
        return Path(explicit).expanduser()
    from_env = environ.get(ENV_VAR, "")
    if from_env:
        return Path(from_env).expanduser()
    return default_db_path(environ, platform)
