"""vgg-infer, augment and ddp as a user runs them: `accelbench run ... --backend torch --device cpu`.

Real runs on the CPU, kept short: VGG19 with batch 1 (`--rigor quick` implies the quick grid, whose
64×64 images are labelled in the spec), augmentation of 4 images, and data-parallel training with
2 worker processes for real (gloo).
"""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from accelbench.backends.torch_backend import TorchBackend  # noqa: E402
from accelbench.cli.main import main  # noqa: E402
from accelbench.store.db import Store  # noqa: E402
from accelbench.timing.rigor import RIGORS  # noqa: E402
from accelbench.workloads.dl import augment, ddp, vgg  # noqa: E402
from accelbench.workloads.dl.augment import Augment  # noqa: E402
from accelbench.workloads.dl.ddp import DDP  # noqa: E402

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out

RUN = ["run", "--backend", "torch", "--device", "cpu", "--rigor", "quick", "--no-progress"]


def _run(db: Path, *argv: str) -> list:
    assert main(RUN[:1] + list(argv) + RUN[1:] + ["--db", str(db)]) == 0
    with Store(db) as store:
        (run,) = store.runs()
        return store.results(run.id)


def test_vgg_infer_stores_first_batch_apart_and_per_batch_percentiles(tmp_path, capsys):
    results = _run(tmp_path / "r.sqlite", "vgg-infer", "--sizes", "1", "--dtype", "float32")
    assert "vgg-infer" in capsys.readouterr().out
    assert {m.spec.param("layout") for m in results} == {"contiguous", "channels_last"}
    for m in results:
        assert m.check.passed, m.check.detail
        assert m.spec.param("image_px") == 64 and m.spec.param("batch") == 1  # quick: 32×32 upsampled 2x
        assert m.verdict != "invalid", m.verdict_reasons
        samples, extra = m.samples_s, m.extra
        assert "reduced from the PlaidML tutorial's 224x224" in extra["image_px_note"]
        assert m.calls_per_sample == 1 and len(samples) == extra["timed_batches"] >= 10  # seed 004: 10
        assert m.first_call_s > 0  # the first batch, stored apart from the samples
        assert extra["latency_p50_s"] == pytest.approx(float(np.quantile(samples, 0.5)))
        assert extra["latency_p90_s"] == pytest.approx(float(np.quantile(samples, 0.9)))
        assert extra["latency_p99_s"] == pytest.approx(float(np.quantile(samples, 0.99)))
        assert extra["images_per_s"] == pytest.approx(1 / extra["latency_p50_s"])
        assert extra["seed_reference"]["cpu_tensorflow_s_per_batch"] == pytest.approx(0.93, abs=0.01)
        assert extra["model_parameters"] == vgg.parameter_count(19, 1000, 64) and extra["upsample_factor"] == 2
        assert m.work.flops == pytest.approx(vgg.flops_per_image(19, 1000, 64))
        assert extra["seed_reference"]["matches_seed_config"] is False


def test_augment_runs_on_the_device_and_on_the_host_with_the_copy_counted(tmp_path):
    results = _run(tmp_path / "r.sqlite", "augment", "--sizes", "4")
    assert {m.spec.param("where") for m in results} == {"device", "host"}
    by_where = {m.spec.param("where"): m for m in results}
    for m in results:
        assert m.check.passed and m.verdict != "invalid", (m.check.detail, m.verdict_reasons)
        assert "float64 CPU run on the same pixels and parameters" in m.check.detail
        assert m.extra["reference_rel_error"] < augment.REFERENCE_TOLERANCE
    # device path: the copy and the augmentation timed apart, and both; host path: the call copies
    device, host = by_where["device"], by_where["host"]
    assert set(device.phases_s) == {"to_device", "compute", "end_to_end"} and set(host.phases_s) == {"compute"}
    assert len(device.phases_s["compute"]) >= 10 and len(host.phases_s["compute"]) >= 10
    assert device.extra["images_per_s"] == pytest.approx(4 / float(np.median(device.phases_s["end_to_end"])))
    assert host.extra["images_per_s"] == pytest.approx(4 / float(np.median(host.phases_s["compute"])))
    assert device.extra["images_per_s_without_copy"] == pytest.approx(
        4 / float(np.median(device.phases_s["compute"])))
    assert host.extra["copied_bytes_per_batch"] == 4 * device.extra["copied_bytes_per_batch"]


