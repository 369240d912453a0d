"""scripts/gpu_check.sh in its CPU mode, in an environment made like the offline GPU image: a fresh
venv holding only the image's packages (and what they depend on), linked from this environment;
no accelbench install, no orjson, mlxtend, pyopencl or jsonschema. It must run end to end, write
its files, and say "SKIP: no GPU" for every GPU part with exit status 0.
"""
from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what the GPU image has (docs/gpu-results.md); torch, jax and cupy there are CUDA builds; PIL is
# Pillow, which matplotlib requires (the PNG encoder of report/figure_base.py)
IMAGE_DISTRIBUTIONS = ("torch", "jax", "jaxlib", "cupy-cuda12x", "nvidia-ml-py", "numpy", "scipy", "matplotlib",
                       "pandas", "pytest", "rich", "psutil", "threadpoolctl")
IMAGE_MODULES = {"torch", "jax", "jaxlib", "cupy", "cupyx", "pynvml", "numpy", "scipy", "matplotlib", "PIL", "pandas",
                 "pytest", "rich", "psutil", "threadpoolctl"}
# imported somewhere in accelbench but not on the image: each has a fallback or is never reached there
NOT_ON_IMAGE = {"orjson": "store/document_io.py falls back to the standard json",
                "pyopencl": "the OpenCL probe and backend report it missing",
                "amdsmi": "the AMD probe reports it missing",
                "keras": "the keras-* backends report it missing and are used only where named",
                "cpuinfo": "read only where /proc/cpuinfo is empty",
                "tomli": "Python < 3.11 only; the image has 3.12's tomllib",
                "IPython": "the notebook progress line runs only inside a Jupyter kernel, where IPython is loaded"}
ABSENT_FROM_IMAGE = ("orjson", "mlxtend", "pyopencl", "jsonschema", "keras")


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def image_closure() -> list[importlib.metadata.Distribution]:
    """The image's distributions installed here, and everything they require (extras left out)."""
    wanted, seen, found = [_name(n) for n in IMAGE_DISTRIBUTIONS], set(), []
    while wanted:
        name = wanted.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # not here (jax, cupy, nvidia-ml-py): its paths are not run in CPU mode
        found.append(distribution)
        for requirement in distribution.requires or ():
            if "extra ==" not in requirement:
                wanted.append(_name(re.match(r"[A-Za-z0-9._-]+", requirement).group(0)))
    return found


@pytest.fixture(scope="module")
def image_python(tmp_path_factory) -> Path:
    """A venv with only the image's packages linked in: what a plain checkout meets there."""
    venv = tmp_path_factory.mktemp("image") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    for distribution in image_closure():
        base = Path(distribution.locate_file(""))
        for top in {Path(str(f)).parts[0] for f in distribution.files or ()}:
            source, target = base / top, site / top
            if top not in ("..", "__pycache__") and source.exists() and not target.exists() and not top.endswith(".pth"):
                target.symlink_to(source)
    return python


