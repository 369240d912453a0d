"""Image augmentation on the device vs on the CPU then copied (seed 003, "data preprocessing and
augmentation on GPUs"): random flips, crops, rotations and colour jitter over a batch.

Both paths start from the same uint8 batch in host memory, as a decoder leaves it, and end with a
float32 batch on the device, ready for a model, so the copy is counted either way:

    where=device   copy the uint8 batch (1 byte/value) to the device, augment there
    where=host     augment on the CPU, copy the float32 result (4 bytes/value) to the device

The harness times one batch per call. On the device path `to_device` (the copy) and `compute`
(the augmentation of the batch already there) are timed apart and `end_to_end` is both; on the
host path `compute` is the whole path (augment on the CPU, then copy), so its output lives on the
device. Calls alternate between two batches (workloads/rotation.py) and draw new random parameters
each time; the check compares what timed calls returned with a float64 CPU run of the same
transform on the same pixels and parameters, and a pure flip with the mirrored input.
Written in plain torch ops: flip, crop (scale and shift) and rotation are one affine resampling
(`affine_grid` + `grid_sample`, bilinear), then brightness, contrast and saturation.
"""
from __future__ import annotations

from collections import OrderedDict

import math
from typing import Any

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Check, Work
from accelbench.timing import stats
from accelbench.workloads.base import Prepared, Workload
from accelbench.workloads.rotation import SEED_STRIDE, Rotation, Variant
from accelbench.workloads.verify import make_check, relative_norm_error

WHERE = ("device", "host")
IMAGE_PX = 224
MAX_ROTATION_RAD = math.radians(15.0)
MIN_CROP_FRACTION = 0.6          # a crop keeps 60-100% of the side, then is resized to IMAGE_PX
JITTER = 0.4                     # brightness, contrast, saturation factors in [0.6, 1.4]
REFERENCE_TOLERANCE = 1e-4       # float32 vs float64 of the same ops: grid coordinates ~1e-5 px apart
MIRROR_TOLERANCE = 1e-4          # float32 grid coordinates land ~1e-5 px off the centres: ~5e-6 here
DRAWN_KEPT = 64  # outputs whose parameters are kept: more than the audit holds at once
LUMA = (0.299, 0.587, 0.114)     # ITU-R 601 weights for grayscale
MIN_BATCHES = 10                 # a median of batches, even where one batch outlasts the budget


def draw_parameters(torch, generator, batch: int) -> dict:
    """Per-image random augmentation parameters, drawn on the CPU so both paths can share them."""
    def uniform(low: float, high: float):
        return low + (high - low) * torch.rand(batch, generator=generator)

    scale = uniform(MIN_CROP_FRACTION, 1.0)
    return {
        "flip": torch.where(torch.rand(batch, generator=generator) < 0.5, -1.0, 1.0),
        "angle": uniform(-MAX_ROTATION_RAD, MAX_ROTATION_RAD),
        "scale": scale,
        "shift_x": uniform(-1.0, 1.0) * (1.0 - scale),  # the crop stays inside the image
        "shift_y": uniform(-1.0, 1.0) * (1.0 - scale),
        "brightness": uniform(1 - JITTER, 1 + JITTER),
        "contrast": uniform(1 - JITTER, 1 + JITTER),
        "saturation": uniform(1 - JITTER, 1 + JITTER),
    }


def identity_parameters(torch, batch: int, flip: float = -1.0) -> dict:
    """Parameters for a pure horizontal mirror: output = flipped input / 255, exactly."""
    ones, zeros = torch.ones(batch), torch.zeros(batch)
    return {"flip": ones * flip, "angle": zeros, "scale": ones, "shift_x": zeros, "shift_y": zeros,
            "brightness": ones, "contrast": ones, "saturation": ones}


