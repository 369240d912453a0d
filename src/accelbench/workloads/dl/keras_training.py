"""The training workloads (mlp, cnn, lstm, transfer) on a Keras backend (`--backend keras-torch`).

The same data, grid, harness and verdicts as their torch versions; the model is the tutorial's
Keras model (keras_models.py) and the timed call Keras's own training step (keras_steps.py).
The classifiers also run the tutorial's loop after the timed steps: `fit` one epoch at a time on
the host arrays, `evaluate` on the held-out digits after each (the per-epoch log `--verbose`
prints), and then time `evaluate` and `predict` as inference; the LSTM times a generation step.
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from accelbench.errors import Unsupported
from accelbench.timing import stats
from accelbench.workloads.base import Prepared
from accelbench.workloads.dl import data, keras_models, training
from accelbench.workloads.dl.keras_steps import KerasSteps

INFERENCE_REPEATS = 3      # evaluate/predict/generation: the median of this many calls after a warm one
GENERATED_TOKENS = 20      # the LSTM continues each of a batch of windows by this many words


def is_keras(backend) -> bool:
    return callable(getattr(backend, "keras", None)) and bool(getattr(backend, "keras_backend", ""))


def one_hot(labels: np.ndarray, classes: int) -> np.ndarray:
    """What `to_categorical` gives: the tutorials' labels for categorical cross-entropy."""
    return np.eye(classes, dtype=np.float32)[labels]


