"""What every failing command must end with: one line, no traceback (docs/reliability.md)."""
from __future__ import annotations

import subprocess


def one_error_line(done: subprocess.CompletedProcess, command: str) -> str:
    """The last line of stderr, checked to be `accelbench COMMAND: error: …` with no traceback before it."""
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"accelbench {command}: error: "), done.stderr
    return last
