"""The tutorials' five models in Keras 3, written as the tutorials wrote them.

Seed 000's MLP (R keras: layer_dense 256 relu, layer_dropout 0.4, 128 relu, 0.3, 10 softmax;
RMSprop; categorical cross-entropy), seed 003's CNN, next-word LSTM and VGG16 transfer model
(Adam, categorical cross-entropy), seed 004's VGG19. Weights are random (`weights=None`):
nothing is downloaded. Every builder takes the dtype the whole model computes in: float32 for
the timed model, float64 for the replay the check compares it with. Images are channels-last,
as Keras has them. `keras` is the module a Keras backend hands over (backends/keras_backend.py).
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

VOCABULARY, SEQUENCE_TOKENS, LSTM_UNITS = 1000, 20, 128
HEAD_UNITS, CLASSES = 256, 10
# Keras's model.summary() totals, asserted by the tests
PARAMETERS = {"mlp": 235_146, "cnn": 93_322, "lstm": 388_584}


@contextlib.contextmanager
def computing_in(keras: Any, dtype: str) -> Iterator[None]:
    """Layers built inside the block keep their variables and compute in `dtype`."""
    saved = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(saved)


def mlp(keras: Any) -> Any:
    layers = keras.layers
    model = keras.Sequential([
        keras.Input(shape=(784,)),
        layers.Dense(256, activation="relu"), layers.Dropout(0.4),
        layers.Dense(128, activation="relu"), layers.Dropout(0.3),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.RMSprop(), metrics=["accuracy"])
    return model


def cnn(keras: Any) -> Any:
    layers = keras.layers
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, (3, 3), activation="relu"), layers.MaxPooling2D((2, 2)),
        layers.Conv2D(64, (3, 3), activation="relu"), layers.MaxPooling2D((2, 2)),
        layers.Conv2D(64, (3, 3), activation="relu"),
        layers.Flatten(), layers.Dense(64, activation="relu"), layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    return model


def lstm(keras: Any) -> Any:
    """Embedding(1000, 128, input_length=20): Keras 3 takes the length from the input instead."""
    layers = keras.layers
    model = keras.Sequential([
        keras.Input(shape=(SEQUENCE_TOKENS,), dtype="int32"),
        layers.Embedding(input_dim=VOCABULARY, output_dim=128),
        layers.LSTM(LSTM_UNITS), layers.Dense(VOCABULARY, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="categorical_crossentropy")
    return model


def transfer(keras: Any, image_px: int, mode: str = "frozen") -> Any:
    """VGG16 without its top, frozen layer by layer as seed 003 does (mode "full" trains it all)."""
    layers = keras.layers
    base = keras.applications.VGG16(weights=None, include_top=False, input_shape=(image_px, image_px, 3))
    if mode == "frozen":
        for layer in base.layers:
            layer.trainable = False
    x = layers.Flatten()(base.output)
    x = layers.Dense(HEAD_UNITS, activation="relu")(x)
    predictions = layers.Dense(CLASSES, activation="softmax")(x)
    model = keras.Model(inputs=base.input, outputs=predictions)
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    return model


def vgg19(keras: Any, image_px: int) -> Any:
    """VGG19 with its ImageNet top; logits out (no softmax), so the output check is not flattened
    by 1,000 near-equal probabilities of a random network."""
    return keras.applications.VGG19(weights=None, include_top=True, input_shape=(image_px, image_px, 3),
                                    classifier_activation=None)


BUILDERS: dict[str, Callable[..., Any]] = {"mlp": mlp, "cnn": cnn, "lstm": lstm, "transfer": transfer}


def build(keras: Any, name: str, dtype: str = "float32", seed: int | None = None, **options: Any) -> Any:
    """Model `name` in `dtype`; weights drawn from `seed` where given (None: keep the RNG as it is)."""
    if seed is not None:
        keras.utils.set_random_seed(seed)
    with computing_in(keras, dtype):
        return (vgg19 if name == "vgg19" else BUILDERS[name])(keras, **options)


def parameter_count(model: Any, trainable: bool | None = None) -> int:
    chosen = model.weights if trainable is None else (
        model.trainable_weights if trainable else model.non_trainable_weights)
    total = 0
    for variable in chosen:
        count = 1
        for side in variable.shape:
            count *= int(side)
        total += count
    return total
