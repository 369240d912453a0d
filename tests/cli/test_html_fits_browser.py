"""The report's and the comparison's HTML tables fit a laptop screen (1366 px) in headless Chromium.

Real quick runs (matmul through numpy, and pyopencl on PoCL where it works; montecarlo, a workload
with figures of its own) go into a temporary database; `accelbench report` writes the page. A copy
of it, its Content-Security-Policy taken out, gets a measuring script: the page must not scroll
sideways, no table may be wider than the box it sits in, and a "workload figures" column exists
only where it has something to show.
"""
from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest

from accelbench.cli.main import main
from accelbench.report.build import HTML_NAME
from accelbench.report.compare import compare_runs, load_run, results_table_html
from accelbench.report.data import load_runs
from accelbench.session import load_backends
from accelbench.store.db import Store

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out

CHROMIUM = Path("/usr/bin/chromium")
LAPTOP_WIDTH = 1366
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--hide-scrollbars",
         "--host-resolver-rules=MAP * ~NOTFOUND")
MEASURE = """<script>
(function () {
  var wide = [], emptyFigures = 0, figureColumns = 0;
  document.querySelectorAll('table').forEach(function (table) {
    var box = table.parentElement, right = table.getBoundingClientRect().right;
    if (table.scrollWidth > box.clientWidth + 1 || right > window.innerWidth + 1)
      wide.push({head: table.tHead ? table.tHead.innerText.slice(0, 120) : '', width: table.scrollWidth,
                 room: box.clientWidth});
    var headers = Array.prototype.map.call(table.querySelectorAll('thead th'), function (th) { return th.innerText; });
    var column = headers.indexOf('workload figures');
    if (column < 0) return;
    figureColumns += 1;
    table.querySelectorAll('tbody tr:not(.note)').forEach(function (row) {
      if (!row.cells[column] || !row.cells[column].innerText.trim()) emptyFigures += 1;
    });
  });
  var out = document.createElement('pre');
  out.id = 'fit-measure';
  out.textContent = JSON.stringify({scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
                                    wide: wide, figureColumns: figureColumns, emptyFigures: emptyFigures});
  document.body.appendChild(out);
})();
</script>"""


