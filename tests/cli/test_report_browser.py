"""`accelbench report` from a real small run, rendered in a real headless Chromium.

The run is real (numpy, plus OpenCL through PoCL where present); one synthetic device is added
whose name is a script. The page must render (a screenshot that is not blank), show every figure
as a data: URI, fetch nothing from the network, and show the script as text without running it.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import accelbench
from accelbench.cli import report_cmd
from accelbench.cli.main import main
from accelbench.report.build import HTML_NAME
from accelbench.results import Check, Measurement, Skip, Spec, Work
from accelbench.session import load_backends
from accelbench.store.db import Store, new_run_id, utc_now_iso

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out

CHROMIUM = Path("/usr/bin/chromium")
EVIL = "<script>document.title='pwned'</script>"
EVIL_ESCAPED_IN_DOM = "&lt;script&gt;document.title='pwned'&lt;/script&gt;"
WEB_SCHEMES = ("http://", "https://", "ws://", "wss://")
# the browser's own background services are switched off; name resolution is mapped to nowhere
# so that even a request that slipped through could not leave the machine
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--disable-default-apps", "--no-pings", "--hide-scrollbars",
                  "--host-resolver-rules=MAP * ~NOTFOUND")


def _available(names: list[str]) -> list[str]:
    loaded = load_backends(names)
    return [name for name, backend in loaded.items() if backend.availability().ok]


def _evil_measurement() -> Measurement:
    spec = Spec.make("matmul", "fake", "evil:0", n=128, dtype="float32")
    samples_s = tuple(1e-3 * (1 + 0.001 * k) for k in range(12))
    return Measurement(spec=spec, phases_s={"compute": samples_s}, first_call_s=2e-3,
                       work=Work(2.0 * 128**3, 3.0 * 128**2 * 4), check=Check(True, 1e-7, 1e-4, "ok", "evil:0"),
                       warnings=(f"note from the device: {EVIL}",))


def _doctored_copy(store: Store, run_id: str) -> str:
    """The real run stored again with a device whose name (and a skip reason, a tag) is a script."""
    machine = store.machine(run_id)
    machine["inventory"]["devices"].append({"id": "evil:0", "kind": "gpu", "vendor": "Evil", "name": EVIL,
                                            "source": "test", "peaks": []})
    info = store.run_info(run_id)
    skips = store.skips(run_id) + [Skip(Spec.make("matmul", "fake", "evil:0", n=64, dtype="float64"),
                                        f"not supported: {EVIL}")]
    new_id = new_run_id()
    store.restore_run(new_id, started_at=utc_now_iso(), finished_at=utc_now_iso(), status="complete",
                      accelbench_version=info.accelbench_version, selection=info.selection, machine=machine,
                      tags={"label": EVIL}, results=store.results(run_id) + [_evil_measurement()], skips=skips)
    return new_id


def test_report_without_runs_is_a_clear_error(tmp_path, capsys):
    db = str(tmp_path / "empty.sqlite")
    assert main(["report", "--db", db, "--output", str(tmp_path / "out")]) == 2
    assert "no runs are stored" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_report_without_matplotlib_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(report_cmd, "has_matplotlib", lambda: False)
    assert main(["report", "--db", str(tmp_path / "any.sqlite"), "--output", str(tmp_path / "out")]) == 2
    assert "pip install accelbench[plot]" in capsys.readouterr().err


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    pytest.importorskip("matplotlib", reason="the report needs matplotlib: pip install accelbench[plot]")
    folder = tmp_path_factory.mktemp("report")
    db = str(folder / "results.sqlite")
    backends = _available(["numpy", "pyopencl"])
    real = accelbench.run("matmul", sizes=[64, 256], dtypes="float32", backends=backends,
                          rigor="quick", db=db)
    assert real.measurements, "the real run measured nothing"
    with Store(db) as store:
        run_id = _doctored_copy(store, real.run_id)
    out = folder / "out"
    assert main(["report", run_id, "--db", db, "--output", str(out)]) == 0
    html_path = out / HTML_NAME
    return {"run_id": run_id, "html_path": html_path, "html": html_path.read_text(encoding="utf-8"),
            "pngs": sorted(out.glob("*.png")), "backends": backends, "folder": folder}


def test_report_html_is_self_contained_and_escaped(report):
    text = report["html"]
    lowered = text.lower()
    for forbidden in ("<script", "<link", "@import", "url(", "<iframe", "<object", "<embed"):
        assert forbidden not in lowered, forbidden
    for attribute, value in re.findall(r'\b(src|href|srcset|action|poster)\s*=\s*"([^"]*)"', text):
        assert value.startswith(("data:", "#")), (attribute, value[:80])
    assert not [s for s in WEB_SCHEMES if s in lowered]
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in text
    assert text.count('src="data:image/png;base64,') == len(report["pngs"]) >= 3
    assert "Content-Security-Policy" in text


def chromium(page: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    if not CHROMIUM.exists():
        pytest.skip(f"headless Chromium not found at {CHROMIUM}: apt-get install chromium")
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    command = [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=True)


def page_requests(net_log: Path) -> list[str]:
    """URLs the page itself asked for: requests whose network isolation key is the file:// page.

    Chromium's own services (updates, accounts) use other keys; they are switched off anyway.
    """
    log = json.loads(net_log.read_text())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log["events"]:
        params = event.get("params") or {}
        if event["type"] == start_job and "file://" in str(params.get("network_isolation_key", "")):
            urls.append(params.get("url", ""))
    return urls


def test_report_of_an_unknown_run_is_a_clear_error(report, tmp_path, capsys):
    db = str(report["folder"] / "results.sqlite")
    assert main(["report", "zzzz-not-a-run", "--db", db, "--output", str(tmp_path / "out")]) == 2
    assert "unknown run 'zzzz-not-a-run'" in capsys.readouterr().err


def test_network_detector_sees_a_page_that_fetches(tmp_path):
    # the control: a page with an external stylesheet and image is caught by the same check
    page = tmp_path / "fetching.html"
    page.write_text('<html><head><link rel="stylesheet" href="https://cdn.example.net/s.css"></head>'
                    '<body><img src="http://img.example.org/a.png"></body></html>')
    net_log = tmp_path / "control-netlog.json"
    chromium(page, tmp_path, f"--log-net-log={net_log}", "--dump-dom")
    fetched = page_requests(net_log)
    assert "https://cdn.example.net/s.css" in fetched and "http://img.example.org/a.png" in fetched


def test_report_renders_offline_with_every_figure_and_no_script_run(report, tmp_path):
    net_log = tmp_path / "netlog.json"
    dom = chromium(report["html_path"], tmp_path, f"--log-net-log={net_log}", "--dump-dom").stdout
    title = re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert title == f"accelbench report: {report['run_id']}"      # a run script would have set 'pwned'
    assert "<script" not in dom.lower()
    assert EVIL_ESCAPED_IN_DOM in dom                               # shown as text
    images = re.findall(r'<img [^>]*src="(data:image/png;base64,[^"]+)"', dom)
    assert len(images) == len(report["pngs"]) >= 3
    assert [u for u in page_requests(net_log) if u.startswith(WEB_SCHEMES)] == []


def test_report_screenshot_is_not_blank(report, tmp_path):
    from PIL import Image, ImageStat

    shot = tmp_path / "report.png"
    chromium(report["html_path"], tmp_path, f"--screenshot={shot}", "--window-size=1280,2400")
    with Image.open(shot) as image:
        grey = image.convert("L")
        assert grey.size == (1280, 2400)
        stddev = ImageStat.Stat(grey).stddev[0]
        inked = sum(count for level, count in enumerate(grey.histogram()) if level < 200) / (1280 * 2400)
    assert stddev > 20 and inked > 0.03, (stddev, inked)
    shutil.copy(shot, report["folder"] / "screenshot.png")  # kept with the report for a look by eye


def test_report_opens_with_the_headline_before_findings_and_tables(report, tmp_path):
    dom = chromium(report["html_path"], tmp_path, "--dump-dom").stdout
    start = dom.index('class="headline"')
    assert start < dom.index("<h3>Findings</h3>") < dom.index("<h2>Results</h2>")
    opening = dom[start:dom.index("<h3>Findings</h3>")]
    assert "The answer" in opening and "fake@evil:0" in opening  # every measured device has its entry
    if "pyopencl" in report["backends"]:  # PoCL: named as the CPU it runs on, with its speed-ups
        assert "pyopencl@opencl:" in opening and "running on this same CPU, not an accelerator" in opening
        # against all cores unless other processes held them (all cores slower than one thread: said so)
        collapsed = "slower on all cores than on one thread" in opening
        assert ("all CPU cores" in opening or collapsed) and "one core" in opening and "onfidence" in opening
