"""The seeds' models in torch.nn, initialised as Keras does, and a FLOP count per training sample.

Each model ends in logits: Keras's final softmax plus categorical cross-entropy is, in torch, one
CrossEntropyLoss on the logits (the same function, computed more stably). torch is imported
inside the builders so that importing this module stays light.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Parameter counts (what `model.summary()` shows), asserted by the tests against the built models.
# torch's LSTM keeps two bias vectors (input and recurrent) where Keras keeps one: 4 x 128 more.
KERAS_LSTM_PARAMETERS = 388_584
PARAMETERS = {"mlp": 235_146, "cnn": 93_322, "lstm": KERAS_LSTM_PARAMETERS + 4 * 128}
BYTES_PER_FLOAT32 = 4


def build_mlp() -> Any:
    """Seed 000: Dense 256 ReLU, Dropout 0.4, Dense 128 ReLU, Dropout 0.3, Dense 10 (softmax in the loss)."""
    from torch import nn

    model = nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.4),
        nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.3),
        nn.Linear(128, 10),
    )
    return keras_init(model)


def build_cnn() -> Any:
    """Seed 003's MNIST CNN on [N, 1, 28, 28]: Conv 32, pool, Conv 64, pool, Conv 64, Dense 64, Dense 10."""
    from torch import nn

    model = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),    # 28 -> 26 -> 13
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),   # 13 -> 11 -> 5
        nn.Conv2d(64, 64, 3), nn.ReLU(),                    # 5 -> 3
        nn.Flatten(), nn.Linear(64 * 3 * 3, 64), nn.ReLU(),
        nn.Linear(64, 10),
    )
    return keras_init(model)


@lru_cache(maxsize=1)
def _next_word_class() -> type:
    from torch import nn

    class NextWord(nn.Module):
        """Seed 003's text model: Embedding 1000x128 over 20 tokens, LSTM 128, Dense 1000."""

        def __init__(self, vocabulary: int = 1000, width: int = 128) -> None:
            super().__init__()
            self.embedding = nn.Embedding(vocabulary, width)
            self.lstm = nn.LSTM(width, width, batch_first=True)
            self.dense = nn.Linear(width, vocabulary)

        def forward(self, tokens):
            sequence, _ = self.lstm(self.embedding(tokens))
            return self.dense(sequence[:, -1])  # Keras's LSTM returns the last step only

    return NextWord


def build_lstm(vocabulary: int = 1000, width: int = 128) -> Any:
    return keras_init(_next_word_class()(vocabulary, width))


def keras_init(model: Any) -> Any:
    """Keras's default initialisers, so training behaves like the seeds' (torch's defaults differ).

    Dense and Conv: Glorot-uniform weights, zero biases. Embedding: uniform ±0.05. LSTM:
    Glorot-uniform input weights, orthogonal recurrent weights, forget-gate bias 1.
    """
    import torch
    from torch import nn

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.uniform_(module.weight, -0.05, 0.05)
            elif isinstance(module, nn.LSTM):
                _keras_lstm_init(module)
    return model


def _keras_lstm_init(lstm: Any) -> None:
    from torch import nn

    hidden = lstm.hidden_size
    for name, value in lstm.named_parameters():
        if name.startswith("weight_ih"):
            nn.init.xavier_uniform_(value)
        elif name.startswith("weight_hh"):
            nn.init.orthogonal_(value)
        else:
            nn.init.zeros_(value)
            if name.startswith("bias_ih"):
                value[hidden:2 * hidden] = 1.0  # gate order i, f, g, o: Keras's unit_forget_bias


def parameter_count(model: Any, trainable: bool | None = None) -> int:
    """All parameters, or only the trainable (True) or frozen (False) ones."""
    return sum(p.numel() for p in model.parameters() if trainable is None or p.requires_grad == trainable)


# -- FLOPs ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerFlops:
    name: str
    forward_flops: float  # per sample: multiply-adds of its matmuls/convolutions, 2 FLOPs each
    trainable: bool


def layer_flops(model: Any, example: Any) -> list[LayerFlops]:
    """Every leaf layer in the order it runs on `example` (one sample), with its forward FLOPs.

    Only matmuls and convolutions are counted: activations, pooling and the optimiser's update
    are a few percent of the work here and depend on how the framework fuses them.
    """
    import torch

    seen: list[LayerFlops] = []
    names = {module: name for name, module in model.named_modules()}

    def record(module, inputs, output):
        trainable = any(p.requires_grad for p in module.parameters(recurse=False))
        seen.append(LayerFlops(names[module], _forward_flops(module, inputs, output), trainable))

    leaves = [m for m in model.modules() if not list(m.children())]
    handles = [m.register_forward_hook(record) for m in leaves]
    try:
        with torch.no_grad():
            model(example)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def _forward_flops(module: Any, inputs: tuple, output: Any) -> float:
    from torch import nn

    if isinstance(module, nn.Linear):
        rows = output.numel() // output.shape[-1]
        return 2.0 * rows * module.in_features * module.out_features
    if isinstance(module, nn.Conv2d):
        kernel = module.kernel_size[0] * module.kernel_size[1] * module.in_channels // module.groups
        return 2.0 * output.numel() * kernel
    if isinstance(module, nn.LSTM):
        steps = inputs[0].shape[1] if module.batch_first else inputs[0].shape[0]
        gates = 4 * module.hidden_size
        return 2.0 * steps * gates * (module.input_size + module.hidden_size) * module.num_layers
    return 0.0


def training_flops(layers: list[LayerFlops]) -> float:
    """FLOPs of one training step per sample: forward, weight gradients, input gradients.

    A layer's weight gradient costs its forward again where it is trainable; its input gradient
    costs it again only where something trainable runs before it (else nothing needs it): so a
    frozen base costs its forward alone, and the first layer of a network skips its input gradient.
    """
    total, upstream_trainable = 0.0, False
    for layer in layers:
        total += layer.forward_flops
        if layer.trainable:
            total += layer.forward_flops
        if upstream_trainable:
            total += layer.forward_flops
        upstream_trainable = upstream_trainable or layer.trainable
    return total


def step_work(batch: int, layers: list[LayerFlops], parameters: int, trainable: int, input_bytes_per_sample: int):
    """Work of one training step: FLOPs from `training_flops`; bytes a lower bound on the traffic
    (the batch read once, every weight read once, every trainable one's gradient written and its
    weight and optimiser state read and written once; activations not counted)."""
    from accelbench.results import Work

    traffic_bytes = batch * input_bytes_per_sample + BYTES_PER_FLOAT32 * (parameters + 4 * trainable)
    return Work(flops=batch * training_flops(layers), bytes_moved=float(traffic_bytes))
