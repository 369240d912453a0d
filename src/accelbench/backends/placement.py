"""Where an array lives, read from the array itself: placement is observed, never taken on trust.

A backend's own `location()` is what the backend claims; here each known backend's observer
(`Backend.observe_placement`) is asked in turn, built-ins first, and the first that recognises the
array's type reads its device through the array's framework (already loaded: we hold one of its
arrays). An observer written in accelbench (a built-in backend's, or one a plugin inherits from it)
observes; a plugin's own observer, for an array type accelbench cannot read itself, is the plugin's
word like `location()`: it is named, and the placement stays claimed (docs/truth.md, opaque arrays).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from accelbench.backends.base import Backend, framework_of
from accelbench.backends.registry import BackendLoadError, backend_names, get_backend
from accelbench.plugins import BUILTIN_PACKAGE


@dataclass(frozen=True)
class Placement:
    device: str | None   # accelbench device id, or None where it could not be observed
    how: str             # "observed from a torch array" / why it could not be


def observe(array: object, backend: Backend | None = None) -> Placement:
    """`array`'s device as the first observer that knows its type reads it; `backend` (the one that
    made it, when not registered by name: a test's) is asked after the registered ones."""
    framework = framework_of(array)
    for observer in _observers(backend):
        try:
            device = observer.observe_placement(array)
        except Exception as error:  # noqa: BLE001 - an odd array is "not observed", never a crash
            return Placement(None, f"its {framework} array did not say ({type(error).__name__}: {error})")
        if device is None:
            continue
        if own_observer(observer):
            return Placement(device, f"observed from a {framework} array")
        return Placement(None, f"only the {observer.name} backend's own observer reads an array of type "
                               f"{_type_name(array)} (it says {device}): the plugin's word, not an observation")
    return Placement(None, f"an array of type {_type_name(array)} that no backend's placement observer inspects")


def own_observer(backend: Backend) -> bool:
    """Whether `backend`'s placement observer is accelbench's code (a built-in's, inherited or not)."""
    return type(backend).observe_placement.__module__.startswith(BUILTIN_PACKAGE)


def _type_name(array: object) -> str:
    return f"{type(array).__module__}.{type(array).__qualname__}"


def _observers(backend: Backend | None) -> Iterator[Backend]:
    for name in backend_names():
        try:
            known = get_backend(name)
        except BackendLoadError:
            continue  # a broken plugin observes nothing; the run reports it elsewhere
        if known is not backend:
            yield known
    if backend is not None:
        yield backend
