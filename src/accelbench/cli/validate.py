"""Checks for command-line values, as argparse `type=` functions shared by every command.

A value the parser accepts must be one the code can use: each check refuses the rest at the
boundary, so the command exits 2 with one line naming the option, the value and what is accepted
(argparse adds "argument --OPTION:"), before anything is loaded, measured or written.
The checks return the value the command uses; list options keep their text, as the run records it.
"""
from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Iterable
from typing import TypeVar

MAX_SEED = 2**32 - 1  # numpy, torch, jax and cuRAND all take a 32-bit seed
SECONDS_PER_DAY = 86_400.0
SECONDS_PER_YEAR = 365 * SECONDS_PER_DAY
_WHOLE = re.compile(r"[+-]?[0-9]{1,30}")


def _refused(text: str, accepted: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"{text!r} is not accepted; accepted: {accepted}")


_Value = TypeVar("_Value")


def _named(check: Callable[[str], _Value], name: str) -> Callable[[str], _Value]:
    check.__name__ = name  # argparse names the type in some of its own messages
    return check


def whole_number(minimum: int, maximum: int) -> Callable[[str], int]:
    """A whole number in [minimum, maximum], written in decimal digits."""
    accepted = f"a whole number from {minimum} to {maximum}"

    def check(text: str) -> int:
        if not _WHOLE.fullmatch(text.strip()):
            raise _refused(text, accepted)
        value = int(text)
        if not minimum <= value <= maximum:
            raise _refused(text, accepted)
        return value
    return _named(check, "whole number")


def seconds(maximum_s: float) -> Callable[[str], float]:
    """A finite number of seconds in (0, maximum_s]: no 0, negative, inf or nan."""
    accepted = f"a number of seconds above 0 and at most {maximum_s:g}, e.g. 0.5 or 10"

    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise _refused(text, accepted) from None
        if not (math.isfinite(value) and 0 < value <= maximum_s):
            raise _refused(text, accepted)
        return value
    return _named(check, "seconds")


def percent(*, above: float, up_to: float, closed_below: bool = False) -> Callable[[str], float]:
    """A finite percentage in (above, up_to), or [above, up_to) with closed_below."""
    low = "at least" if closed_below else "above"
    accepted = f"a percentage {low} {above:g} and below {up_to:g}, e.g. 5"

    def check(text: str) -> float:
        try:
            value = float(text.strip().removesuffix("%"))
        except ValueError:
            raise _refused(text, accepted) from None
        fits_below = value >= above if closed_below else value > above
        if not (math.isfinite(value) and fits_below and value < up_to):
            raise _refused(text, accepted)
        return value
    return _named(check, "percentage")


def nonempty(what: str) -> Callable[[str], str]:
    """Free text checked later (a run reference, a submission id), but never empty: an empty
    value would otherwise read as 'not given' and quietly mean the default."""
    def check(text: str) -> str:
        if not text.strip() or "\x00" in text:
            raise _refused(text, what)
        return text
    return _named(check, "text")


def path(what: str) -> Callable[[str], str]:
    """A non-empty path the operating system can take (no NUL byte)."""
    accepted = f"a non-empty path to {what}"

    def check(text: str) -> str:
        if not text.strip() or "\x00" in text:
            raise _refused(text, accepted)
        return text
    return _named(check, "path")


def output_file(what: str) -> Callable[[str], str]:
    """A file to write whole: a new path, or an existing regular file (replaced). A folder, a
    device (/dev/full), a FIFO or a symbolic link would be replaced by the rename, so is refused."""
    as_path = path(what)

    def check(text: str) -> str:
        import os
        import stat

        as_path(text)
        try:
            mode = os.lstat(os.path.expanduser(text)).st_mode
        except FileNotFoundError:
            return text
        except OSError as exc:
            raise _refused(text, f"a new or regular file for {what} ({exc.strerror})") from None
        if not stat.S_ISREG(mode):
            kind = ("a folder" if stat.S_ISDIR(mode) else "a symbolic link" if stat.S_ISLNK(mode)
                    else "not a regular file")
            raise argparse.ArgumentTypeError(f"{text!r} is not accepted: it is {kind}; accepted: a new "
                                             f"file or an existing regular file for {what} (replaced)")
        return text
    return _named(check, "file")


