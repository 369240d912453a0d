"""vgg-infer on a Keras backend: seed 004's own `keras.applications.VGG19`, batch by batch.

The same images, grid and harness as vgg_infer.py (one batch per sample, at least 10 timed); the
timed call is the model called on a batch already on the device (the forward pass `predict` runs
per batch), so placement is observed on the tensor it returns. Weights are Keras's random ones
(`weights=None`); the logits of the timed calls are compared with a float64 copy of the same
model on the CPU on the same images. `predict()` itself, as the tutorial timed it (host images
in, numpy out), is timed apart and stored with the tutorial's figures.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Check
from accelbench.workloads.base import Prepared
from accelbench.workloads.dl import keras_models
from accelbench.workloads.dl import vgg_images as seed004
from accelbench.workloads.dl.keras_training import timed_median
from accelbench.workloads.rotation import SEED_STRIDE, Rotation, Variant
from accelbench.workloads.verify import relative_norm_error

LOGIT_TOLERANCE = 5e-4  # float32 against float64 on another device and algorithm: ~1e-6 seen


def keras_images(count: int, seed: int, image_px: int) -> np.ndarray:
    """Seed 004's preprocessing on the host: CIFAR-sized images repeated up to `image_px`, NHWC float32."""
    pixels = seed004.cifar_like_images(count, seed).astype(np.float32)
    scaled = (pixels / 255.0 - 0.45) / 0.25
    factor = image_px // seed004.SOURCE_PX
    images = scaled.repeat(factor, axis=2).repeat(factor, axis=3)
    return np.ascontiguousarray(images.transpose(0, 2, 3, 1))


class KerasVGGRun:
    def __init__(self, backend, device: str, params: dict, seed: int) -> None:
        if params["dtype"] != "float32":
            raise Unsupported("the Keras VGG19 runs in float32 only (Keras's dtype policies are not timed here)")
        if params["layout"] != "contiguous":
            raise Unsupported("Keras's images are channels-last (NHWC) already: the layout axis is torch's")
        if params["image_px"] % seed004.SOURCE_PX:
            raise Unsupported(f"image_px={params['image_px']} is not a multiple of {seed004.SOURCE_PX}")
        self.backend, self.device, self.params, self.seed = backend, device, params, seed
        self.keras, self.image_px, self.batch = backend.keras(), params["image_px"], params["batch"]
        self.count = min(self.batch, seed004.VERIFY_IMAGES)
        with backend.on_device(device):
            self.model = keras_models.build(self.keras, "vgg19", seed=seed, image_px=self.image_px)
        self.replica: Any = None
        self.samples_s: tuple[float, ...] = ()
        self.verified: dict = {}
        self.rotation = Rotation(self.variant, self.judge)
        # keras-torch on CUDA: cuDNN's TF32 is not float32 (restored by release)
        self.saved_tf32 = seed004.strict_fp32(backend.namespace(device), device) \
            if backend.keras_backend == "torch" else None

    def reference_model(self) -> Any:
        """The same weights in float64 on the CPU, built once."""
        if self.replica is None:
            with self.backend.on_device("cpu"):
                self.replica = keras_models.build(self.keras, "vgg19", "float64", image_px=self.image_px)
                for variable, value in zip(self.replica.weights, self.model.weights, strict=True):
                    variable.assign(np.asarray(self.keras.ops.convert_to_numpy(value), dtype=np.float64))
        return self.replica

    def variant(self, index: int) -> Variant:
        host = keras_images(self.batch, self.seed + index * SEED_STRIDE, self.image_px)
        with self.backend.on_device("cpu"):
            reference = self.keras.ops.convert_to_numpy(
                self.reference_model()(host[:self.count].astype(np.float64), training=False))
        return Variant(inputs=[self.backend.from_host(host, self.device)], reference=np.asarray(reference),
                       hosts=[host])

    def forward(self, variant: Variant) -> Any:
        with self.backend.on_device(self.device):
            return self.model(variant.inputs[0], training=False)

    def judge(self, out: Any, variant: Variant) -> Check:
        from accelbench.backends.placement import observe

        logits = np.asarray(self.backend.to_host(out), dtype=np.float64)[:self.count]
        error = relative_norm_error(logits, variant.reference)
        seen = observe(self.backend.native(out)).device or "unobserved"
        problems = [f"logits off a float64 CPU run of the same weights by {error:.2e} (> {LOGIT_TOLERANCE:g})"] \
            if not error <= LOGIT_TOLERANCE else []
        if seen != self.device:
            problems.append(f"Keras computed on {seen}, asked for {self.device}")
        agreement = float(np.mean(np.argmax(logits, 1) == np.argmax(variant.reference, 1))) \
            if logits.shape == variant.reference.shape else 0.0
        self.verified = {"logits_rel_error": error, "argmax_agreement": agreement, "argmax_compared_images": self.count}
        detail = "; ".join(problems) or "Keras float32 logits within tolerance of a float64 CPU run of the same weights"
        return Check(passed=not problems, max_rel_error=error, tolerance=LOGIT_TOLERANCE, detail=detail,
                     device_seen=seen)

    def record(self, samples_s: dict) -> None:
        self.samples_s = samples_s.get("compute", ())

    def predict_s(self) -> float:
        """The tutorial's timed call: `model.predict(images)` on one batch of host images."""
        images = self.rotation.variants[0].hosts[0]

        def predict():
            with self.backend.on_device(self.device):
                return self.model.predict(images, batch_size=self.batch, verbose=0)
        return timed_median(predict, lambda: self.backend.synchronize(self.device))

    def metrics(self) -> dict:
        found = {**self.verified, **seed004.latency_metrics(list(self.samples_s), self.batch),
                 **self.backend.describe(self.device), "image_px": self.image_px, "keras_layout": "channels_last (NHWC)",
                 "model_parameters": keras_models.parameter_count(self.model), "weights": "random (weights=None)"}
        predict_s = self.predict_s()
        found.update(predict_s_per_batch=predict_s, predict_phase="Keras predict() on host images, one batch, "
                     "median of 3 after a warm call (what the tutorial timed)")
        seed_config = (self.batch, self.image_px) == (seed004.SEED_BATCH, seed004.SEED_IMAGE_PX)
        reference = dict(seed004.SEED_REFERENCE, matches_seed_config=seed_config)
        if seed_config:
            reference["speedup_vs_seed_cpu"] = seed004.SEED_CPU_S_PER_BATCH / predict_s
        if not seed_config:
            found["image_px_note"] = (f"batch {self.batch} at {self.image_px}x{self.image_px}: the tutorial's is "
                                      f"batch {seed004.SEED_BATCH} at {seed004.SEED_IMAGE_PX}x{seed004.SEED_IMAGE_PX}")
        found["seed_reference"] = reference
        return found

    def release(self) -> None:
        if self.saved_tf32 is not None:
            seed004.restore_tf32(self.backend.namespace(self.device), self.saved_tf32)
        self.rotation.release()
        self.model = self.replica = None

    def prepared(self) -> Prepared:
        prepared = self.rotation.prepared(self.backend, op=self.forward, metrics=self.metrics, calls_per_block=1,
                                          min_samples=seed004.MIN_TIMED_BATCHES, record_samples=self.record)
        prepared.release = self.release
        prepared.placed = self.backend.native
        return prepared
