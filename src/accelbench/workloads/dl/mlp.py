"""Seed 000's MNIST MLP trained on the shipped digits, and the digit-classifier workload it shares
with the CNN (and, through them, mixed precision).

Timed by the harness: one training step on a batch already on the device, checked against a
float64 replay of the same steps (step_check.py). Then, in a separate phase that the harness does
not sample, a training run from a freshly initialised model that evaluates the 1,000 held-out
digits after every epoch: it gives the time to accuracy (one wall-clock run), the accuracy reached
and the epoch time, and it is part of the check (the held-out loss must fall and the accuracy must
be far above chance).
"""
from __future__ import annotations

import contextlib
from functools import lru_cache

import numpy as np

from accelbench.timing import stats
from accelbench.workloads.base import Prepared, Workload
from accelbench.workloads.dl import data, keras_training, models, step_check, training

TARGET_ACCURACY = 0.95
QUICK_CAP_S = 60.0     # quick runs stop at the target; this only bounds a model that never gets there
FULL_CAP_S = 600.0


class DigitsClassifier(Workload):
    """A model trained on the shipped MNIST digits; subclasses give the model and optimiser."""
    role = "model"  # a whole model or application, read on its own figures
    cpu_baseline = "framework"  # against the same framework on the CPU

    model_name = ""
    size_param, size_unit = "batch", "samples per batch"
    dtypes = ("float32",)
    default_batch = 128
    epochs = 30                 # seed 000 trains for 30 epochs
    learning_rate = 1e-3        # Keras's default for RMSprop and Adam
    image_input = False         # True: [N, 1, 28, 28] images; False: flat 784-pixel rows

    def build(self):
        raise NotImplementedError

    def optimizer(self, parameters):
        raise NotImplementedError

    def grid(self, sizes, dtypes, quick):
        # quick stops once the target is reached; a full run trains all the seed's epochs
        until = "target" if quick else "epochs"
        return [{"batch": batch, "dtype": "float32", "epochs": self.epochs, "target_accuracy": TARGET_ACCURACY,
                 "train_until": until} for batch in sizes or [self.default_batch]]

    def work(self, params):
        layers, parameters = _layers(self.model_name)
        return models.step_work(params["batch"], layers, parameters, parameters,
                                28 * 28 * models.BYTES_PER_FLOAT32)

    def footprint_bytes(self, params):
        # the digits on the device, two models with gradients and two optimiser states, activations
        return 5000 * 785 * 4 + 2 * 4 * models.PARAMETERS[self.model_name] * 4 + params["batch"] * 2**20

    def inputs(self, rows: np.ndarray) -> np.ndarray:
        return data.as_images(rows) if self.image_input else rows

    def session(self, backend, device: str, params: dict, seed: int, precision: str = "fp32") -> "ClassifierSession":
        return ClassifierSession(self, backend, device, params, seed, precision)

    def prepare(self, backend, device, params, seed) -> Prepared:
        if keras_training.is_keras(backend):
            return keras_training.prepare(self.model_name, self, backend, device, params, seed, target=TARGET_ACCURACY,
                                          quick_cap_s=QUICK_CAP_S, full_cap_s=FULL_CAP_S)
        return self.session(backend, device, params, seed).prepared()


@lru_cache(maxsize=8)
def _layers(model_name: str) -> tuple[list[models.LayerFlops], int]:
    import torch

    if model_name == "mlp":
        model, example = models.build_mlp(), torch.zeros(1, 784)
    else:
        model, example = models.build_cnn(), torch.zeros(1, 1, 28, 28)
    return models.layer_flops(model, example), models.parameter_count(model)


