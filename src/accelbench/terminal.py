"""Data shown on a terminal as itself: never read as rich markup, never sent as raw control characters.

A value that did not come from this program's own text (a hostname, a tag, a device or probe
name, an import file, an error message, a path) goes through `literal` before it is put into a
markup string, or `printable` before a plain print. `console()` is the Console every command
prints through: it writes control characters escaped even where a call site forgot, so stored
data can neither crash a listing (`[/]`), nor become a link or style, nor move the cursor.
"""
from __future__ import annotations

import functools
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


def console(**options):
    """A rich Console for a command's output (no highlighting: data is not decorated)."""
    return _console_class()(**{"highlight": False, **options})
