"""Workloads by name: built-ins and third parties' through the `accelbench.workloads` entry points
(accelbench/plugins.py), a user's function objects registered in-process; loaded only when asked for."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from accelbench.errors import UsageError
from accelbench.plugins import WORKLOADS_GROUP, contract_problem, import_target, is_builtin, load_target, plugin_targets, builtin_targets
from accelbench.results import Measurement
from accelbench.vocabulary import Role
from accelbench.workloads.base import Workload

# name -> "module:attribute" of accelbench's own, as pyproject.toml declares them (listed there only)
BUILTIN_WORKLOADS: dict[str, str] = builtin_targets(WORKLOADS_GROUP)
# the default run: the answer's work (compute-bound matmul, memory-bound STREAM) and the transfers
# between host and device; reduce, elementwise and matmul's other dtypes run when named (the quick
# suite measured them too, 21 s of a 78 s run on 2 cores, and the answer never read them)
QUICK_SUITE = ("matmul", "stream", "memcpy")
BY_NAME_ALSO = "`accelbench run reduce elementwise`, `accelbench run matmul --dtype float64,bfloat16`"

# workloads given as objects (a user's function through accelbench.bench) live here for the process
_INSTANCES: dict[str, Workload] = {}


def _targets() -> dict[str, str]:
    """Every workload with a module: built-ins, then entry points (a third party's, or a built-in's
    declaration; a third party cannot take a built-in's name)."""
    return plugin_targets(WORKLOADS_GROUP, BUILTIN_WORKLOADS)


def workload_names() -> list[str]:
    """Built-ins in their usual order, then third parties' and registered ones by name."""
    names = list(BUILTIN_WORKLOADS)
    extra = set(_targets()) | set(_INSTANCES)
    return names + sorted(extra - set(names))


def register_workload(workload: Workload) -> None:
    """Add a workload object for this process (a user's function); one lacking part of the contract
    is refused (UsageError naming it and what it lacks)."""
    _complete(workload.name, repr(type(workload).__qualname__), type(workload))
    if workload.name in _targets() and workload.name not in _INSTANCES:
        raise UsageError(f"workload name {workload.name!r} is taken by an installed workload; choose another name")
    _INSTANCES[workload.name] = workload


def unregister_workload(name: str) -> None:
    _INSTANCES.pop(name, None)


def builtin_workload_class(name: str) -> type[Workload] | None:
    """The class of a built-in workload (None for user functions, third parties' and unknown names),
    imported now; None too where its module needs a package that is not installed."""
    target = _targets().get(name)
    if name in _INSTANCES or target is None or not is_builtin(target):
        return None
    try:
        return _complete(name, repr(target), import_target(target))
    except ImportError:
        return None


def workload_declaration(name: str, attribute: str) -> Any:
    """What `name` declares as `attribute` (a class attribute of Workload: role, cpu_baseline ...),
    built-in, third party's or registered alike, read from its class: no instance is made (a report
    asks once per result or more). None where it is not installed here (a stored run's workload)."""
    if name in _INSTANCES:
        return getattr(_INSTANCES[name], attribute, None)
    target = _targets().get(name)
    if target is None:
        return None
    try:
        return getattr(_complete(name, repr(target), load_target(target)), attribute, None)
    except Exception:  # noqa: BLE001 - a broken or missing plugin has no declaration to read
        return None


def workload_role(name: str) -> Role | None:
    """The role `name` declares (Workload.role); None where it declares none or is not installed
    here: never raises."""
    return workload_declaration(name, "role")


def role_of(m: Measurement) -> Role | None:
    """What `m`'s figures say about a device: the role stored with it (its workload's declaration when it
    ran, kept where that workload is not installed), else, for a result stored before roles were, the
    role its workload declares here."""
    return m.role or workload_role(m.spec.workload)


def crosses_host_link(m: Measurement) -> bool:
    """Whether `m` timed copies between host and device (a "transfer" result, unless its
    `direction` parameter says "d2d"): the host link bounds them, not the device's own memory."""
    return role_of(m) == "transfer" and m.spec.param("direction") != "d2d"


def workloads_of_role(measurements: Iterable[Measurement], role: Role) -> list[str]:
    """The workloads of those `measurements` of `role` (role_of), in the registry's order (built-ins first,
    as listed; then others by name)."""
    stored, unstored = set(), set()
    for m in measurements:
        if m.role == role:
            stored.add(m.spec.workload)
        elif m.role is None:
            unstored.add(m.spec.workload)
    names = stored | {name for name in unstored if workload_role(name) == role}  # each name looked up once
    order = {name: index for index, name in enumerate(workload_names())}
    return sorted(names, key=lambda n: (order.get(n, len(order)), n))


def _complete(name: str, target: str, cls: object) -> type[Workload]:
    """`cls`, once it is a Workload keeping the whole contract; else a UsageError naming the plugin and
    each method it lacks (found when it is loaded, not as a skip in the middle of a run)."""
    if isinstance(cls, type) and cls in _KEPT_CONTRACT:
        return cls
    problem = contract_problem("workload", name, target, cls, Workload)
    if problem:
        raise UsageError(problem)
    _KEPT_CONTRACT.add(cls)  # type: ignore[arg-type]
    return cls  # type: ignore[return-value]  # contract_problem checked it is a Workload subclass


# classes found to keep the contract: a report asks for a workload once per result (42,000 times
# over 10,000 results), and the contract cannot change for a class already loaded
_KEPT_CONTRACT: set[type] = set()


def get_workload(name: str) -> Workload:
    if name in _INSTANCES:
        return _INSTANCES[name]
    target = _targets().get(name)
    if target is None:
        raise UsageError(f"unknown workload {name!r}; accepted: {', '.join(workload_names())}")
    try:
        cls = import_target(target)
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("accelbench") and is_builtin(target):
            raise UsageError(f"workload {name!r} is not part of this installation ({exc.name} is missing)") from None
        raise UsageError(f"workload {name!r} needs {exc.name}, which is not installed") from None
    except Exception as exc:  # noqa: BLE001 - a third party's broken module is named, not a traceback
        raise UsageError(f"workload {name!r} could not be loaded from {target!r}: {type(exc).__name__}: {exc}"
                         ) from None
    return _complete(name, repr(target), cls)()