class ClassifierSession:
    """One prepared instance: the data on the device, the timed model, the lazy training run."""

    def __init__(self, workload: DigitsClassifier, backend, device: str, params: dict, seed: int,
                 precision: str) -> None:
        self.workload, self.backend, self.device, self.params, self.seed = workload, backend, device, params, seed
        self.dtype, self.step_samples_s = training.PRECISIONS.get(precision, "float32"), ()
        self.torch_device = training.torch_device(backend, device)
        self.autocast, self.scaler = training.mixed_precision(backend, device, self.torch_device, precision)
        split = data.digits_split()
        training.reset_peak_memory(self.torch_device)
        self.tensors = [training.on_device(a, self.torch_device) for a in
                        (workload.inputs(split.x_train), split.y_train, workload.inputs(split.x_val), split.y_val)]
        self.timed = self.task()
        self.run = training.Lazy(self._train)

    def task(self, fp32: bool = False) -> training.Task:
        """A freshly initialised model (the same weights every time) and optimiser on the data;
        `fp32` ignores the session's precision (the baseline mixed precision is compared with)."""
        import torch

        generator = training.seeded(self.seed)
        model = self.workload.build().to(self.torch_device)
        autocast, scaler = (contextlib.nullcontext, None) if fp32 else (self.autocast, self.scaler())
        x_train, y_train, x_val, y_val = self.tensors
        return training.Task(model, self.workload.optimizer(model.parameters()), torch.nn.CrossEntropyLoss(),
                             x_train, y_train, x_val, y_val, batch=self.params["batch"], autocast=autocast, scaler=scaler,
                             generator=generator)

    def _train(self) -> training.TrainingRun:
        until = self.params.get("train_until", "target")
        return training.time_to_accuracy(
            self.task(), self.params.get("target_accuracy", TARGET_ACCURACY), self.params.get("epochs", 30),
            QUICK_CAP_S if until == "target" else FULL_CAP_S, lambda: self.backend.synchronize(self.device),
            stop_at_target=until == "target")

    def learning_problems(self) -> list[str]:
        """The separate training run from fresh weights must learn (placement is checked on the timed model)."""
        check = training.classifier_check(self.run(), data.MNIST_CLASSES, [], self.device)
        return [] if check.passed else [check.detail]

    def record(self, samples_s: dict) -> None:
        self.step_samples_s = samples_s.get("compute", ())

    def metrics(self) -> dict:
        found = self.run().metrics()
        found["time_to_accuracy_phase"] = ("a separate training run from fresh weights after the timed steps, "
                                           "held-out evaluation after each epoch included; one wall-clock run")
        if self.step_samples_s:  # from the harness's samples of the timed steps
            step_s = stats.median(self.step_samples_s)
            found.update(step_time_s=step_s, train_samples_per_s=self.params["batch"] / step_s if step_s > 0 else None)
        return {**found, **training.memory_metrics(self.torch_device),
                "parameters": models.parameter_count(self.timed.model),
                "train_digits": self.timed.train_samples, "held_out_digits": int(self.timed.x_val.shape[0]),
                **data.digits_source()}

    def release(self) -> None:
        self.tensors.clear()
        del self.timed, self.run  # frees the model's device memory: Prepared.release is called once, last

    def prepared(self) -> Prepared:
        steps = step_check.TimedSteps(self.timed, self.backend, self.device, self.dtype)
        steps.more_problems = self.learning_problems
        return Prepared(compute=steps.compute, check_output=steps.check_output, poison=steps.poison, variants=2,
                        metrics=self.metrics, record_samples=self.record, release=self.release)


class MLP(DigitsClassifier):
    name = "mlp"
    description = "the R/Keras GPU tutorial's MNIST MLP (784-256-128-10, dropout, RMSprop, batch 128): train steps, time to 95%"
    model_name = "mlp"

    def build(self):
        return models.build_mlp()

    def optimizer(self, parameters):
        import torch

        # Keras's RMSprop defaults: rho 0.9, epsilon 1e-7 (torch's are 0.99 and 1e-8)
        return torch.optim.RMSprop(parameters, lr=self.learning_rate, alpha=0.9, eps=1e-7)
