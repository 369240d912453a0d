"""No module uses another module's private names (issue #29): a name with a leading underscore is its
module's own business, free to change without a look elsewhere. Computed from the code, as
test_architecture.py computes the import graph: `from accelbench.x import _name` and `module._name` on
an imported accelbench module both count, lazy imports included.

What cannot be made public yet sits in ALLOWED, each with the reason; the list is exact (an entry
that is no longer needed fails too, so it shrinks as the code does)."""
from __future__ import annotations

import ast
from pathlib import Path

import accelbench

ROOT = Path(accelbench.__file__).resolve().parent
# (importing module, "source module:_name") -> why it stays for now
ALLOWED: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(source: str, modules: set[str]) -> set[str]:
    """"source module:_name" for each private name of another accelbench module that `source` uses."""
    tree = ast.parse(source)
    found, bound = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("accelbench"):
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules:  # a module: its attributes are looked at below
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                elif _private(alias.name):
                    found.add(f"{node.module}:{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("accelbench.") and alias.asname:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and _private(node.attr)):
            found.add(f"{bound[node.value.id]}:{node.attr}")
    return found


def cross_module_private_uses() -> set[tuple[str, str]]:
    paths = {_module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(paths)
    return {(name, use) for name, path in paths.items()
            for use in private_uses(path.read_text(encoding="utf-8"), modules) if use.split(":")[0] != name}


def test_no_private_name_is_used_across_modules():
    found = cross_module_private_uses()
    assert sorted(found - set(ALLOWED)) == [], "private names used from another module: make them public"
    assert sorted(set(ALLOWED) - found) == [], "allowed but no longer used: remove from ALLOWED"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_check_sees_both_kinds_of_use():
    modules = {"accelbench.store.db", "accelbench.session"}
    source = ("from accelbench.session import _helper, public\n"
              "from accelbench.store import db\n"
              "import accelbench.session as s\n"
              "def f():\n    return db._connection, s._other, db.public, public\n")
    assert private_uses(source, modules) == {"accelbench.session:_helper", "accelbench.store.db:_connection",
                                             "accelbench.session:_other"}
