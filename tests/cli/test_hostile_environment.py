"""Hostile environments of the reliability classes (docs/reliability.md), through the command line:
standard streams closed at start-up or a reader gone, a FIFO or device planted where a file is
read, a lock file or a page name planted in a results folder, undecodable bytes in the
environment. Each case has a time limit: a FIFO that blocks an open fails the test, not the suite."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from error_lines import one_error_line

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="FIFOs, fd redirections, /dev/null")

V1 = Path(__file__).parents[1] / "data" / "db" / "v1.sqlite"
ACCELBENCH = [sys.executable, "-m", "accelbench"]
LIMIT_S = 60


def _cli(*args: str | bytes, **kwargs) -> subprocess.CompletedProcess:
    options = {"capture_output": True, "timeout": LIMIT_S, "check": False, "text": True,
               "errors": "backslashreplace", **kwargs}
    return subprocess.run([*ACCELBENCH, *args], **options)


def _in_bash(script: str, **kwargs) -> subprocess.CompletedProcess:
    """`accelbench` as `$A` in a bash script, for redirections such as >&- that subprocess cannot make."""
    command = " ".join(ACCELBENCH)
    return subprocess.run(["bash", "-c", f"A='{command}'; {script}"], capture_output=True, text=True,
                          timeout=LIMIT_S, check=False, errors="backslashreplace", **kwargs)


@pytest.fixture
def db(tmp_path) -> Path:
    path = Path(shutil.copy(V1, tmp_path / "results.sqlite"))
    assert _cli("runs", "--db", str(path)).returncode == 0  # upgraded once, here
    return path


# -- standard streams -------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["runs"], ["ceilings"]], ids=["runs", "ceilings"])
def test_a_table_into_a_pipe_whose_reader_has_gone_ends_with_141_and_says_nothing(db, command):
    read, write = os.pipe()
    os.close(read)  # `accelbench runs | head -0`: the reader is gone before the first line
    try:
        done = _cli(*command, "--db", str(db), stdout=write, stderr=subprocess.PIPE, capture_output=False)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")  # rich's own exit was 1


def test_standard_output_closed_at_start_up_is_one_line_not_a_traceback(db):
    done = _in_bash(f"exec 1>&-; $A runs --json --db {db}")
    assert done.returncode == 2
    assert "cannot write standard output: Bad file descriptor" in one_error_line(done, "runs")


def test_an_error_with_standard_error_closed_never_lands_in_standard_output(tmp_path):
    done = _in_bash(f"exec 2>&-; $A export --all --db {tmp_path / 'none.sqlite'}")
    assert done.returncode == 2 and done.stdout == ""  # print(file=None) wrote the error to stdout


def test_setup_with_standard_input_closed_cancels_as_at_end_of_input(tmp_path):
    settings = tmp_path / "settings.toml"
    done = _in_bash(f"exec 0<&-; $A setup --settings {settings}")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "setup cancelled" in done.stdout and not settings.exists()


# -- a FIFO or a device where a file is read --------------------------------------------------------

def test_a_fifo_or_a_device_as_the_database_is_refused_at_once(tmp_path):
    fifo = tmp_path / "results.sqlite"
    os.mkfifo(fifo)
    for path, command in ((fifo, "runs"), (fifo, "run"), ("/dev/null", "runs")):
        args = ["reduce", "--backend", "numpy", "--device", "cpu", "--sizes", "1000"] if command == "run" else []
        done = _cli(command, *args, "--db", str(path))
        assert done.returncode == 2 and "not a regular file" in one_error_line(done, command)


def test_importing_a_fifo_is_refused_at_once(db, tmp_path):
    fifo = tmp_path / "runs.json"
    os.mkfifo(fifo)
    done = _cli("import", str(fifo), "--db", str(db))
    assert done.returncode == 2 and "not a regular file" in one_error_line(done, "import")


def test_a_fifo_as_the_settings_file_is_refused_at_once(tmp_path):
    folder = tmp_path / "config" / "accelbench"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "settings.toml")
    done = _cli("setup", "--show", env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert done.returncode == 2 and "not a regular file" in one_error_line(done, "setup")


def _manifest(folder: Path) -> Path:
    """A results folder with one job sbatch refused: gather and fleet read it without asking Slurm."""
    folder.mkdir(parents=True, exist_ok=True)
    job = {"submission": "s1", "index": 1, "job_id": None, "target": {"repeat": 1}, "script": "",
           "submitted_at": "2026-01-01T00:00:00+00:00", "command": ["reduce"], "rejected": "refused",
           "kind": "run"}
    (folder / "manifest.json").write_text(json.dumps({"format": "accelbench-cluster-manifest",
                                                      "format_version": 1, "jobs": [job]}))
    return folder


@pytest.mark.parametrize("command", ["gather", "fleet"])
def test_a_fifo_as_the_job_manifest_is_refused_at_once(db, tmp_path, command):
    folder = tmp_path / "cluster"
    folder.mkdir()
    os.mkfifo(folder / "manifest.json")
    done = _cli(command, str(folder), "--db", str(db))
    assert done.returncode == 2 and "not a regular file" in one_error_line(done, command)


# -- files planted in a results folder --------------------------------------------------------------

@pytest.fixture
def fake_sbatch(tmp_path) -> tuple[dict, Path]:
    """An sbatch that accepts every job and leaves a mark: (environment, the mark)."""
    bin_dir, mark = tmp_path / "bin", tmp_path / "sbatch-called"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(f"#!/bin/sh\ntouch {mark}\necho 4242\n")
    (bin_dir / "sbatch").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, mark


@pytest.mark.parametrize("planted", ["fifo", "link"])
def test_a_planted_manifest_lock_is_refused_before_any_job_is_sent(tmp_path, fake_sbatch, planted):
    env, mark = fake_sbatch
    folder, outside = tmp_path / "results", tmp_path / "outside"
    folder.mkdir()
    if planted == "fifo":
        os.mkfifo(folder / ".manifest.lock")
    else:
        (folder / ".manifest.lock").symlink_to(outside)
    done = _cli("submit", "reduce", "--results-dir", str(folder), env=env)
    assert done.returncode == 2 and "cannot lock the job manifest" in one_error_line(done, "submit")
    assert not mark.exists() and not outside.exists()  # no job sbatch took went unrecorded


def test_the_fleet_page_is_never_written_onto_the_database(tmp_path):
    pytest.importorskip("matplotlib")
    folder = _manifest(tmp_path / "cluster")
    database = Path(shutil.copy(V1, folder / "index.html"))
    before = database.read_bytes()
    done = _cli("fleet", str(folder), "--db", str(database), "--html", str(folder))
    assert done.returncode == 2 and "which this command reads" in one_error_line(done, "fleet")
    assert database.read_bytes()[:16] == b"SQLite format 3\x00" and len(database.read_bytes()) >= len(before)


needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None,
                                reason="a read-only folder needs a read-only mount (root ignores permissions)")


@needs_root
def test_the_fleet_page_into_a_read_only_folder_is_one_line(db, tmp_path):
    pytest.importorskip("matplotlib")
    folder, media = _manifest(tmp_path / "cluster"), tmp_path / "ro"
    media.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(media)], check=False).returncode:
        pytest.skip("cannot mount here")
    try:
        done = _cli("fleet", str(folder), "--db", str(db), "--html", str(media / "page"))
    finally:
        subprocess.run(["umount", str(media)], check=False)
    assert done.returncode == 2 and "Read-only file system" in one_error_line(done, "fleet")


# -- text from outside ------------------------------------------------------------------------------

def test_undecodable_bytes_in_the_environment_are_stored_as_escapes(tmp_path):
    db = tmp_path / "r.sqlite"
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    env_bytes = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    env_bytes[b"OMP_NUM_THREADS"] = b"\xff"
    done = subprocess.run([*ACCELBENCH, "run", "reduce", "--backend", "numpy", "--device", "cpu", "--sizes",
                           "100000", "--db", str(db)], capture_output=True, timeout=240, check=False, env=env_bytes)
    assert done.returncode == 0, done.stderr
    exported = _cli("export", "--all", "--db", str(db))
    assert exported.returncode == 0, exported.stderr
    assert "\\udcff" not in exported.stdout  # a lone surrogate, which strict JSON readers refuse
    run = json.loads(exported.stdout)["runs"][0]
    assert run["machine"]["environment"]["OMP_NUM_THREADS"] == "\\xff"
