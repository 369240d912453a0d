"""Issue #26, "Done when": a plugin of each dishonest class, installed as a third party installs one
(an `accelbench.backends` entry point in a .dist-info) and run through `accelbench run --json` in a
subprocess, ends `invalid` with its reason: no rate, no speed-up, no ceiling. Honest controls
(an honest asynchronous plugin, numpy, torch, jax, PoCL) stay valid or noisy.

The plugins (tests/cli/truth_plugins.py) are written apart from the adversary suite the checks
were built with: a sync that stops waiting, queued writes never waited, a lazy graph's dead-write
elimination, partial recomputation that peeks for the poison, float32 for float64, a backend that
widens its own CPU affinity, and a zero-copy "upload".
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
from plugin_site import install, run_cli

pytestmark = pytest.mark.slow  # about a minute each: `pytest -m "not slow"` leaves them out

HERE = Path(__file__).resolve().parent
PLUGINS = ("honest_async", "sync_tires", "queued_writes", "lazy_graph", "peek_partial", "sgemm_for_dgemm",
           "repin", "zero_copy", "half_draws", "reused_draws")
CLASSES = {"HonestAsync": "honest_async", "SyncTires": "sync_tires", "QueuedWrites": "queued_writes",
           "LazyGraph": "lazy_graph", "PeekPartial": "peek_partial", "SgemmForDgemm": "sgemm_for_dgemm",
           "Repin": "repin", "ZeroCopy": "zero_copy", "HalfDraws": "half_draws", "ReusedDraws": "reused_draws"}
QUICK = ("--rigor", "quick", "--json", "--no-progress", "--no-telemetry")
STREAM = ("stream", "--sizes", "4194304", "--dtype", "float64", "--device", "cpu")
# what each class's reason must name (any of)
REASONS = {
    "sync_tires": ("does not wait", "faster than", "did not all finish", "check failed"),
    "queued_writes": ("does not wait", "faster than", "did not all finish", "check failed"),
    "lazy_graph": ("does not wait", "faster than", "check failed"),
    "peek_partial": ("check failed", "new inputs", "faster than"),
    "sgemm_for_dgemm": ("check failed",),
    "repin": ("threads", "affinity"),
    "zero_copy": ("no data was moved", "shares memory with an input"),
    "half_draws": ("fewer draws than counted", "scatter"),
    "reused_draws": ("repeat another's", "scatter"),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    entry_points = "[accelbench.backends]\n" + "".join(f"{name} = thirdparty_truth:{cls}\n"
                                                        for cls, name in CLASSES.items())
    return install(tmp_path_factory.mktemp("site"), "thirdparty_truth", (HERE / "truth_plugins.py").read_text(),
                   entry_points)


def _run(site: Path, db: Path, *args: str, prefix: tuple[str, ...] = ()) -> list[dict]:
    if prefix:  # the CLI under `taskset`: run_cli's environment, another command line
        import subprocess
        import sys

        from plugin_site import SRC
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(SRC)])}
        done = subprocess.run([*prefix, sys.executable, "-m", "accelbench", "run", *args, *QUICK, "--db", str(db)],
                              capture_output=True, text=True, env=env, timeout=900)
    else:
        done = run_cli(site, "run", *args, *QUICK, "--db", str(db), timeout_s=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(done.stdout)["results"]


def _ceilings(site: Path, db: Path) -> list[dict]:
    done = run_cli(site, "ceilings", "--json", "--db", str(db))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _assert_refused(results: list[dict], backend: str, ceilings: list[dict], **params) -> None:
    mine = [r for r in results if r["spec"]["backend"] == backend
            and all(r["spec"]["params"].get(k) == v for k, v in params.items())]
    assert mine, f"{backend}: no result"
    for r in mine:
        where = f"{backend} {r['spec']['workload']} {r['spec']['params']}: {r['verdict']} {r['verdict_reasons']}"
        assert r["verdict"] == "invalid", where
        assert any(word in _text(reason) for reason in r["verdict_reasons"] for word in REASONS[backend]), where
        derived = r["derived"]
        assert derived["rate"] is None and derived["percent_of_measured_peak"] is None, where
        assert not any(derived["speedups"].values()), where
    assert not [c for c in ceilings if c["spec"]["backend"] == backend]


# what a cheat that passes may gain over the honest result, at most (benchmarks/audit_power.py's bound)
NO_GAIN = 1.25


def _assert_refused_or_gains_nothing(results: list[dict], backend: str, ceilings: list[dict]) -> None:
    """Refused, or its figure is the honest one: a cheat that had nothing to skip (STREAM 2^22 on a
    slow machine is timed in blocks of one call: a dead-write eliminator runs each of them) keeps a
    rate within NO_GAIN of numpy's on the same parameters."""
    honest = {json.dumps(r["spec"]["params"], sort_keys=True): r for r in results if r["spec"]["backend"] == "numpy"}
    kept = [r for r in results if r["spec"]["backend"] == backend and r["verdict"] != "invalid"]
    for r in kept:
        twin = honest[json.dumps(r["spec"]["params"], sort_keys=True)]
        gain = r["derived"]["rate"] / twin["derived"]["rate"]
        assert gain <= NO_GAIN, f"{backend} {r['spec']['params']}: {r['verdict']}, {gain:.2f}× numpy's rate"
    refused = [r for r in results if r["spec"]["backend"] == backend and r["verdict"] == "invalid"]
    if refused:
        _assert_refused(refused, backend, ceilings if not kept else [])


