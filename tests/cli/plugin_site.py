"""A third party's package as `pip install` leaves it: the package and its .dist-info (with entry
points) in a site folder, and the real CLI run in a subprocess with that folder on PYTHONPATH."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def install(site: Path, package: str, source: str, entry_points: str) -> Path:
    """Write `package` (its __init__ is `source`) with `entry_points` into `site`; returns `site`."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(textwrap.dedent(source))
    info = site / f"{package}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    return site


def run_cli(site: Path, *args: str, timeout_s: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(SRC)])}
    return subprocess.run([sys.executable, "-m", "accelbench", *args], capture_output=True, text=True, env=env,
                          timeout=timeout_s)
