"""`accelbench setup`: choose the default device(s) for `accelbench run` and save them.

Like plaidml-setup: the devices are listed with numbers, the user answers "1", "1,3", a device id
or "all", and confirms where it is saved. An end of input (Ctrl-D, a closed pipe) cancels and
changes nothing. `accelbench setup --device cuda:0 --yes` does the same without asking.
"""
from __future__ import annotations

import os
import sys
from typing import Literal

CANCELLED = 1


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("--device", metavar="IDS", type=validate.DEVICES,
                        help="comma-separated device ids to save as the default (as `accelbench info` lists "
                             "them), or 'all'")
    parser.add_argument("--yes", "-y", action="store_true", help="save without asking for confirmation")
    parser.add_argument("--show", action="store_true", help="print the current default and where it comes from")
    parser.add_argument("--settings", metavar="PATH", type=validate.output_file("the settings file"), help="settings file to use (default: the user config dir)")


def run(args) -> int:
    from pathlib import Path

    from accelbench import settings
    from accelbench.devices.inventory import collect_inventory

    path = Path(args.settings) if args.settings else settings.settings_path()
    devices = list(collect_inventory().devices)
    ids = [d.id for d in devices]
    if args.show:
        return _show(path, ids)
    if args.device is not None:
        chosen = _parse_answer(args.device, ids)
        if chosen is False:
            from accelbench.errors import UsageError
            refused = tuple(i.strip() for i in args.device.split(",") if i.strip() and i.strip() not in ids)
            raise UsageError(f"--device: unknown device {_unknown(args.device, ids)}; accepted: "
                             f"{', '.join(ids)}, or all", refused_devices=refused)
    else:
        _list_devices(devices, path)
        chosen = _ask_devices(ids, _current(path))
        if chosen is False:
            print("\nsetup cancelled: settings unchanged")
            return CANCELLED
    print("\nSelected device(s):")
    _say(", ".join(chosen) if chosen else "all available devices", "    ")
    if not args.yes and not _confirm(f"Save settings to {path}? (y,n)[y]:"):
        print("\nsetup cancelled: settings unchanged")
        return CANCELLED
    try:
        saved = settings.save_default_devices(chosen, path)
    except OSError as exc:  # a read-only or full location: one line naming it, not a traceback
        from accelbench.errors import UsageError
        raise UsageError(f"--settings {path}: cannot write {exc.filename or path}: {exc.strerror or exc}; "
                         f"accepted: a file where this user may write, on a filesystem with room") from None
    _say(f"Saved to {saved}")
    if os.environ.get(settings.DEVICE_ENV_VAR, "").strip():
        _say(f"Note: {settings.DEVICE_ENV_VAR}={os.environ[settings.DEVICE_ENV_VAR]} is set in this shell and "
             "takes precedence over the settings file")
    return 0


def _current(path) -> list[str] | None:
    from accelbench import settings

    return settings.configured_devices(settings.load_settings(path))


def _show(path, ids: list[str]) -> int:
    from accelbench import settings

    choice = settings.choose_devices(None, os.environ, ids, path=path)
    shown = ", ".join(choice.devices) if choice.devices else "all available devices"
    _say(f"Default devices: {shown} (from {choice.origin})")
    for warning in choice.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _say(text: str, first: str = "") -> None:
    """One statement at the output's width (80 when piped): a settings path is long, a name too."""
    from accelbench.terminal import plain_width, printable, wrapped

    print("\n".join(wrapped(printable(text), plain_width(), first)))


def _list_devices(devices, path) -> None:
    print("accelbench setup\n")
    print("Devices on this machine:")
    width = max((len(d.id) for d in devices), default=3)
    for number, device in enumerate(devices, 1):
        _say(f"{device.name} ({device.vendor} {device.kind})", f"   {number} : {device.id:<{width}}  ")
    current = _current(path)
    where = f"saved in {path}" if path.exists() else f"no settings file yet ({path})"
    print()
    _say(f"Current default: {', '.join(current) if current else 'all available devices'} ({where})")
    print("One run can still choose with --device, or a shell with ACCELBENCH_DEVICE.\n")


def _unknown(text: str, ids: list[str]) -> str:
    items = [i.strip() for i in text.split(",") if i.strip()]
    return ", ".join(repr(i) for i in items if i not in ids and not i.isdigit()) or repr(text)


def _parse_answer(text: str, ids: list[str]) -> list[str] | None | Literal[False]:
    """Device ids for "1", "1,3", "cuda:0", "all" (None); False when any part is not accepted."""
    items = [i.strip() for i in text.split(",") if i.strip()]
    if not items:
        return False
    if items == ["all"]:
        return None
    chosen: list[str] = []
    for item in items:
        if item.isdigit() and 1 <= int(item) <= len(ids):
            chosen.append(ids[int(item) - 1])
        elif item in ids:
            chosen.append(item)
        else:
            return False
    return list(dict.fromkeys(chosen))


def _ask_devices(ids: list[str], current: list[str] | None) -> list[str] | None | Literal[False]:
    """Ask until the answer is valid; an empty answer keeps the current choice; False on end of input."""
    numbers = f"1-{len(ids)}" if len(ids) > 1 else "1"
    default = ",".join(str(ids.index(d) + 1) for d in current if d in ids) if current else "all"
    while True:
        try:
            answer = _input(f"Default device(s)? ({numbers}, several as 1,2, or all)[{default}]:")
        except EOFError:
            return False
        chosen = _parse_answer(answer or default, ids)
        if chosen is not False:
            return chosen
        _say(f"'{answer}' is not accepted: give numbers from {numbers} (e.g. 1 or 1,2), device ids "
             f"({', '.join(ids)}), or all")


def _input(prompt: str) -> str:
    """input(), echoing the answer when it comes from a pipe, so the transcript reads as typed; a
    prompt wider than the output (a long settings path) wraps, its last line asked."""
    from accelbench.terminal import plain_width, wrapped

    *before, last = wrapped(prompt, plain_width())
    if before:
        print("\n".join(before))
    answer = input(last)
    if not sys.stdin.isatty():
        print(answer)
    return answer.strip()


def _confirm(question: str) -> bool:
    while True:
        try:
            answer = _input(question).lower()
        except EOFError:
            return False
        if answer in ("", "y", "yes"):
            return True
        if answer in ("n", "no"):
            return False
        print("please answer y or n")
