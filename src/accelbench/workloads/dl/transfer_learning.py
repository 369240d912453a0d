"""Seed 003's VGG16 transfer learning: a frozen convolutional base under a new head (Flatten,
Dense 256, Dense 10) trained on the shipped digits, against fine-tuning the whole network.

The base is VGG16's convolutional stack from vgg.py with random weights (pretrained ones cannot be
downloaded; the arithmetic is the same) at the tutorial's 224x224 in the standard grid (a head of
25,088 -> 256, 6.4 M trainable weights) and 32x32 in the quick one (labelled). Timed: one
training step of batch 8. The check: the last timed steps match a float64 replay of the same steps
(step_check.py); with mode=frozen the base must come out bit-identical and every head tensor must
have changed; with mode=full every tensor must have changed; all on the device and finite.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from functools import lru_cache

from accelbench.workloads.base import Prepared, Workload
from accelbench.workloads.dl import data, keras_training, models, step_check, training, vgg

MODES = ("frozen", "full")
SEED_IMAGE_PX = 224        # seed 003: VGG16(input_shape=(224, 224, 3))
QUICK_IMAGE_PX = 32
HEAD_UNITS = 256           # seed 003: Dense(256, activation='relu')
TRAIN_IMAGES = 512         # digits put on the device for the timed steps (64 batches of 8)
LEARNING_RATE = {"frozen": 1e-3, "full": 1e-4}  # Keras's Adam default; fine-tuning all of VGG wants less


def build(image_px: int, mode: str, seed: int):
    """VGG16's base (He-initialised from `seed`) and the seed's head, frozen as `mode` says."""
    import torch
    from torch import nn

    base = vgg.vgg_features(16)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in base.modules():
            if isinstance(layer, nn.Conv2d):  # He on the fan-in keeps activations of order 1
                nn.init.kaiming_normal_(layer.weight, mode="fan_in", nonlinearity="relu", generator=generator)
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)
    channels, height, width = vgg.feature_shape(16, image_px)
    with torch.random.fork_rng(devices=[]):  # the head's weights from `seed` too, the caller's RNG untouched
        torch.manual_seed(seed)
        head = models.keras_init(nn.Sequential(nn.Flatten(), nn.Linear(channels * height * width, HEAD_UNITS),
                                               nn.ReLU(), nn.Linear(HEAD_UNITS, data.MNIST_CLASSES)))
    model = nn.Sequential(OrderedDict(base=base, head=head))
    if mode == "frozen":
        freeze(model.base)
    return model


def freeze(module) -> None:
    """Keras's `layer.trainable = False`: no gradients, so the optimiser never sees these weights."""
    for parameter in module.parameters():
        parameter.requires_grad_(False)


def image_size_note(image_px: int) -> dict:
    """Where the images are smaller than the tutorial's, the result says so (the head shrinks with them)."""
    if image_px == SEED_IMAGE_PX:
        return {}
    return {"image_px_note": f"image_px={image_px}: reduced from the tutorial's {SEED_IMAGE_PX}x{SEED_IMAGE_PX}, "
                             f"so the head's Dense 256 sees {512 * (image_px // 32) ** 2:,} features, not 25,088"}


class TransferLearning(Workload):
    role = "model"  # a whole model or application, read on its own figures
    cpu_baseline = "framework"  # against the same framework on the CPU
    name = "transfer"
    description = "the deep-learning GPU guide's VGG16 transfer learning: frozen base + new head vs full fine-tuning, batch 8"
    size_param, size_unit = "batch", "images per batch"
    dtypes = ("float32",)

    def grid(self, sizes, dtypes, quick):
        # at 224 a 2-core CPU takes ~16 s a frozen step, ~29 s a fine-tuning one; a GPU, milliseconds
        image_px = QUICK_IMAGE_PX if quick else SEED_IMAGE_PX
        return [{"batch": batch, "dtype": "float32", "image_px": image_px, "mode": mode}
                for batch in sizes or [8] for mode in MODES]

    def work(self, params):
        layers, parameters, trainable = _layers(params["image_px"], params["mode"])
        return models.step_work(params["batch"], layers, parameters, trainable,
                                3 * params["image_px"] ** 2 * models.BYTES_PER_FLOAT32)

    def footprint_bytes(self, params):
        weights = 4 * (vgg.parameter_count(16, image_size=params["image_px"]))  # an upper bound for the base
        images = TRAIN_IMAGES * 3 * params["image_px"] ** 2 * 4
        return 5 * weights + images + params["batch"] * 64 * params["image_px"] ** 2 * 4 * 8

    def prepare(self, backend, device, params, seed) -> Prepared:
        if params["mode"] not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {params['mode']!r}")
        if keras_training.is_keras(backend):
            return keras_training.prepare(self.name, self, backend, device, params, seed, train_images=TRAIN_IMAGES,
                                          size_note=image_size_note(params["image_px"]))
        return _Session(backend, device, params, seed).prepared()


