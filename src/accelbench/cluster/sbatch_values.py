"""What each sbatch option accepts, checked before a value is written into a batch script.

A value in a batch script has two readers. sbatch reads the `#SBATCH` lines up to the first line
that is not a comment, splits each at whitespace, reads quotes and backslashes, and cuts it at an
unquoted `#`; bash then runs the whole file. A control character (a newline above all) would end
the `#SBATCH` block, drop every later directive and become a command, so none is ever accepted;
each option's own character set keeps sbatch's quoting, comments and `%` placeholders out too.
Values that reach bash (run arguments, the interpreter, the results folder) are also quoted.
"""
from __future__ import annotations

import re
from typing import overload

from accelbench.errors import UsageError

# C0, DEL, C1, and the Unicode line and paragraph separators: none has a place in a script line
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")

_NAME = r"[A-Za-z0-9_.\-]+"
_TIME = re.compile(r"\d+|\d+:\d+|\d+:\d+:\d+|\d+-\d+|\d+-\d+:\d+|\d+-\d+:\d+:\d+|unlimited|infinite",
                   re.IGNORECASE)
_GRES_ITEM = r"[A-Za-z][A-Za-z0-9_/]*(:[A-Za-z0-9_.\-]+)?(:\d+[KkMmGgTt]?)?"
NODE_NAME = re.compile(_NAME)
# what sbatch would read other than literally inside an #SBATCH line, or bash inside a path
_UNSAFE_IN_DIRECTIVE = re.compile(r"[\s'\"\\#]")
_UNSAFE_IN_PATH = re.compile(r"[\s'\"\\#$`%]")

# option -> (the whole value must match, what is accepted)
RULES: dict[str, tuple[re.Pattern, str]] = {
    "--partition": (re.compile(rf"{_NAME}( *, *{_NAME})*"),
                    "partition names of letters, digits, _ . - (comma-separated), e.g. gpu,gpu-long"),
    "--account": (re.compile(_NAME), "an account name of letters, digits, _ . -"),
    "--qos": (re.compile(_NAME), "a QOS name of letters, digits, _ . -"),
    "--time": (_TIME, ("a Slurm time: MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED, "
                       "e.g. 00:30:00")),
    "--gres": (re.compile(rf"{_GRES_ITEM}(,{_GRES_ITEM})*"),
               "name[:type][:count] (comma-separated), e.g. gpu:1 or gpu:a100:2"),
    "--constraint": (re.compile(r"[A-Za-z0-9_.:=+\-&|,\[\]*()!]+"),
                     ("node features of letters, digits, _ . - : = + combined with & | , [ ] ( ) ! and *COUNT, "
                      "e.g. a100 or [rack1*2&rack2*2]")),
    "--nodelist": (re.compile(r"[A-Za-z0-9_.\-\[\], ]+"),
                   "host names of letters, digits, _ . - (comma-separated) or a hostlist such as gpu[01-04,07]"),
    "--sbatch-arg": (re.compile(r"--?[A-Za-z][A-Za-z0-9\-]*(=[^\s'\"\\#]+)?"),
                     "one sbatch option without spaces, quotes, backslashes or #, e.g. --sbatch-arg=--mem=16G"),
}


def shown(value: object) -> str:
    """A value as an error line shows it: quoted, its control characters escaped (one line)."""
    return repr(str(value))


@overload
def check_option(option: str, value: str) -> str: ...
@overload
def check_option(option: str, value: None) -> None: ...
@overload
def check_option(option: str, value: str | None) -> str | None: ...


def check_option(option: str, value: str | None) -> str | None:
    """The value without surrounding spaces when `option` accepts it, else UsageError naming both;
    None and '' pass ("not asked")."""
    if value in (None, ""):
        return value
    pattern, accepted = RULES[option]
    if CONTROL.search(value) or not pattern.fullmatch(value.strip(" ")):
        raise UsageError(f"{option} {shown(value)}: not accepted; accepted: {accepted}")
    return value.strip(" ")


def check_node_name(name: str, option: str = "--nodelist") -> str:
    if CONTROL.search(name) or not NODE_NAME.fullmatch(name):
        raise UsageError(f"{option}: node name {shown(name)} not accepted; accepted: host names of "
                         f"letters, digits, _ . -")
    return name


def check_path(what: str, path: object, advice: str = "") -> str:
    """A path written unquoted into #SBATCH lines: no control characters, whitespace, quotes,
    backslash, #, $, ` or % (sbatch's own placeholder in --output and --error)."""
    text = str(path)
    if CONTROL.search(text) or _UNSAFE_IN_PATH.search(text):
        raise UsageError(f"{what} {shown(text)}: not accepted in an #SBATCH line; accepted: a path without "
                         f"spaces, control characters, quotes, backslash, #, $, ` or %{advice}")
    return text


def check_no_control(what: str, value: str) -> str:
    """A value that reaches bash only quoted: any character but control characters."""
    if CONTROL.search(value):
        raise UsageError(f"{what} {shown(value)}: control characters (newline, tab, escape ...) are not "
                         f"accepted in a batch script")
    return value


def check_directive(option: str) -> str:
    """Last guard before a line `#SBATCH OPTION` is written: one word sbatch reads literally."""
    if CONTROL.search(option) or _UNSAFE_IN_DIRECTIVE.search(option) or not option.startswith("-"):
        raise UsageError(f"sbatch option {shown(option)} cannot be written as an #SBATCH line: "
                         f"it must be one word without control characters, spaces, quotes, backslash or #")
    return option
