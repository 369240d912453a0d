"""One way to write, text from outside, native code at arm's length (docs/reliability.md): each
example of the reliability issue, through the command line as a user types it."""
from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from error_lines import one_error_line

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="ulimit, /dev/full and mounts")

V1 = Path(__file__).parents[1] / "data" / "db" / "v1.sqlite"
ACCELBENCH = [sys.executable, "-m", "accelbench"]


def _cli(*args: str, env: dict | None = None, cwd: Path | None = None, shell_prefix: str = "",
         stdout_to: str | None = None) -> subprocess.CompletedProcess:
    """`accelbench ARGS`, in bash so that a file-size limit or a redirection can come first."""
    command = " ".join(shlex.quote(a) for a in [*ACCELBENCH, *args])
    if stdout_to:
        command += f" > {shlex.quote(stdout_to)}"
    return subprocess.run(["bash", "-c", f"trap '' XFSZ; {shell_prefix} exec {command}"], capture_output=True,
                          text=True, timeout=240, check=False, env=env, cwd=cwd, errors="backslashreplace")


@pytest.fixture
def db(tmp_path) -> Path:
    path = Path(shutil.copy(V1, tmp_path / "results.sqlite"))
    assert _cli("runs", "--db", str(path)).returncode == 0  # upgraded once, here
    return path


def _run_ids(db: Path) -> list[str]:
    done = _cli("runs", "--json", "--db", str(db))
    assert done.returncode == 0, done.stderr
    return [run["id"] for run in json.loads(done.stdout)]


# -- 1. one way to write a file ---------------------------------------------------------------------

def test_export_onto_the_database_itself_is_refused_and_the_results_stay(db):
    before = _run_ids(db)
    done = _cli("export", "latest", "--db", str(db), "-o", str(db))
    assert done.returncode == 2 and "which this command reads" in one_error_line(done, "export")
    assert _run_ids(db) == before and len(before) == 2


def test_report_never_writes_through_a_planted_link(db, tmp_path):
    pytest.importorskip("matplotlib")
    outside, folder = tmp_path / "outside.txt", tmp_path / "report"
    outside.write_text("keep me")
    folder.mkdir()
    (folder / "report.html").symlink_to(outside)
    done = _cli("report", "-o", str(folder), "--db", str(db))
    assert done.returncode == 2 and "symbolic link" in one_error_line(done, "report")
    assert outside.read_text() == "keep me" and (folder / "report.html").is_symlink()


def test_export_to_standard_output_under_a_size_limit_fails_in_one_line(db, tmp_path):
    done = _cli("export", "--all", "--db", str(db), shell_prefix="ulimit -f 4;", stdout_to=str(tmp_path / "out.json"))
    assert done.returncode == 2
    assert "cannot write standard output: File too large" in one_error_line(done, "export")


def test_export_to_a_file_under_a_size_limit_leaves_nothing_under_its_name(db, tmp_path):
    target = tmp_path / "out.json"
    done = _cli("export", "--all", "--db", str(db), "-o", str(target), shell_prefix="ulimit -f 4;")
    assert done.returncode == 2 and "nothing was written under that name" in one_error_line(done, "export")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("results.sqlite")) == []


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB filesystem filled to its last block: a full disk, as a user meets it."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small filesystem needs root")
    media = tmp_path / "full"
    media.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(media)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        subprocess.run(["dd", "if=/dev/zero", f"of={media / 'filler'}", "bs=4k"], capture_output=True, check=False)
        yield media
    finally:
        subprocess.run(["umount", str(media)], check=False)


def test_export_to_standard_output_on_a_full_disk_fails_in_one_line(db, full_disk):
    done = _cli("export", "--all", "--db", str(db), stdout_to=str(full_disk / "out.json"))
    assert done.returncode == 2  # was 0, with a cut-short document and nothing on stderr
    assert "cannot write standard output: No space left on device" in one_error_line(done, "export")


def test_export_to_a_file_on_a_full_disk_leaves_nothing_under_its_name(db, full_disk):
    done = _cli("export", "--all", "--db", str(db), "-o", str(full_disk / "out.json"))
    assert done.returncode == 2 and "No space left on device" in one_error_line(done, "export")
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]


def test_a_table_into_a_full_device_is_one_line(db):
    done = _cli("runs", "--db", str(db), stdout_to="/dev/full")
    assert done.returncode == 2 and "No space left on device" in one_error_line(done, "runs")


