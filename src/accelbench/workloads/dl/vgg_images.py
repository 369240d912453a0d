"""What both VGG19 inference paths share (torch's vgg_infer.py, Keras's keras_infer.py): seed 004's
configuration and published figures, its CIFAR-sized images, and the latency percentiles."""
from __future__ import annotations

import numpy as np

from accelbench.timing import stats

SOURCE_PX = 32                 # CIFAR-10 images are 32×32
SEED_BATCH, SEED_IMAGE_PX, SEED_DEPTH = 8, 224, 19
MIN_TIMED_BATCHES = 10         # seed 004 times 10 batches
VERIFY_IMAGES = 8              # logits of at most this many images are compared with the reference

SEED_CPU_S_PER_BATCH = 0.929  # seed 004's CPU (TensorFlow) seconds per batch of 8 at 224x224
# seed 004's figures: total after 10 predict() calls / 10 (Keras, fp32, batch 8 at 224×224)
SEED_REFERENCE = {
    "source": "the PlaidML CPU-vs-GPU tutorial: Keras VGG19 on a MacBook Pro, batch 8 of CIFAR-10 "
              "upsampled 7x to 224x224, fp32, mean of 10 predict() calls after one compile batch; "
              "predict() includes Keras overhead and the host-to-device copy",
    "cpu_tensorflow_s_per_batch": SEED_CPU_S_PER_BATCH,
    "intel_uhd_630_plaidml_s_per_batch": 4.198,
    "radeon_pro_5300m_plaidml_s_per_batch": 0.424,
}


def cifar_like_images(count: int, seed: int) -> np.ndarray:
    """uint8 (count, 3, 32, 32) images: smooth random colour fields with pixel noise, like photos.

    Real CIFAR-10 cannot be downloaded; varied low-frequency content (not flat noise) gives each
    image its own activations, so different images get different logits. Image i depends only on
    (seed, i), so the first k images of any batch are the same k images.
    """
    position = np.linspace(0.0, 4.0, SOURCE_PX)
    low = np.floor(position).astype(int).clip(0, 3)
    weight = position - low
    images = []
    for index in range(count):
        rng = np.random.default_rng([seed, index])
        coarse = rng.uniform(0.0, 255.0, size=(3, 5, 5))
        rows = coarse[:, low, :] * (1 - weight)[:, None] + coarse[:, low + 1, :] * weight[:, None]
        smooth = rows[..., low] * (1 - weight) + rows[..., low + 1] * weight  # bilinear in both axes
        images.append(smooth + rng.normal(0.0, 16.0, size=smooth.shape))
    return np.clip(np.rint(np.stack(images)), 0, 255).astype(np.uint8)


def latency_metrics(samples_s: list[float], batch: int) -> dict:
    if not samples_s:
        return {}
    p50_s = stats.quantile(samples_s, 0.5)
    return {"timed_batches": len(samples_s), "latency_p50_s": p50_s,
            "latency_p90_s": stats.quantile(samples_s, 0.9), "latency_p99_s": stats.quantile(samples_s, 0.99),
            "latency_max_s": max(samples_s), "images_per_s": batch / p50_s if p50_s > 0 else None}


def strict_fp32(torch, device: str):
    """Turn TF32 off on CUDA (cuDNN convolutions use it by default): fp32 must mean fp32."""
    if not device.startswith(("cuda", "rocm")):
        return None
    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    return saved


def restore_tf32(torch, saved) -> None:
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
