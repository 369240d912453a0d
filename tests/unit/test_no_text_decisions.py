"""No decision read from our own words (issue 43): code decides on kinds, flags and fields, never on
the text a person reads. The wording of a note, a check's detail, a finding's summary, a reason or a
message may change freely; this scan of the source fails when a decision on one comes back.

What it finds: `.startswith` / `.endswith` on, a string literal tested `in` / `not in`, or a string
literal compared `==` / `!=` with, an attribute named like one of our outcome texts (`x.detail`,
`x.note`, `x.summary`, `x.head` ...) or a local of those names (`why`, `message`, `note` ...). Plain
locals named `text` hold input from outside (a user's argument, Slurm's output, an SQLite message):
parsing those is reading input, not deciding on our own outcome."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "accelbench"
OUTCOME_TEXTS = {"note", "notes", "detail", "summary", "reason", "reasons", "why", "message", "head", "text",
                 "caveat", "verdict_text", "explanation"}
LOCAL_INPUT = {"text"}  # a local of this name is input from outside (see the module docstring)
# not found by this scan (a local of another name, a regular expression): reviewed by hand, issue 43's
# note lists them

# (module, enclosing function): where a decision still reads our own words, and why. Each entry is a
# debt of issue 43; the list only ever shrinks.
ALLOWED = {
    ("results.py", "failed"): "Skip.failed: stored and exported skips say 'failed' by their reason's prefix",
}


def _outcome_text(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in OUTCOME_TEXTS
    if isinstance(node, ast.Name):
        return node.id in OUTCOME_TEXTS - LOCAL_INPUT
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        return _outcome_text(node.args[0])
    return False


def _literal(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def decisions_on_text(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, enclosing function, the expression) of each decision on an outcome text."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        hit = False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            hit = node.func.attr in ("startswith", "endswith") and _outcome_text(node.func.value)
        elif isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)):
                    hit = hit or (_literal(left) and _outcome_text(right)) or (
                        _outcome_text(left) and isinstance(right, (ast.Tuple, ast.List, ast.Set))
                        and any(_literal(e) for e in right.elts))
                elif isinstance(op, (ast.Eq, ast.NotEq)):
                    hit = hit or (_literal(left) and _outcome_text(right)) or (_outcome_text(left) and _literal(right))
                left = right
        if hit:
            found.append((getattr(node, "lineno", 0), function, ast.unparse(node)[:120]))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "")
    return found


def test_no_decision_reads_our_own_words_outside_the_shrinking_allow_list():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for line, function, expression in decisions_on_text(ast.parse(path.read_text(), str(path))):
            if (path.name, function) not in ALLOWED:
                found.append(f"{path.relative_to(SRC)}:{line} in {function}(): {expression}")
    assert found == [], "decide on a kind or a field, not on words:\n" + "\n".join(found)


@pytest.mark.parametrize("source", [
    "def f(check):\n    return 'ran on ' in check.detail",
    "def f(paired):\n    return paired.note.startswith('cross-talk:')",
    "def f(s):\n    return s.head == 'not decided'",
    "def f(s):\n    return s.head in ('not decided', 'not measurable here')",
    "def f(why):\n    return 'not_supported' in why",
    "def f(findings):\n    return any('did not answer' in f.summary for f in findings)",
])
def test_the_scan_finds_each_kind_of_decision_the_issue_named(source):
    assert decisions_on_text(ast.parse(source))


@pytest.mark.parametrize("source", [
    "def f(text):\n    return '\\x00' in text",               # a user's argument
    "def f(paired):\n    return paired.note_kind == 'cross_talk'",  # a kind
    "def f(check):\n    return f'{check.detail} (x)'",        # words built, not read
])
def test_the_scan_leaves_input_parsing_kinds_and_wording_alone(source):
    assert not decisions_on_text(ast.parse(source))
