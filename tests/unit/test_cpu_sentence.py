"""The CPU side of the answer states only a plainly valid rate against a peak (issue #25 item 6):
a noisy result, even the fastest, sets no share of the best measured rate."""
from __future__ import annotations

import dataclasses

from synthetic_runs import DEVICES, measurement

from accelbench.report.analysis import analyse
from accelbench.report.cpu_text import cpu_sentence


def _matmul(compute_s: float, verdict: str, n: int = 1000):
    m = measurement("matmul", "numpy", "cpu", compute_s=compute_s, threads=2, n=n, dtype="float32")
    return dataclasses.replace(m, verdict=verdict)


def test_the_cpu_side_is_the_work_the_answer_compares_even_when_noisy():
    """n=1,000 in 10 ms: 200 GFLOP/s, plainly valid; n=2,000 in 40 ms: 400 GFLOP/s, noisy. The answer
    compares the largest size, so the CPU side states that one (issue 42: it once quoted n=256 beside a
    comparison at n=1,000), noisy, with no share of a peak; never the other size's figure."""
    rows = analyse([_matmul(0.010, "valid"), _matmul(0.040, "noisy", n=2000)], DEVICES)
    sentence = cpu_sentence(rows) or ""
    assert "n=2,000" in sentence and "400 GFLOP/s" in sentence and "200" not in sentence, sentence
    assert "noisy: its share of a peak not stated" in sentence


def test_a_noisy_result_alone_is_said_noisy_with_no_share():
    rows = analyse([_matmul(0.010, "noisy")], DEVICES)
    sentence = cpu_sentence(rows) or ""
    assert "noisy: its share of a peak not stated" in sentence, sentence
    assert "% of" not in sentence
