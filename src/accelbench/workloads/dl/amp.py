"""Mixed-precision training (seed 003, "Training met gemengde precisie") against fp32, on the MLP
and the CNN: autocast to bf16, or to fp16 with a GradScaler, where the device computes natively in it.

Each instance times a training step in its precision and trains a fresh model to the target
accuracy in it (accuracy reached and time to accuracy, as the MLP and CNN store them). A
low-precision instance also times its step against an fp32 step interleaved (A B B A ...), so
its speed-up over fp32 comes from one stretch of time on one machine, not from two runs.
"""
from __future__ import annotations

import math
import statistics
import time
from typing import Callable

from accelbench.workloads.base import Prepared, Workload
from accelbench.workloads.dl import training
from accelbench.workloads.dl.cnn import CNN
from accelbench.workloads.dl.mlp import MLP, DigitsClassifier

MODELS: dict[str, type[DigitsClassifier]] = {"mlp": MLP, "cnn": CNN}
DTYPE_OF = training.PRECISIONS                      # "bf16" -> "bfloat16"
PRECISION_OF = {v: k for k, v in DTYPE_OF.items()}  # "bfloat16" -> "bf16"
COMPARE_ROUNDS = 8        # interleaved blocks of each precision (an even number: A B B A ...)
COMPARE_BLOCK_S = 0.02    # a block is at least this long, so the clock and sync are negligible


class AMP(Workload):
    role = "model"  # a whole model or application, read on its own figures
    cpu_baseline = "framework"  # against the same framework on the CPU
    name = "amp"
    description = "mixed-precision training (bf16, fp16 + GradScaler) vs fp32 on the MLP and CNN"
    size_param, size_unit = "batch", "samples per batch"
    dtypes = ("float32", "bfloat16", "float16")

    def grid(self, sizes, dtypes, quick):
        precisions = [PRECISION_OF[d] for d in (dtypes or self.dtypes)]
        grid = []
        for model_name, model in MODELS.items():
            for base in model().grid(sizes, None, quick):
                base = {k: v for k, v in base.items() if k != "dtype"}  # precision says it
                grid += [{**base, "model": model_name, "precision": p} for p in precisions]
        return grid

    def _model(self, params: dict) -> DigitsClassifier:
        return MODELS[params["model"]]()

    def work(self, params):
        return self._model(params).work(params)  # the same arithmetic, in fewer bits

    def footprint_bytes(self, params):
        return 2 * self._model(params).footprint_bytes(params)  # its own model and the fp32 one

    def prepare(self, backend, device, params, seed) -> Prepared:
        session = self._model(params).session(backend, device, params, seed, params["precision"])
        prepared = session.prepared()
        if params["precision"] == "fp32":
            return prepared
        baseline = training.stepper(session.task(fp32=True))

        def metrics():
            step = training.stepper(session.task())  # a fresh copy: the timed model keeps its state
            found = session.metrics()
            found.update(interleaved_speedup(baseline, step, lambda: backend.synchronize(device)))
            return found

        prepared.metrics = metrics
        return prepared


def interleaved_speedup(baseline: Callable, candidate: Callable, synchronize: Callable,
                        rounds: int = COMPARE_ROUNDS, clock: Callable[[], float] = time.perf_counter) -> dict:
    """fp32 step time / this precision's step time, both timed in alternating blocks.

    The order alternates (A B B A A B ...) so a clock ramp or a neighbour's load falls on both.
    """
    per_step = {}
    for name, step in (("baseline", baseline), ("candidate", candidate)):
        step()  # first calls (lazy init, kernel choice) stay out of the comparison
        synchronize()
        began = clock()
        step()
        synchronize()
        per_step[name] = clock() - began
    calls = max(1, math.ceil(COMPARE_BLOCK_S / max(min(per_step.values()), 1e-9)))
    samples: dict[str, list[float]] = {"baseline": [], "candidate": []}
    for index in range(rounds):
        order = ("baseline", "candidate") if index % 2 == 0 else ("candidate", "baseline")
        for name in order:
            step = baseline if name == "baseline" else candidate
            synchronize()
            began = clock()
            for _ in range(calls):
                step()
            synchronize()
            samples[name].append((clock() - began) / calls)
    fp32_s, this_s = statistics.median(samples["baseline"]), statistics.median(samples["candidate"])
    return {"fp32_step_s": fp32_s, "step_s": this_s, "speedup_vs_fp32": fp32_s / this_s if this_s > 0 else None,
            "speedup_blocks": rounds, "speedup_steps_per_block": calls}
