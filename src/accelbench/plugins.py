"""One plugin mechanism for every kind of extension: entry-point groups.

Backends (`accelbench.backends`), workloads (`accelbench.workloads`), device probes
(`accelbench.probes`) and telemetry sources (`accelbench.telemetry`) are found the same way,
built-ins included: pyproject.toml declares them like a third party's, and is the only place they
are listed (builtin_targets reads it from the source tree, or from the installed package's metadata),
so a built-in is one file and one entry point. A target is "module:attribute"; nothing is imported
until asked for.
"""
from __future__ import annotations

import functools
import importlib
import importlib.metadata
import tomllib
from pathlib import Path
from typing import Any

BACKENDS_GROUP = "accelbench.backends"
WORKLOADS_GROUP = "accelbench.workloads"
PROBES_GROUP = "accelbench.probes"
TELEMETRY_GROUP = "accelbench.telemetry"
BUILTIN_PACKAGE = "accelbench."
DISTRIBUTION = "accelbench"
#: pyproject.toml of the source tree this package runs from (absent in an installed wheel)
SOURCE_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@functools.lru_cache(maxsize=None)
def builtin_targets(group: str) -> dict[str, str]:
    """name -> "module:attribute" of accelbench's own plugins of `group`, in pyproject.toml's order.

    Read from the source tree's pyproject.toml where accelbench runs from one (its newest word: the
    installed metadata of an editable install may predate an added entry point), else from the
    installed distribution's metadata: either is always there, and neither is written twice."""
    declared = _source_tree_entry_points()
    if declared is None:
        try:
            points = importlib.metadata.distribution(DISTRIBUTION).entry_points
        except importlib.metadata.PackageNotFoundError:
            return {}
        return {ep.name: ep.value for ep in points if ep.group == group and is_builtin(ep.value)}
    return {name: target for name, target in declared.get(group, {}).items() if is_builtin(target)}


def _source_tree_entry_points() -> dict[str, dict[str, str]] | None:
    """pyproject.toml's entry-point tables where accelbench runs from its source tree; else None."""
    try:
        project = tomllib.loads(SOURCE_PYPROJECT.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return project.get("entry-points", {}) if project.get("name") == DISTRIBUTION else None


def entry_point_targets(group: str) -> dict[str, str]:
    """name -> "module:attribute" from installed metadata; {} when there is none to read.

    Read once per process (reading scans every installed distribution: milliseconds a call, and
    the report asks per result); `entry_point_targets.cache_clear()` reads again."""
    return dict(_read_entry_points(group))


@functools.lru_cache(maxsize=None)
def _read_entry_points(group: str) -> tuple[tuple[str, str], ...]:
    try:
        found = importlib.metadata.entry_points(group=group)
    except Exception:  # noqa: BLE001 - unreadable metadata must not stop discovery
        return ()
    targets: dict[str, str] = {}
    for entry_point in found:
        # two distributions declaring one name (a stale egg-info, say): the first one wins
        targets.setdefault(entry_point.name, entry_point.value)
    return tuple(targets.items())


entry_point_targets.cache_clear = _read_entry_points.cache_clear  # type: ignore[attr-defined]


def plugin_targets(group: str, builtins: dict[str, str]) -> dict[str, str]:
    """name -> target for one kind: the built-ins in their own order, then others by name.

    A built-in's entry point may move it (a target inside accelbench); a third party cannot take a
    built-in's name, so an installed package never silently replaces what accelbench measures with."""
    declared = _read_entry_points(group)
    key = (group, tuple(builtins.items()), declared)  # a cleared entry-point cache reads afresh
    kept = _TARGETS.get(group)
    if kept is None or kept[0] != key:
        found = {name: target for name, target in declared if name not in builtins or is_builtin(target)}
        names = [*builtins, *sorted(n for n in found if n not in builtins)]
        kept = _TARGETS[group] = (key, {name: found.get(name) or builtins[name] for name in names})
    return dict(kept[1])


# plugin_targets' last answer per group: asked once per result while a report loads (42,000 times
# for 10,000 results, 4 s of rebuilding the same dict)
_TARGETS: dict[str, tuple[tuple, dict[str, str]]] = {}


@functools.lru_cache(maxsize=None)
def load_target(target: str) -> Any:
    """`import_target(target)`, once per process (a failure is not kept: the next call tries again)."""
    return import_target(target)


def import_target(target: str) -> Any:
    """The object a "module:attribute.path" target names (raises whatever importing raises)."""
    module_name, _, attribute = target.partition(":")
    value: Any = importlib.import_module(module_name)
    for part in filter(None, attribute.split(".")):
        value = getattr(value, part)
    return value


def is_builtin(target: Any) -> bool:
    """Whether a target is part of accelbench itself (only those may become measured ceilings)."""
    return isinstance(target, str) and target.startswith(BUILTIN_PACKAGE)


def contract_problem(kind: str, name: str, where: object, cls: object, base: type) -> str:
    """Why plugin class `cls` cannot serve as a `kind` ("backend", "workload"): not a subclass of
    `base`, or the abstract methods it leaves unimplemented; "" when it keeps the whole contract."""
    contract = f"{base.__module__}.{base.__qualname__}"
    if not isinstance(cls, type) or not issubclass(cls, base):
        return f"{kind} {name!r} ({where}) is not a subclass of {contract}"
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        return f"{kind} {name!r} ({where}) does not implement {', '.join(missing)} (required of every {kind}: {contract})"
    return ""
