"""A dishonest backend, run as a user would: invalid with its reason in the terminal, --json, the
database and the report, and never a ceiling that `info` shows."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from accelbench.backends.registry import clear_cache, register_backend
from accelbench.cli.main import main
from accelbench.store.db import Store

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from test_dishonest_backends import CachingByIdentity  # noqa: E402

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out

ARGS = ["matmul", "--sizes", "1200", "--dtype", "float64", "--rigor", "quick", "--no-progress", "--no-telemetry"]


@pytest.fixture
def caching_backend():
    register_backend("caching", CachingByIdentity)
    yield "caching"
    clear_cache()


def test_a_caching_backend_is_invalid_everywhere_a_result_shows(caching_backend, tmp_path, capsys):
    assert main(["run", *ARGS, "--backend", caching_backend]) == 0
    terminal = capsys.readouterr().out
    words = " ".join(terminal.split())  # the screen wraps at the terminal's width
    assert "1 invalid, time not counted" in words and ("cache results for repeated inputs" in words
                                                        or "faster than this device can compute" in words
                                                        or "check failed" in words), words
    assert main(["show"]) == 0  # every figure of the stored run, with its verdict and its legend
    shown = capsys.readouterr().out
    assert "invalid" in shown and "Verdicts" in shown

    assert main(["run", *ARGS, "--backend", caching_backend, "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["verdict"] == "invalid" and result["derived"]["rate"] is None
    # the same backend object runs again: its cache may now hand a recycled array id a stale
    # product (a wrong answer), be caught as a cache, or as an impossible rate; all end invalid
    reasons = [r["text"] if isinstance(r, dict) else r for r in result["verdict_reasons"]]  # (text, kind, figures)
    assert any(any(p in r for p in ("cache results", "faster than this device", "check failed"))
               for r in reasons), reasons

    with Store() as store:
        stored = [m for r in store.runs() for m in store.results(r.id)]
    assert len(stored) == 2 and {m.verdict for m in stored} == {"invalid"}

    pytest.importorskip("matplotlib")
    out = tmp_path / "report"
    assert main(["report", "-o", str(out)]) == 0
    html = (out / "report.html").read_text()
    # the latest run is the one reported
    assert ">invalid<" in html and all(r.replace("×", "&#215;") in html or r in html or r[:30] in html
                                       for r in reasons)

    capsys.readouterr()
    assert main(["info", "--json", "--probe", "cpu"]) == 0
    (cpu,) = json.loads(capsys.readouterr().out)["devices"]
    assert not [p for p in cpu["peaks"] if p["provenance"] == "measured"]
