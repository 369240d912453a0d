"""`accelbench run` as a user types it: results stored, bad input refused with exit 2, kills survived."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from accelbench.cli.main import main
from accelbench.store.db import Store


def test_run_stores_verified_results_and_prints_tables(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    code = main(["run", "matmul", "--sizes", "64,128", "--dtype", "float32", "--backend", "numpy",
                 "--rigor", "quick", "--db", str(db), "--no-progress", "--details"])
    out = capsys.readouterr().out
    assert code == 0
    assert "matmul" in out and "GFLOP/s" in out and "baseline" in out and "1 thread" in out
    assert main(["show", "--db", str(db)]) == 0  # the same tables for the stored run
    shown = capsys.readouterr().out
    assert "GFLOP/s" in shown and "baseline" in shown and "1 thread" in shown
    with Store(db) as store:
        (run,) = store.runs()
        results = store.results(run.id)
        assert run.status == "complete" and len(results) == 4  # 2 sizes × (1 thread, all threads)
        assert all(m.check.passed for m in results)
        assert store.machine(run.id)["inventory"]["devices"][0]["id"] == "cpu"


def test_json_output(tmp_path, capsys):
    code = main(["run", "reduce", "--sizes", "4096", "--backend", "numpy", "--rigor", "quick",
                 "--db", str(tmp_path / "r.sqlite"), "--json", "--no-progress"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["results"]
    first = document["results"][0]
    assert first["derived"]["rate_unit"] == "GB/s" and first["check"]["passed"] and first["derived"]["median_s"] > 0


@pytest.mark.parametrize("argv, named", [
    (["run", "fft"], "'fft'"),
    (["run", "matmul", "--device", "cuda:9"], "'cuda:9'"),
    (["run", "matmul", "--dtype", "float8"], "'float8'"),
    (["run", "matmul", "--sizes", "0"], "'0'"),
    (["run", "matmul", "--sizes", "1000000", "--backend", "numpy"], "n=1000000"),
    (["run", "matmul", "--backend", "tensorflow"], "'tensorflow'"),
])
def test_bad_input_exits_2_naming_it(argv, named, capsys):
    assert main(argv) == 2
    assert named in capsys.readouterr().err


def test_unwritable_and_corrupt_databases_exit_2(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    base = ["run", "reduce", "--sizes", "1024", "--backend", "numpy", "--rigor", "quick", "--no-progress"]
    assert main(base + ["--db", str(blocker / "r.sqlite")]) == 2
    assert str(blocker) in capsys.readouterr().err
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"this is not a database" * 100)
    assert main(base + ["--db", str(corrupt)]) == 2
    assert "corrupt.sqlite" in capsys.readouterr().err


def test_sigkill_mid_run_keeps_every_finished_result(tmp_path):
    db = tmp_path / "killed.sqlite"
    command = [sys.executable, "-m", "accelbench", "run", "stream", "elementwise", "reduce", "--sizes", "65536,131072",
               "--backend", "numpy", "--rigor", "quick", "--db", str(db)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    reported, deadline = 0, time.monotonic() + 120
    while reported < 3 and time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        reported += line.startswith("[")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert reported >= 3, "the run reported too few results before the kill"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] + \
            conn.execute("SELECT COUNT(*) FROM skips").fetchone()[0]
        status = conn.execute("SELECT status FROM runs").fetchone()[0]
    assert stored >= reported and status == "running"


def test_a_run_that_measured_nothing_exits_1_with_the_reason_to_act_on(tmp_path, capsys):
    from accelbench.cli.main import main as cli_main

    db = str(tmp_path / "r.db")
    code = cli_main(["run", "mlp", "--backend", "numpy", "--device", "cpu", "--db", db, "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert "nothing was measured (2 skipped)" in err and "use --backend torch" in err


def test_the_answer_comes_first_in_the_terminal_and_in_json(tmp_path, capsys):
    db = str(tmp_path / "r.sqlite")
    argv = ["run", "matmul", "--sizes", "64,128", "--dtype", "float32", "--backend", "numpy,torch",
            "--device", "cpu", "--rigor", "quick", "--db", db, "--no-progress"]
    pytest.importorskip("torch")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.index("The answer") < out.index("Speed-ups"), out  # before the table
    entry = " ".join(out[out.index("The answer"):].split("•", 2)[1].split())  # wrapped at 80 columns when piped
    # against numpy's all cores, or, where torch was the fastest on the CPU (the baseline), against one core
    assert "torch@cpu" in entry and "the CPU, " in entry and ("all CPU cores" in entry or "one core" in entry)
    assert main(argv + ["--json"]) == 0
    headline = json.loads(capsys.readouterr().out)["headline"]
    (torch_entry,) = headline["devices"]
    assert torch_entry["series"].startswith("torch@cpu") and torch_entry["comparisons"][0]["kind"] == "compute-bound"
    # the largest size with a valid speed-up: 128, or 64 where a busy machine left 128 without one
    assert torch_entry["comparisons"][0]["what"] in ("matmul float32 n=128", "matmul float32 n=64")
    assert set(torch_entry["verdicts"]) <= {"valid", "noisy", "unverified", "invalid"} and torch_entry["text"]
