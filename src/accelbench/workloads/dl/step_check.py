"""Timed training steps and the check that covers them (runner/audit.py's hooks for training).

`compute` is one optimiser step on the next of the training batches (consecutive steps never see
the same batch, and the weights change every step, so no result can be reused). The audit then:

1. `poison`: fills the last returned loss with NaN (a stale loss tensor shows), and keeps a copy
   of the weights and the optimiser state, and starts recording the batches the steps use and
   what each dropout layer let through;
2. runs a timed block of steps, then `check_output`: replays those same steps on a float64 CPU
   copy of the model and optimiser (same batches, same dropout masks) and compares the update
   the timed steps made to the weights, and the loss the last one returned, with the replay's.

A step that skips the optimiser update, updates wrongly, or returns a stale or wrong loss fails.
The loss the timed model reaches must also be finite and, after enough steps, below its first.
"""
from __future__ import annotations

import copy
import math
from typing import Any, Callable

from accelbench.results import Check
from accelbench.workloads.dl import training

# relative norm error of the update (weights after - before) and of the loss, against the float64
# replay. fp32 leaves room for TF32 convolutions (cuDNN's default); autocast to 16 bits rounds
# activations and gradients (~1e-2 each). A skipped update is off by 1, a stale loss by far more.
UPDATE_TOLERANCE = {"float32": 1e-2, "bfloat16": 0.3, "float16": 0.15}
LOSS_TOLERANCE = {"float32": 2e-3, "bfloat16": 5e-2, "float16": 2e-2}
LEARNING_STEPS = 100   # after this many timed steps, the loss must be below the first step's


class TimedSteps:
    """One training step per call on `task`, with the poison/check hooks of the audit."""

    def __init__(self, task: training.Task, backend, device: str, dtype: str = "float32",
                 must_learn: bool = True) -> None:
        self.task, self.backend, self.device, self.dtype = task, backend, device, dtype
        self.must_learn = must_learn
        self.batches = training.fixed_batches(task)
        self.position = self.steps_taken = 0
        self.first_loss: float | None = None
        self.last_loss: Any = None  # the last step's loss tensor, left on the device
        self.recorded: list | None = None     # (x, y) of each step since poison()
        self.snapshot: dict | None = None
        self.dropout_io: dict[str, list] = {}
        self.hooks: list = []
        self.more_problems: Callable[[], list[str]] | None = None  # more problems, from the workload

    # -- the timed call --------------------------------------------------------------------------
    def compute(self) -> Any:
        x, y = self.batches[self.position % len(self.batches)]
        self.position += 1
        loss = training.train_step(self.task, x, y)
        if self.recorded is not None:
            self.recorded.append((x, y))
        if self.first_loss is None:
            self.first_loss = float(loss)  # the first call is timed apart: reading it back is free
        self.last_loss, self.steps_taken = loss, self.steps_taken + 1
        return loss

    # -- the audit's hooks -----------------------------------------------------------------------
    def poison(self) -> None:
        import torch

        if self.last_loss is not None and self.last_loss.is_floating_point():
            self.last_loss.fill_(math.nan)
        self.snapshot = {
            "weights": {n: p.detach().to("cpu", torch.float64, copy=True) for n, p in self.task.model.named_parameters()},
            "optimizer": copy.deepcopy(self.task.optimizer.state_dict()),
            "scale": self.task.scaler.get_scale() if self.task.scaler is not None else None,
        }
        self.recorded, self.dropout_io = [], {}
        for name, module in self.task.model.named_modules():
            if isinstance(module, torch.nn.Dropout):
                self.dropout_io[name] = []
                self.hooks.append(module.register_forward_hook(self._recorder(name)))

    def _recorder(self, name: str) -> Callable:
        def record(module, inputs, output):
            self.dropout_io[name].append((output != 0, module.p))
        return record

    def check_output(self, last: Any) -> Check:
        problems, error = self._replay_problems(last)
        problems += self.placement()
        if self.more_problems is not None:
            problems += self.more_problems()
        tolerance = UPDATE_TOLERANCE[self.dtype]
        seen = self.backend.location(last) if last is not None else "nothing"
        detail = "; ".join(problems) or (
            f"{self.dtype} update of the last {error[1]} timed step(s) within {tolerance:g} of a float64 CPU "
            f"replay (relative error {error[0]:.1e}), loss {float(last):.4f}")
        return Check(passed=not problems, max_rel_error=error[0], tolerance=tolerance, detail=detail,
                     device_seen=seen)

    def placement(self) -> list[str]:
        import torch

        with torch.no_grad():
            output = self.task.model(self.batches[0][0][:2])
        return training.placement_problems(self.backend, self.device, self.task.model, output)

    def _replay_problems(self, last: Any) -> tuple[list[str], tuple[float, int]]:
        for hook in self.hooks:
            hook.remove()
        self.hooks.clear()
        steps, self.recorded = self.recorded or [], None
        if not steps or self.snapshot is None:
            return ["no timed step ran after the check began"], (math.inf, 0)
        loss = float(last) if last is not None else math.nan
        problems = []
        if not math.isfinite(loss):
            problems.append(f"the last timed step returned a loss of {loss}: a stale or unwritten loss")
        if self.must_learn and self.steps_taken >= LEARNING_STEPS and self.first_loss is not None \
                and not loss < self.first_loss:
            problems.append(f"the loss did not fall in {self.steps_taken} timed steps: "
                            f"{self.first_loss:.4f} -> {loss:.4f}")
        scale = self.snapshot["scale"]
        if scale is not None and self.task.scaler.get_scale() < scale:
            return problems, (0.0, len(steps))  # a step was skipped on overflow: the replay cannot match
        update_error, loss_error, moved = self._compare(steps, loss)
        if not moved:
            problems.append(f"the {len(steps)} timed step(s) left every weight unchanged: the optimiser "
                            "update was skipped")
        elif not update_error <= UPDATE_TOLERANCE[self.dtype]:
            problems.append(f"the timed steps' weight update is off a float64 replay of the same steps by "
                            f"{update_error:.2e} (> {UPDATE_TOLERANCE[self.dtype]:g}): the optimiser step was "
                            "skipped or wrong")
        if math.isfinite(loss) and not loss_error <= LOSS_TOLERANCE[self.dtype]:
            problems.append(f"the last timed step's loss {loss:.5f} is off the replay's by {loss_error:.2e} "
                            f"(> {LOSS_TOLERANCE[self.dtype]:g}): a stale or wrong loss")
        return problems, (update_error, len(steps))

    def _compare(self, steps: list, loss: float) -> tuple[float, float, bool]:
        """(update error, last loss error, whether the timed steps moved any weight)."""
        import torch

        assert self.snapshot is not None  # _replay_problems returns early without one
        before = self.snapshot["weights"]
        replayed, losses = replay(self.task, before, self.snapshot["optimizer"], steps, self.dropout_io)
        timed = {n: p.detach().to("cpu", torch.float64) for n, p in self.task.model.named_parameters()}
        timed_update = torch.cat([(timed[n] - before[n]).reshape(-1) for n in before])
        replay_update = torch.cat([(replayed[n] - before[n]).reshape(-1) for n in before])
        moved = bool(timed_update.abs().max() > 0)
        scale = float(replay_update.norm()) or 1.0
        update_error = float((timed_update - replay_update).norm()) / scale
        if not math.isfinite(update_error):
            update_error = math.inf
        loss_error = abs(loss - losses[-1]) / max(abs(losses[-1]), 1e-12)
        return update_error, loss_error, moved


