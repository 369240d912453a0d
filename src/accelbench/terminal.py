"""Data shown on a terminal as itself: never read as rich markup, never sent as raw control characters.

A value that did not come from this program's own text (a hostname, a tag, a device or probe
name, an import file, an error message, a path) goes through `literal` before it is put into a
markup string, or `printable` before a plain print. `console()` is the Console every command
prints through: it writes control characters escaped even where a call site forgot, so stored
data can neither crash a listing (`[/]`), nor become a link or style, nor move the cursor.
"""
from __future__ import annotations

import functools
import os
import re

# C0, DEL, C1, line/paragraph separators and the bidirectional overrides that reorder what is shown
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def printable(value: object, keep_newlines: bool = False) -> str:
    """str(value) with every control character written as an escape ('\\x1b[31m' shows as text)."""
    text = str(value)
    if keep_newlines:
        return "\n".join(_CONTROL.sub(_escaped, line) for line in text.split("\n"))
    return _CONTROL.sub(_escaped, text)


def literal(value: object) -> str:
    """`value` for a rich markup string: shown exactly, its brackets and control characters included."""
    from rich.markup import escape

    return escape(printable(value))


@functools.cache
def _console_class():
    from rich.console import Console

    class LiteralConsole(Console):
        """Every string it renders (printed text, table cells, titles, headers) has its control
        characters escaped before markup is read; newlines stay, as layout."""

        def render_str(self, text: str, **options):
            return super().render_str(printable(text, keep_newlines=True), **options)

    return LiteralConsole


# a log file or a pipe gets wide lines rather than tables folded into rich's default 80 columns
PIPED_WIDTH = 180


def output_width(stream=None) -> int | None:
    """The width to print at: $COLUMNS when set (`COLUMNS=80 accelbench run` fits 80 columns), else
    the terminal's own (None: rich asks it), else PIPED_WIDTH for a file or a pipe."""
    import sys

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = stream or sys.stdout
    return None if getattr(stream, "isatty", lambda: False)() else PIPED_WIDTH


def console(**options):
    """A rich Console for a command's output (no highlighting: data is not decorated), as wide as
    `output_width` says unless a width is given."""
    if "width" not in options:
        options["width"] = output_width(options.get("file"))
    return _console_class()(**{"highlight": False, **options})


def unwrapped_lines() -> bool:
    """True when output goes to a file or pipe and no $COLUMNS was set: a notice may stay on one line
    there, for grep, rather than wrap at the table width."""
    return output_width() == PIPED_WIDTH and not os.environ.get("COLUMNS", "").isdigit()


def hanging(mark: str, text: str, indent: int = 2):
    """`text` (markup) after `mark`, indented, its wrapped lines aligned under its first word."""
    from rich.padding import Padding
    from rich.table import Table

    grid = Table.grid(padding=(0, 1))
    if mark:
        grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")  # folds only a word longer than the whole line
    grid.add_row(*([mark] if mark else []), text)
    return Padding(grid, (0, 0, 0, indent), expand=False)
