"""Find backends by name, load one only when asked, and say which are usable and why not.

Backends are registered through the entry-point group "accelbench.backends" (the built-ins too,
in pyproject.toml, and only there: plugins.builtin_targets), so a third-party package adds one by
declaring an entry point. Importing this module imports no framework: a backend's module is imported
by `get_backend`, and its framework only when the backend itself needs it.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accelbench.backends.base import Availability, Backend
from accelbench.errors import UsageError
from accelbench.plugins import BACKENDS_GROUP, contract_problem, import_target, plugin_targets, builtin_targets

ENTRY_POINT_GROUP = BACKENDS_GROUP

# name -> "module:attribute" of accelbench's own, as pyproject.toml declares them (listed there only)
BUILTIN_BACKENDS: dict[str, str] = builtin_targets(ENTRY_POINT_GROUP)

_instances: dict[str, Backend] = {}
_registered: dict[str, type[Backend] | str] = {}  # in-process additions: name -> class or "module:Class"


class BackendLoadError(ImportError):
    """A backend's own module or class could not be loaded (not: its framework is missing)."""


def _targets() -> dict[str, type[Backend] | str]:
    """Every known backend: built-ins, then entry points (plugins.plugin_targets: none may take a
    built-in's name), then those registered in this process (which may)."""
    targets: dict[str, type[Backend] | str] = dict(plugin_targets(ENTRY_POINT_GROUP, BUILTIN_BACKENDS))
    targets.update(_registered)
    return targets


def backend_names() -> list[str]:
    """Built-ins first, in their usual order, then any others by name."""
    names = list(_targets())
    builtin = [n for n in BUILTIN_BACKENDS if n in names]
    return builtin + sorted(n for n in names if n not in BUILTIN_BACKENDS)


def default_backend_names() -> list[str]:
    """The backends a run uses when it names none: all but those used only where named (a class
    with `selected_only`, such as the Keras ones); a module that does not load stays in, to be
    reported as broken."""
    names = []
    for name in backend_names():
        try:
            selected_only = bool(getattr(backend_class(name), "selected_only", False))
        except BackendLoadError:
            selected_only = False
        if not selected_only:
            names.append(name)
    return names


def register_backend(name: str, target: type[Backend] | str) -> None:
    """Add (or replace) a backend in this process: a Backend subclass or "module:Class" (checked
    when first loaded). A class that lacks part of the contract is refused here: BackendLoadError."""
    if not isinstance(target, str):
        _complete(name, target, target)
    _registered[name] = target
    _instances.pop(name, None)


def _unknown(name: str) -> UsageError:
    return UsageError(f"unknown backend {name!r}; accepted: {', '.join(backend_names())}")


def _import_target(name: str, target: str) -> type[Backend]:
    try:
        value: Any = import_target(target)
    except Exception as error:  # noqa: BLE001 - any failure here is the plugin's, reported as such
        raise BackendLoadError(
            f"backend {name!r} could not be loaded from {target!r}: {type(error).__name__}: {error}"
        ) from error
    return _complete(name, target, value)


def _complete(name: str, target: object, cls: object) -> type[Backend]:
    """`cls`, once it is a Backend keeping the whole contract; else BackendLoadError naming the
    plugin and each method it lacks (found now, not as a skip in the middle of a run)."""
    where = target if isinstance(target, str) else f"{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', '?')}"
    problem = contract_problem("backend", name, where, cls, Backend)
    if problem:
        raise BackendLoadError(problem)
    return cls  # type: ignore[return-value]  # contract_problem checked it is a Backend subclass


def backend_class(name: str) -> type[Backend]:
    """The Backend class registered under `name`, imported now and checked against the contract."""
    targets = _targets()
    if name not in targets:
        raise _unknown(name)
    target = targets[name]
    return _import_target(name, target) if isinstance(target, str) else target


def get_backend(name: str) -> Backend:
    """The backend called `name`, created once per process and then reused.

    Raises UsageError for a name nobody registered, BackendLoadError when its module is broken.
    A backend whose framework is missing still loads: its availability() says why it cannot run.
    """
    if name not in _instances:
        cls = backend_class(name)
        try:
            _instances[name] = cls()
        except Exception as error:  # noqa: BLE001 - a constructor that fails is a broken plugin
            raise BackendLoadError(f"backend {name!r} failed to start: {type(error).__name__}: {error}") from error
    return _instances[name]


class BrokenBackend:
    """Stands in for a backend whose module failed to load (or broke the contract): unavailable,
    with the reason, so a run and `accelbench list` say why instead of stopping."""

    def __init__(self, name: str, reason: str):
        self.name, self.reason = name, reason

    def availability(self) -> Availability:
        return Availability(False, self.reason)

    def device_ids(self) -> list[str]:
        return []


#: backends a run was asked for, by name: each loaded, or a BrokenBackend saying why not
Listed = Mapping[str, "Backend | BrokenBackend"]


def availability(name: str) -> Availability:
    """Whether backend `name` can run here, and why not; never raises for a known name."""
    try:
        backend = get_backend(name)
    except UsageError:
        raise
    except BackendLoadError as error:
        return Availability(False, str(error))
    try:
        return backend.availability()
    except Exception as error:  # noqa: BLE001 - a framework that breaks while probing is "not available"
        return Availability(False, f"{name} failed while checking availability: {type(error).__name__}: {error}")


def available_backends() -> dict[str, Availability]:
    """name -> Availability for every known backend, in backend_names() order."""
    return {name: availability(name) for name in backend_names()}


def clear_cache() -> None:
    """Forget created backends and in-process registrations (for tests)."""
    _instances.clear()
    _registered.clear()
