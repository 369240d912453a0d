"""What every training workload shares: a step, evaluation, a time-to-accuracy loop with a wall-time
cap, the learning check, the device-placement check and peak memory.

Clock reads that bound a timed interval follow a device synchronisation (DESIGN.md, "Timing"):
a GPU queues kernels, and reading the clock before they finish would time the queueing.
"""
from __future__ import annotations

import contextlib
import logging
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from accelbench.errors import Unsupported
from accelbench.results import Check

EVAL_BATCH = 1000
LOSS_FALL_FRACTION = 0.2        # held-out loss must end at least 20% below where it started
CURVE_POINTS = 30               # loss curves stored in metrics are at most this long


def torch_device(backend, device: str) -> Any:
    """The torch.device behind an accelbench id ("rocm:0" is torch's cuda:0), via the backend."""
    if backend.name != "torch":
        raise Unsupported(f"the training workloads are written in PyTorch; {backend.name} does not run them "
                          "(use --backend torch)")
    return backend.empty((1,), "float32", device).device


@dataclass
class Task:
    """A model with its optimiser, loss and data on the device; how to run its forward pass."""

    model: Any
    optimizer: Any
    loss_fn: Any
    x_train: Any
    y_train: Any
    x_val: Any
    y_val: Any
    batch: int
    autocast: Callable[[], Any] = contextlib.nullcontext  # a fresh context manager per call
    scaler: Any = None                                    # a GradScaler for fp16, else None
    generator: Any = None                                 # CPU generator for the epoch shuffles

    @property
    def train_samples(self) -> int:
        return int(self.x_train.shape[0])


def train_step(task: Task, x: Any, y: Any) -> Any:
    """One optimiser step on a batch already on the device; returns the loss, left on the device."""
    task.optimizer.zero_grad(set_to_none=True)
    with task.autocast():
        loss = task.loss_fn(task.model(x), y)
    if task.scaler is not None:
        task.scaler.scale(loss).backward()  # fp16: scale so small gradients do not flush to zero
        task.scaler.step(task.optimizer)
        task.scaler.update()
    else:
        loss.backward()
        task.optimizer.step()
    return loss.detach()