def measure(page_html: str, folder: Path, width: int = LAPTOP_WIDTH) -> dict:
    """Layout facts of the page as Chromium lays it out in a window `width` px wide."""
    if not CHROMIUM.exists():
        pytest.skip(f"headless Chromium not found at {CHROMIUM}: apt-get install chromium")
    scriptable = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page_html)
    page = folder / f"measured-{len(list(folder.iterdir()))}.html"
    page.write_text(scriptable.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    command = [str(CHROMIUM), *FLAGS, f"--user-data-dir={folder / ('profile-' + page.stem)}",
               f"--window-size={width},900", "--dump-dom", page.as_uri()]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    found = re.search(r'<pre id="fit-measure">(.*?)</pre>', dom, re.S)
    assert found, "the measuring script did not run"
    return json.loads(html.unescape(found.group(1)))


def _available(names: list[str]) -> list[str]:
    return [name for name, backend in load_backends(names).items() if backend.availability().ok]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    pytest.importorskip("matplotlib", reason="the report needs matplotlib: pip install accelbench[plot]")
    folder = tmp_path_factory.mktemp("html-fits")
    db = str(folder / "results.sqlite")
    quick = ["--rigor", "quick", "--db", db, "--no-progress", "--no-telemetry"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(folder / "config"))
        assert main(["run", "matmul", "--sizes", "64,256", "--dtype", "float32",
                     "--backend", ",".join(_available(["numpy", "pyopencl"])), *quick]) == 0
        assert main(["run", "montecarlo", "--backend", "numpy", "--device", "cpu", *quick]) == 0
        assert main(["run", "matmul", "--sizes", "64,256", "--dtype", "float32", "--backend", "numpy",
                     "--device", "cpu", *quick]) == 0
    with Store(db) as store:
        run_ids = [r.id for r in store.runs()]
    out = folder / "report"
    assert main(["report", *run_ids, "--db", db, "--output", str(out)]) == 0
    return {"db": db, "folder": folder, "page": (out / HTML_NAME).read_text(encoding="utf-8")}


def test_the_measure_sees_a_table_that_overflows(tmp_path):
    # the control: a table wider than the window is caught, inside a scrolling box or not
    page = ('<!DOCTYPE html><html><body><div style="overflow-x:auto"><table><thead><tr><th>workload figures</th>'
            f'</tr></thead><tbody><tr><td style="white-space:nowrap">{"wide " * 600}</td></tr>'
            "<tr><td></td></tr></tbody></table></div></body></html>")
    facts = measure(page, tmp_path)
    assert len(facts["wide"]) == 1 and facts["wide"][0]["width"] > LAPTOP_WIDTH
    assert facts["figureColumns"] == 1 and facts["emptyFigures"] == 1


def test_report_fits_a_laptop_screen(stored):
    facts = measure(stored["page"], stored["folder"])
    assert facts["innerWidth"] == LAPTOP_WIDTH
    assert facts["scrollWidth"] <= facts["innerWidth"], facts
    assert facts["wide"] == [], facts["wide"]


def test_report_shows_workload_figures_only_where_there_are_some(stored):
    page = stored["page"]
    facts = measure(page, stored["folder"])
    assert facts["figureColumns"] >= 1 and facts["emptyFigures"] == 0, facts  # montecarlo's, filled
    assert "draws/s" in page  # montecarlo's own rate, in that column
    matmul_table = page.split("<h3>matmul</h3>", 1)[1].split("</table>", 1)[0]
    assert "workload figures" not in matmul_table and "GFLOP/s" in matmul_table


def test_comparison_and_results_html_fit_a_laptop_screen(stored):
    with Store(stored["db"]) as store:
        newest, older = [r.id for r in store.runs()][:3:2]  # the two matmul runs
        (run,) = load_runs(store, [newest])
    comparison = compare_runs(load_run(older, stored["db"]), load_run(newest, stored["db"]))
    assert comparison.rows, "the two matmul runs share no spec"
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body style='margin:8px'>"
            f"{comparison._repr_html_()}{results_table_html(run.rows)}</body></html>")
    facts = measure(page, stored["folder"])
    assert facts["scrollWidth"] <= facts["innerWidth"] == LAPTOP_WIDTH, facts
    assert facts["wide"] == [], facts["wide"]


def test_long_sentences_in_number_cells_still_fit(stored):
    # the class behind a CI failure: a sentence (why a speed-up is contaminated, where a peak comes
    # from) inside a no-wrap number cell stretched the table to 5,000 px
    from dataclasses import replace

    from accelbench.report.html import CSS, results_html
    from accelbench.runner.speedups import SpeedupCI

    reason = ("the paired ratio depends on which side ran first (0.16× with the baseline first, 0.235× with "
              "it second): one side's block slows the other's, so neither order can be trusted here")
    contaminated = SpeedupCI(ratio=0.21, low=0.11, high=0.25, pairs=8, contaminated=reason)
    with Store(stored["db"]) as store:
        rows = [row for run in load_runs(store, [r.id for r in store.runs()]) for row in run.rows]
    assert rows
    forced = [replace(row, speedup_all=contaminated, speedup_one=contaminated,
                      datasheet_provenance="formula: " + "cores × clock × FLOP per cycle from the vendor's page " * 3)
              for row in rows]
    tables = results_html(forced)
    assert reason.split(":")[0] in tables  # the reason is shown, in the row's note
    page = f'<!DOCTYPE html><html><head><style>{CSS}</style></head><body>{tables}</body></html>'
    facts = measure(page, stored["folder"])
    assert facts["scrollWidth"] <= facts["innerWidth"] and facts["wide"] == [], facts["wide"]
