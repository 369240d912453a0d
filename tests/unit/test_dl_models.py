"""The seeds' models have their exact layer sizes and parameter counts; FLOPs and checks add up."""
import json
import math
import subprocess
import sys

import pytest

from accelbench.errors import Unsupported
from accelbench.workloads.dl import models, training

torch = pytest.importorskip("torch")
nn = torch.nn


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models on a shared 2-core machine: a second OpenMP thread only waits for CPU time."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _shapes(model, kind):
    return [tuple(m.weight.shape) for m in model.modules() if isinstance(m, kind)]


def test_mlp_is_seed_000_exactly():
    model = models.build_mlp()
    assert _shapes(model, nn.Linear) == [(256, 784), (128, 256), (10, 128)]
    assert [m.p for m in model.modules() if isinstance(m, nn.Dropout)] == [0.4, 0.3]
    assert models.parameter_count(model) == 235_146 == models.PARAMETERS["mlp"]  # Keras's summary()
    assert model(torch.zeros(5, 784)).shape == (5, 10)


def test_cnn_is_seed_003_exactly():
    model = models.build_cnn()
    assert _shapes(model, nn.Conv2d) == [(32, 1, 3, 3), (64, 32, 3, 3), (64, 64, 3, 3)]
    assert _shapes(model, nn.Linear) == [(64, 576), (10, 64)]
    assert sum(isinstance(m, nn.MaxPool2d) for m in model.modules()) == 2
    assert models.parameter_count(model) == 93_322 == models.PARAMETERS["cnn"]
    assert model(torch.zeros(2, 1, 28, 28)).shape == (2, 10)


def test_lstm_is_seed_003_with_torchs_second_bias():
    model = models.build_lstm()
    assert tuple(model.embedding.weight.shape) == (1000, 128)
    assert (model.lstm.input_size, model.lstm.hidden_size, model.lstm.num_layers) == (128, 128, 1)
    assert tuple(model.dense.weight.shape) == (1000, 128)
    # Keras: 128,000 + 131,584 + 129,000; torch's LSTM adds a recurrent bias of 4 x 128
    assert models.parameter_count(model) == 388_584 + 512 == models.PARAMETERS["lstm"]
    assert model(torch.zeros(3, 20, dtype=torch.long)).shape == (3, 1000)


def test_keras_initialisation():
    mlp = models.build_mlp()
    first = mlp[0]
    assert first.weight.abs().max() <= math.sqrt(6 / (784 + 256)) and first.bias.abs().sum() == 0
    assert first.weight.std() > 0.5 * math.sqrt(2 / (784 + 256))  # glorot, not torch's smaller default
    lstm = models.build_lstm().lstm
    assert torch.all(lstm.bias_ih_l0[128:256] == 1) and lstm.bias_ih_l0[:128].abs().sum() == 0
    recurrent = lstm.weight_hh_l0[:128]  # orthogonal: rows of one gate block are orthonormal
    assert torch.allclose(recurrent @ recurrent.T * 4, torch.eye(128), atol=1e-4) or \
        torch.allclose(lstm.weight_hh_l0.T @ lstm.weight_hh_l0, torch.eye(128), atol=1e-4)


def test_flops_match_a_hand_count():
    mlp_layers = models.layer_flops(models.build_mlp(), torch.zeros(1, 784))
    forward = 2 * (784 * 256 + 256 * 128 + 128 * 10)
    assert sum(layer.forward_flops for layer in mlp_layers) == forward
    # three passes, except the first layer's input gradient, which nothing needs
    assert models.training_flops(mlp_layers) == 3 * forward - 2 * 784 * 256
    cnn_forward = 2 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 32 * 9 + 3 * 3 * 64 * 64 * 9 + 576 * 64 + 64 * 10)
    assert sum(layer.forward_flops for layer in models.layer_flops(models.build_cnn(), torch.zeros(1, 1, 28, 28))) \
        == cnn_forward
    lstm = models.layer_flops(models.build_lstm(), torch.zeros(1, 20, dtype=torch.long))
    assert sum(layer.forward_flops for layer in lstm) == 20 * 2 * 512 * 256 + 2 * 128 * 1000


def test_frozen_layers_cost_their_forward_only():
    layers = [models.LayerFlops("a", 10.0, False), models.LayerFlops("b", 100.0, False),
              models.LayerFlops("c", 1.0, True), models.LayerFlops("d", 2.0, True)]
    assert models.training_flops(layers) == 10 + 100 + 2 * 1 + 3 * 2


def test_transfer_model_freezes_exactly_the_vgg16_base():
    from accelbench.workloads.dl.transfer_learning import build

    frozen = build(32, "frozen", seed=0)
    assert models.parameter_count(frozen.base) == 14_714_688  # Keras VGG16(include_top=False)
    assert models.parameter_count(frozen, trainable=True) == 512 * 256 + 256 + 256 * 10 + 10
    assert models.parameter_count(frozen, trainable=False) == 14_714_688
    assert models.parameter_count(build(32, "full", seed=0), trainable=True) == 14_714_688 + 133_898
    assert build(64, "frozen", seed=0).head[1].in_features == 512 * 2 * 2
    same = build(32, "frozen", seed=0)
    assert all(torch.equal(a, b) for a, b in zip(frozen.parameters(), same.parameters()))


