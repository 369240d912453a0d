"""VGG16/VGG19 structure and counts, vgg-infer timed one batch per sample, and its agreement check."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from accelbench.backends.torch_backend import TorchBackend  # noqa: E402
from accelbench.errors import Unsupported  # noqa: E402
from accelbench.results import Spec  # noqa: E402
from accelbench.runner.execute import TrustContext, measure_item  # noqa: E402
from accelbench.runner.plan import PlanItem  # noqa: E402
from accelbench.timing.rigor import get_rigor  # noqa: E402
from accelbench.workloads.dl import vgg, vgg_infer  # noqa: E402
from accelbench.workloads.dl.vgg_infer import VGGInfer  # noqa: E402

SMALL = {"batch": 2, "dtype": "bfloat16", "layout": "channels_last", "image_px": 32, "depth": 19}


@pytest.mark.parametrize("depth, convs, parameters", [(19, 16, 143_667_240), (16, 13, 138_357_544)])
def test_layer_structure_and_parameter_counts_match_keras_and_torchvision(depth, convs, parameters):
    model = vgg.vgg(depth, num_classes=1000, image_size=224, device="meta")
    layers = list(model.features)
    conv = [m for m in layers if isinstance(m, torch.nn.Conv2d)]
    pools = [m for m in layers if isinstance(m, torch.nn.MaxPool2d)]
    assert len(conv) == convs and len(pools) == 5
    assert all(c.kernel_size == (3, 3) and c.padding == (1, 1) for c in conv)
    assert [c.out_channels for c in conv][-1] == 512 and conv[0].in_channels == 3
    linear = [m for m in model.classifier if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linear] == [(25088, 4096), (4096, 4096), (4096, 1000)]
    assert sum(p.numel() for p in model.parameters()) == parameters == vgg.parameter_count(depth)
    assert model(torch.empty(2, 3, 224, 224, device="meta")).shape == (2, 1000)


def test_small_images_shrink_only_the_classifier_input():
    assert vgg.feature_shape(19, 64) == (512, 2, 2)
    model = vgg.vgg(16, num_classes=10, image_size=64, device="meta")
    assert model.classifier[0].in_features == 2048
    assert sum(p.numel() for p in model.parameters()) == vgg.parameter_count(16, 10, 64)
    with pytest.raises(ValueError, match="at least 32"):
        vgg.feature_shape(19, 16)
    with pytest.raises(ValueError, match="depth"):
        vgg.vgg_features(17)


def test_flop_counts_are_the_published_multiply_adds_times_two():
    # VGG16 is 15.47 G multiply-adds per 224×224 image, VGG19 19.63 G (fvcore, ptflops)
    assert vgg.flops_per_image(16) == pytest.approx(2 * 15.47e9, rel=0.01)
    assert vgg.flops_per_image(19) == pytest.approx(2 * 19.63e9, rel=0.01)
    assert vgg.flops_per_image(19, image_size=448, classifier=False) == pytest.approx(
        4 * vgg.flops_per_image(19, classifier=False))


def test_cifar_like_images_vary_and_a_prefix_is_the_same_images():
    images = vgg_infer.cifar_like_images(6, seed=3)
    assert images.shape == (6, 3, 32, 32) and images.dtype == np.uint8
    assert np.array_equal(vgg_infer.cifar_like_images(2, seed=3), images[:2])
    assert np.std(images.reshape(6, -1).mean(axis=1)) > 5  # images differ, not one noise field


def test_grid_defaults_to_the_seed_and_labels_the_quick_size():
    workload = VGGInfer()
    full = workload.grid(None, None, quick=False)
    assert {p["image_px"] for p in full} == {224} and 8 in {p["batch"] for p in full}
    assert {p["layout"] for p in full} == {"contiguous", "channels_last"}
    assert {p["dtype"] for p in full} == {"float32", "bfloat16", "float16"}
    quick = workload.grid([1, 64], ["float32"], quick=True)
    assert {(p["batch"], p["image_px"]) for p in quick} == {(1, 64), (64, 64)}


class _NoHalfTorch(TorchBackend):
    def dtypes(self, device):
        return ("float64", "float32", "bfloat16")


def test_unsupported_precisions_and_backends_are_skips_with_reasons():
    with pytest.raises(Unsupported, match="float16 on cpu.*FP16"):
        VGGInfer().prepare(_NoHalfTorch(), "cpu", dict(SMALL, dtype="float16"), seed=1)

    class Numpy:
        name = "numpy"
    with pytest.raises(Unsupported, match="--backend torch"):
        VGGInfer().prepare(Numpy(), "cpu", SMALL, seed=1)


def measured(params: dict, rigor="quick"):
    spec = Spec.make("vgg-infer", "torch", "cpu", **params)
    return measure_item(PlanItem(spec, None), TorchBackend(), get_rigor(rigor), seed=11, trust=TrustContext(probe_sync=False))


@pytest.fixture(scope="module")
def small_run():
    """bf16, channels_last, batch 2 at 32×32: timed by the harness, the timed logits checked."""
    m = measured(SMALL)
    return m, m.check, m.extra


def test_bf16_logits_agree_with_fp32_of_the_same_weights(small_run):
    timed, check, metrics = small_run
    assert check.passed, check.detail
    assert 0 < check.max_rel_error < vgg_infer.LOGIT_TOLERANCE["bfloat16"]  # rounded, but close
    assert check.device_seen == "cpu"
    assert 0.0 <= metrics["argmax_agreement"] <= 1.0 and metrics["argmax_compared_images"] == 2
    assert metrics["reference_distinct_classes"] == 2  # calibrated: two images, two classes


def test_metrics_are_percentiles_of_the_per_batch_samples(small_run):
    timed, _, metrics = small_run
    samples = timed.phases_s["compute"]
    assert timed.calls_per_sample == 1 and len(samples) == metrics["timed_batches"] >= 10  # seed 004: 10
    assert metrics["latency_p50_s"] == pytest.approx(float(np.quantile(samples, 0.5)))
    assert metrics["latency_p99_s"] == pytest.approx(float(np.quantile(samples, 0.99)))
    assert metrics["latency_p50_s"] <= metrics["latency_p90_s"] <= metrics["latency_p99_s"] <= max(samples)
    assert metrics["images_per_s"] == pytest.approx(2 / metrics["latency_p50_s"])
    assert timed.first_call_s > 0
    assert metrics["seed_reference"]["matches_seed_config"] is False  # 32×32 bf16 is not seed 004


def test_agreement_check_fails_when_the_weights_differ(monkeypatch):
    def other_weights(torch, depth, image_px, seed, target, dtype, layout):
        model = vgg.vgg(depth, vgg_infer.NUM_CLASSES, image_px, seed=seed + 1).eval()
        return model.to(device=target, dtype=getattr(torch, dtype))

    monkeypatch.setattr(vgg_infer, "build_model", other_weights)
    prepared = VGGInfer().prepare(TorchBackend(), "cpu", SMALL, seed=11)
    check = prepared.check_output(prepared.compute())
    assert not check.passed
    assert "exceeds the tolerance" in check.detail and check.max_rel_error > 0.5
