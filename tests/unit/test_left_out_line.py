"""The one line saying what the run left out: its counts add up to what was skipped."""
import re

from accelbench.report.run_screen import left_out_line
from accelbench.results import Skip, Spec


def _skips(counts: dict[str, int]) -> list[Skip]:
    return [Skip(Spec.make("matmul", "numpy", "cpu", n=100 + i), f"{reason}: detail {i}")
            for reason, count in counts.items() for i in range(count)]


def test_every_left_out_combination_is_counted_once_under_a_reason():
    counts = {"cpu computes on host memory": 15, "another OpenCL implementation": 3,
              "numpy has no bfloat16": 1, "torch has no float16 here": 1}
    line = left_out_line(_skips(counts))
    assert line.startswith("Left out 20 that cannot run here:")
    stated = [int(n) for n in re.findall(r"\((\d+)\)", line)] + [int(re.search(r"; (\d+) for 2 other reasons", line)[1])]
    assert sum(stated) == 20


def test_a_single_other_reason_is_said_in_the_singular():
    line = left_out_line(_skips({"a": 4, "b": 2, "c": 1}))
    assert line.endswith("a (4); b (2); 1 for another reason.")