def _text(reason) -> str:
    return reason["text"] if isinstance(reason, dict) else reason


def _assert_honest(results: list[dict], backend: str) -> None:
    mine = [r for r in results if r["spec"]["backend"] == backend]
    assert mine, f"{backend}: no result"
    for r in mine:
        assert r["verdict"] in ("valid", "noisy"), (backend, r["spec"], r["verdict_reasons"])
        assert r["derived"]["rate"] is not None


def test_memory_bound_sync_lazy_and_partial_plugins_are_invalid_and_honest_async_is_not(site, tmp_path):
    db = tmp_path / "r.sqlite"
    backends = "numpy,honest_async,sync_tires,queued_writes,lazy_graph,peek_partial"
    results = _run(site, db, *STREAM, "--backend", backends)
    ceilings = _ceilings(site, db)
    for backend in ("sync_tires", "queued_writes", "peek_partial"):
        _assert_refused(results, backend, ceilings)
    _assert_refused_or_gains_nothing(results, "lazy_graph", ceilings)
    _assert_honest(results, "honest_async")
    _assert_honest(results, "numpy")


def test_lower_precision_and_a_zero_copy_upload_are_invalid(site, tmp_path):
    db = tmp_path / "r.sqlite"
    results = _run(site, db, "matmul", "--sizes", "512", "--dtype", "float64", "--device", "cpu",
                   "--backend", "numpy,sgemm_for_dgemm")
    results += _run(site, db, "memcpy", "--sizes", "16M", "--device", "cpu", "--backend", "zero_copy")
    ceilings = _ceilings(site, db)
    _assert_refused(results, "sgemm_for_dgemm", ceilings)
    _assert_refused(results, "zero_copy", ceilings, direction="h2d")
    _assert_honest(results, "numpy")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or not shutil.which("taskset"),
                    reason="needs two usable cores and taskset")
def test_a_backend_that_widens_its_own_affinity_is_invalid(site, tmp_path):
    """Run on one core (`taskset`), it claims one thread and runs its products on every core."""
    db = tmp_path / "r.sqlite"
    core = str(min(os.sched_getaffinity(0)))
    results = _run(site, db, "matmul", "--sizes", "1000", "--dtype", "float32", "--device", "cpu",
                   "--backend", "numpy,repin", prefix=("taskset", "-c", core))
    _assert_refused(results, "repin", _ceilings(site, db))
    _assert_honest(results, "numpy")


def test_honest_framework_backends_stay_valid_or_noisy(site, tmp_path):
    wanted = [name for name, module in (("torch", "torch"), ("jax", "jax"), ("pyopencl", "pyopencl"))
              if importlib.util.find_spec(module) is not None]
    if not wanted:
        pytest.skip("no torch, jax or pyopencl installed")
    devices = "cpu,opencl:0:0" if "pyopencl" in wanted else "cpu"
    common = ("--dtype", "float32", "--device", devices, "--backend", ",".join(wanted))
    # 2^22 elements: at 2^20 the sync proof refused honest jax on at least one stream kernel in 5 of 6
    # runs on 2026-12-05: jax's first read-back of a fresh output costs 100-170 µs more than reading a
    # finished one again (what the proof subtracts), so its read-back blocks ran 2.5× the synchronised
    # ones, beyond SURE_RATIO. A known false refusal, open; here the size where the proof holds
    results = _run(site, tmp_path / "r.sqlite", "stream", "--sizes", "4194304", *common)
    results += _run(site, tmp_path / "r.sqlite", "matmul", "--sizes", "512", *common)
    for name in wanted:
        _assert_honest(results, name)


def test_monte_carlo_plugins_that_draw_less_are_invalid_through_the_cli(site, tmp_path):
    """Issue 41: half the normals repeated (after honest first calls), or every other call's draws
    reused, are refused by the timed calls' own estimates (their spread, their repeats), or keep no
    rate beyond NO_GAIN of numpy's; numpy beside them stays valid or noisy."""
    db = tmp_path / "r.sqlite"
    results = _run(site, db, "montecarlo", "--sizes", "1048576", "--dtype", "float64", "--device", "cpu",
                   "--backend", "numpy,half_draws,reused_draws")
    ceilings = _ceilings(site, db)
    for name in ("half_draws", "reused_draws"):
        _assert_refused_or_gains_nothing(results, name, ceilings)
    assert any(r["verdict"] == "invalid" for r in results if r["spec"]["backend"] == "half_draws")
    assert any(r["verdict"] == "invalid" for r in results if r["spec"]["backend"] == "reused_draws")
    _assert_honest(results, "numpy")