def test_the_image_venv_lacks_what_the_image_lacks(image_python):
    probe = ("import importlib.metadata as m, importlib.util as u, json; "
             f"print(json.dumps({{n: u.find_spec(n) is not None for n in {list(ABSENT_FROM_IMAGE)!r}}}))")
    found = json.loads(subprocess.run([str(image_python), "-c", probe], capture_output=True, text=True,
                                      check=True, env={"PATH": os.environ["PATH"]}).stdout)
    assert found == {name: False for name in ABSENT_FROM_IMAGE}
    no_install = subprocess.run([str(image_python), "-c", "import importlib.metadata as m; m.distribution('accelbench')"],
                                capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert "PackageNotFoundError" in no_install.stderr


@pytest.mark.slow
def test_cpu_mode_runs_end_to_end_and_skips_every_gpu_part(image_python, tmp_path):
    out = tmp_path / "evidence"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "OUT": str(out), "PYTHON": str(image_python),
           "PYTHONPATH": "src", "TMPDIR": str(tmp_path)}
    done = subprocess.run(["bash", "scripts/gpu_check.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=480)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in ("mode.json", "info.json", "run-cpu.json", "peak.json", "hand.json", "gpu-tests.xml", "gpu-tests.txt",
                 "report/report.html", "summary.txt", "summary.json", "steps.tsv", "results.sqlite"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    lines = {entry["name"]: entry for entry in json.loads((out / "summary.json").read_text())}
    skipped = [entry for entry in lines.values() if entry["status"] == "SKIP"]
    # every GPU line: the tutorials' 27 answers, the engine's 12 checks, the GPU-marked tests
    assert len(skipped) == 40 and all(entry["detail"].startswith("no GPU (") for entry in skipped)
    for name in ("inventory (info --all --json)", "CPU smoke run (pipeline)", "peak on this CPU (pipeline)",
                 "report HTML"):
        assert lines[name]["status"] == "PASS", lines[name]
    assert "FAIL" not in {entry["status"] for entry in lines.values()}
    text = (out / "summary.txt").read_text()
    assert "bf16 matmul n=8192 vs hand loop   SKIP: no GPU (" in text
    assert json.loads((out / "hand.json").read_text())["status"] == "skip"
    steps = [row.split("\t") for row in (out / "steps.tsv").read_text().splitlines()]
    assert [s[0] for s in steps] == ["detect", "info", "run-cpu", "peak", "hand-loops", "report", "gpu-tests"]
    assert all(s[1] == "0" for s in steps), steps
    inventory = json.loads((out / "info.json").read_text())
    assert [d["id"] for d in inventory["devices"]] == ["cpu"]  # no pyopencl on the image: no OpenCL devices
    assert not any(ROOT.glob("gpu-check-out")), "with OUT set nothing is written into the checkout"


def planned(mode: str, tmp_path: Path, budget_s: int = 470) -> list[list[str]]:
    """scripts/gpu_check.sh's steps in `mode` without running them: [name, limit, command words...],
    each limit as it would be if every step before it took its whole cap."""
    out = tmp_path / f"{mode}-{budget_s}"
    env = {"PATH": os.environ["PATH"], "OUT": str(out), "GPU_CHECK_PLAN": mode, "PYTHON": "python3",
           "GPU_CHECK_BUDGET_S": str(budget_s)}
    done = subprocess.run(["bash", "scripts/gpu_check.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert not (out / "steps.tsv").read_text(), "a plan runs nothing"
    return [row.split("\t") for row in (out / "plan.tsv").read_text().splitlines()]


def test_on_a_gpu_the_tutorials_answers_come_first_and_every_step_has_a_cap(tmp_path):
    from accelbench.cli.main import build_parser

    plan = planned("gpu", tmp_path, budget_s=3600)  # time for every step: each gets its whole cap
    assert [row[0] for row in plan] == [
        "detect", "info", "run-quick-suite", "monitor", "run-seed-matmul", "run-stats", "run-dl-train",
        "run-dl-vgg-infer", "run-dl-transfer", "run-keras-torch", "run-keras-jax", "run-cupy-jax", "setup", "peak",
        "run-matmul-8192", "hand-loops", "nvml-buffers", "report", "gpu-tests"]
    parser = build_parser()
    commands = {}
    for name, cap, *command in plan:
        assert 0 < int(cap) <= 150, (name, cap)   # no step may take the budget for itself
        if command[1:3] == ["-m", "accelbench"]:
            commands[name] = parser.parse_args(command[3:])  # every option exists and takes its value
    for name, args in commands.items():
        if args.command == "run":
            assert args.json and args.no_progress, name
            assert name == "run-matmul-8192" or (args.device == "cpu,cuda:0" and args.timeout), name
    quick, seed = commands["run-quick-suite"], commands["run-seed-matmul"]
    assert quick.workloads == [] and quick.rigor == "quick"
    assert seed.workloads == ["matmul"] and seed.sizes == "1000,2000,3000"
    assert seed.dtype == "float64,float32,float16,bfloat16"
    assert set(commands["run-stats"].workloads) == {"montecarlo", "bootstrap", "integrate", "simstudy", "distance", "mcmc"}
    assert set(commands["run-dl-train"].workloads) == {"mlp", "cnn", "lstm", "amp", "augment", "ddp"}
    for name in ("run-dl-vgg-infer", "run-dl-transfer"):  # the tutorials' 224x224, batch 8: the full grid
        assert commands[name].rigor == "standard" and not commands[name].quick and commands[name].sizes == "8"
    assert commands["run-keras-jax"].backend == "keras-jax" and commands["run-cupy-jax"].backend == "numpy,cupy,jax"
    assert commands["peak"].device == "cuda:0" and commands["peak"].budget == 120 and commands["peak"].json
    assert commands["setup"].device == "cuda:0" and commands["setup"].settings.endswith("setup-settings.toml")
    assert commands["info"].all and commands["info"].json


def test_when_every_step_takes_its_whole_cap_the_check_still_ends_in_8_minutes_with_a_peak(tmp_path):
    plan = planned("gpu", tmp_path)
    limits = {name: int(limit) for name, limit, *_ in plan}
    assert sum(limit for name, limit in limits.items() if name != "monitor") <= 470  # the monitor runs beside
    assert limits["run-quick-suite"] == 80 and limits["run-seed-matmul"] == 80   # the answers come first
    peak = next(command for name, _, *command in plan if name == "peak")
    assert int(peak[peak.index("--budget") + 1]) >= 60   # kept for it by every step before
    assert limits["report"] >= 20 and limits["gpu-tests"] > 0
    assert limits["hand-loops"] == 0                     # the engine's proofs go first when time runs out


def test_without_a_gpu_the_plan_is_the_short_cpu_pipeline(tmp_path):
    plan = planned("cpu", tmp_path)
    assert [row[0] for row in plan] == ["detect", "info", "run-cpu", "peak", "hand-loops", "report", "gpu-tests"]
    peak = next(row for row in plan if row[0] == "peak")
    assert peak[-6:] == ["cpu", "--budget", "8", "--orders", "64,128", "--json"]


def _third_party_imports() -> dict[str, set[str]]:
    modules: dict[str, set[str]] = {}
    for path in (ROOT / "src" / "accelbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "accelbench":
                    modules.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return modules


def test_every_third_party_import_is_on_the_image_or_has_a_fallback():
    unknown = {name: sorted(paths) for name, paths in _third_party_imports().items()
               if name not in IMAGE_MODULES and name not in NOT_ON_IMAGE}
    assert not unknown, f"imports neither on the GPU image nor with a known fallback: {unknown}"
