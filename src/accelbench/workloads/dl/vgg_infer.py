"""VGG19 inference as seed 004 runs it: 8 CIFAR-10-sized images upsampled 7× to 224×224, batch 8.

Seed 004 times one batch apart (PlaidML compiles its kernels then) and then 10 batches. Here the
harness times it with one batch per sample (calls_per_block=1): the first batch is `first_call_s`
(allocation, oneDNN/cuDNN algorithm choice, lazy init), and every later sample is exactly one
batch, synchronised before each clock read, so p50/p90/p99 latency are percentiles of real
per-batch times. At least the seed's 10 batches are timed, more as the rigor asks.

Weights are random (nothing can be downloaded), drawn once per process from the run's seed, and
the last bias is calibrated so the logits of different images differ as a trained classifier's
do: without that, a random VGG gives every image the same top class and the argmax agreement
between precisions would mean nothing. The timed batches alternate between two sets of images
(workloads/rotation.py); the logits the timed calls returned are compared with a float32 run of
the same weights on the CPU (contiguous layout) on the same images.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Check, Work
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.base import Prepared, Workload
from accelbench.workloads.dl import keras_infer, keras_training
from accelbench.workloads.dl import vgg as vgg_model
from accelbench.workloads.dl.vgg_images import (MIN_TIMED_BATCHES, SEED_BATCH, SEED_DEPTH, SEED_IMAGE_PX, SEED_REFERENCE,
                                                SOURCE_PX, VERIFY_IMAGES, cifar_like_images, latency_metrics,
                                                restore_tf32, strict_fp32)
from accelbench.workloads.rotation import SEED_STRIDE, Rotation, Variant
from accelbench.workloads.verify import make_check, relative_norm_error

LAYOUTS = ("contiguous", "channels_last")
QUICK_IMAGE_PX = 64            # the quick grid's reduced size, labelled in every spec
BATCH_SWEEP = (1, 2, 4, 8, 16, 32, 64)  # ~10 min on a 2-core CPU in all precisions; seconds on a GPU
NUM_CLASSES = 1000             # Keras' VGG19 top: ImageNet classes
TAIL_BATCHES = 100             # a p99 from fewer batches is close to the slowest one
CALIBRATION_IMAGES = 4
# relative norm error of the logits vs float32: measured ~5e-2 for bf16 weights and activations,
# ~1e-5 for fp32 with another algorithm (channels_last); TF32 (~6e-3) fails fp32 on purpose
LOGIT_TOLERANCE = {"float32": 5e-4, "float16": 3e-2, "bfloat16": 1.5e-1}


def images_on_device(torch, pixels, image_px: int):
    """uint8 NCHW 32×32 on the device → normalised float32 at `image_px`, upsampled there (nearest, as
    seed 004's np.repeat)."""
    scaled = (pixels.float() / 255.0 - 0.45) / 0.25
    factor = image_px // SOURCE_PX
    return torch.nn.functional.interpolate(scaled, scale_factor=factor, mode="nearest") if factor > 1 else scaled


@lru_cache(maxsize=1)
def base_model(depth: int, image_px: int, seed: int):
    """The float32 CPU model every variant is copied from, built once per process (143 M weights)."""
    import torch

    model = vgg_model.vgg(depth, NUM_CLASSES, image_px, seed=seed).eval()
    pixels = torch.from_numpy(cifar_like_images(CALIBRATION_IMAGES, seed + 1))  # not the timed images
    calibration = images_on_device(torch, pixels, image_px)
    with torch.inference_mode():
        model.classifier[-1].bias -= model(calibration).mean(dim=0)  # remove the common-mode logit
    return model


@lru_cache(maxsize=8)
def reference_logits(depth: int, image_px: int, seed: int, count: int, images_seed: int | None = None) -> np.ndarray:
    """float32 logits of the first `count` input images (drawn from `images_seed`, default `seed`):
    CPU, contiguous, the weights of `seed`."""
    import torch

    pixels = torch.from_numpy(cifar_like_images(count, seed if images_seed is None else images_seed))
    with torch.inference_mode():
        return base_model(depth, image_px, seed)(images_on_device(torch, pixels, image_px)).numpy().copy()


def build_model(torch, depth: int, image_px: int, seed: int, target, dtype: str, layout: str):
    """The base model on `target` in `dtype` and `layout`: a copy where anything changes, since
    Module.to converts in place (inference never writes to the weights, so the base can be shared)."""
    import copy

    base = base_model(depth, image_px, seed)
    if target.type == "cpu" and dtype == "float32" and layout == "contiguous":
        return base
    model = copy.deepcopy(base).to(device=target, dtype=getattr(torch, dtype))
    return model.to(memory_format=torch.channels_last) if layout == "channels_last" else model


def compare_logits(logits: np.ndarray, reference: np.ndarray, dtype: str, device_seen: str,
                   device_asked: str) -> tuple[Check, float]:
    """(check, argmax agreement): finite logits within the dtype's tolerance of the fp32 reference."""
    logits = np.asarray(logits, dtype=np.float64)
    error = relative_norm_error(logits, reference)  # inf when not finite or shaped wrongly
    agreement = float(np.mean(np.argmax(logits, axis=1) == np.argmax(reference, axis=1))) \
        if logits.shape == reference.shape else 0.0
    check = make_check(error, LOGIT_TOLERANCE[dtype], device_seen, device_asked,
                       f"{dtype} logits vs float32 CPU run of the same weights")
    return check, agreement


class VGGInfer(Workload):
    role = "model"  # a whole model or application, read on its own figures
    cpu_baseline = "framework"  # against the same framework on the CPU
    name = "vgg-infer"
    description = ("VGG19 inference as the PlaidML tutorial runs it: CIFAR-sized images upsampled 7x to 224x224, batch sweep, "
                   "per-batch latency percentiles (quick grid: 64x64, labelled image_px=64)")
    size_param, size_unit = "batch", "images per batch"
    dtypes = ("float32", "bfloat16", "float16")

    def grid(self, sizes, dtypes, quick):
        image_px = QUICK_IMAGE_PX if quick else SEED_IMAGE_PX
        sizes = sizes or ([1, 8] if quick else list(BATCH_SWEEP))
        dtypes = dtypes or (["float32", "bfloat16"] if quick else list(self.dtypes))
        return [{"batch": b, "dtype": d, "layout": layout, "image_px": image_px, "depth": SEED_DEPTH}
                for d in dtypes for layout in LAYOUTS for b in sizes]

    def work(self, params):
        depth, image_px, batch = params.get("depth", SEED_DEPTH), params["image_px"], params["batch"]
        weights = vgg_model.parameter_count(depth, NUM_CLASSES, image_px) * ITEMSIZE[params["dtype"]]
        inputs = batch * 3 * image_px**2 * ITEMSIZE[params["dtype"]]
        return Work(flops=batch * vgg_model.flops_per_image(depth, NUM_CLASSES, image_px),
                    bytes_moved=float(weights + inputs + batch * NUM_CLASSES * ITEMSIZE[params["dtype"]]))

    def footprint_bytes(self, params):
        depth, image_px, batch = params.get("depth", SEED_DEPTH), params["image_px"], params["batch"]
        weights = vgg_model.parameter_count(depth, NUM_CLASSES, image_px) * 4
        activations = batch * 64 * image_px**2 * 4 * 3  # the widest layer in, out and a spare
        return 2 * weights + activations  # the fp32 base model and the device copy

    def prepare(self, backend, device, params, seed):
        if keras_training.is_keras(backend):
            return keras_infer.KerasVGGRun(backend, device, params, seed).prepared()
        _supported(backend, device, params)
        return _VGGRun(backend, device, params, seed).prepared()


def _supported(backend, device: str, params: dict) -> None:
    if backend.name != "torch":
        raise Unsupported(f"vgg-infer is written in PyTorch: run it with --backend torch, not {backend.name}")
    dtype, layout, image_px = params["dtype"], params["layout"], params["image_px"]
    if dtype not in backend.dtypes(device):
        why = (": this CPU has neither AMX-FP16 nor AVX512-FP16, so fp16 convolutions would run a slow "
               "scalar fallback" if device == "cpu" and dtype == "float16" else "")
        raise Unsupported(f"torch has no native {dtype} on {device}{why}")
    if layout not in LAYOUTS:
        raise Unsupported(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    if image_px % SOURCE_PX:
        raise Unsupported(f"image_px={image_px} is not a whole multiple of the {SOURCE_PX}-pixel source images")


class _VGGRun:
    """One prepared configuration: the model and two image batches on the device, what was measured."""

    def __init__(self, backend, device: str, params: dict, seed: int):
        self.backend, self.device, self.params, self.seed = backend, device, params, seed
        self.depth, self.image_px, self.batch = params.get("depth", SEED_DEPTH), params["image_px"], params["batch"]
        self.dtype, self.layout = params["dtype"], params["layout"]
        torch = self.torch = backend.namespace(device)
        target = backend.empty((1,), "float32", device).device
        self.model = build_model(torch, self.depth, self.image_px, seed, target, self.dtype, self.layout)
        self.count = min(self.batch, VERIFY_IMAGES)
        self.rotation = Rotation(self.variant, self.judge)
        self.samples_s: tuple[float, ...] = ()
        self.verified: dict = {}
        # last, so that a failure above leaves nothing to undo; release restores it
        self.saved_tf32 = strict_fp32(torch, device) if self.dtype == "float32" else None

    def variant(self, index: int) -> Variant:
        """Image set `index`: its own images on the device and its reference logits."""
        torch, images_seed = self.torch, self.seed + index * SEED_STRIDE
        pixels = self.backend.from_host(cifar_like_images(self.batch, images_seed), self.device)  # uint8 travel
        inputs = images_on_device(torch, pixels, self.image_px).to(getattr(torch, self.dtype))
        inputs = inputs.contiguous(memory_format=torch.channels_last if self.layout == "channels_last"
                                   else torch.contiguous_format)
        reference = reference_logits(self.depth, self.image_px, self.seed, self.count, images_seed)
        return Variant(inputs=[inputs], reference=reference)

    def prepared(self) -> Prepared:
        prepared = self.rotation.prepared(self.backend, op=self.forward, metrics=self.metrics, calls_per_block=1,
                                          min_samples=MIN_TIMED_BATCHES, record_samples=self.record)
        prepared.poison = lambda: self.rotation.poison(self.fill_nan)
        prepared.release = self.release
        return prepared

    def forward(self, variant: Variant):
        with self.torch.inference_mode():
            return self.model(variant.inputs[0])

    def compute(self):
        return self.rotation.call(self.forward)

    def fill_nan(self, logits) -> bool:
        with self.torch.inference_mode():  # an inference tensor is written only there
            logits.fill_(float("nan"))
        return True

    def judge(self, out, variant: Variant) -> Check:
        logits = self.backend.to_host(out[:self.count].float())
        check, agreement = compare_logits(logits, variant.reference, self.dtype, self.backend.location(out),
                                          self.device)
        self.verified = {"logits_rel_error": check.max_rel_error, "argmax_agreement": agreement,
                         "argmax_compared_images": self.count,
                         "reference_distinct_classes": int(len(set(np.argmax(variant.reference, axis=1).tolist())))}
        return check

    def record(self, samples_s: dict) -> None:
        self.samples_s = samples_s.get("compute", ())

    def metrics(self) -> dict:
        found = dict(self.verified)
        found.update(latency_metrics(list(self.samples_s), self.batch))
        found.update({"image_px": self.image_px, "upsample_factor": self.image_px // SOURCE_PX,
                      "model_parameters": vgg_model.parameter_count(self.depth, NUM_CLASSES, self.image_px),
                      "flops_per_image": vgg_model.flops_per_image(self.depth, NUM_CLASSES, self.image_px)})
        if self.image_px != SEED_IMAGE_PX:
            found["image_px_note"] = f"image_px={self.image_px}: reduced from the PlaidML tutorial's {SEED_IMAGE_PX}x{SEED_IMAGE_PX}"
        if self.samples_s and len(self.samples_s) < TAIL_BATCHES:
            found["latency_p99_note"] = (f"p99 from {len(self.samples_s)} batches is close to the slowest one, "
                                         "not a measured tail")
        seed_config = (self.batch, self.image_px, self.depth, self.dtype) == (SEED_BATCH, SEED_IMAGE_PX,
                                                                              SEED_DEPTH, "float32")
        reference = dict(SEED_REFERENCE, matches_seed_config=seed_config)
        if seed_config and self.samples_s:
            reference["speedup_vs_seed_cpu"] = SEED_REFERENCE["cpu_tensorflow_s_per_batch"] / found["latency_p50_s"]
        found["seed_reference"] = reference
        return found

    def release(self) -> None:
        if self.saved_tf32 is not None:
            restore_tf32(self.torch, self.saved_tf32)
        self.rotation.release()
        self.model = None