@lru_cache(maxsize=4)
def _layers(image_px: int, mode: str) -> tuple[list[models.LayerFlops], int, int]:
    import torch

    model = build(image_px, mode, seed=0)
    layers = models.layer_flops(model, torch.zeros(1, 3, image_px, image_px))
    return layers, models.parameter_count(model), models.parameter_count(model, trainable=True)


class _Session:
    def __init__(self, backend, device: str, params: dict, seed: int) -> None:
        import torch

        self.backend, self.device, self.params = backend, device, params
        self.torch_device = training.torch_device(backend, device)
        training.reset_peak_memory(self.torch_device)
        split = data.digits_split()
        images = data.as_images(split.x_train[:TRAIN_IMAGES], params["image_px"], channels=3)
        generator = training.seeded(seed)
        self.model = build(params["image_px"], params["mode"], seed).to(self.torch_device)
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        optimizer = torch.optim.Adam(trainable, lr=LEARNING_RATE[params["mode"]], eps=1e-7)
        self.task = training.Task(self.model, optimizer, torch.nn.CrossEntropyLoss(),
                                  training.on_device(images, self.torch_device),
                                  training.on_device(split.y_train[:TRAIN_IMAGES], self.torch_device),
                                  None, None, batch=params["batch"], generator=generator)
        # the weights before any step: what the check compares with, tensor by tensor
        self.before = {name: p.detach().clone() for name, p in self.model.named_parameters()}
        # batches of 8 give a noisy loss: the replay and the weights' fate are this check, not learning
        self.steps = step_check.TimedSteps(self.task, backend, device, must_learn=False)
        self.steps.more_problems = self.weight_problems

    def changes(self) -> dict[str, list[str]]:
        """Parameter names by part ("base", "head") and fate ("same", "changed")."""
        import torch

        found: dict[str, list[str]] = {"base_same": [], "base_changed": [], "head_same": [], "head_changed": []}
        for name, parameter in self.model.named_parameters():
            part = name.split(".")[0]
            fate = "same" if torch.equal(parameter.detach(), self.before[name]) else "changed"
            found[f"{part}_{fate}"].append(name)
        return found

    def weight_problems(self) -> list[str]:
        import torch

        problems = self._weight_problems(self.changes())
        if not all(bool(torch.isfinite(p).all()) for p in self.model.parameters()):
            problems.append("weights are no longer finite: training diverged")
        return problems

    def _weight_problems(self, changes: dict[str, list[str]]) -> list[str]:
        problems = []
        if changes["head_same"]:
            problems.append(f"head tensors unchanged after {self.steps.steps_taken} steps: {', '.join(changes['head_same'])}")
        if self.params["mode"] == "frozen" and changes["base_changed"]:
            problems.append(f"the frozen base changed: {len(changes['base_changed'])} tensors "
                            f"(first {changes['base_changed'][0]})")
        if self.params["mode"] == "full" and changes["base_same"]:
            problems.append(f"fine-tuning left {len(changes['base_same'])} base tensors unchanged "
                            f"(first {changes['base_same'][0]})")
        return problems

    def metrics(self) -> dict:
        changes = self.changes()
        first = math.nan if self.steps.first_loss is None else self.steps.first_loss
        return {
            "trainable_parameters": models.parameter_count(self.model, trainable=True),
            "frozen_parameters": models.parameter_count(self.model, trainable=False),
            "base_tensors_changed": len(changes["base_changed"]), "head_tensors_changed": len(changes["head_changed"]),
            "steps_taken": self.steps.steps_taken, "first_step_loss": first,
            "image_px": self.params["image_px"], "base_weights": "random (He); pretrained ones cannot be downloaded",
            **image_size_note(self.params["image_px"]),
            **training.memory_metrics(self.torch_device),
        }

    def release(self) -> None:
        del self.model, self.task, self.steps  # frees device memory: Prepared.release is called once, last
        self.before.clear()

    def prepared(self) -> Prepared:
        return Prepared(compute=self.steps.compute, check_output=self.steps.check_output, poison=self.steps.poison,
                        variants=2, metrics=self.metrics, release=self.release)