def augment(torch, pixels, parameters: dict, dtype=None):
    """uint8 (B, 3, H, W) → float32 (or `dtype`) in [0, 1], augmented; runs wherever `pixels` lives."""
    functional = torch.nn.functional
    dtype = dtype or torch.float32
    p = {name: value.to(pixels.device, dtype) for name, value in parameters.items()}
    images = pixels.to(dtype) / 255.0
    cos, sin = torch.cos(p["angle"]) * p["scale"], torch.sin(p["angle"]) * p["scale"]
    # output (u, v) samples input R·S·diag(flip, 1)·(u, v) + shift, in [-1, 1] coordinates
    theta = torch.stack([torch.stack([p["flip"] * cos, -sin, p["shift_x"]], dim=1),
                         torch.stack([p["flip"] * sin, cos, p["shift_y"]], dim=1)], dim=1)
    grid = functional.affine_grid(theta, list(images.shape), align_corners=False)
    images = functional.grid_sample(images, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    images = (images * p["brightness"].view(-1, 1, 1, 1)).clamp(0.0, 1.0)
    mean = _gray(images).mean(dim=(1, 2, 3), keepdim=True)
    images = ((images - mean) * p["contrast"].view(-1, 1, 1, 1) + mean).clamp(0.0, 1.0)
    gray = _gray(images)
    return ((images - gray) * p["saturation"].view(-1, 1, 1, 1) + gray).clamp(0.0, 1.0)


def _gray(images):
    red, green, blue = images[:, 0:1], images[:, 1:2], images[:, 2:3]
    return LUMA[0] * red + LUMA[1] * green + LUMA[2] * blue


class Augment(Workload):
    role = "model"  # a whole model or application, read on its own figures
    cpu_baseline = "framework"  # against the same framework on the CPU
    name = "augment"
    description = ("random flip, crop, rotation and colour jitter of a uint8 batch: on the device vs on the CPU "
                   "then copied")
    size_param, size_unit = "batch", "images per batch"
    dtypes = ("float32",)

    def grid(self, sizes, dtypes, quick):
        sizes = sizes or ([16] if quick else [32, 128])
        return [{"batch": b, "image_px": IMAGE_PX, "where": where, "dtype": "float32"}
                for b in sizes for where in WHERE]

    def work(self, params):
        values = params["batch"] * 3 * params["image_px"] ** 2
        return Work(flops=0.0, bytes_moved=float(values * (1 + 4)))  # uint8 in, float32 out

    def footprint_bytes(self, params):
        return params["batch"] * 3 * params["image_px"] ** 2 * (1 + 4 * 6)  # input, output, temporaries

    def prepare(self, backend, device, params, seed):
        if backend.name != "torch":
            raise Unsupported(f"augment is written in PyTorch: run it with --backend torch, not {backend.name}")
        if params["where"] not in WHERE:
            raise Unsupported(f"where={params['where']!r} is not one of {', '.join(WHERE)}")
        if params.get("dtype", "float32") != "float32":
            raise Unsupported("augment produces float32 images only")
        return _AugmentRun(backend, device, params, seed).prepared()


class _AugmentRun:
    def __init__(self, backend, device: str, params: dict, seed: int):
        self.backend, self.device, self.params, self.seed = backend, device, params, seed
        self.torch = torch = backend.namespace(device)
        self.batch, self.where = params["batch"], params["where"]
        self.shape = (self.batch, 3, params["image_px"], params["image_px"])
        self.generator = torch.Generator().manual_seed(seed)  # new augmentations every batch
        self.rotation = Rotation(self.variant, self.judge)
        self.samples: dict[str, tuple[float, ...]] = {}
        self.verified: dict = {}
        # id of each output still held -> the random parameters that made it: the audit judges any
        # call it kept, not only a variant's last one (runner/audit.py), and every call draws anew
        self.drawn: OrderedDict[int, Any] = OrderedDict()

    def variant(self, index: int) -> Variant:
        """Batch `index`: uint8 pixels in host memory (and on the device for the device path)."""
        pixels = np.random.default_rng(self.seed + index * SEED_STRIDE).integers(0, 256, size=self.shape,
                                                                                 dtype=np.uint8)
        staged = [self.backend.from_host(pixels, self.device)] if self.where == "device" else []
        return Variant(inputs=staged, reference=np.empty(0), hosts=[pixels])

    def prepared(self) -> Prepared:
        to_device = self.to_device if self.where == "device" else None
        return self.rotation.prepared(self.backend, op=self.augment_batch, to_device=to_device, metrics=self.metrics,
                                      record_samples=self.record, min_samples=MIN_BATCHES)

    def to_device(self):
        """The copy of the next batch's uint8 pixels, as a loader would hand them over."""
        return self.rotation.upcoming.upload(lambda h: self.backend.from_host(h, self.device))

    def augment_batch(self, variant: Variant):
        """The timed call: new random parameters, the batch augmented (and, on the host path, copied)."""
        torch = self.torch
        parameters = draw_parameters(torch, self.generator, self.batch)
        if self.where == "device":
            out = augment(torch, variant.inputs[0], parameters)
        else:
            out = self.backend.from_host(augment(torch, torch.from_numpy(variant.hosts[0]), parameters).numpy(),
                                         self.device)
        self.drawn[id(out)] = (out, parameters)  # the output held too, so its id stays its own
        while len(self.drawn) > DRAWN_KEPT:
            self.drawn.popitem(last=False)
        return out

    def compute(self):
        return self.rotation.call(self.augment_batch)

    def judge(self, out, variant: Variant) -> Check:
        """The output against the same transform in float64 on the CPU, on the same pixels and parameters."""
        torch = self.torch
        result = self.backend.to_host(out)
        held = self.drawn.get(id(out))
        if held is None or held[0] is not out:
            return Check(False, float("inf"), REFERENCE_TOLERANCE, "an output this workload did not make")
        reference = augment(torch, torch.from_numpy(variant.hosts[0]), held[1], torch.float64).numpy()
        error = relative_norm_error(result, reference)
        problems = _shape_problems(result, out, self.shape, torch)
        mirror_error = self.mirror_error(variant.hosts[0])
        if not mirror_error <= MIRROR_TOLERANCE:
            problems.append(f"a pure flip is off the mirrored input by {mirror_error:.2e} (> {MIRROR_TOLERANCE:g})")
        self.verified = {"reference_rel_error": error, "mirror_rel_error": mirror_error}
        check = make_check(error, REFERENCE_TOLERANCE, self.backend.location(out), self.device,
                           f"{self.where} path vs a float64 CPU run on the same pixels and parameters")
        if problems:
            detail = "; ".join(problems + ([] if check.passed else [check.detail]))
            return Check(False, check.max_rel_error, check.tolerance, detail, check.device_seen)
        return check

    def mirror_error(self, pixels: np.ndarray) -> float:
        """A pure horizontal flip, on the path measured, against the mirrored input (not timed)."""
        torch = self.torch
        staged = self.backend.from_host(pixels, self.device) if self.where == "device" else torch.from_numpy(pixels)
        mirrored = self.backend.to_host(augment(torch, staged, identity_parameters(torch, self.batch)))
        return relative_norm_error(mirrored, pixels[..., ::-1] / 255.0)

    def record(self, samples_s: dict) -> None:
        self.samples = samples_s

    def metrics(self) -> dict:
        found = dict(self.verified)
        values = self.batch * 3 * self.params["image_px"] ** 2
        found.update({"where": self.where, "copied_dtype": "uint8" if self.where == "device" else "float32",
                      "copied_bytes_per_batch": values * (1 if self.where == "device" else 4)})
        # the whole path (uint8 in host memory to float32 on the device) is end_to_end on the device
        # path and compute on the host path, where the copy is part of the call
        whole = self.samples.get("end_to_end" if self.where == "device" else "compute")
        if whole:
            found["batch_p50_s"] = stats.median(whole)
            found["images_per_s"] = self.batch / found["batch_p50_s"] if found["batch_p50_s"] > 0 else None
        if self.where == "device" and self.samples.get("compute") and whole:
            compute_s = stats.median(self.samples["compute"])
            found["images_per_s_without_copy"] = self.batch / compute_s if compute_s > 0 else None
            found["copy_share_of_batch"] = stats.median(self.samples["to_device"]) / found["batch_p50_s"]
        return found


def _shape_problems(result: np.ndarray, out, input_shape, torch) -> list[str]:
    problems = []
    if tuple(result.shape) != tuple(input_shape):
        problems.append(f"output shape {tuple(result.shape)}, expected {tuple(input_shape)}")
    if out.dtype != torch.float32:
        problems.append(f"output dtype {out.dtype}, expected torch.float32")
    if not np.all(np.isfinite(result)):
        problems.append("output has non-finite values")
    elif result.min() < 0.0 or result.max() > 1.0:
        problems.append(f"output range [{result.min():.3g}, {result.max():.3g}] is outside [0, 1]")
    return problems