def folder(what: str) -> Callable[[str], str]:
    """A path for a folder to write into: new or an existing folder, never an existing file."""
    as_path = path(what)

    def check(text: str) -> str:
        import os

        as_path(text)
        expanded = os.path.expanduser(text)
        blocker = next((p for p in _self_and_parents(expanded) if os.path.lexists(p)
                        and not os.path.isdir(p)), None)
        if blocker is not None:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not accepted: {blocker} is a file; accepted: a new or existing folder "
                f"for {what} (its files of the same names are replaced)")
        return text
    return _named(check, "folder")


def _self_and_parents(text: str) -> list[str]:
    import os

    chain, current = [], os.path.abspath(text)
    while True:
        chain.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            return chain
        current = parent


def choice_list(option_values: Callable[[], Iterable[str]], *, extra: tuple[str, ...] = ()) -> Callable[[str], str]:
    """Comma-separated names, each one of option_values() (looked up only when the option is
    given) or of `extra` alone; an empty list is refused rather than read as 'the default'."""
    def check(text: str) -> str:
        accepted = list(option_values())
        shown = ", ".join([*accepted, *extra])
        items = [item.strip() for item in text.split(",")]
        if not any(items):
            raise _refused(text, f"one or more of {shown}, separated by commas")
        if len(items) == 1 and items[0] in extra:
            return text
        unknown = [item for item in items if item not in accepted]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"{', '.join(map(repr, unknown))} not accepted; accepted: {shown}, separated by commas")
        return text
    return _named(check, "list")


def id_list(what: str) -> Callable[[str], str]:
    """Comma-separated ids checked later against what is found (devices); refused when empty."""
    def check(text: str) -> str:
        items = [item.strip() for item in text.split(",")]
        if not all(items) or "\x00" in text:
            raise _refused(text, f"comma-separated {what} with no empty item, e.g. cpu,cuda:0, or all")
        return text
    return _named(check, "list")


def sizes(text: str) -> str:
    """--sizes: checked by the parser the run uses (runner/plan.py), kept as the text given."""
    from accelbench.errors import UsageError
    from accelbench.runner.plan import parse_sizes

    try:
        parse_sizes(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--sizes: ")) from None
    return text


SEED = whole_number(0, MAX_SEED)
MAX_COUNT = 1_000_000  # --limit, --repeat, --max-jobs, --cpus-per-task: far above any real use
DB = path("a results database file")


def _dtypes() -> tuple[str, ...]:
    from accelbench.backends.base import DTYPES as names

    return names


DTYPES = choice_list(_dtypes)
DEVICES = id_list("device ids")
WAIT_TIMEOUT = seconds(SECONDS_PER_YEAR)
SPEC_TIMEOUT = seconds(SECONDS_PER_DAY)  # `run --timeout`: one spec's time limit
POLL = seconds(SECONDS_PER_DAY)


def _backend_names() -> list[str]:
    from accelbench.backends.registry import backend_names

    return list(backend_names())


BACKENDS = choice_list(_backend_names)


def workloads(text: str) -> list[str]:
    """One or more workload names separated by commas (also one per argument: see Flatten)."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise _refused(text, "workload names separated by commas or spaces, e.g. matmul,stream")
    return [workload(item) for item in items]


class Flatten(argparse.Action):
    """nargs with a list-valued type (`workloads`): one flat list of every item given."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, [item for value in values or () for item in value])


def workload(text: str) -> str:
    """A workload name as `accelbench list` shows it."""
    from accelbench.workloads.registry import workload_names

    if text not in workload_names():
        raise argparse.ArgumentTypeError(f"unknown workload {text!r}; accepted: {', '.join(workload_names())} "
                                         f"(`accelbench list` describes them)")
    return text
