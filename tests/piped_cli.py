"""The CLI in-process with stdout to a pipe and no $COLUMNS, as a script or `| less` runs it."""
from __future__ import annotations

import contextlib
import io

import pytest

from accelbench.cli.main import main


def piped(argv: list[str]) -> tuple[int, str]:
    """`accelbench argv…` with stdout to a pipe and no $COLUMNS: (exit status, stdout)."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.delenv("COLUMNS", raising=False)
        code = main(argv)
    return code, out.getvalue()
