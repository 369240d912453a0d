"""What `accelbench run` prints by default fits one screen (issue 42): at most 40 lines at 80 columns,
for every recorded run (quiet, busy, PoCL, deep learning, an H200 GPU node), with no ratio below 1 and
no interval wider than 2× stated as a figure. Rendered by the very function the command calls."""
from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.cells import cell_len

from accelbench.cli.main import main
from accelbench.report.data import load_run
from accelbench.report.headline import headline_for_run
from accelbench.report.run_screen import SCREEN_LINES, render_run
from accelbench.store.db import Store
from accelbench.terminal import console

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
RECORDED = sorted(p.stem for p in RUNS.glob("*.json"))
BELOW_ONE = re.compile(r"(?<![\d.])0\.\d+×")  # "0.34×": a speed-up said below 1


def screen(name: str, tmp_path: Path, capsys) -> str:
    db = tmp_path / f"{name}.sqlite"
    assert main(["import", str(RUNS / f"{name}.json"), "--db", str(db)]) == 0
    capsys.readouterr()
    with Store(db, create=False) as store:
        run = load_run(store, store.resolve_run("latest"))
    out = io.StringIO()
    render_run(headline_for_run(run.rows, run.devices, run.machine, str(run.selection.get("rigor"))), run.skips,
               console(file=out, width=80), run_id=run.run_id, db_path=str(db), results=list(run.measurements))
    return out.getvalue()


@pytest.mark.parametrize("name", RECORDED)
def test_the_screen_of_every_recorded_run_fits_40_lines_of_80_columns(name, tmp_path, capsys):
    shown = screen(name, tmp_path, capsys)
    lines = shown.rstrip("\n").splitlines()
    assert len(lines) <= SCREEN_LINES, f"{len(lines)} lines:\n{shown}"
    assert max(cell_len(line.rstrip()) for line in lines) <= 80, shown
    assert not BELOW_ONE.search(shown), shown


def test_a_41st_line_fails(tmp_path, capsys):
    """The limit bites: the busiest recorded run with its lines doubled would not pass."""
    shown = screen("busy", tmp_path, capsys)
    lines = shown.rstrip("\n").splitlines()
    assert len(lines) * 2 > SCREEN_LINES  # so the test above would catch a screen twice this long
