"""Where the results database lives: an explicit path, else $ACCELBENCH_DB, else the user data dir.

Standard library only (no platformdirs): the rules are short and stable enough to keep here.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from accelbench.userdirs import user_data_dir

ENV_VAR = "ACCELBENCH_DB"
APP_DIR_NAME = "accelbench"
DB_FILE_NAME = "results.sqlite"


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
