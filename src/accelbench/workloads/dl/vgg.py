"""VGG16 and VGG19 (Simonyan & Zisserman, 2014) in torch.nn, with random weights.

Pretrained weights cannot be downloaded here, and a benchmark does not need them: the arithmetic
is the same. The layout follows Keras' `applications.VGG19` (seed 004) and torchvision: 3×3
convolutions with padding 1 and ReLU, 2×2 max-pools, then Flatten → 4096 → 4096 → classes. The
classifier's input is 512 × (image_size/32)², so at 224×224 VGG19 has 143,667,240 parameters
and VGG16 138,357,544, as in both libraries.

The analytic helpers (`parameter_count`, `flops_per_image`, `feature_shape`) need no torch;
the builders import it when called.
"""
from __future__ import annotations

from typing import Any

# output channels of each 3×3 convolution; "M" is a 2×2 max-pool with stride 2
CONFIGS: dict[int, tuple] = {
    16: (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"),
    19: (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
         512, 512, 512, 512, "M"),
}
HIDDEN_UNITS = 4096
FEATURE_CHANNELS = 512
DOWNSAMPLING = 32  # five pools of stride 2


def _config(depth: int) -> tuple:
    if depth not in CONFIGS:
        raise ValueError(f"VGG depth must be one of {sorted(CONFIGS)}, not {depth}")
    return CONFIGS[depth]


def feature_shape(depth: int, image_size: int) -> tuple[int, int, int]:
    """(channels, height, width) leaving the convolutional stack for a square input."""
    _config(depth)
    if image_size < DOWNSAMPLING:
        raise ValueError(f"VGG needs images of at least {DOWNSAMPLING}×{DOWNSAMPLING} pixels, not {image_size}")
    side = image_size
    for _ in range(5):
        side //= 2  # max-pool floors, as torch and Keras do
    return FEATURE_CHANNELS, side, side


def _layers(depth: int, in_channels: int = 3):
    """(kind, in, out) for each layer in order: ("conv", cin, cout), ("pool", c, c), ("fc", fin, fout)."""
    layers, channels = [], in_channels
    for entry in _config(depth):
        if entry == "M":
            layers.append(("pool", channels, channels))
        else:
            layers.append(("conv", channels, entry))
            channels = entry
    return layers


def parameter_count(depth: int, num_classes: int = 1000, image_size: int = 224, in_channels: int = 3) -> int:
    """Weights and biases of vgg(depth, num_classes, image_size), counted without building it."""
    total = sum(9 * cin * cout + cout for kind, cin, cout in _layers(depth, in_channels) if kind == "conv")
    channels, height, width = feature_shape(depth, image_size)
    widths = (channels * height * width, HIDDEN_UNITS, HIDDEN_UNITS, num_classes)
    return total + sum(fin * fout + fout for fin, fout in zip(widths, widths[1:]))


def flops_per_image(depth: int, num_classes: int = 1000, image_size: int = 224, in_channels: int = 3,
                    classifier: bool = True) -> float:
    """Forward FLOPs for one image, counting a multiply-add as 2 (bias, ReLU and pooling not counted).

    VGG19 at 224×224 is 39.3 GFLOP (19.6 G multiply-adds), VGG16 30.9 GFLOP.
    """
    flops, side = 0.0, image_size
    for kind, cin, cout in _layers(depth, in_channels):
        if kind == "pool":
            side //= 2
        else:
            flops += 2.0 * 9 * cin * cout * side * side  # padding 1 keeps the side
    if classifier:
        channels, height, width = feature_shape(depth, image_size)
        widths = (channels * height * width, HIDDEN_UNITS, HIDDEN_UNITS, num_classes)
        flops += sum(2.0 * fin * fout for fin, fout in zip(widths, widths[1:]))
    return flops


def vgg_features(depth: int, in_channels: int = 3, device: Any = None):
    """The convolutional stack of VGG`depth` as an nn.Sequential (conv3×3+ReLU blocks, max-pools).

    `device="meta"` builds it without allocating weights (for counting and shape checks).
    """
    from torch import nn

    modules: list[nn.Module] = []
    for kind, cin, cout in _layers(depth, in_channels):
        if kind == "pool":
            modules.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            modules += [nn.Conv2d(cin, cout, kernel_size=3, padding=1, device=device), nn.ReLU(inplace=True)]
    return nn.Sequential(*modules)


def vgg_classifier(in_features: int, num_classes: int = 1000, dropout: float = 0.5, device: Any = None):
    """Flattened features → 4096 → 4096 → classes, with ReLU and dropout as in the paper."""
    from torch import nn

    return nn.Sequential(
        nn.Linear(in_features, HIDDEN_UNITS, device=device), nn.ReLU(inplace=True), nn.Dropout(dropout),
        nn.Linear(HIDDEN_UNITS, HIDDEN_UNITS, device=device), nn.ReLU(inplace=True), nn.Dropout(dropout),
        nn.Linear(HIDDEN_UNITS, num_classes, device=device),
    )


def vgg(depth: int = 19, num_classes: int = 1000, image_size: int = 224, *, seed: int | None = 0,
        device: Any = None):
    """VGG`depth` for square `image_size` inputs: Sequential(features, flatten, classifier).

    `model.features` is the convolutional base (what transfer learning freezes). Weights are drawn
    from `seed` (None: left at torch's defaults); on the meta device nothing is drawn.
    """
    from collections import OrderedDict

    from torch import nn

    meta = str(device) == "meta"
    channels, height, width = feature_shape(depth, image_size)
    model = nn.Sequential(OrderedDict(
        features=vgg_features(depth, device="meta" if meta else None),
        flatten=nn.Flatten(),
        classifier=vgg_classifier(channels * height * width, num_classes, device="meta" if meta else None),
    ))
    if seed is not None and not meta:
        init_weights(model, seed)  # drawn on the CPU, so every device gets the same weights
    return model if meta or device is None else model.to(device)


def init_weights(model, seed: int) -> None:
    """Reproducible random weights that keep activations of order 1 through the whole stack.

    He initialisation on the fan-in (ReLU gain) preserves the forward variance layer by layer, so
    a random network's logits are neither vanishingly small nor huge and low-precision rounding
    is exercised as with trained weights. The last layer is scaled down to give logits of order 1.
    """
    import torch
    from torch import nn

    generator = torch.Generator().manual_seed(seed)
    layers = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        for index, layer in enumerate(layers):
            last = index == len(layers) - 1
            nn.init.kaiming_normal_(layer.weight, mode="fan_in", nonlinearity="linear" if last else "relu",
                                    generator=generator)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)