def test_a_closed_pipe_stays_quiet(db):
    done = subprocess.run(["bash", "-c", " ".join(shlex.quote(a) for a in [*ACCELBENCH, "export", "--all",
                                                                           "--db", str(db)]) + " | head -c 1"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in done.stderr and "error" not in done.stderr


needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None,
                                reason="a read-only folder needs a read-only mount (root ignores permissions)")


@needs_root
def test_submit_dry_run_from_a_read_only_folder_is_one_line(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(folder)], check=False).returncode:
        pytest.skip("cannot mount here")
    try:
        done = _cli("submit", "reduce", "--dry-run", cwd=folder)
    finally:
        subprocess.run(["umount", str(folder)], check=False)
    assert done.returncode == 2 and "Read-only file system" in one_error_line(done, "submit")


def test_submit_dry_run_with_a_results_folder_under_a_file_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    done = _cli("submit", "reduce", "--dry-run", "--results-dir", str(tmp_path / "afile" / "results"))
    assert done.returncode == 2 and "is a file, not a folder" in one_error_line(done, "submit")


# -- 3. text from outside -------------------------------------------------------------------------

def test_lone_surrogates_in_an_import_and_undecodable_tags_are_stored_and_shown(db, tmp_path):
    exported = tmp_path / "e.json"
    assert _cli("export", "latest", "--db", str(db), "-o", str(exported)).returncode == 0
    document = json.loads(exported.read_text())
    run = document["runs"][0]
    run["id"], run["machine"]["hostname"], run["tags"] = "odd", "host\udcff", {"note": "\ud800"}
    exported.write_text(json.dumps(document))  # ASCII, with \\udcff escapes, as another tool may write
    target = tmp_path / "other.sqlite"
    done = subprocess.run([*ACCELBENCH, "import", os.fsencode(exported), "--db", str(target), "--tag",
                           b"site=caf\xe9"], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    listed = _cli("runs", "--json", "--db", str(target))
    assert listed.returncode == 0, listed.stderr
    shown = json.loads(listed.stdout)[0]
    assert shown["hostname"] == "host\\xff" and shown["tags"] == {"note": "\\ud800", "site": "caf\\xe9"}
    assert _cli("runs", "--db", str(target)).returncode == 0


def test_importing_a_device_file_is_refused_at_once(db):
    done = _cli("import", "/dev/zero", "--db", str(db))
    assert done.returncode == 2 and "not a regular file" in one_error_line(done, "import")


def test_a_run_under_a_narrow_output_encoding_ends_normally(tmp_path):
    env = {**os.environ, "PYTHONIOENCODING": "latin-1", "ACCELBENCH_DB": str(tmp_path / "r.sqlite")}
    done = _cli("run", "reduce", "--backend", "numpy", "--device", "cpu", "--sizes", "100000", env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


# -- 4. native code at arm's length ---------------------------------------------------------------

@pytest.mark.skipif(importlib.util.find_spec("pyopencl") is None, reason="the OpenCL probe needs pyopencl")
def test_an_llvm_abort_in_the_opencl_probe_does_not_end_the_command(tmp_path):
    env = {**os.environ, "POCL_CACHE_DIR": str(tmp_path / "pocl"), "ACCELBENCH_DB": str(tmp_path / "r.sqlite")}
    # 16 KiB: every PoCL writes a fresh kernel cache past it (the probe kernel's program.bc alone is
    # ~35 KB); 1 MiB was passed on Zen 4 but not on Zen 5, where Debian's PoCL takes a prebuilt
    # kernel library and writes 64 KB in all. `info` itself writes no file.
    info = _cli("info", "--json", env=env, shell_prefix="ulimit -f 16;")
    assert info.returncode == 0, info.stderr
    devices = [d for d in json.loads(info.stdout)["devices"] if d["id"].startswith("opencl:")]
    failures = [d["properties"].get("kernel_build_failure") or "" for d in devices]
    # LLVM aborts or exits on the failed write, in the child only, and the device says so
    assert failures and all(f.startswith(("the OpenCL probe aborted: ", "the OpenCL probe failed: "))
                            or "PoCL" in f for f in failures), failures
    run = _cli("run", "reduce", "--backend", "numpy", "--device", "cpu", "--sizes", "100000", env=env,
               shell_prefix="ulimit -f 1024;")
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