def replay(task: training.Task, weights: dict, optimizer_state: dict, steps: list, dropout_io: dict
           ) -> tuple[dict, list[float]]:
    """The steps again on a float64 CPU copy of the model and optimiser, from `weights` and
    `optimizer_state`, each dropout layer keeping what it kept in the timed step; returns the
    weights after and each step's loss."""
    import torch

    model = copy.deepcopy(task.model).to("cpu", torch.float64)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.copy_(weights[name])
    masks = {name: iter(records) for name, records in dropout_io.items()}
    for name, module in model.named_modules():
        if name in masks:
            module.register_forward_hook(_replayed_dropout(masks[name]))
    names = {id(p): n for n, p in task.model.named_parameters()}
    by_name = dict(model.named_parameters())
    groups = [{**{k: v for k, v in group.items() if k != "params"},
               "params": [by_name[names[id(p)]] for p in group["params"]]} for group in task.optimizer.param_groups]
    optimizer = type(task.optimizer)(groups)
    optimizer.load_state_dict(optimizer_state)
    model.train()
    losses = []
    for x, y in steps:
        optimizer.zero_grad(set_to_none=True)
        inputs = x.to("cpu")
        inputs = inputs.to(torch.float64) if inputs.is_floating_point() else inputs
        loss = task.loss_fn(model(inputs), y.to("cpu"))
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return {n: p.detach() for n, p in model.named_parameters()}, losses


def _replayed_dropout(records) -> Callable:
    def masked(module, inputs, output):
        kept, p = next(records)
        return inputs[0] * kept.to("cpu", inputs[0].dtype) / (1.0 - p)
    return masked
