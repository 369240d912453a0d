"""Seed 003's next-word LSTM (Embedding 1000x128 over 20 tokens, LSTM 128, Dense 1000, Adam) trained
on the Python standard library's own source text.

Timed by the harness: one training step on a batch of windows already on the device, checked
against a float64 replay of the same steps (step_check.py). Then, in a separate phase the harness
does not sample, a fresh model trained a fixed number of steps whose losses make the stored curve;
the check also wants its held-out loss to fall (by 20%, from ln 1000 ~ 6.9 for an untrained model).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from accelbench.timing import stats
from accelbench.workloads.base import Prepared, Workload
from accelbench.workloads.dl import data, keras_training, models, step_check, training

HELD_OUT_WINDOWS = 2000   # evaluated before and after the run: enough for a stable mean loss
TOKEN_BYTES = 8           # int64 token ids


class LSTM(Workload):
    role = "model"  # a whole model or application, read on its own figures
    cpu_baseline = "framework"  # against the same framework on the CPU
    name = "lstm"
    description = "the Keras LSTM text model of the deep-learning GPU guide (Embedding 1000x128, LSTM 128, Dense 1000) on stdlib source"
    size_param, size_unit = "batch", "sequences per batch"
    dtypes = ("float32",)
    default_batch = 128   # seed 003 gives none
    learning_rate = 1e-3  # Keras's Adam default
    quick_steps, full_steps = 40, 300  # the training run whose losses make the curve

    def grid(self, sizes, dtypes, quick):
        steps = self.quick_steps if quick else self.full_steps
        return [{"batch": batch, "dtype": "float32", "steps": steps} for batch in sizes or [self.default_batch]]

    def work(self, params):
        layers, parameters = _layers()
        return models.step_work(params["batch"], layers, parameters, parameters,
                                data.SEQUENCE_TOKENS * TOKEN_BYTES)

    def footprint_bytes(self, params):
        windows = 120_000 * (data.SEQUENCE_TOKENS + 1) * TOKEN_BYTES
        return windows + 2 * 4 * models.PARAMETERS["lstm"] * 4 + params["batch"] * 8 * 2**20

    def prepare(self, backend, device, params, seed) -> Prepared:
        if keras_training.is_keras(backend):
            return keras_training.prepare(self.name, self, backend, device, params, seed,
                                          held_out_windows=HELD_OUT_WINDOWS)
        return _Session(self, backend, device, params, seed).prepared()


@lru_cache(maxsize=1)
def _layers() -> tuple[list[models.LayerFlops], int]:
    import torch

    model = models.build_lstm()
    return models.layer_flops(model, torch.zeros(1, data.SEQUENCE_TOKENS, dtype=torch.long)), \
        models.parameter_count(model)


class _Session:
    def __init__(self, workload: LSTM, backend, device: str, params: dict, seed: int) -> None:
        self.workload, self.backend, self.device, self.params, self.seed = workload, backend, device, params, seed
        self.torch_device = training.torch_device(backend, device)
        self.text = data.text_sequences()
        held_out = np.random.default_rng(seed).permutation(len(self.text.x_val))[:HELD_OUT_WINDOWS]
        training.reset_peak_memory(self.torch_device)
        self.tensors = [training.on_device(a, self.torch_device) for a in
                        (self.text.x_train, self.text.y_train, self.text.x_val[held_out], self.text.y_val[held_out])]
        self.timed = self.task()
        self.run = training.Lazy(self._train)
        self.step_samples_s: tuple[float, ...] = ()

    def task(self) -> training.Task:
        import torch

        generator = training.seeded(self.seed)
        model = models.build_lstm().to(self.torch_device)
        optimizer = torch.optim.Adam(model.parameters(), lr=self.workload.learning_rate, eps=1e-7)
        x_train, y_train, x_val, y_val = self.tensors
        return training.Task(model, optimizer, torch.nn.CrossEntropyLoss(), x_train, y_train, x_val, y_val,
                             batch=self.params["batch"], generator=generator)

    def _train(self) -> dict:
        """A fresh model trained `steps` steps on random batches; losses kept on the device until the end."""
        import torch

        task, steps = self.task(), self.params["steps"]
        initial_loss, _ = training.evaluate(task)
        draws = torch.randint(0, task.train_samples, (steps, task.batch), generator=task.generator)
        draws = draws.to(self.torch_device)
        losses = [training.train_step(task, task.x_train[index], task.y_train[index]) for index in draws]
        final_loss, accuracy = training.evaluate(task)
        curve = torch.stack(losses).float().cpu().numpy()
        return {"initial_loss": initial_loss, "final_loss": final_loss, "accuracy": accuracy,
                "steps": steps, "curve": curve, "batch": task.batch}

    def learning_problems(self) -> list[str]:
        """The separate run from a fresh model must lower the held-out loss by 20%."""
        run = self.run()
        return training.learning_problems(run["initial_loss"], run["final_loss"])

    def record(self, samples_s: dict) -> None:
        self.step_samples_s = samples_s.get("compute", ())

    def metrics(self) -> dict:
        run, unigram = self.run(), data.unigram_loss(self.text)
        chunks = np.array_split(run["curve"], min(training.CURVE_POINTS, len(run["curve"])))
        step_s = stats.median(self.step_samples_s) if self.step_samples_s else None  # the harness's samples
        return {
            "train_samples_per_s": run["batch"] / step_s if step_s else None, "step_time_s": step_s,
            "steps": run["steps"], "curve_phase": "a separate run of `steps` steps from a fresh model, not timed",
            "train_loss_curve": training.shortened([float(c.mean()) for c in chunks]),
            "held_out_loss_initial": run["initial_loss"], "held_out_loss_final": run["final_loss"],
            "held_out_next_token_accuracy": run["accuracy"],
            # a model that only learnt word frequencies reaches this; beating it means context is used
            "unigram_loss": unigram, "beats_unigram": run["final_loss"] < unigram,
            "vocabulary_words": len(self.text.vocabulary), "text_source_bytes": self.text.source_bytes,
            "text_source_files": self.text.source_files, "train_windows": int(len(self.text.x_train)),
            "held_out_windows": int(self.timed.x_val.shape[0]), "parameters": models.parameter_count(self.timed.model),
            **training.memory_metrics(self.torch_device),
        }

    def release(self) -> None:
        self.tensors.clear()
        del self.timed, self.run  # frees the model's device memory: Prepared.release is called once, last

    def prepared(self) -> Prepared:
        steps = step_check.TimedSteps(self.timed, self.backend, self.device)
        steps.more_problems = self.learning_problems
        return Prepared(compute=steps.compute, check_output=steps.check_output, poison=steps.poison, variants=2,
                        metrics=self.metrics, record_samples=self.record, release=self.release)