def fixed_batches(task: Task) -> list[tuple[Any, Any]]:
    """Full batches of the training set, sliced on the device once, for the timed steps."""
    count = max(1, task.train_samples // task.batch)
    return [(task.x_train[i * task.batch:(i + 1) * task.batch], task.y_train[i * task.batch:(i + 1) * task.batch])
            for i in range(count)]


def stepper(task: Task) -> Callable[[], Any]:
    """The timed call: one training step per call, cycling through the training batches."""
    batches, position = fixed_batches(task), [0]

    def step():
        x, y = batches[position[0] % len(batches)]
        position[0] += 1
        return train_step(task, x, y)
    return step


def run_epoch(task: Task) -> float:
    """One pass over the shuffled training set (the last batch may be short); mean training loss."""
    import torch

    task.model.train()
    order = torch.randperm(task.train_samples, generator=task.generator).to(task.x_train.device)
    total = torch.zeros((), device=task.x_train.device)
    for start in range(0, task.train_samples, task.batch):
        index = order[start:start + task.batch]
        total += train_step(task, task.x_train[index], task.y_train[index]).float() * index.numel()
    return float(total) / task.train_samples  # float() waits for the device


def evaluate(task: Task) -> tuple[float, float]:
    """(mean loss, accuracy) on the held-out set, dropout off; the model is left in training mode."""
    import torch

    task.model.eval()
    loss_sum, correct = 0.0, 0
    try:
        with torch.no_grad(), task.autocast():
            for start in range(0, int(task.x_val.shape[0]), EVAL_BATCH):
                x, y = task.x_val[start:start + EVAL_BATCH], task.y_val[start:start + EVAL_BATCH]
                logits = task.model(x).float()
                loss_sum += float(task.loss_fn(logits, y)) * int(y.shape[0])
                correct += int((logits.argmax(dim=1) == y).sum())
    finally:
        task.model.train()
    count = int(task.x_val.shape[0])
    return loss_sum / count, correct / count


@dataclass(frozen=True)
class Epoch:
    number: int           # 0 is the untrained model
    elapsed_s: float      # wall time since training began, evaluations included
    train_s: float        # this epoch's training alone
    train_loss: float     # NaN for epoch 0
    val_loss: float
    val_accuracy: float
    train_accuracy: float = math.nan  # where the framework reports it (Keras's fit does)


EPOCH_LOG = logging.getLogger("accelbench.epochs")  # `accelbench run --verbose` prints it


def epoch_line(epoch: Epoch, epochs: int, samples: int) -> str:
    """The tutorial's per-epoch log line (Keras's fit with verbose=2), with the time per sample."""
    accuracy = f" - acc: {epoch.train_accuracy:.4f}" if math.isfinite(epoch.train_accuracy) else ""
    per_sample_us = epoch.train_s / samples * 1e6 if samples else math.nan
    return (f"Epoch {epoch.number}/{epochs} - {epoch.train_s:.2f}s {per_sample_us:.0f}us/sample - "
            f"loss: {epoch.train_loss:.4f}{accuracy} - val_loss: {epoch.val_loss:.4f} - val_acc: {epoch.val_accuracy:.4f}")


@dataclass(frozen=True)
class TrainingRun:
    epochs: tuple[Epoch, ...]
    target_accuracy: float
    time_to_target_s: float | None
    stopped: str          # "target", "epochs" or "time cap"
    samples_per_epoch: int
    time_cap_s: float

    @property
    def trained(self) -> tuple[Epoch, ...]:
        return self.epochs[1:]

    @property
    def best_accuracy(self) -> float:
        return max(e.val_accuracy for e in self.epochs)

    @property
    def epoch_time_s(self) -> float | None:
        return statistics.median(e.train_s for e in self.trained) if self.trained else None

    @property
    def train_samples_per_s(self) -> float | None:
        seconds = sum(e.train_s for e in self.trained)
        return self.samples_per_epoch * len(self.trained) / seconds if seconds > 0 else None

    def metrics(self) -> dict[str, Any]:
        return {
            "train_samples_per_s": self.train_samples_per_s, "epoch_time_s": self.epoch_time_s,
            "target_accuracy": self.target_accuracy, "time_to_accuracy_s": self.time_to_target_s,
            "target_reached": self.time_to_target_s is not None, "accuracy_reached": self.best_accuracy,
            "final_accuracy": self.epochs[-1].val_accuracy, "epochs_run": len(self.trained),
            "stopped": self.stopped, "time_cap_s": self.time_cap_s,
            "val_loss_curve": shortened([e.val_loss for e in self.epochs]),
            "val_accuracy_curve": shortened([e.val_accuracy for e in self.epochs]),
            # epoch 1 onwards: the per-epoch log's figures
            "train_loss_curve": shortened([e.train_loss for e in self.trained]),
            "train_accuracy_curve": shortened([e.train_accuracy for e in self.trained]),
            "epoch_time_curve_s": shortened([e.train_s for e in self.trained]),
            "epoch_time_per_sample_s": (self.epoch_time_s / self.samples_per_epoch
                                        if self.epoch_time_s and self.samples_per_epoch else None),
        }


def time_to_accuracy(task: Task, target: float, max_epochs: int, cap_s: float, synchronize: Callable[[], Any],
                     stop_at_target: bool = True, clock: Callable[[], float] = time.perf_counter) -> TrainingRun:
    """Train epoch by epoch from the model as given, evaluating after each, until the held-out
    accuracy reaches `target` (when `stop_at_target`), `max_epochs` pass, or `cap_s` of wall time."""
    return epochs_until(lambda: (run_epoch(task), math.nan), lambda: evaluate(task), target, max_epochs, cap_s,
                        synchronize, task.train_samples, stop_at_target, clock)


def epochs_until(epoch: Callable[[], tuple[float, float]], evaluate: Callable[[], tuple[float, float]],
                 target: float, max_epochs: int, cap_s: float, synchronize: Callable[[], Any], samples: int,
                 stop_at_target: bool = True, clock: Callable[[], float] = time.perf_counter) -> TrainingRun:
    """The loop of time_to_accuracy for any framework: `epoch()` trains one epoch and gives (training
    loss, training accuracy or NaN); `evaluate()` gives the held-out (loss, accuracy)."""
    loss, accuracy = evaluate()
    epochs = [Epoch(0, 0.0, 0.0, math.nan, loss, accuracy)]
    reached, stopped = None, "epochs"
    synchronize()
    start = clock()
    for number in range(1, max_epochs + 1):
        synchronize()
        began = clock()
        train_loss, train_accuracy = epoch()
        synchronize()
        trained = clock()
        loss, accuracy = evaluate()
        elapsed = clock() - start
        epochs.append(Epoch(number, elapsed, trained - began, train_loss, loss, accuracy, train_accuracy))
        EPOCH_LOG.info(epoch_line(epochs[-1], max_epochs, samples))
        if reached is None and accuracy >= target:
            reached = elapsed
        if reached is not None and stop_at_target:
            stopped = "target"
            break
        if elapsed >= cap_s and number < max_epochs:
            stopped = "time cap"
            break
    return TrainingRun(tuple(epochs), target, reached, stopped, samples, cap_s)


def shortened(values: list[float], points: int = CURVE_POINTS) -> list[float | None]:
    """At most `points` values, evenly picked (first and last kept), rounded for storage."""
    if len(values) > points:
        step = (len(values) - 1) / (points - 1)
        values = [values[round(i * step)] for i in range(points)]
    return [round(v, 5) if math.isfinite(v) else None for v in values]


# -- checks --------------------------------------------------------------------------------------------
def required_accuracy(classes: int) -> float:
    """Halfway from chance (1/classes) to perfect: 55% for ten digits; a model that did not learn,
    or learnt labels that mean nothing, stays near 10% on held-out digits."""
    chance = 1.0 / classes
    return chance + (1.0 - chance) / 2


def learning_problems(initial_loss: float, final_loss: float) -> list[str]:
    if not (math.isfinite(initial_loss) and math.isfinite(final_loss)):
        return [f"held-out loss is not finite ({initial_loss} -> {final_loss})"]
    if final_loss > (1 - LOSS_FALL_FRACTION) * initial_loss:
        return [f"held-out loss did not fall by {LOSS_FALL_FRACTION:.0%}: {initial_loss:.4f} -> {final_loss:.4f}"]
    return []


def placement_problems(backend, device: str, model: Any, output: Any) -> list[str]:
    """Every parameter and the output must live on the device asked for (no silent CPU fallback)."""
    places = {backend.location(p) for p in model.parameters()}
    problems = [f"parameters on {', '.join(sorted(places - {device}))}, asked for {device}"] if places - {device} else []
    seen = backend.location(output)
    if seen != device:
        problems.append(f"output on {seen}, asked for {device}")
    return problems


def classifier_check(run: TrainingRun, classes: int, placement: list[str], device_seen: str) -> Check:
    """Passed when the held-out loss fell, the accuracy is clearly above chance, and all sat on the device."""
    need = required_accuracy(classes)
    problems = list(placement) + learning_problems(run.epochs[0].val_loss, run.epochs[-1].val_loss)
    if not run.best_accuracy >= need:
        problems.append(f"held-out accuracy {run.best_accuracy:.3f} is under {need:.2f} "
                        f"(chance is {1 / classes:.2f}): the model did not learn")
    detail = "; ".join(problems) or (
        f"learnt: held-out loss {run.epochs[0].val_loss:.3f} -> {run.epochs[-1].val_loss:.3f}, "
        f"accuracy {run.best_accuracy:.3f} in {len(run.trained)} epochs")
    # the "error" is the held-out error rate; the tolerance the error rate the check allows
    return Check(passed=not problems, max_rel_error=1.0 - run.best_accuracy, tolerance=1.0 - need,
                 detail=detail, device_seen=device_seen)


# -- memory --------------------------------------------------------------------------------------------
def reset_peak_memory(device: Any) -> None:
    """Start the device allocator's peak counters afresh, where it has them."""
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    elif device.type == "xpu" and hasattr(torch.xpu, "reset_peak_memory_stats"):
        torch.xpu.reset_peak_memory_stats(device)


def memory_metrics(device: Any) -> dict[str, int]:
    """Host RSS now, and the device allocator's peaks since reset_peak_memory (cuda, xpu) or its
    current total (mps, which keeps no peak)."""
    import psutil
    import torch

    found = {"host_rss_bytes": int(psutil.Process().memory_info().rss)}
    if device.type == "cuda":
        found["device_peak_allocated_bytes"] = int(torch.cuda.max_memory_allocated(device))
        found["device_peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved(device))
    elif device.type == "xpu" and hasattr(torch.xpu, "max_memory_allocated"):
        found["device_peak_allocated_bytes"] = int(torch.xpu.max_memory_allocated(device))
        found["device_peak_reserved_bytes"] = int(torch.xpu.max_memory_reserved(device))
    elif device.type == "mps":
        found["device_allocated_bytes"] = int(torch.mps.current_allocated_memory())
        found["device_driver_allocated_bytes"] = int(torch.mps.driver_allocated_memory())
    return found


def seeded(seed: int) -> Any:
    """Seed torch's global generators (weights, dropout) and return a CPU generator for shuffles."""
    import torch

    torch.manual_seed(seed)
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator


@dataclass
class Lazy:
    """A value computed on first use and kept: the check and metrics() share one training run."""

    make: Callable[[], Any]
    _value: list = field(default_factory=list)

    def __call__(self) -> Any:
        if not self._value:
            self._value.append(self.make())
        return self._value[0]


# -- precision -----------------------------------------------------------------------------------------
PRECISIONS = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def mixed_precision(backend, device: str, torch_device: Any, precision: str) -> tuple[Callable, Callable]:
    """(autocast context factory, GradScaler factory) for `precision`; Unsupported where the device
    has no native kernels for it or autocast would quietly run in fp32 instead."""
    import torch

    if precision not in PRECISIONS:
        raise Unsupported(f"unknown precision {precision!r}; accepted: {', '.join(PRECISIONS)}")
    if precision == "fp32":
        return contextlib.nullcontext, lambda: None
    dtype_name = PRECISIONS[precision]
    if dtype_name not in backend.dtypes(device):
        raise Unsupported(f"{precision} autocast on {device}: torch has no native {dtype_name} kernels there "
                          f"(it computes in {', '.join(backend.dtypes(device))}); a fallback would time emulation")
    dtype = getattr(torch, dtype_name)

    def autocast():
        return torch.autocast(device_type=torch_device.type, dtype=dtype)

    probe = torch.nn.Linear(8, 8).to(torch_device)
    try:
        with autocast():
            seen = probe(torch.ones(2, 8, device=torch_device)).dtype
    except (RuntimeError, ValueError) as error:
        raise Unsupported(f"{precision} autocast on {device} failed: {error}") from None
    if seen != dtype:  # autocast warns and disables itself for a dtype the device type lacks
        raise Unsupported(f"{precision} autocast on {device} computed in {seen}, not {dtype_name}")
    if precision == "fp16":
        try:
            torch.amp.GradScaler(torch_device.type)
        except (RuntimeError, ValueError, AssertionError) as error:  # no GradScaler for this device type
            raise Unsupported(f"fp16 on {device} needs a GradScaler, and torch has none there: {error}") from None
        return autocast, lambda: torch.amp.GradScaler(torch_device.type)
    return autocast, lambda: None  # bf16 has fp32's exponent range: no loss scaling needed


def on_device(array, device: Any) -> Any:
    """A numpy array copied onto the device (a copy: cached arrays stay untouched and writable)."""
    import numpy as np
    import torch

    return torch.from_numpy(np.array(array, copy=True)).to(device)
