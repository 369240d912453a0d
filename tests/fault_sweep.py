"""A fault-injection sweep over the commands that write, in the manner of SQLite's own I/O-error
tests: every write, sync, rename, link and unlink a command makes is failed in turn (strace
`-e inject=SYSCALL:error=E:when=N`, for every N up to the last), and commands are SIGKILLed at
seeded random moments. After each: the database opens (through the CLI, which recovers it) and
passes PRAGMA integrity_check and foreign_key_check; it holds all or none of the interrupted work;
no partial file sits under a final name and no temporary file is left; a non-zero exit is one
`accelbench CMD: error:` line, and exit 0 means every output is whole.

`python tests/fault_sweep.py [--seed S]` runs the full sweep and prints the figures for
docs/reliability.md; tests/cli/test_fault_sweep.py runs a seeded sample (and all of it under
ACCELBENCH_FULL_SWEEP=1).
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

V1 = Path(__file__).parent / "data" / "db" / "v1.sqlite"
ERRORS = {"write": "ENOSPC", "pwrite64": "ENOSPC", "fsync": "EIO", "fdatasync": "EIO",
          "rename": "ENOSPC", "link": "ENOSPC", "unlink": "EIO"}
TEMPORARY = re.compile(r"(\.tmp|\.creating|\.partial)$")
ACCELBENCH = [sys.executable, "-m", "accelbench"]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*ACCELBENCH, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          check=False, errors="backslashreplace")


@dataclass
class Case:
    """One command: how to set its folder up, its arguments, what its output must look like."""

    name: str
    argv: Callable[[Path], list[str]]
    outputs: Callable[[Path], list[str]] = lambda folder: []  # problems with its output files
    new_runs: int = 0  # runs the command adds (all of them, or none)
    path_first: str = ""  # a folder of the template put first on PATH (fake commands)
    # problems with an exit 0, given its folder and its stdout and stderr: a write it went past unsaid
    unsaid: Callable[[Path, str], list[str]] = lambda folder, said: []

    def environment(self, folder: Path) -> dict[str, str]:
        if not self.path_first:
            return dict(os.environ)
        return {**os.environ, "PATH": f"{folder / self.path_first}{os.pathsep}{os.environ.get('PATH', '')}"}


def run_ids(folder: Path) -> list[str]:
    done = cli("runs", "--json", "--limit", "1000", "--db", folder / "r.sqlite")
    if done.returncode != 0:
        raise AssertionError(f"the database does not open: {done.stderr.strip()}")
    return sorted(run["id"] for run in json.loads(done.stdout))


def _json_whole(path: Path, ids: int) -> list[str]:
    if not path.exists():
        return []
    try:
        return [] if len(json.loads(path.read_text())["runs"]) == ids else [f"{path.name}: runs missing"]
    except (ValueError, KeyError) as exc:
        return [f"{path.name} is partial: {exc}"]


def _report_whole(folder: Path) -> list[str]:
    out, problems = folder / "out", []
    html = out / "report.html"
    if html.exists() and not html.read_text(errors="replace").rstrip().endswith("</html>"):
        problems.append("report.html is partial")
    for png in out.glob("*.png") if out.is_dir() else ():
        if not png.read_bytes().endswith(b"IEND\xaeB`\x82"):
            problems.append(f"{png.name} is partial")
    return problems


def _settings_whole(folder: Path) -> list[str]:
    path = folder / "settings.toml"
    if path.exists() and 'devices = ["cpu"]' not in path.read_text():
        return ["settings.toml is partial"]
    return []


GATHERED_JOBS = {"101": 2, "102": 1}  # job id -> runs in its results file


def _manifest_whole(folder: Path) -> list[str]:
    """gather rewrites the manifest once, to remember the states Slurm gave: the file parses and
    lists the same jobs, and either every job holds its new state or none does."""
    try:
        jobs = json.loads((folder / "cluster" / "manifest.json").read_text())["jobs"]
    except (OSError, ValueError, KeyError) as exc:
        return [f"manifest.json is partial: {exc}"]
    problems = [] if [job["job_id"] for job in jobs] == list(GATHERED_JOBS) else ["manifest.json lost jobs"]
    if len({job["last_state"].get("state") for job in jobs}) != 1:
        problems.append(f"manifest.json holds some states, not all: {[job['last_state'] for job in jobs]}")
    return problems


def _manifest_failure_said(folder: Path, said: str) -> list[str]:
    try:
        jobs = json.loads((folder / "cluster" / "manifest.json").read_text())["jobs"]
    except (OSError, ValueError, KeyError):
        return []  # a partial manifest: _manifest_whole names it
    remembered = all(job["last_state"].get("state") == "COMPLETED" for job in jobs)
    if remembered or "does not remember Slurm's states" in said or "Slurm could not be asked" in said:
        return []
    return ["exit 0 without a word, but the manifest was not updated"]


CASES = {
    "import": Case("import", lambda f: ["import", f / "doc.json", "--db", f / "r.sqlite"], new_runs=2),
    "export": Case("export", lambda f: ["export", "--all", "-o", f / "out.json", "--db", f / "r.sqlite"],
                   outputs=lambda f: _json_whole(f / "out.json", 3)),
    "export-csv": Case("export-csv", lambda f: ["export", "--all", "--format", "csv", "-o", f / "out.csv",
                                                "--db", f / "r.sqlite"]),
    "report": Case("report", lambda f: ["report", "latest", "-o", f / "out", "--db", f / "r.sqlite"], outputs=_report_whole),
    "setup": Case("setup", lambda f: ["setup", "--device", "cpu", "--yes", "--settings", f / "settings.toml"],
                  outputs=_settings_whole),
    "run": Case("run", lambda f: ["run", "reduce", "--backend", "numpy", "--device", "cpu", "--sizes", "100000",
                                  "--rigor", "quick", "--db", f / "r.sqlite"], new_runs=1),
    "gather": Case("gather", lambda f: ["gather", f / "cluster", "--db", f / "r.sqlite"],
                   outputs=_manifest_whole, new_runs=sum(GATHERED_JOBS.values()), path_first="slurm-bin",
                   unsaid=_manifest_failure_said),
}


def prepare(base: Path) -> None:
    """The template every point starts from: a database with three runs, an export of two others."""
    base.mkdir(parents=True, exist_ok=True)
    shutil.copy(V1, base / "v1.sqlite")
    assert cli("export", "--all", "-o", base / "v1.json", "--db", base / "v1.sqlite").returncode == 0
    document = json.loads((base / "v1.json").read_text())
    runs = document["runs"]
    (base / "three.json").write_text(json.dumps({**document, "runs": [*runs, {**runs[0], "id": "extra-0"}]}))
    (base / "doc.json").write_text(json.dumps({**document, "runs": [{**run, "id": f"new-{i}"}
                                                                   for i, run in enumerate(runs)]}))
    assert cli("import", base / "three.json", "--db", base / "r.sqlite").returncode == 0
    _prepare_cluster(base, document)
    for name in ("v1.json", "three.json", "v1.sqlite", "v1.sqlite.v1-backup"):
        (base / name).unlink(missing_ok=True)


def _prepare_cluster(base: Path, document: dict) -> None:
    """A results folder `accelbench submit` made, its jobs finished (GATHERED_JOBS), and a Slurm
    that says they completed (squeue; scontrol has forgotten them), so gather writes the manifest."""
    from accelbench.cluster.manifest import add_jobs
    from cluster_folder import OK_STATUS, fake_slurm, finish_job, job_record

    results, runs = base / "cluster", document["runs"]
    add_jobs(results, [job_record(job_id, index) for index, job_id in enumerate(GATHERED_JOBS, 1)])
    for job_id, count in GATHERED_JOBS.items():
        job_runs = [{**runs[i % len(runs)], "id": f"job{job_id}-{i}"} for i in range(count)]
        finish_job(results, job_id, OK_STATUS, document={**document, "runs": job_runs})
    fake_slurm(base / "slurm-bin", GATHERED_JOBS)


def fresh_copy(base: Path, scratch: Path) -> Path:
    folder = Path(tempfile.mkdtemp(dir=scratch))
    for item in base.iterdir():
        if item.is_dir():
            shutil.copytree(item, folder / item.name, symlinks=True)
        else:
            shutil.copy(item, folder / item.name)
    return folder


@dataclass
class Point:
    case: str
    fault: str  # "pwrite64#12" or "SIGKILL@0.31s"
    problems: list[str] = field(default_factory=list)
    hit: bool = True


def check(case: Case, folder: Path, before: list[str], done: subprocess.CompletedProcess | None,
          hit_fd: int | None, killed: bool = False) -> list[str]:
    problems: list[str] = []
    try:
        after = run_ids(folder)
    except AssertionError as exc:
        return [str(exc)]
    with sqlite3.connect(folder / "r.sqlite") as conn:
        if conn.execute("PRAGMA integrity_check").fetchone() != ("ok",):
            problems.append("integrity_check failed")
        if conn.execute("PRAGMA foreign_key_check").fetchall():
            problems.append("foreign_key_check failed")
    added = len(after) - len(before)
    if not set(before) <= set(after) or added not in (0, case.new_runs):
        problems.append(f"runs before {len(before)}, after {len(after)}: not all or none")
    problems += case.outputs(folder)
    leftovers = [p.name for p in folder.rglob("*") if TEMPORARY.search(p.name)]
    if leftovers and not (done is not None and hit_fd == -1):  # an unlink that failed cannot clean up
        if not killed:
            problems.append(f"temporary files left: {leftovers}")
    if done is not None and not killed:
        problems += _exit_problems(case, done, hit_fd, added)
        if done.returncode == 0:
            problems += case.unsaid(folder, done.stdout + done.stderr)
    return problems


def _exit_problems(case: Case, done: subprocess.CompletedProcess, hit_fd: int | None, added: int) -> list[str]:
    if "Traceback" in done.stderr:
        frames = [line.strip() for line in done.stderr.splitlines() if line.strip().startswith("File ")]
        return [f"a traceback: {done.stderr.strip().splitlines()[-1]} ({frames[-1] if frames else ''})"]
    if done.returncode == 0:
        return [] if added == case.new_runs else ["exit 0, but its runs were not stored"]
    if hit_fd == 2:  # the error line itself could not be written
        return []
    lines = done.stderr.strip().splitlines()
    command = case.name.split("-")[0]
    if not lines or not lines[-1].startswith(f"accelbench {command}: error: "):
        return [f"exit {done.returncode} without an error line: {lines[-1:] or 'nothing'}"]
    return []


def count_calls(case: Case, base: Path, scratch: Path) -> dict[str, int]:
    """How often the command (its first process) makes each injectable call."""
    folder = fresh_copy(base, scratch)
    log = folder / "strace.log"
    subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-e", f"trace=execve,{','.join(ERRORS)}", *ACCELBENCH,
                    *map(str, case.argv(folder))], capture_output=True, timeout=300, check=False,
                   env=case.environment(folder))
    lines = log.read_text().splitlines()
    main = next((line.split()[0] for line in lines if "execve(" in line), "")  # the command's own process
    counts = {name: 0 for name in ERRORS}
    for line in lines:
        pid, _, rest = line.partition(" ")
        name = rest.lstrip().split("(")[0]
        if pid == main and name in counts:
            counts[name] += 1
    shutil.rmtree(folder)
    return counts


def inject(case: Case, base: Path, scratch: Path, syscall: str, n: int) -> Point:
    folder = fresh_copy(base, scratch)
    before = run_ids(folder)
    log = folder / "strace.out"
    done = subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-e", f"trace={syscall}", "-e",
                           f"inject={syscall}:error={ERRORS[syscall]}:when={n}", *ACCELBENCH,
                           *map(str, case.argv(folder))], capture_output=True, text=True, timeout=300,
                          check=False, errors="backslashreplace", env=case.environment(folder))
    injected = [line for line in log.read_text().splitlines() if "INJECTED" in line]
    log.unlink()
    fd = None
    if injected:
        found = re.search(rf"{syscall}\((\d+)", injected[0])
        fd = int(found.group(1)) if found and syscall in ("write", "pwrite64") else -1 if syscall == "unlink" else None
    point = Point(case.name, f"{syscall}#{n}", check(case, folder, before, done, fd), hit=bool(injected))
    shutil.rmtree(folder)
    return point


def kill(case: Case, base: Path, scratch: Path, delay_s: float) -> Point:
    folder = fresh_copy(base, scratch)
    before = run_ids(folder)
    child = subprocess.Popen([*ACCELBENCH, *map(str, case.argv(folder))], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=case.environment(folder))
    time.sleep(delay_s)
    child.send_signal(signal.SIGKILL)
    child.wait()
    point = Point(case.name, f"SIGKILL@{delay_s:.2f}s", check(case, folder, before, None, None, killed=True))
    shutil.rmtree(folder)
    return point


def untraced_duration(case: Case, base: Path, scratch: Path) -> float:
    """How long the command takes without strace: kills are drawn within it, so they land while it
    works (a traced run is several times slower, and a kill after the end tests nothing)."""
    folder = fresh_copy(base, scratch)
    started = time.monotonic()
    subprocess.run([*ACCELBENCH, *map(str, case.argv(folder))], capture_output=True, timeout=300, check=False,
                   env=case.environment(folder))
    elapsed = time.monotonic() - started
    shutil.rmtree(folder)
    return elapsed


def sweep(cases: list[str], sample: int | None = None, kills: int = 5, seed: int = 1,
          log: Callable[[str], None] = lambda _: None) -> list[Point]:
    """Every injection point of each case (or `sample` of them, seeded), and `kills` random SIGKILLs."""
    rng = random.Random(seed)
    points: list[Point] = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        base = scratch / "base"
        prepare(base)
        for name in cases:
            case = CASES[name]
            counts = count_calls(case, base, scratch)
            todo = [(s, n) for s, total in counts.items() for n in range(1, total + 1)]
            if sample is not None:
                todo = rng.sample(todo, min(sample, len(todo)))
            log(f"{name}: {sum(counts.values())} calls {counts}; injecting {len(todo)}")
            for syscall, n in todo:
                points.append(inject(case, base, scratch, syscall, n))
                if points[-1].problems:
                    log(f"  {name} {points[-1].fault}: {points[-1].problems}")
            duration = untraced_duration(case, base, scratch)
            for _ in range(kills):
                points.append(kill(case, base, scratch, rng.uniform(0.05, max(duration, 0.2))))
                if points[-1].problems:
                    log(f"  {name} {points[-1].fault}: {points[-1].problems}")
    return points


def summary(points: list[Point]) -> str:
    rows = ["| command | injection points | held | SIGKILLs | held |", "|---|---|---|---|---|"]
    for name in dict.fromkeys(p.case for p in points):
        faults = [p for p in points if p.case == name and not p.fault.startswith("SIGKILL")]
        kills = [p for p in points if p.case == name and p.fault.startswith("SIGKILL")]
        rows.append(f"| {name} | {len(faults)} | {sum(not p.problems for p in faults)} | {len(kills)} | "
                    f"{sum(not p.problems for p in kills)} |")
    return "\n".join(rows)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", default=list(CASES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sample", type=int)
    parser.add_argument("--kills", type=int, default=10)
    options = parser.parse_args()
    result = sweep(options.cases, options.sample, options.kills, options.seed, log=print)
    print(summary(result))
    sys.exit(1 if any(p.problems for p in result) else 0)
