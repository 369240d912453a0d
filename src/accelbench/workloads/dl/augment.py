"""Image augmentation on the device vs on the CPU then copied (seed 003, "data preprocessing and
augmentation on GPUs"): random flips, crops, rotations and colour jitter over a batch.

Both paths start from the same uint8 batch in host memory, as a decoder leaves it, and end with a
float32 batch on the device, ready for a model, so the copy is counted either way:

    where=device   copy the uint8 batch (1 byte/value) to the device, augment there
    where=host     augment on the CPU, copy the float32 result (4 bytes/value) to the device

Each sample is one batch, with phases timed inside the same call (a sync before every clock read):
`to_device` (the copy), `compute` (the augmentation, wherever it ran) and `end_to_end` (both).
Written in plain torch ops: flip, crop (scale and shift) and rotation are one affine resampling
(`affine_grid` + `grid_sample`, bilinear), then brightness, contrast and saturation.
"""
from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Check, Work
from accelbench.timing import stats
from accelbench.workloads.base import Prepared, SelfTimed, Workload
from accelbench.workloads.verify import make_check, relative_norm_error

WHERE = ("device", "host")
IMAGE_PX = 224
MAX_ROTATION_RAD = math.radians(15.0)
MIN_CROP_FRACTION = 0.6          # a crop keeps 60-100% of the side, then is resized to IMAGE_PX
JITTER = 0.4                     # brightness, contrast, saturation factors in [0.6, 1.4]
PATH_TOLERANCE = 1e-5            # both paths run the same float32 ops on the same parameters
MIRROR_TOLERANCE = 1e-4          # float32 grid coordinates land ~1e-5 px off the centres: ~5e-6 here
LUMA = (0.299, 0.587, 0.114)     # ITU-R 601 weights for grayscale
MIN_SAMPLES, BUDGET_S, MAX_SAMPLES = 10, 1.5, 1000


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


def augment(torch, pixels, parameters: dict):
    """uint8 (B, 3, H, W) → float32 in [0, 1], augmented; runs wherever `pixels` lives."""
    functional = torch.nn.functional
    p = {name: value.to(pixels.device) for name, value in parameters.items()}
    images = pixels.float() / 255.0
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


def time_steps(steps: list[tuple[str, Callable]], synchronize: Callable[[], object], *,
               min_samples: int = MIN_SAMPLES, budget_s: float = BUDGET_S, max_samples: int = MAX_SAMPLES,
               clock: Callable[[], float] = time.perf_counter) -> tuple[float, dict[str, list[float]]]:
    """(first call, samples per phase): each sample is one call of the chained steps.

    Each step takes the previous one's output; a sync precedes every clock read, so the phases of
    one call add up to its end_to_end time.
    """
    def one_call() -> dict[str, float]:
        synchronize()
        start_s = mark_s = clock()
        value, times = None, {}
        for phase, step in steps:
            value = step(value)
            synchronize()
            now_s = clock()
            times[phase], mark_s = now_s - mark_s, now_s
        times["end_to_end"] = mark_s - start_s
        return times

    first_s = one_call()["end_to_end"]
    samples: dict[str, list[float]] = {}
    spent_s, count = 0.0, 0
    while count < max_samples and (count < min_samples or spent_s < budget_s):
        for phase, value in one_call().items():
            samples.setdefault(phase, []).append(value)
        spent_s, count = spent_s + samples["end_to_end"][-1], count + 1
    return first_s, samples


class Augment(Workload):
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
        shape = (self.batch, 3, params["image_px"], params["image_px"])
        self.host_pixels = np.random.default_rng(seed).integers(0, 256, size=shape, dtype=np.uint8)
        self.generator = torch.Generator().manual_seed(seed)  # new augmentations every batch
        self.samples: dict[str, list[float]] = {}
        self.verified: dict = {}

    def prepared(self) -> Prepared:
        return Prepared(compute=self.compute, verify=self.verify, self_timed=self.self_timed,
                        metrics=self.metrics, release=self.release)

    def steps(self, parameters: dict | None = None, where: str | None = None) -> list[tuple[str, Callable]]:
        """A path as chained (phase, step) pairs, each step taking the previous one's output.

        `parameters` None: fresh random ones each call, as a training loop draws them.
        """
        torch, backend, device = self.torch, self.backend, self.device

        def chosen():
            return parameters if parameters is not None else draw_parameters(torch, self.generator, self.batch)
        if (where or self.where) == "device":
            return [("to_device", lambda _: (backend.from_host(self.host_pixels, device), chosen())),
                    ("compute", lambda staged: augment(torch, *staged))]
        return [("compute", lambda _: augment(torch, torch.from_numpy(self.host_pixels), chosen())),
                ("to_device", lambda images: backend.from_host(images.numpy(), device))]

    def run(self, parameters: dict | None = None, where: str | None = None):
        value = None
        for _, step in self.steps(parameters, where):
            value = step(value)
        return value

    def release(self) -> None:
        self.samples, self.host_pixels = {}, None

    def compute(self):
        return self.run()

    def self_timed(self, rigor=None) -> SelfTimed:
        budget_s = BUDGET_S if rigor is None else rigor.budget_s
        first_s, self.samples = time_steps(self.steps(), lambda: self.backend.synchronize(self.device),
                                           budget_s=budget_s)
        summary = stats.summarize(self.samples["end_to_end"])
        warnings = [f"unstable: IQR is {summary.rel_iqr:.0%} of median"] if summary.rel_iqr > 0.10 else []
        return SelfTimed(phases_s={k: tuple(v) for k, v in self.samples.items()}, first_call_s=first_s,
                         warnings=tuple(warnings), target_met=summary.rel_ci_halfwidth <= 0.05)

    def verify(self) -> Check:
        torch = self.torch
        shared = draw_parameters(torch, torch.Generator().manual_seed(self.seed + 1), self.batch)
        out = self.run(shared)
        other = self.run(shared, where="host" if self.where == "device" else "device")
        self.backend.synchronize(self.device)
        result = self.backend.to_host(out)
        path_error = relative_norm_error(result, self.backend.to_host(other))
        mirrored = self.backend.to_host(self.run(identity_parameters(torch, self.batch)))
        mirror_error = relative_norm_error(mirrored, self.host_pixels[..., ::-1] / 255.0)
        problems = _shape_problems(result, out, self.host_pixels.shape, torch)
        if not mirror_error <= MIRROR_TOLERANCE:
            problems.append(f"a pure flip is off the mirrored input by {mirror_error:.2e} (> {MIRROR_TOLERANCE:g})")
        self.verified = {"path_rel_error": path_error, "mirror_rel_error": mirror_error}
        check = make_check(path_error, PATH_TOLERANCE, self.backend.location(out), self.device,
                           f"{self.where} path vs the other path on the same seeded parameters")
        if problems:
            detail = "; ".join(problems + ([] if check.passed else [check.detail]))
            return Check(False, check.max_rel_error, check.tolerance, detail, check.device_seen)
        return check

    def metrics(self) -> dict:
        found = dict(self.verified)
        values = self.batch * 3 * self.params["image_px"] ** 2
        found.update({"where": self.where, "copied_dtype": "uint8" if self.where == "device" else "float32",
                      "copied_bytes_per_batch": values * (1 if self.where == "device" else 4)})
        for phase, name in (("end_to_end", "images_per_s"), ("compute", "images_per_s_without_copy")):
            if self.samples.get(phase):
                median_s = stats.median(self.samples[phase])
                found[name] = self.batch / median_s if median_s > 0 else None
        if self.samples.get("end_to_end"):
            found["batch_p50_s"] = stats.median(self.samples["end_to_end"])
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
