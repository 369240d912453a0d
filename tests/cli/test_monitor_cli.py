"""`accelbench monitor` as a user types it: JSON lines, CSV, headless lines, the summary, Ctrl-C."""
import json
import os
import signal
import subprocess
import sys
import time

from accelbench.cli.main import main


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_once_json_prints_the_cpu_and_says_which_vendors_have_no_telemetry(capsys):
    code, out, _ = _run(capsys, "monitor", "--once", "--json", "--interval", "0.1")
    assert code == 0
    (line,) = out.strip().splitlines()
    frame = json.loads(line)
    cpu = frame["devices"]["cpu"]
    assert 0 <= cpu["utilization_percent"] <= 100
    assert cpu["memory_total_bytes"] > cpu["memory_used_bytes"] > 0
    assert len(cpu["core_utilization_percent"]) == os.cpu_count()
    gaps = {g["source"]: g for g in frame["no_telemetry"]}
    assert "opencl" in gaps and "OpenCL has no API" in gaps["opencl"]["reason"]
    ids = set(frame["devices"])
    has_data = {"nvml": any(i.startswith("cuda:") for i in ids), "amdsmi": any(i.startswith("rocm:") for i in ids),
                "ioreg": "mps" in ids, "rapl": "power_w" in cpu}
    for source, seen in has_data.items():  # this VM has none of them: each is named, with its reason
        assert seen or (gaps[source]["status"] and gaps[source]["reason"])


def test_duration_ends_with_the_summary(capsys):
    code, out, _ = _run(capsys, "monitor", "--duration", "3", "--interval", "0.25", "--json")
    assert code == 0
    lines = [json.loads(x) for x in out.strip().splitlines()]
    frames, summary = lines[:-1], lines[-1]["summary"]
    assert len(frames) >= 2 and all("devices" in f for f in frames)
    assert summary["window_s"] >= 2.9
    stats = summary["devices"]["cpu"]["metrics"]["utilization_percent"]
    assert stats["min"] <= stats["mean"] <= stats["max"] and stats["samples"] >= 2


def test_csv_has_a_header_and_one_row_per_device(capsys):
    code, out, err = _run(capsys, "monitor", "--csv", "--once", "--interval", "0.1")
    header, row = out.strip().splitlines()
    assert code == 0 and header.startswith("time_s,device,utilization_percent")
    assert row.split(",")[1] == "cpu"
    assert "No telemetry here" in err  # the gaps go to stderr, the CSV stays clean


def test_bad_interval_is_a_usage_error(capsys):
    code, _, err = _run(capsys, "monitor", "--interval", "0")
    assert code == 2 and "--interval" in err


def _start(*args):
    return subprocess.Popen([sys.executable, "-m", "accelbench", "monitor", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "200"})


def test_headless_plain_lines_without_a_terminal():
    done = _start("--duration", "1", "--interval", "0.2")
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    assert "\x1b[" not in out  # no terminal control codes in a pipe
    assert sum(1 for line in out.splitlines() if " cpu  Utilization" in line) >= 2
    assert "No telemetry here:" in out and "Summary over" in out
    assert "Samples" in out and "Max" in out and "Avg" in out


def test_ctrl_c_still_prints_the_summary():
    proc = _start("--interval", "0.1", "--json")
    first = proc.stdout.readline()  # wait until it is running
    assert json.loads(first)["devices"]["cpu"]
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "summary" in json.loads(out.strip().splitlines()[-1])


def test_sigterm_during_a_long_interval_ends_promptly_with_the_summary():
    proc = _start("--interval", "30", "--json")
    time.sleep(1.5)  # started, waiting for its first reading 30 s away
    sent = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert time.perf_counter() - sent < 10
    assert proc.returncode == 0, err
    assert "summary" in json.loads(out.strip().splitlines()[-1])


def test_a_recorded_stop_ends_the_loop_even_when_no_exception_reaches_it():
    # what a KeyboardInterrupt swallowed in a destructor leaves behind: the signal recorded, nothing raised
    from types import SimpleNamespace

    from accelbench.cli import monitor_cmd
    from accelbench.timing import checkpoint

    polls = []

    def poll():
        polls.append(1)
        if len(polls) == 2:
            checkpoint.request_stop(signal.SIGINT)

    sampler = SimpleNamespace(poll=poll)
    output = SimpleNamespace(frame=lambda s: None)
    try:
        started = time.perf_counter()
        assert monitor_cmd._loop(SimpleNamespace(interval=0.05, once=False, duration=5.0), sampler, output) is True
        assert len(polls) == 2 and time.perf_counter() - started < 5
    finally:
        checkpoint.clear_stop()
