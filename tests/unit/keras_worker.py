"""Runs the five tutorial models on one Keras backend, measured and stored like any result.

A process holds one Keras backend, so tests/unit/test_keras_workloads.py starts this once per
backend: `python keras_worker.py keras-jax DB [honest|no-update]`. It prints one JSON line per result.
"""
from __future__ import annotations

import json
import sys

from accelbench.backends.registry import get_backend
from accelbench.results import Spec
from accelbench.runner.execute import TrustContext, measure_item
from accelbench.runner.plan import PlanItem
from accelbench.store.db import Store
from accelbench.workloads.dl import keras_steps
from accelbench.timing.rigor import RIGORS

# tiny sizes: each model's whole path (timed steps, replay, fit/evaluate/predict) in seconds
SPECS = {
    "mlp": {"batch": 128, "dtype": "float32", "epochs": 1, "target_accuracy": 0.95, "train_until": "epochs"},
    "cnn": {"batch": 32, "dtype": "float32", "epochs": 1, "target_accuracy": 0.95, "train_until": "epochs",
            "train_digits": 1200},
    "lstm": {"batch": 16, "dtype": "float32", "steps": 30},
    "transfer": {"batch": 4, "dtype": "float32", "image_px": 32, "mode": "frozen"},
    "vgg-infer": {"batch": 1, "dtype": "float32", "layout": "contiguous", "image_px": 32, "depth": 19},
}


def skipping_update(self):
    """A dishonest step: Keras computes the loss but the optimiser never applies it."""
    x, y = self.batches[self.position % len(self.batches)]
    self.position += 1
    with self.backend.on_device(self.device):
        loss = float(self.model.test_on_batch(x, y, return_dict=True)["loss"])
    if self.recorded is not None:
        self.recorded.append((x, y))
    self.last_loss, self.steps_taken = loss, self.steps_taken + 1
    return loss


def main(backend_name: str, db: str, mode: str, names: list[str]) -> None:
    if mode == "no-update":
        keras_steps.KerasSteps.compute = skipping_update
    backend = get_backend(backend_name)
    with Store(db) as store:
        run_id = store.start_run({"software": backend.versions()}, {"backends": [backend_name]})
        for name in names or list(SPECS):
            spec = Spec.make(name, backend_name, "cpu", **SPECS[name])
            m = measure_item(PlanItem(spec, None), backend, RIGORS["quick"], seed=3, trust=TrustContext(probe_sync=False))
            store.add_result(run_id, m)
            print(json.dumps({"workload": name, "status": m.verdict, "passed": m.check.passed,
                              "detail": m.check.detail, "device_seen": m.check.device_seen,
                              "reasons": list(m.verdict_reasons), "samples": len(m.samples_s),
                              "extra": {k: v for k, v in m.extra.items() if isinstance(v, (int, float, str))}}),
                  flush=True)
        store.finish_run(run_id, "complete")
        print(json.dumps({"run_id": run_id}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "honest", sys.argv[4:])
