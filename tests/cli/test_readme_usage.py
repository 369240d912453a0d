"""The README as a newcomer follows it (issue 28): the `accelbench run` its first command ends with,
its Python snippet, `accelbench report` (which once showed the snippet's run), then every line of its
Usage block in order, each through bash as written, in a fresh HOME and results database, each checked for
the exit status and the kind of output a user expects. After the snippet, `report`, `compare` and
`export` must mean the command line's latest run, not the snippet's.

Two things differ from a newcomer's shell, to fit a test's time: `accelbench run` is narrowed by a
wrapper earlier on PATH (numpy, plus pyopencl for a named OpenCL device, at `--rigor quick`; devices
still as each line names them, the CPU when none is named), and the `submit` lines are not run:
they name a cluster's nodes and partition (tests/cluster runs submit on a local Slurm), so `fleet`
answers as it does where nothing was submitted. About 6 to 10 minutes on 2 busy cores: the slow tier.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("torch")  # the snippet runs its functions through torch too

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RUN_NARROWING = "--backend numpy,pyopencl --rigor quick"  # appended to each `accelbench run` by the wrapper
WIDTH = 80  # piped output without COLUMNS


def usage_lines() -> list[str]:
    """The Usage block's commands as written, without their trailing comments."""
    block = re.search(r"## Usage\n\n```bash\n(.*?)```", README, re.S).group(1)
    return [re.sub(r"\s+#\s.*$", "", line).rstrip() for line in block.splitlines() if line.startswith("accelbench")]


def python_snippet() -> str:
    section = README[README.index("### Python\n"):README.index("## Extras\n")]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


