"""examples/notebook.ipynb executed as a data scientist runs it (nbclient, a real kernel, real numpy
and torch): the README's Python section, bench on numpy, the same in torch, a wrong function, one
that raises, a comparison table and a run stopped by SIGINT (issue 31). About 1.5 min on 2 busy cores.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("torch")
pytest.importorskip("pandas")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
RUN_REPR_LIMIT = 2000


def readme_python() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### Python\n"):text.index("## Extras\n")]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1).rstrip("\n")


def tagged(nb, tag: str) -> list:
    return [c for c in nb.cells if c.cell_type == "code" and tag in c.metadata.get("tags", [])]


def plain(cell) -> str:
    return "".join(o.data.get("text/plain", "") for o in cell.outputs if o.output_type == "execute_result")


def html(cell) -> str:
    return "".join(o.data.get("text/html", "") for o in cell.outputs if o.output_type == "execute_result")


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    db = tmp_path_factory.mktemp("notebook") / "results.sqlite"
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("ACCELBENCH_DB", str(db))
    try:
        nb = nbformat.read(NOTEBOOK, as_version=4)
        nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(db.parent)}}).execute()
    finally:
        monkeypatch.undo()
    return nb, db


def test_the_notebook_begins_with_the_readme_python_section():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert "\n\n".join(c.source for c in tagged(nb, "readme")) == readme_python()
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # stored without outputs


def test_the_readme_section_shows_short_answers_and_progress(executed):
    nb, _ = executed
    run_cell, frame_cell, mine_cell, compare_cell = tagged(nb, "readme")
    for cell in (run_cell, mine_cell):
        text = plain(cell)
        assert text.startswith("accelbench run ") and len(text) < RUN_REPR_LIMIT, text
        progress = [o for o in cell.outputs if o.output_type == "display_data"]
        assert progress and re.fullmatch(r"accelbench: (\d+) of \1 measured.*; done", progress[-1].data["text/plain"])
    assert "numpy@cpu (2 threads)" in plain(frame_cell) and "torch@cpu (2 threads)" in plain(frame_cell)
    assert "softmax dtype=float64" in plain(compare_cell) and "<table" in html(compare_cell)
    assert plain(tagged(nb, "headline")[0]).startswith("Headline (the answer):")


def test_a_wrong_function_is_invalid_and_its_skip_shows(executed):
    nb, _ = executed
    (cell,) = tagged(nb, "wrong")
    text, page = plain(cell), html(cell)
    assert len(text) < RUN_REPR_LIMIT and "invalid: check failed: relative error" in text
    assert "<b>Skipped</b> (1)" in page and "numpy has no float16" in page
    assert "invalid: check failed: relative error" in page and "— (not counted)" in page


def test_an_error_in_the_users_function_is_raised_in_the_cell(executed):
    nb, _ = executed
    (cell,) = tagged(nb, "raises")
    (error,) = [o for o in cell.outputs if o.output_type == "error"]
    assert error.ename == "NameError" and "undefined_name" in error.evalue
    traceback = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert "accelbench.bench: raised by your function '<lambda>' on numpy@cpu" in traceback


def test_the_comparison_table_has_every_function(executed):
    nb, _ = executed
    (cell,) = tagged(nb, "compare")
    text = plain(cell)
    lines = text.splitlines()
    assert {"numpy@cpu (1 thread)", "torch@cpu (2 threads)"} <= set(re.split(r"\s{2,}", lines[0].strip()))
    softmax = next(line for line in lines if line.startswith("softmax "))
    # numpy on 1 and 2 threads, torch: one line, each a time with its spread (whatever its unit)
    assert len(re.findall(r"\d [nµm]?s ± \d", softmax)) == 3, softmax
    assert "invalid" in next(line for line in lines if line.startswith("softmax_wrong "))


def test_a_stopped_run_says_interrupted(executed):
    nb, _ = executed
    (cell,) = tagged(nb, "interrupted")
    assert "(INTERRUPTED" in plain(cell) and len(plain(cell)) < RUN_REPR_LIMIT
    assert "Interrupted: stopped before the plan ended" in html(cell)
    progress = [o for o in cell.outputs if o.output_type == "display_data"]
    assert progress[-1].data["text/plain"].endswith("interrupted")


def test_no_backend_the_user_did_not_ask_for_ran(executed):
    nb, db = executed
    (cell,) = tagged(nb, "backends")
    ran = json.loads("".join(o.text for o in cell.outputs if o.output_type == "stream"))
    assert ran == {"results": ["numpy", "torch"], "mine": ["numpy"], "both": ["numpy", "torch"], "theirs": ["torch"],
                   "wrong": ["numpy"], "stopped": ["numpy"]}
    from accelbench.store.db import Store

    with Store(db) as store:  # what was stored agrees: softmax_wrong and the raising lambda on numpy alone
        runs = store.runs()
        stored = {(r.workload, r.backend) for run in runs for r in _results_and_skips(store, run.id)}
    assert {b for w, b in stored if w == "softmax_wrong"} == {"numpy"}
    assert {b for w, b in stored if w == "softmax"} == {"numpy", "torch"}  # mine, and theirs named "softmax"


def _results_and_skips(store, run_id: str):
    return [m.spec for m in store.results(run_id)] + [s.spec for s in store.skips(run_id)]
