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
    for name in ("mode.json", "info.json", "run-cpu.json", "hand.json", "gpu-tests.xml", "gpu-tests.txt",
                 "report/report.html", "summary.txt", "summary.json", "steps.tsv", "results.sqlite"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    lines = {entry["name"]: entry for entry in json.loads((out / "summary.json").read_text())}
    skipped = [entry for entry in lines.values() if entry["status"] == "SKIP"]
    assert len(skipped) == 15 and all(entry["detail"].startswith("no GPU (") for entry in skipped)
    for name in ("inventory (info --all --json)", "CPU smoke run (pipeline)", "report HTML"):
        assert lines[name]["status"] == "PASS", lines[name]
    assert "FAIL" not in {entry["status"] for entry in lines.values()}
    text = (out / "summary.txt").read_text()
    assert "bf16 matmul n=8192 vs hand loop   SKIP: no GPU (" in text
    assert json.loads((out / "hand.json").read_text())["status"] == "skip"
    steps = [row.split("\t") for row in (out / "steps.tsv").read_text().splitlines()]
    assert [s[0] for s in steps] == ["detect", "info", "run-cpu", "hand-loops", "report", "gpu-tests"]
    assert all(s[1] == "0" for s in steps), steps
    inventory = json.loads((out / "info.json").read_text())
    assert [d["id"] for d in inventory["devices"]] == ["cpu"]  # no pyopencl on the image: no OpenCL devices
    assert not any(ROOT.glob("gpu-check-out")), "with OUT set nothing is written into the checkout"


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
