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

        def on_broken_pipe(self) -> None:
            # rich exits 1 here; cli/main.py ends a closed pipe (`| head`) with 141, as Unix tools do
            self.quiet = True
            raise BrokenPipeError

    return LiteralConsole


# a log file or a pipe gets what an 80-column terminal would show: lines a reader, a diff or an
# email can take, the narrow table layouts rather than 180-column rows
PIPED_WIDTH = 80


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


def plain_width(stream=None) -> int:
    """The width for plain (non-rich) output: `output_width`, or a terminal's own size."""
    import shutil

    return output_width(stream) or shutil.get_terminal_size().columns


def wrapped(text: str, width: int, first: str = "", rest: str | None = None) -> list[str]:
    """`text` in lines of at most `width` columns after `first` (then `rest`, default as wide
    as `first`, in spaces), broken at spaces; only a word longer than a line is folded."""
    import textwrap

    rest = " " * len(first) if rest is None else rest
    return textwrap.wrap(text, width=max(width, len(first) + 20), initial_indent=first, subsequent_indent=rest,
                         break_on_hyphens=False, break_long_words=True) or [first.rstrip()]


def packed(parts: list[str], width: int, first: str = "", rest: str = "    ", sep: str = " · ") -> list[str]:
    """`parts` joined by `sep` after `first`, in lines of at most `width`: a part moves whole to the
    next line (a reading stays whole); a line still too wide is wrapped at spaces."""
    lines, line = [], first
    for index, part in enumerate(parts):
        joined = line + (sep if index else "") + part
        if index and len(joined) > width:
            lines.append(line)
            line = rest + part
        else:
            line = joined
    lines.append(line)
    return [piece for line in lines for piece in ([line] if len(line) <= width else wrapped(line, width, "", rest))]
