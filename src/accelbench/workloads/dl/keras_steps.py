"""Timed Keras training steps and their check: the Keras counterpart of step_check.py.

`compute` is one `model.train_on_batch` on the next of the training batches, already on the
device (Keras's own step, the one `fit` runs per batch). The audit then:

1. `poison`: keeps the weights, the other variables (Keras's dropout seeds) and the optimiser's
   variables, and starts recording the batches the steps use; where Keras runs its steps eagerly
   (keras-torch, whose unseeded dropout draws from torch's global generator), it also records
   which units each Dropout layer kept, as step_check.py does for torch;
2. runs a timed block of steps, then `check_output`: builds the same model in float64, gives it
   those variables, and replays the same steps (dropout keeping the same units: the recorded
   ones, or on a compiled backend the same seeds) on the same device where it computes in
   float64, else on the CPU; the update the timed steps made to the weights and the last loss
   are compared with the replay's.

Placement is read from the tensors under the Keras variables and from a forward pass's output
(backends/placement.py): Keras silently computing on the CPU while a GPU was asked for fails.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from accelbench.backends.placement import observe
from accelbench.results import Check
from accelbench.workloads.dl.step_check import LEARNING_STEPS, LOSS_TOLERANCE, UPDATE_TOLERANCE


def host_copy(keras: Any, values: list) -> list[np.ndarray]:
    return [np.array(keras.ops.convert_to_numpy(v), copy=True) for v in values]


def placement_problems(backend, device: str, model: Any, output: Any) -> list[str]:
    """Every variable's tensor and the output, observed where they live, must be on `device`."""
    places = {observe(backend.native(v)).device or "unobserved" for v in model.weights}
    problems = [f"Keras variables on {', '.join(sorted(places - {device}))}, asked for {device}"] \
        if places - {device} else []
    seen = observe(backend.native(output)).device or "unobserved"
    if seen != device:
        problems.append(f"Keras computed the output on {seen}, asked for {device}")
    return problems


