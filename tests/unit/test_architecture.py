"""The import graph of src/accelbench, computed from the code: layers point one way, no circles.

Every `import accelbench.…` / `from accelbench… import …` counts, those inside functions too
(a lazy import is still a dependency) and those under `if TYPE_CHECKING:` (a type-only import is
still a dependency: a reader follows it, and a circle of types is a circle). Layers, lowest first
(docs/architecture.md):

    foundation → devices → backends → timing, telemetry → workloads → runner → store
    → report (compare inside) → cluster → session, api → cli

A module may import its own layer and the layers below it, never one above; no module may reach
itself through its imports (a circle), within a package or across packages.
"""
from __future__ import annotations

import ast
from pathlib import Path

import accelbench

ROOT = Path(accelbench.__file__).resolve().parent
FOUNDATION = ("errors", "units", "results", "verdict", "vocabulary", "plugins", "settings", "userdirs",
              "_version", "bulk", "forked", "terminal", "schemas", "data", "safe_write")
LAYERS = [FOUNDATION, ("devices",), ("backends",), ("timing", "telemetry"), ("workloads",), ("runner",),
          ("store",), ("report", "health"), ("cluster",), ("session", "api"), ("cli", "__main__")]
LAYER_OF = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                base = node.module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name].update(t for t in targets if t.startswith("accelbench.") and t in modules and t != name)
    return graph


def package(module: str) -> str:
    """accelbench.store.db -> "store"; the package's own __init__ -> "_version"'s layer (foundation)."""
    return module.split(".")[1] if "." in module else "_version"


def layer(module: str) -> int:
    top = package(module)
    if top not in LAYER_OF:
        raise AssertionError(f"{module}: its package {top!r} has no layer: add it to LAYERS and docs/architecture.md")
    return LAYER_OF[top]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_points_up_the_layers():
    graph = import_graph()
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if layer(b) > layer(a))
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def test_no_import_circle_between_modules():
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_import_circle_between_packages():
    graph = import_graph()
    packages: dict[str, set[str]] = {}
    for a, targets in graph.items():
        for b in targets:
            pa, pb = package(a), package(b)
            if pa != pb:
                packages.setdefault(pa, set()).add(pb)
    found = circles({p: packages.get(p, set()) for p in {package(m) for m in graph}})
    assert not found, "package circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_checks_see_a_circle_and_an_upward_import():
    # the checks themselves must be able to fail; a type-only import is an arrow like any other
    assert "accelbench.backends.base" in import_graph()["accelbench.workloads.base"]  # under TYPE_CHECKING
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert layer("accelbench.cli.main") > layer("accelbench.runner.execute") > layer("accelbench.devices.cpu")


def test_no_module_is_longer_than_400_lines():
    long = sorted(f"{module_name(p)}: {n} lines" for p in ROOT.rglob("*.py")
                  if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400)
    assert not long, "modules over 400 lines:\n" + "\n".join(long)