class Shell:
    """bash in a fresh HOME, database and folder, with `accelbench run` narrowed by a wrapper."""

    def __init__(self, home: Path):
        self.home, self.db = home, home / "results.sqlite"
        real = shutil.which("accelbench", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
        if real is None:
            pytest.skip("the accelbench command is not installed (pip install -e .)")
        wrapper_dir = home / "wrapper"
        wrapper_dir.mkdir()
        wrapper = wrapper_dir / "accelbench"
        wrapper.write_text(f'#!/bin/bash\nif [ "$1" = run ]; then exec {real} "$@" {RUN_NARROWING}; fi\n'
                           f'exec {real} "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        self.env = {**os.environ, "HOME": str(home), "ACCELBENCH_DB": str(self.db), "ACCELBENCH_DEVICE": "cpu",
                    "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
                    "PATH": f"{wrapper_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        self.env.pop("COLUMNS", None)

    def __call__(self, line: str, stdin: str = "") -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", line], cwd=self.home, env=self.env, input=stdin, text=True,
                              capture_output=True, timeout=900)

    def runs(self) -> list[dict]:
        return json.loads(self("accelbench runs --json").stdout)


def cli_runs(shell: Shell) -> list[str]:
    """The command line's run ids, oldest first (the snippet's runs say via=python)."""
    return [r["id"] for r in reversed(shell.runs()) if r["selection"].get("via") != "python"]


def fits(text: str) -> bool:
    return all(len(line) <= WIDTH for line in text.splitlines())


def test_the_usage_lines_run_as_written_after_the_python_snippet(tmp_path):
    shell = Shell(tmp_path)
    first = shell("accelbench run")  # where the README's first command ends, before its Python section
    assert first.returncode == 0, first.stderr[-3000:]
    snippet = subprocess.run([sys.executable, "-c", python_snippet()], cwd=tmp_path, env=shell.env, text=True,
                             capture_output=True, timeout=900)
    assert snippet.returncode == 0, snippet.stderr[-3000:]
    python_runs = [r["id"] for r in shell.runs() if r["selection"].get("via") == "python"]
    assert len(python_runs) == 3, [(r["id"], r["selection"]) for r in shell.runs()]  # run, bench softmax, bench the product
    # what issue 28 saw: right after the snippet, `report` showed the snippet's last run
    report = shell("accelbench report -o after-snippet")
    assert report.returncode == 0 and f"report for run(s) {cli_runs(shell)[0]}" in " ".join(report.stdout.split())

    device_ids = {d["id"] for d in json.loads(shell("accelbench info --json").stdout)["devices"]}
    with_opencl, with_cuda = "opencl:0:0" in device_ids, "cuda:0" in device_ids
    lines = usage_lines()
    checked = []
    for line in lines:
        if line.startswith("accelbench submit"):
            checked.append(line)  # gpu01, gpu02, partition gpu: a cluster's names, not this machine's
            continue
        done = shell(line, stdin="all\n\n" if line == "accelbench setup" else "")
        said = done.stdout + done.stderr
        checked.append(line)
        if line == "accelbench fleet":
            # nothing was submitted: the answer says what fleet reads, in one line, exit 2
            assert done.returncode == 2 and "accelbench submit --each-node" in done.stderr, said
            continue
        if "cuda:0" in line and not with_cuda:
            # a GPU's line on a machine without one: one line naming what is reachable, exit 2
            assert done.returncode == 2 and "reachable here" in done.stderr and len(done.stderr.splitlines()) == 1, said
            continue
        if line.startswith("accelbench run matmul") and not with_opencl:
            assert done.returncode == 2 and "opencl:0:0" in done.stderr, said  # the device is named
            continue
        if line.startswith("accelbench compare a.json") or line == "accelbench check":
            # 0 decided / healthy, 1 slower / a fault, 3 undecided / busy: each is a result, 2 would be bad input
            assert done.returncode in (0, 1, 3), said
            assert done.stdout.strip().splitlines()[-1], said
        else:
            assert done.returncode == 0, f"{line}\n{said[-3000:]}"
        if "--json" not in line and "export" not in line:
            assert fits(done.stdout), f"{line}: a line over {WIDTH} columns\n{done.stdout}"
        check_output(shell, line, done.stdout, python_runs)
    assert checked == lines


def check_output(shell: Shell, line: str, out: str, python_runs: list[str]) -> None:
    """What a user expects each line to print; `latest` always a command-line run."""
    runs = cli_runs(shell) if re.match(r"accelbench (run|export|report)", line) else []
    if line == "accelbench info":
        assert "cpu" in out
    elif line == "accelbench info --json":
        assert any(d["id"] == "cpu" for d in json.loads(out)["devices"])
    elif line == "accelbench list":
        assert "Workloads" in out and "Backends" in out
    elif line == "accelbench run":
        assert out.startswith("The answer") or "\nThe answer" in out
        assert f"Run {runs[-1]}" in " ".join(out.split())
    elif line.startswith("accelbench run && accelbench compare latest~1 latest"):
        # the two suite runs this line made (after `accelbench run` and `run --wait-quiet 30`), not the snippet's
        assert len(runs) == 4 and runs[-2] in out and runs[-1] in out
        assert not any(run_id in out for run_id in python_runs)
    elif line.startswith("accelbench export latest~1"):
        ids = [json.loads((shell.home / name).read_text())["runs"][0]["id"] for name in ("a.json", "b.json")]
        assert ids == runs[-2:]
    elif line.startswith("accelbench run stream"):
        document = json.loads((shell.home / "stream.json").read_text())
        assert document["run_id"] == runs[-1] and document["headline"]["devices"] is not None
        assert {r["spec"]["workload"] for r in document["results"]} == {"stream"}
    elif line == "accelbench report":
        assert f"report for run(s) {runs[-1]}" in " ".join(out.split())  # the stream run: the latest of the CLI
        assert (shell.home / "accelbench-report" / "report.html").is_file() or "report.html" in out
    elif line.startswith("accelbench export --format csv"):
        with open(shell.home / "results.csv", newline="", encoding="utf-8") as table:
            assert {row["run_id"] for row in csv.DictReader(table)} == {runs[-1]}
    elif line.startswith("accelbench project"):
        assert "H100" in out
    elif line.startswith("accelbench monitor"):
        assert "cpu" in out
    elif line == "accelbench setup":
        assert "Saved to" in out
