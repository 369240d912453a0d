"""`import accelbench` and building the CLI must not load any framework."""
import json
import subprocess
import sys

HEAVY = ("torch", "jax", "cupy", "pyopencl", "pynvml", "matplotlib", "amdsmi", "scipy", "pandas")


def _loaded_after(code: str) -> list[str]:
    script = f"{code}\nimport sys, json\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_accelbench_loads_no_framework():
    assert _loaded_after("import accelbench; accelbench.__version__") == []


def test_cli_parser_loads_no_framework():
    assert _loaded_after("from accelbench.cli.main import build_parser; build_parser()") == []


def test_default_inventory_loads_only_the_light_probe_libraries():
    # NVML and amdsmi are what the GPU probes read; the frameworks must stay out
    loaded = _loaded_after(
        "from accelbench.devices.inventory import collect_inventory\n"
        "collect_inventory(('cpu', 'nvidia', 'amd', 'apple'))")
    assert set(loaded) <= {"pynvml", "amdsmi"}


def test_the_check_detects_a_heavy_import():
    # proves the detector can fail: a module that does import a framework is caught
    import pytest
    pytest.importorskip("torch")
    assert "torch" in _loaded_after("import accelbench, torch")
