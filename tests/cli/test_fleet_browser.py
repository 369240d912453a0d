"""The fleet page (`accelbench fleet --html`) rendered in a real headless Chromium: its figure is
shown as a data: URI, nothing is fetched, a node named like a script is shown as text, and the
page is not blank."""
from __future__ import annotations

import math
import shutil
import re

import pytest

from accelbench.cli.main import main
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.store.db import Store
from test_report_browser import WEB_SCHEMES, chromium, page_requests  # noqa: E402 - the same browser, flags and net log

pytestmark = pytest.mark.slow

EVIL_NODE = "<script>document.title='pwned'</script>"
SPEC = Spec.make("stream", "numpy", "cpu", kernel="triad", n=1 << 20, dtype="float64")


def _run(store: Store, run_id: str, node: str, node_type: str, rate_b_s: float) -> None:
    bytes_moved = 24.0 * SPEC.param("n")
    samples = tuple(bytes_moved / rate_b_s * (1 + 0.003 * math.cos(k)) for k in range(25))
    result = Measurement(spec=SPEC, phases_s={"compute": samples}, first_call_s=samples[0] * 3,
                         work=Work(2.0 * SPEC.param("n"), bytes_moved), check=Check(True, 1e-12, 1e-9))
    store.restore_run(run_id, started_at="2026-12-03T08:00:00+00:00", finished_at=None, status="complete",
                      accelbench_version="test", selection={}, machine={"hostname": node},
                      tags={"node": node, "node_features": node_type, "submission": "sweep1"},
                      results=[result], skips=())


@pytest.fixture()
def page(tmp_path):
    db = tmp_path / "fleet.sqlite"
    with Store(db) as store:
        rates = {"cpu01": 20e9, "cpu02": 20.4e9, "cpu03": 19.8e9, EVIL_NODE: 9e9,
                 "big01": 60e9, "big02": 61e9, "big03": 59e9, "big04": 60.5e9}
        for index, (node, rate) in enumerate(rates.items()):
            _run(store, f"run-{index}", node, "big" if node.startswith("big") else "epyc", rate)
    assert main(["fleet", "--db", str(db), "--html", str(tmp_path / "page"), "--fail-on", "none"]) == 0
    return tmp_path / "page" / "index.html"


def test_fleet_page_renders_offline_with_its_figure_and_no_script_run(page, tmp_path):
    net_log = tmp_path / "netlog.json"
    dom = chromium(page, tmp_path, f"--log-net-log={net_log}", "--dump-dom").stdout
    assert re.search(r"<title>(.*?)</title>", dom, re.S).group(1) == "accelbench fleet sweep1"
    assert "<script" not in dom.lower() and "&lt;script&gt;" in dom
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', dom)) == 1
    assert "outlier</strong> &lt;script&gt;" in dom  # the slow node, named as text, in the findings
    assert [u for u in page_requests(net_log) if u.startswith(WEB_SCHEMES)] == []


def test_fleet_page_screenshot_is_not_blank(page, tmp_path):
    from PIL import Image, ImageStat

    shot = tmp_path / "fleet.png"
    chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1200,1600")
    with Image.open(shot) as image:
        grey = image.convert("L")
        inked = sum(count for level, count in enumerate(grey.histogram()) if level < 200) / (1200 * 1600)
        assert ImageStat.Stat(grey).stddev[0] > 20 and inked > 0.02, inked
    shutil.copy(shot, page.parent / "screenshot.png")  # kept beside the page for a look by eye