def channels_last(images: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(images.transpose(0, 2, 3, 1))


def timed_median(call, synchronize, repeats: int = INFERENCE_REPEATS) -> float:
    """Seconds of one call: the median of `repeats` after an untimed warm call, synchronised around each."""
    call()
    samples = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        call()
        synchronize()
        samples.append(time.perf_counter() - start)
    return stats.median(samples)


class KerasSession:
    """What every Keras training workload shares: the backend, the device, the spec's record."""

    model_name = ""

    def __init__(self, backend, device: str, params: dict, seed: int, settings: dict) -> None:
        self.backend, self.device, self.params, self.seed, self.settings = backend, device, params, seed, settings
        self.keras = backend.keras()
        self.step_samples_s: tuple[float, ...] = ()

    def build(self, dtype: str = "float32", seed: int | None = None) -> Any:
        if dtype != "float32":  # the replay: built where its caller's device scope says
            return keras_models.build(self.keras, self.model_name, dtype, seed, **self.options())
        with self.backend.on_device(self.device):
            return keras_models.build(self.keras, self.model_name, dtype, seed, **self.options())

    def options(self) -> dict:
        return {}

    def on_device(self, array: np.ndarray) -> Any:
        return self.backend.from_host(np.ascontiguousarray(array), self.device)

    def batches(self, x: np.ndarray, y: np.ndarray, batch: int) -> list[tuple[Any, Any]]:
        count = max(1, len(x) // batch)
        return [(self.on_device(x[i * batch:(i + 1) * batch]), self.on_device(y[i * batch:(i + 1) * batch]))
                for i in range(count)]

    def synchronize(self) -> None:
        self.backend.synchronize(self.device)

    def record(self, samples_s: dict) -> None:
        self.step_samples_s = samples_s.get("compute", ())

    def step_metrics(self) -> dict:
        found = {**self.backend.describe(self.device), "model": f"Keras {self.model_name}, as the tutorial wrote it"}
        if self.step_samples_s:
            step_s = stats.median(self.step_samples_s)
            found.update(step_time_s=step_s, train_samples_per_s=self.params["batch"] / step_s if step_s > 0 else None)
        return found

    def prepared(self, steps: KerasSteps, metrics, release) -> Prepared:
        return Prepared(compute=steps.compute, check_output=steps.check_output, poison=steps.poison, variants=2,
                        placed=steps.placed, metrics=metrics, record_samples=self.record, release=release)


class ClassifierSession(KerasSession):
    """mlp and cnn: the digits, the timed steps, then the tutorial's fit/evaluate loop and inference."""

    def __init__(self, workload, backend, device: str, params: dict, seed: int, settings: dict) -> None:
        super().__init__(backend, device, params, seed, settings)
        self.workload, self.model_name = workload, workload.model_name
        split = data.digits_split()
        shape = (lambda rows: channels_last(data.as_images(rows))) if workload.image_input else (lambda rows: rows)
        digits = params.get("train_digits") or len(split.x_train)  # fewer: a small test's run
        self.x_train, self.x_val = shape(split.x_train[:digits]), shape(split.x_val)
        self.y_train, self.y_val = one_hot(split.y_train[:digits], 10), one_hot(split.y_val, 10)
        test = data.digits_test()  # the tutorial's x_test where the full MNIST is on disk, else the held-out
        self.x_test, self.y_test = (shape(test[0]), one_hot(test[1], 10)) if test else (self.x_val, self.y_val)
        self.test_name = "the 10,000 MNIST test digits" if test else f"the {len(self.x_val)} held-out digits"
        self.model = self.build(seed=seed)
        self.steps = KerasSteps(backend, device, self.model, lambda dtype: self.build(dtype),
                                self.batches(self.x_train, self.y_train, params["batch"]))
        self.steps.more_problems = self.learning_problems
        self.run = training.Lazy(self.train)
        self.inference: dict = {}

    def train(self) -> training.TrainingRun:
        """The tutorial's loop from fresh weights: fit one epoch, evaluate the held-out digits."""
        until = self.params.get("train_until", "target")
        model, batch = self.build(seed=self.seed + 1), self.params["batch"]

        def epoch() -> tuple[float, float]:
            with self.backend.on_device(self.device):
                history = model.fit(self.x_train, self.y_train, batch_size=batch, epochs=1, shuffle=True, verbose=0)
            return float(history.history["loss"][-1]), float(history.history["accuracy"][-1])

        def evaluate() -> tuple[float, float]:
            with self.backend.on_device(self.device):
                found = model.evaluate(self.x_val, self.y_val, batch_size=training.EVAL_BATCH, verbose=0,
                                       return_dict=True)
            return float(found["loss"]), float(found["accuracy"])

        cap_s = self.settings["quick_cap_s" if until == "target" else "full_cap_s"]
        run = training.epochs_until(epoch, evaluate, self.params.get("target_accuracy", self.settings["target"]),
                                    self.params.get("epochs", 30), cap_s,
                                    self.synchronize, len(self.x_train), stop_at_target=until == "target")
        self.inference = self.time_inference(model)
        return run

    def time_inference(self, model) -> dict:
        """The tutorial's `evaluate(x_test, y_test)` and `predict(x_test)` on the trained model, timed."""
        held_out = len(self.x_test)

        def evaluate():
            with self.backend.on_device(self.device):
                return model.evaluate(self.x_test, self.y_test, batch_size=training.EVAL_BATCH, verbose=0)

        def predict():
            with self.backend.on_device(self.device):
                return model.predict(self.x_test, batch_size=training.EVAL_BATCH, verbose=0)

        evaluate_s, predict_s = timed_median(evaluate, self.synchronize), timed_median(predict, self.synchronize)
        classes = np.argmax(predict(), axis=1)
        return {"evaluate_s": evaluate_s, "evaluate_samples_per_s": held_out / evaluate_s,
                "predict_s": predict_s, "predict_samples_per_s": held_out / predict_s,
                "predict_accuracy": float(np.mean(classes == np.argmax(self.y_test, axis=1))),
                "inference_samples": held_out,
                "inference_phase": f"Keras evaluate() and predict() on {self.test_name} after the "
                                   f"training run, batch {training.EVAL_BATCH}, median of {INFERENCE_REPEATS} "
                                   "calls after a warm one (host arrays in, as the tutorial passes them)"}

    def learning_problems(self) -> list[str]:
        check = training.classifier_check(self.run(), data.MNIST_CLASSES, [], self.device)
        return [] if check.passed else [check.detail]

    def metrics(self) -> dict:
        found = self.run().metrics()
        found["time_to_accuracy_phase"] = ("a separate Keras fit() run from fresh weights after the timed steps, "
                                           "evaluate() on the held-out digits after each epoch; one wall-clock run")
        return {**found, **self.inference, **self.step_metrics(), "parameters": keras_models.parameter_count(self.model),
                "train_digits": len(self.x_train), "held_out_digits": len(self.x_val), **data.digits_source()}

    def release(self) -> None:
        del self.model, self.steps, self.run

    def result(self) -> Prepared:
        return self.prepared(self.steps, self.metrics, self.release)


class LSTMSession(KerasSession):
    model_name = "lstm"

    def __init__(self, workload, backend, device: str, params: dict, seed: int, settings: dict) -> None:
        super().__init__(backend, device, params, seed, settings)
        self.text = data.text_sequences()
        held_out = np.random.default_rng(seed).permutation(len(self.text.x_val))[:settings["held_out_windows"]]
        self.x_val, self.y_val = self.text.x_val[held_out].astype(np.int32), one_hot(self.text.y_val[held_out], 1000)
        rows = np.random.default_rng(seed + 1).permutation(len(self.text.x_train))[:64 * params["batch"]]
        self.model = self.build(seed=seed)
        self.steps = KerasSteps(backend, device, self.model, lambda dtype: self.build(dtype),
                                self.batches(self.text.x_train[rows].astype(np.int32),
                                             one_hot(self.text.y_train[rows], 1000), params["batch"]))
        self.steps.more_problems = self.learning_problems
        self.run = training.Lazy(self.train)

    def held_out_loss(self, model) -> float:
        with self.backend.on_device(self.device):
            return float(model.evaluate(self.x_val, self.y_val, batch_size=training.EVAL_BATCH, verbose=0))

    def train(self) -> dict:
        """A fresh model `steps` steps on random batches (the curve), then a generation step timed."""
        model, batch, steps = self.build(seed=self.seed + 1), self.params["batch"], self.params["steps"]
        initial = self.held_out_loss(model)
        draws = np.random.default_rng(self.seed + 2).integers(0, len(self.text.x_train), (steps, batch))
        losses = []
        with self.backend.on_device(self.device):
            for index in draws:
                losses.append(float(model.train_on_batch(self.text.x_train[index].astype(np.int32),
                                                         one_hot(self.text.y_train[index], 1000))))
        return {"initial_loss": initial, "final_loss": self.held_out_loss(model), "curve": losses,
                **self.time_generation(model)}

    def time_generation(self, model) -> dict:
        """One generation step: the next word for a batch of windows, each window then shifted by it."""
        windows = self.on_device(self.x_val[:self.params["batch"]])
        ops = self.keras.ops

        def step(current):
            with self.backend.on_device(self.device):
                chosen = ops.cast(ops.argmax(model(current, training=False), axis=-1), "int32")
                return ops.concatenate([current[:, 1:], ops.expand_dims(chosen, 1)], axis=1)

        state = [windows]

        def one_step():
            state[0] = step(state[0])
            self.backend.wait_for(self.backend.native(state[0]))
        step_s = timed_median(one_step, self.synchronize, repeats=GENERATED_TOKENS)
        generated = self.keras.ops.convert_to_numpy(state[0])
        return {"generation_step_s": step_s, "generated_tokens_per_s": self.params["batch"] / step_s,
                "generation_sample": " ".join(self.text.vocabulary[int(i)] for i in generated[0]),
                "generation_phase": f"greedy next-word step on {self.params['batch']} held-out windows "
                                    f"(model call, argmax, shift), median of {GENERATED_TOKENS} steps"}

    def learning_problems(self) -> list[str]:
        run = self.run()
        return training.learning_problems(run["initial_loss"], run["final_loss"])

    def metrics(self) -> dict:
        run = self.run()
        chunks = np.array_split(np.asarray(run["curve"]), min(training.CURVE_POINTS, len(run["curve"])))
        found = {key: value for key, value in run.items() if key != "curve"}
        return {**found, **self.step_metrics(), "held_out_loss_initial": run["initial_loss"],
                "held_out_loss_final": run["final_loss"], "steps": self.params["steps"],
                "train_loss_curve": training.shortened([float(c.mean()) for c in chunks]),
                "unigram_loss": data.unigram_loss(self.text), "parameters": keras_models.parameter_count(self.model)}

    def release(self) -> None:
        del self.model, self.steps, self.run

    def result(self) -> Prepared:
        return self.prepared(self.steps, self.metrics, self.release)


class TransferSession(KerasSession):
    model_name = "transfer"

    def __init__(self, backend, device: str, params: dict, seed: int, settings: dict) -> None:
        super().__init__(backend, device, params, seed, settings)
        train_images = settings["train_images"]
        split = data.digits_split()
        images = channels_last(data.as_images(split.x_train[:train_images], params["image_px"], channels=3))
        self.model = self.build(seed=seed)
        self.frozen_before = self.frozen_values()
        self.steps = KerasSteps(backend, device, self.model, lambda dtype: self.build(dtype),
                                self.batches(images, one_hot(split.y_train[:train_images], 10), params["batch"]),
                                must_learn=False)  # batches of 8 give a noisy loss
        self.steps.more_problems = self.weight_problems

    def options(self) -> dict:
        return {"image_px": self.params["image_px"], "mode": self.params["mode"]}

    def frozen_values(self) -> list[np.ndarray]:
        return [np.array(self.keras.ops.convert_to_numpy(v)) for v in self.model.non_trainable_weights]

    def weight_problems(self) -> list[str]:
        changed = sum(not np.array_equal(a, b) for a, b in zip(self.frozen_before, self.frozen_values()))
        problems = [f"the frozen base changed: {changed} of its tensors"] if changed else []
        if self.params["mode"] == "frozen" and not self.model.non_trainable_weights:
            problems.append("mode=frozen, yet no weight is frozen")
        return problems

    def metrics(self) -> dict:
        first = math.nan if self.steps.first_loss is None else self.steps.first_loss
        return {**self.step_metrics(), "trainable_parameters": keras_models.parameter_count(self.model, True),
                "frozen_parameters": keras_models.parameter_count(self.model, False),
                "steps_taken": self.steps.steps_taken, "first_step_loss": first, "image_px": self.params["image_px"],
                "base_weights": "random (weights=None): nothing is downloaded", **self.settings["size_note"]}

    def release(self) -> None:
        del self.model, self.steps
        self.frozen_before.clear()

    def result(self) -> Prepared:
        return self.prepared(self.steps, self.metrics, self.release)


def prepare(workload_name: str, workload, backend, device: str, params: dict, seed: int, **settings: Any) -> Prepared:
    """The Keras version of `workload_name` prepared on `device` (Unsupported where it cannot run);
    `settings` are the workload's own constants (its module imports this one, not the reverse)."""
    if params.get("dtype", "float32") != "float32":
        raise Unsupported("the Keras workloads run in float32 only")
    if workload_name in ("mlp", "cnn"):
        return ClassifierSession(workload, backend, device, params, seed, settings).result()
    if workload_name == "lstm":
        return LSTMSession(workload, backend, device, params, seed, settings).result()
    if workload_name == "transfer":
        return TransferSession(backend, device, params, seed, settings).result()
    raise Unsupported(f"{workload_name} has no Keras version; the Keras ones: mlp, cnn, lstm, transfer, vgg-infer")