def test_work_makes_the_rate_flops_per_second():
    from accelbench.workloads.dl.mlp import MLP

    work = MLP().work({"batch": 128})
    assert work.flops == 128 * (3 * 469_504 - 2 * 784 * 256)
    assert work.intensity_flop_per_byte > 1  # so analysis reports FLOP/s, not B/s


def test_classifier_check_fails_near_chance_and_passes_a_learner():
    def run(accuracies, losses):
        epochs = tuple(training.Epoch(i, float(i), 1.0, 0.5, loss, acc)
                       for i, (acc, loss) in enumerate(zip(accuracies, losses)))
        return training.TrainingRun(epochs, 0.95, None, "epochs", 4000, 60.0)

    learnt = training.classifier_check(run([0.1, 0.8, 0.9], [2.3, 0.6, 0.4]), 10, [], "cpu")
    assert learnt.passed and learnt.max_rel_error == pytest.approx(0.1)
    chance = training.classifier_check(run([0.1, 0.11, 0.12], [2.3, 1.5, 1.2]), 10, [], "cpu")
    assert not chance.passed and "did not learn" in chance.detail
    flat = training.classifier_check(run([0.1, 0.7, 0.9], [2.3, 2.2, 2.1]), 10, [], "cpu")
    assert not flat.passed and "did not fall" in flat.detail
    misplaced = training.classifier_check(run([0.1, 0.8, 0.9], [2.3, 0.6, 0.4]), 10, ["output on cpu"], "cpu")
    assert not misplaced.passed and "output on cpu" in misplaced.detail


def test_time_to_accuracy_stops_at_the_target_or_the_cap():
    generator = training.seeded(0)
    x = torch.randn(256, 2, generator=generator)
    y = (x[:, 0] > 0).long()
    model = nn.Linear(2, 2)
    task = training.Task(model, torch.optim.SGD(model.parameters(), lr=0.5), nn.CrossEntropyLoss(),
                         x, y, x, y, batch=32, generator=generator)
    run = training.time_to_accuracy(task, target=0.9, max_epochs=50, cap_s=60.0, synchronize=lambda: None)
    assert run.stopped == "target" and run.time_to_target_s > 0 and run.best_accuracy >= 0.9
    assert run.epochs[0].number == 0 and len(run.trained) < 50 and run.train_samples_per_s > 0
    ticks = iter(range(1000))
    capped = training.time_to_accuracy(task, target=1.01, max_epochs=50, cap_s=5.0, synchronize=lambda: None,
                                       clock=lambda: float(next(ticks)))
    assert capped.stopped == "time cap" and capped.time_to_target_s is None and len(capped.trained) < 50


def test_interleaved_speedup_is_the_ratio_of_step_times():
    from accelbench.workloads.dl.amp import interleaved_speedup

    now = [0.0]
    slow = lambda: now.__setitem__(0, now[0] + 0.030)  # noqa: E731
    fast = lambda: now.__setitem__(0, now[0] + 0.010)  # noqa: E731
    found = interleaved_speedup(slow, fast, lambda: None, clock=lambda: now[0])
    assert found["speedup_vs_fp32"] == pytest.approx(3.0)
    assert found["fp32_step_s"] == pytest.approx(0.030) and found["speedup_steps_per_block"] >= 2  # 20 ms blocks


class _Backend:
    name = "torch"

    def __init__(self, dtypes):
        self._dtypes = dtypes

    def dtypes(self, device):
        return self._dtypes


def test_mixed_precision_refuses_dtypes_the_device_lacks():
    cpu = torch.device("cpu")
    with pytest.raises(Unsupported, match="fp16 autocast on cpu"):
        training.mixed_precision(_Backend(("float32", "bfloat16")), "cpu", cpu, "fp16")
    autocast, scaler = training.mixed_precision(_Backend(("float32", "bfloat16")), "cpu", cpu, "bf16")
    with autocast():
        assert nn.Linear(4, 4)(torch.ones(1, 4)).dtype == torch.bfloat16
    assert scaler() is None


def test_only_the_torch_backend_runs_them():
    from accelbench.backends.numpy_backend import NumpyBackend

    with pytest.raises(Unsupported, match="PyTorch"):
        training.torch_device(NumpyBackend(), "cpu")


def test_importing_the_training_workloads_loads_no_torch():
    code = ("import sys, json\nfrom accelbench.workloads.registry import get_workload\n"
            "ws = [get_workload(n) for n in ('mlp', 'cnn', 'lstm', 'amp', 'transfer')]\n"
            "[w.grid(None, None, True) for w in ws]\nprint(json.dumps('torch' in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) is False


def test_transfer_runs_at_the_tutorials_224_pixels_in_the_standard_grid_and_says_when_smaller():
    from accelbench.workloads.dl import transfer_learning

    workload = transfer_learning.TransferLearning()
    assert {p["image_px"] for p in workload.grid(None, None, quick=False)} == {224}
    assert {p["image_px"] for p in workload.grid(None, None, quick=True)} == {32}
    assert transfer_learning.image_size_note(224) == {}
    assert "512 features, not 25,088" in transfer_learning.image_size_note(32)["image_px_note"]
