"""`accelbench peak`'s pair where a user looks: `info` (text and --json), `ceilings` (text and
--json) and the report, each with the order, clock, power, spread, settled or not and the
search's coverage; a run holding only peak results says nothing wrong (no baseline, no speed-up,
no device "not measured" that was); export and import carry the pair across."""
from __future__ import annotations

import json
import socket

import pytest
from piped_cli import piped
from test_peak_finder import ReplayedH200, _run

from accelbench.runner.peak_results import search_measurements
from accelbench.store.db import Store


cli = piped  # the CLI piped, no $COLUMNS: the width a script sees


def store_pair(db: str, device: str, dtype: str = "bfloat16") -> str:
    """A replayed H200 search (794 TFLOP/s at 1,980 MHz, 688 sustained at ~1.6 GHz, 700 W) stored
    as `accelbench peak` stores it, as measured on this host."""
    now = [0.0]
    search = _run(ReplayedH200(now), now)
    with Store(db) as store:
        run_id = store.start_run({"hostname": socket.gethostname()}, {"command": "peak", "device": device})
        store.add_results(run_id, search_measurements(search, "torch", device, dtype, search.final_check))
        store.finish_run(run_id, "complete")
    return run_id


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "r.sqlite")
    store_pair(path, "cpu", "float32")   # a device this machine's inventory has: info shows it
    store_pair(path, "cuda:0")
    return path


def test_ceilings_names_the_pair_with_its_facts(db):
    code, text = cli(["ceilings", "--db", db])
    assert code == 0 and "Maximum and sustained matmul rate (accelbench peak):" in text
    shown = text.split("(accelbench peak):", 1)[1]
    assert "cuda:0 bfloat16 maximum 79" in shown and "n=8192 · 1,980 MHz · 700 W" in shown
    assert "95% CI" in shown and "10 batches of the best burst" in shown
    assert "cuda:0 bfloat16 sustained 6" in shown and "· settled)" in shown
    assert "search: " in shown and "grid orders and" in shown and "neighbours of the best" in shown
    assert max(len(line) for line in text.splitlines()) <= 80


def test_ceilings_json_attaches_the_pair_to_its_matmul_ceiling(db):
    code, text = cli(["ceilings", "--db", db, "--json"])
    ceilings = {(c["device"], c["metric"]): c for c in json.loads(text)}
    pair = ceilings[("cuda:0", "bf16")]["peak_pair"]
    assert pair["maximum"]["clock_mhz"] == 1980.0 and pair["maximum"]["samples"] == 10
    assert pair["maximum"]["ci_low_flops"] < pair["maximum"]["rate_flops"] < pair["maximum"]["ci_high_flops"]
    assert pair["sustained"]["settled"] is True and pair["sustained"]["power_w"] == 700.0
    assert "grid orders" in pair["maximum"]["coverage"] and pair["run_id"]


def test_info_shows_the_pair_under_its_device(db):
    code, text = cli(["info", "--db", db])
    assert code == 0
    cpu_block = text.split("Probes", 1)[0]
    assert "Max/sustained" in cpu_block and "float32 maximum 79" in cpu_block and "1,980 MHz" in cpu_block
    assert "float32 sustained 6" in cpu_block and "search:" in cpu_block
    assert max(len(line) for line in text.splitlines()) <= 80
    code, text = cli(["info", "--db", db, "--json"])
    device = next(d for d in json.loads(text)["devices"] if d["id"] == "cpu")
    pair = device["properties"]["matmul_peak_pairs"]["float32"]
    assert pair["maximum"]["n"] == 8192 and pair["sustained"]["clock_mhz"] == pytest.approx(1600, abs=30)


def test_the_report_has_a_table_of_the_pair(db, tmp_path):
    run_id = store_pair(db, "cuda:0")
    code, _ = cli(["report", run_id, "--db", db, "-o", str(tmp_path / "report")])
    page = (tmp_path / "report" / "report.html").read_text()
    assert code == 0 and 'id="peak-pair"' in page
    table = page.split('id="peak-pair"', 1)[1].split("</table>", 1)[0]
    for words in ("maximum (best burst, its batches)", "sustained (last windows of the hold)", "n=8192",
                  "1,980 MHz", "700 W", "10 samples", ">yes<", "neighbours of the best"):
        assert words in table, words
    assert ">baseline<" not in page  # neither figure is a CPU baseline


def test_export_and_import_carry_the_pair_and_ceilings_names_it_there(db, tmp_path):
    exported = tmp_path / "peak.json"
    run_id = store_pair(db, "cuda:0")
    code, _ = cli(["export", run_id, "--db", db, "-o", str(exported)])
    assert code == 0 and exported.is_file()
    other = str(tmp_path / "other.sqlite")
    code, _ = cli(["import", str(exported), "--db", other])
    assert code == 0
    with Store(other, create=False) as store:
        kinds = sorted(m.spec.param("peak") for m, _ in store.ceiling_candidates(socket.gethostname()))
    assert kinds == []  # an imported run never sets this machine's ceilings...
    code, text = cli(["ceilings", "--db", other])
    assert code == 0 and "(shown, never this machine's ceilings):" in text  # ...but ceilings names its pair
    shown = text.split("this machine's ceilings):", 1)[1]
    assert "cuda:0 bfloat16 maximum 79" in shown and "1,980 MHz" in shown and "10 batches" in shown
    assert "sustained 6" in shown and "settled" in shown and "search: " in shown
    code, text = cli(["report", run_id, "--db", other, "-o", str(tmp_path / "imported")])
    page = (tmp_path / "imported" / "report.html").read_text()
    assert 'id="peak-pair"' in page and "1,980 MHz" in page and "10 samples" in page


@pytest.mark.slow  # a real 8-second search on this CPU, then a plain run beside it
def test_a_run_of_peak_results_alone_says_nothing_wrong(tmp_path):
    db = str(tmp_path / "peak.sqlite")
    code, text = cli(["peak", "--device", "cpu", "--budget", "8", "--orders", "64,128", "--db", db])
    assert code == 0 and max(len(line) for line in text.splitlines()) <= 80
    assert "best burst's" in " ".join(text.split()) and "batches" in text  # the maximum's spread, in words
    code, _ = cli(["report", "latest", "--db", db, "-o", str(tmp_path / "report")])
    page = (tmp_path / "report" / "report.html").read_text()
    headline = page.split('class="headline"', 1)[1].split("<h3>Findings", 1)[0]
    assert "faster" not in headline and "slower" not in headline   # no speed-up from a search's figures
    assert "(cpu) found, not measured" not in headline             # the CPU it searched was measured
    assert ">baseline<" not in page and "0 FLOP/byte" not in page
    code, _ = cli(["run", "matmul", "--sizes", "64", "--dtype", "float32", "--device", "cpu", "--backend", "numpy",
                   "--rigor", "quick", "--db", db, "--no-progress", "--no-telemetry"])
    code, text = cli(["compare", "latest~1", "latest", "--db", db])
    assert "share no spec" in text or "Only in A" in text  # peak=maximum n=64 is not the plain n=64
    assert "same" not in text.split("Summary:", 1)[-1].split(",")[0] or "0 same" in text