def test_augment_check_catches_a_broken_transform(monkeypatch):
    original = augment.identity_parameters

    def no_flip(torch, batch, flip=-1.0):  # the mirror test now gets an unflipped image
        return original(torch, batch, flip=1.0)

    monkeypatch.setattr(augment, "identity_parameters", no_flip)
    params = {"batch": 2, "image_px": 32, "where": "device", "dtype": "float32"}
    prepared = Augment().prepare(TorchBackend(), "cpu", params, seed=3)
    check = prepared.check_output(prepared.compute())
    assert not check.passed and "pure flip" in check.detail


def test_ddp_with_two_processes_reports_scaling_and_identical_replicas(tmp_path):
    (m,) = _run(tmp_path / "r.sqlite", "ddp", "--sizes", "2")
    assert m.check.passed, m.check.detail
    assert "2 replica(s) identical" in m.check.detail and m.extra["replica_spread"] == 0.0
    extra = m.extra
    assert extra["workers"] == 2 and extra["threads_per_worker"] == max(1, ddp.usable_cpus() // 2)
    quick = RIGORS["quick"]  # the workers sample as the run's rigor says
    assert ddp.MIN_STEPS_ON_BUDGET <= len(m.samples_s) <= quick.max_samples and m.first_call_s > 0
    assert m.target_met or any(f"target ±{quick.target_rel_ci:.0%}" in w for w in m.warnings)
    assert extra["throughput_samples_per_s"] == pytest.approx(2 * 128 / float(np.median(m.samples_s)))
    assert extra["scaling_efficiency"] == pytest.approx(
        extra["throughput_samples_per_s"] / (2 * extra["one_worker_samples_per_s"]))
    assert math.isfinite(extra["scaling_efficiency"]) and extra["scaling_efficiency"] > 0
    assert extra["loss_last"] < 0.9 * extra["loss_first"]


def test_ddp_check_catches_replicas_that_skip_the_all_reduce():
    params = {"workers": 2, "batch": 128, "dtype": "float32", "sync_gradients": False}
    prepared = DDP().prepare(TorchBackend(), "cpu", params, seed=5)
    prepared.self_timed(rigor=RIGORS["quick"])
    check = prepared.verify()
    assert not check.passed
    assert "replica spread" in check.detail and check.max_rel_error > 1e-3


def test_ddp_check_logic_on_recorded_results():
    same = np.arange(10.0)
    def rank(parameters, losses):
        return {"parameters": parameters, "losses": losses}
    falling = [2.3] * 5 + [1.0] * 5
    assert ddp.check_training([rank(same, falling), rank(same.copy(), falling)], "cpu", "cpu").passed
    flat = ddp.check_training([rank(same, [2.3] * 10), rank(same, [2.3] * 10)], "cpu", "cpu")
    assert not flat.passed and "loss did not fall" in flat.detail
    elsewhere = ddp.check_training([rank(same, falling)], "cuda:0", "cpu")
    assert not elsewhere.passed and "asked for cuda:0" in elsewhere.detail


HANG = """
import pathlib, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
pathlib.Path(sys.argv[1]).with_name("child%s.pid" % sys.argv[2]).write_text(str(child.pid))
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def test_a_hung_worker_is_killed_with_its_children(tmp_path, monkeypatch):
    (tmp_path / "hang_worker.py").write_text(HANG)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(ddp, "WORKER_MODULE", "hang_worker")
    seen = []
    original = ddp._launch_once

    def keep_dir(config, out_dir, timeout_s):
        seen.append(out_dir)
        problem = original(config, out_dir, timeout_s=timeout_s)
        seen.extend(int(p.read_text()) for p in out_dir.glob("child*.pid"))
        return problem

    monkeypatch.setattr(ddp, "_launch_once", keep_dir)
    config = {"workers": 2, "threads": 1}
    started_s = time.monotonic()
    with pytest.raises(ddp.WorkerFailure, match="did not finish within 5 s: killed"):
        ddp.launch(config, timeout_s=5)
    assert time.monotonic() - started_s < 60  # not the workers' 300 s
    children = seen[1:]
    assert len(children) == 2
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in children)