class KerasSteps:
    """One `train_on_batch` per call on `model` (built by `build(dtype)`), with the audit's hooks."""

    def __init__(self, backend, device: str, model: Any, build: Callable[[str], Any], batches: list,
                 must_learn: bool = True) -> None:
        self.backend, self.device, self.model, self.build = backend, device, model, build
        self.keras = backend.keras()
        self.batches, self.must_learn = batches, must_learn
        self.position = self.steps_taken = 0
        self.first_loss: float | None = None
        self.last_loss = math.nan
        self.recorded: list | None = None
        self.snapshot: dict | None = None
        self.kept: list[list] | None = None  # per Dropout layer, what each recorded step kept
        self.more_problems: Callable[[], list[str]] | None = None

    # -- the timed call ---------------------------------------------------------------------------
    def compute(self) -> float:
        x, y = self.batches[self.position % len(self.batches)]
        self.position += 1
        with self.backend.on_device(self.device):
            loss = float(self.model.train_on_batch(x, y, return_dict=True)["loss"])  # Keras reads it back
        if self.recorded is not None:
            self.recorded.append((x, y))
        if self.first_loss is None:
            self.first_loss = loss
        self.last_loss, self.steps_taken = loss, self.steps_taken + 1
        return loss

    def placed(self, output: Any) -> Any:
        """The tensor whose placement proves where the steps ran: the last weight they updated."""
        return self.backend.native(self.model.trainable_weights[-1])

    # -- the audit's hooks ------------------------------------------------------------------------
    def poison(self) -> None:
        self.snapshot = {"weights": host_copy(self.keras, self.model.trainable_variables),
                         "others": host_copy(self.keras, self.model.non_trainable_variables),
                         "optimizer": host_copy(self.keras, self.model.optimizer.variables)}
        self.recorded = []
        if getattr(self.backend, "eager_steps", False):
            self.kept = []
            for layer in self.dropout_layers(self.model):
                self.kept.append([])
                object.__setattr__(layer, "call", self._recorder(layer, self.kept[-1]))

    def dropout_layers(self, model: Any) -> list:
        return [layer for layer in model.layers if isinstance(layer, self.keras.layers.Dropout)]

    def _recorder(self, layer: Any, kept: list) -> Callable:
        original = type(layer).call

        def call(inputs, training=False):
            output = original(layer, inputs, training=training)
            if training:
                kept.append(output != 0)  # left on the device: no sync inside the timed step
            return output
        return call

    def _replayed(self, layer: Any, kept: Any) -> Callable:
        ops = self.keras.ops

        def call(inputs, training=False):
            if not training:
                return inputs
            mask = ops.convert_to_tensor(np.asarray(self.keras.ops.convert_to_numpy(next(kept))))
            return inputs * ops.cast(mask, inputs.dtype) / (1.0 - layer.rate)
        return call

    def check_output(self, last: Any) -> Check:
        problems, error, steps = self._replay_problems(last)
        problems += self.placement()
        if self.more_problems is not None:
            problems += self.more_problems()
        tolerance = UPDATE_TOLERANCE["float32"]
        detail = "; ".join(problems) or (
            f"Keras float32 update of the last {steps} timed step(s) within {tolerance:g} of a float64 replay "
            f"in Keras (relative error {error:.1e}), loss {self.last_loss:.4f}")
        seen = observe(self.placed(last)).device or self.device
        return Check(passed=not problems, max_rel_error=error, tolerance=tolerance, detail=detail, device_seen=seen)

    def placement(self) -> list[str]:
        with self.backend.on_device(self.device):
            output = self.model(self.batches[0][0][:2], training=False)
        return placement_problems(self.backend, self.device, self.model, output)

    def replay_device(self) -> str:
        return self.device if "float64" in self.backend.dtypes(self.device) else "cpu"

    def _replay_problems(self, last: Any) -> tuple[list[str], float, int]:
        if self.kept is not None:
            for layer in self.dropout_layers(self.model):
                object.__delattr__(layer, "call")  # the class's own call again
        steps, self.recorded = self.recorded or [], None
        if not steps or self.snapshot is None:
            return ["no timed step ran after the check began"], math.inf, 0
        loss = float(last) if last is not None else math.nan
        problems = []
        if not math.isfinite(loss):
            problems.append(f"the last timed step returned a loss of {loss}")
        if self.must_learn and self.steps_taken >= LEARNING_STEPS and self.first_loss is not None \
                and not loss < self.first_loss:
            problems.append(f"the loss did not fall in {self.steps_taken} timed steps: {self.first_loss:.4f} -> {loss:.4f}")
        before = self.snapshot["weights"]
        replayed, losses = self.replay(steps)
        timed = host_copy(self.keras, self.model.trainable_variables)
        timed_update = np.concatenate([(t.astype(np.float64) - b).ravel() for t, b in zip(timed, before)])
        replay_update = np.concatenate([(r - b).ravel() for r, b in zip(replayed, before)])
        error = float(np.linalg.norm(timed_update - replay_update)) / (float(np.linalg.norm(replay_update)) or 1.0)
        error = error if math.isfinite(error) else math.inf
        if not np.abs(timed_update).max() > 0:
            problems.append(f"the {len(steps)} timed step(s) left every weight unchanged: the update was skipped")
        elif not error <= UPDATE_TOLERANCE["float32"]:
            problems.append(f"the timed steps' weight update is off a float64 replay of the same steps by {error:.2e} "
                            f"(> {UPDATE_TOLERANCE['float32']:g}): the optimiser step was skipped or wrong")
        loss_error = abs(loss - losses[-1]) / max(abs(losses[-1]), 1e-12)
        if math.isfinite(loss) and not loss_error <= LOSS_TOLERANCE["float32"]:
            problems.append(f"the last timed step's loss {loss:.5f} is off the replay's {losses[-1]:.5f} by "
                            f"{loss_error:.2e} (> {LOSS_TOLERANCE['float32']:g})")
        return problems, error, len(steps)

    def replay(self, steps: list) -> tuple[list[np.ndarray], list[float]]:
        """The steps again on a float64 copy of the model and optimiser: weights after, losses."""
        assert self.snapshot is not None
        keras, device = self.keras, self.replay_device()
        with self.backend.on_device(device):
            replica = self.build("float64")
            replica.optimizer.build(replica.trainable_variables)
            for variables, values in ((replica.trainable_variables, self.snapshot["weights"]),
                                      (replica.non_trainable_variables, self.snapshot["others"]),
                                      (replica.optimizer.variables, self.snapshot["optimizer"])):
                for variable, value in zip(variables, values, strict=True):
                    variable.assign(value.astype(variable.dtype))
            if self.kept is not None:
                for layer, kept in zip(self.dropout_layers(replica), self.kept, strict=True):
                    object.__setattr__(layer, "call", self._replayed(layer, iter(kept)))
                self.kept = None
            losses = []
            for x, y in steps:
                inputs, targets = host_copy(keras, [x, y])
                if inputs.dtype.kind == "f":
                    inputs = inputs.astype(np.float64)
                losses.append(float(replica.train_on_batch(inputs, targets.astype(np.float64),
                                                           return_dict=True)["loss"]))
        return [w.astype(np.float64) for w in host_copy(keras, replica.trainable_variables)], losses
