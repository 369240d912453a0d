"""The tutorials' Keras models (keras-torch, keras-jax): measured, checked and stored like the torch
ones, a skipped update caught by the float64 replay, a computation off the device caught by the
placement check; and the Keras backends never loaded by a run that does not name them.

Keras fixes its backend at import, so each backend's models run in a process of their own
(tests/unit/keras_worker.py); this test process never imports Keras.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from accelbench.backends import keras_backend, registry
from accelbench.workloads.dl import training

WORKER = Path(__file__).with_name("keras_worker.py")
FRAMEWORK = {"keras-torch": "torch", "keras-jax": "jax"}
FIVE = {"mlp", "cnn", "lstm", "transfer", "vgg-infer"}


def _missing(backend: str) -> str | None:
    for package in ("keras", FRAMEWORK[backend], "mlxtend"):
        if importlib.util.find_spec(package) is None:
            return f"{package} is not installed (pip install 'accelbench[keras,dl]' and {FRAMEWORK[backend]})"
    return None


def _worker(backend: str, db: Path, mode: str = "honest", *workloads: str) -> list[dict]:
    reason = _missing(backend)
    if reason:
        pytest.skip(reason)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                                        os.environ.get("PYTHONPATH", "")]))
    env.pop("KERAS_BACKEND", None)  # the backend named decides, not the caller's environment
    done = subprocess.run([sys.executable, str(WORKER), backend, str(db), mode, *workloads], env=env,
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["keras-torch", "keras-jax"])
def test_the_five_tutorial_models_run_checked_and_stored_on_each_keras_backend(tmp_path, backend):
    from accelbench.store.db import Store

    lines = _worker(backend, tmp_path / "keras.sqlite")
    results, run_id = {r["workload"]: r for r in lines if "workload" in r}, lines[-1]["run_id"]
    assert set(results) == FIVE
    for name, result in results.items():
        assert result["passed"] and result["status"] != "invalid", (name, result["detail"], result["reasons"])
        assert result["device_seen"] == "cpu"
        assert "float64" in result["detail"], result["detail"]
        assert result["extra"]["keras_backend"] == FRAMEWORK[backend]
    with Store(tmp_path / "keras.sqlite") as store:
        stored = {m.spec.workload: m for m in store.results(run_id)}
    assert set(stored) == FIVE and all(m.spec.backend == backend for m in stored.values())
    mlp = stored["mlp"].extra
    # the tutorial's epoch log is stored for the curves; evaluate/predict timed on the held-out digits
    assert len(mlp["train_loss_curve"]) == len(mlp["val_accuracy_curve"]) - 1 == mlp["epochs_run"] >= 1
    assert mlp["accuracy_reached"] > 0.55 and mlp["evaluate_s"] > 0 and mlp["predict_s"] > 0
    assert math.isclose(mlp["predict_accuracy"], mlp["final_accuracy"], abs_tol=0.01)
    assert stored["lstm"].extra["generation_step_s"] > 0
    assert stored["transfer"].extra["frozen_parameters"] > stored["transfer"].extra["trainable_parameters"]
    assert stored["vgg-infer"].extra["logits_rel_error"] < 1e-4


@pytest.mark.slow
def test_a_keras_step_that_skips_the_update_is_invalid(tmp_path):
    backend = "keras-jax" if _missing("keras-torch") else "keras-torch"
    (result, *_rest) = _worker(backend, tmp_path / "keras.sqlite", "no-update", "lstm")
    assert result["status"] == "invalid" and not result["passed"], result
    assert "update was skipped" in result["detail"], result["detail"]


def test_keras_on_the_cpu_while_a_gpu_was_asked_for_is_caught():
    """What the placement check reads: the tensors under the variables and the output, observed."""
    torch = pytest.importorskip("torch")
    from accelbench.workloads.dl.keras_steps import placement_problems

    backend = keras_backend.KerasTorchBackend()
    model = types.SimpleNamespace(weights=[types.SimpleNamespace(value=torch.zeros(3))])
    problems = placement_problems(backend, "cuda:0", model, torch.zeros(2))
    assert problems == ["Keras variables on cpu, asked for cuda:0", "Keras computed the output on cpu, asked for cuda:0"]
    assert placement_problems(backend, "cpu", model, torch.zeros(2)) == []


def test_keras_backends_are_used_only_where_named():
    assert {"keras-torch", "keras-jax"} <= set(registry.backend_names())
    assert not {"keras-torch", "keras-jax"} & set(registry.default_backend_names())
    assert "torch" in registry.default_backend_names()


def test_a_second_keras_backend_in_one_process_is_refused_with_the_reason(monkeypatch):
    if importlib.util.find_spec("keras") is None:
        pytest.skip("keras is not installed")
    fake = types.SimpleNamespace(backend=types.SimpleNamespace(backend=lambda: "torch"))
    monkeypatch.setitem(sys.modules, "keras", fake)  # as if keras-torch had loaded it
    refused = keras_backend.KerasJaxBackend().availability()
    assert not refused.ok and "already loaded on torch" in refused.reason and "keras-jax" in refused.reason


def test_missing_keras_is_a_reason_not_a_crash(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "keras" else real(name, *a))
    found = keras_backend.KerasTorchBackend().availability()
    assert not found.ok and "accelbench[keras]" in found.reason


def test_the_epoch_line_is_the_tutorials():
    epoch = training.Epoch(3, 9.0, 2.16, 0.2513, 0.1702, 0.9525, 0.9231)
    line = training.epoch_line(epoch, 30, 48_000)
    assert line == ("Epoch 3/30 - 2.16s 45us/sample - loss: 0.2513 - acc: 0.9231 - val_loss: 0.1702 - "
                    "val_acc: 0.9525")
    without = training.epoch_line(training.Epoch(1, 1.0, 1.0, 0.5, 0.4, 0.9), 10, 1000)
    assert "acc:" not in without.replace("val_acc", "") and "1000us/sample" in without


def test_every_epoch_is_logged_for_verbose_and_its_figures_kept_for_the_curves(caplog):
    """torch and Keras share the loop (training.epochs_until); `--verbose` shows this logger."""
    held_out = iter([(2.3, 0.1), (0.5, 0.8), (0.3, 0.9)])
    ticks = iter(range(100))
    with caplog.at_level("INFO", logger="accelbench.epochs"):
        run = training.epochs_until(lambda: (0.7, 0.75), lambda: next(held_out), target=0.95, max_epochs=2,
                                    cap_s=1e9, synchronize=lambda: None, samples=4000,
                                    clock=lambda: float(next(ticks)))
    assert [r.getMessage().split(" - ")[0] for r in caplog.records] == ["Epoch 1/2", "Epoch 2/2"]
    assert "val_acc: 0.9000" in caplog.records[-1].getMessage()
    metrics = run.metrics()
    assert metrics["train_loss_curve"] == [0.7, 0.7] and metrics["train_accuracy_curve"] == [0.75, 0.75]
    assert metrics["epoch_time_curve_s"] == [1.0, 1.0] and metrics["epoch_time_per_sample_s"] == 1.0 / 4000


def test_run_verbose_shows_the_epoch_lines_on_stderr(capsys):
    import argparse

    from accelbench.cli import run_cmd

    parser = argparse.ArgumentParser()
    run_cmd.add_arguments(parser)
    assert parser.parse_args(["mlp", "--verbose"]).verbose and not parser.parse_args(["mlp"]).verbose
    before = list(training.EPOCH_LOG.handlers)
    try:
        run_cmd._print_epochs()
        training.EPOCH_LOG.info(training.epoch_line(training.Epoch(1, 2.0, 2.0, 0.4, 0.3, 0.95), 30, 48_000))
    finally:
        for handler in set(training.EPOCH_LOG.handlers) - set(before):
            training.EPOCH_LOG.removeHandler(handler)
        training.EPOCH_LOG.propagate = True
    assert "Epoch 1/30 - 2.00s 42us/sample - loss: 0.4000 - val_loss: 0.3000 - val_acc: 0.9500" in capsys.readouterr().err
