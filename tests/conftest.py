"""Shared test options: GPU tests run only with --run-gpu (scripts/gpu_check.sh passes it)."""
from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


def pytest_addoption(parser):
    parser.addoption("--run-gpu", action="store_true", help="run tests that need a real accelerator")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-gpu"):
        return
    skip = pytest.mark.skip(reason="needs a real accelerator: run with --run-gpu (scripts/gpu_check.sh)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture(autouse=True)
def _isolated_database(tmp_path, monkeypatch):
    """No test reads or writes the user's own results database."""
    monkeypatch.setenv("ACCELBENCH_DB", str(tmp_path / "results.sqlite"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture(autouse=True)
def _entry_points_read_afresh():
    """Entry points are read once per process; a test that patches the metadata reads its own."""
    from accelbench.plugins import entry_point_targets

    entry_point_targets.cache_clear()
    yield
    entry_point_targets.cache_clear()


@pytest.fixture
def ignore_machine_load(monkeypatch):
    """For tests about something else (ceilings, compare): other processes' load and bursts on a
    shared test machine do not make results noisy. tests/unit/test_contention*.py test that judgement."""
    import math

    from accelbench.timing import bursts, contention

    monkeypatch.setattr(contention, "OTHERS_CORES_LIMIT", math.inf)
    monkeypatch.setattr(contention, "STEAL_LIMIT", math.inf)
    monkeypatch.setattr(contention, "SHORT_WINDOW_WAIT_LIMIT", math.inf)
    monkeypatch.setattr(bursts, "BURST_SHARE", math.inf)
