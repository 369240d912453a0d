"""compare has power, and says how much: a uniform slowdown is found unless the machine reference shows
it too; --fail-if-slower says failed (1), passed (0) or could not be decided (3). Through a real SQLite
store, `accelbench export` files and the CLI, as CI uses it."""
import json
import math
import random

import pytest

from accelbench.cli.main import main
from accelbench.report.compare.compare import ci_text
from accelbench.report.compare.machine import ratio_text
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.store.db import Store
from accelbench.store.export import import_document
from accelbench.timing import machine_reference
from accelbench.timing.stats import RatioCI
from compare_exports import export_run, gate, reference_record, scaled_copy

SPECS = ([Spec.make("matmul", "numpy", "cpu", n=n, dtype=d, threads=1) for n in (64, 128, 256) for d in
          ("float32", "float64")] + [Spec.make("stream", "numpy", "cpu", kernel=k, n=2**16, dtype="float64")
                                    for k in ("copy", "triad")])


def _samples(median_s: float, seed: int, n: int = 40) -> tuple[float, ...]:
    rng = random.Random(seed)
    return tuple(median_s * math.exp(0.01 * rng.gauss(0, 1)) for _ in range(n))


def _measurement(spec: Spec, median_s: float, seed: int) -> Measurement:
    flops, moved = (2.0 * spec.param("n") ** 3, 3 * 8 * spec.param("n") ** 2) if spec.workload == "matmul" \
        else (2.0 * 2**16, 24.0 * 2**16)
    return Measurement(spec=spec, phases_s={"compute": _samples(median_s, seed)}, first_call_s=median_s,
                       work=Work(flops=flops, bytes_moved=moved), check=Check(True, 1e-7, 1e-5))


def _export(tmp_path, *, reference: bool = True) -> str:
    """One run of short calls (0.2-1.6 ms) stored in a real database, exported as CI would."""
    return export_run(tmp_path, "a", [_measurement(s, 2e-4 * (i + 1), seed=i) for i, s in enumerate(SPECS)],
                      reference=1.0 if reference else None)


def _variant(tmp_path, path_a: str, name: str, *, factor: float = 1.0, reference: float = 1.0,
             only: int | None = None) -> str:
    return scaled_copy(tmp_path, path_a, name, factor=factor, reference=reference, only=only)


_gate = gate


@pytest.mark.parametrize("factor", [2.0, 1.3])
def test_a_uniform_slowdown_the_reference_does_not_show_is_slower_and_fails(tmp_path, capsys, factor):
    a = _export(tmp_path)
    code, report, err = _gate(capsys, a, _variant(tmp_path, a, "b", factor=factor))
    assert code == 1, report["summary"]
    assert report["counts"]["slower"] == len(SPECS) and report["fail_if_slower"]["outcome"] == "failed"
    assert "machine reference steady" in report["summary"] and f"{factor:.2f}× slower" in report["summary"]
    assert all(r["verdict_text"].startswith(f"slower: {factor:.2f}× slower") for r in report["rows"])
    assert "FAILED" in err


def test_one_spec_slower_among_steady_ones_is_found(tmp_path, capsys):
    a = _export(tmp_path)
    code, report, _ = _gate(capsys, a, _variant(tmp_path, a, "b", factor=1.3, only=0))
    assert code == 1 and [r["verdict"] for r in report["rows"]].count("slower") == 1, report["summary"]


def test_a_slowdown_the_machine_reference_shows_too_is_undecided_and_named(tmp_path, capsys):
    a = _export(tmp_path)
    code, report, err = _gate(capsys, a, _variant(tmp_path, a, "b", factor=2.0, reference=2.0))
    assert code == 3, report["summary"]
    assert report["counts"]["slower"] == 0 and report["fail_if_slower"]["outcome"] == "undecided"
    named = "this machine ran 2.00× slower during B (machine reference 2.00× slower): the shift cannot be told"
    assert named in report["summary"] and named in err and "COULD NOT BE DECIDED" in err
    assert report["machine_reference"]["text"] == "2.00× slower"
    # the text output names it as well, the ratio in one convention
    assert main(["compare", a, str(tmp_path / "b.json"), "--fail-if-slower", "10"]) == 3
    out = capsys.readouterr().out
    assert "this machine ran 2.00× slower" in out and "0.50×" not in out


def test_an_identical_copy_gives_no_verdict_and_passes(tmp_path, capsys):
    a = _export(tmp_path)
    code, report, err = _gate(capsys, a, _variant(tmp_path, a, "b"))
    assert code == 0 and report["counts"]["same"] == len(SPECS), report["summary"]
    assert report["fail_if_slower"]["outcome"] == "passed" and "passed" in err


def test_old_exports_without_a_reference_still_compare_and_say_so(tmp_path, capsys):
    a = _export(tmp_path, reference=False)
    code, report, _ = _gate(capsys, a, _variant(tmp_path, a, "same"))
    assert code == 0 and report["machine_reference"] is None
    assert "the gate has no machine reference" in report["summary"]
    # today's rule: the common shift counts as noise; the gate now says it could not decide, never a pass
    code, report, err = _gate(capsys, a, _variant(tmp_path, a, "b", factor=2.0))
    assert code == 3 and report["counts"]["slower"] == 0, report["summary"]
    assert "no machine reference" in err


def test_the_reference_travels_through_export_and_import(tmp_path):
    a = _export(tmp_path)
    with open(a, encoding="utf-8") as handle:
        document = json.load(handle)
    with Store(str(tmp_path / "other.sqlite")) as store:
        [run_id] = import_document(store, document)
        stored = store.machine(run_id)[machine_reference.KEY]
    assert stored == reference_record() and machine_reference.stored({machine_reference.KEY: stored}).readings == 3


def test_the_kernel_measures_and_is_read_back():
    reading = machine_reference.measure("start", repeats=2)
    assert reading.matmul_s > 0 and reading.memory_s > 0
    record = machine_reference.record([reading, reading])
    assert record["spread"] == 0 and machine_reference.stored({machine_reference.KEY: record}).total_s > 0
    assert machine_reference.stored({machine_reference.KEY: {**record, "kernel": "another"}}) is None


def test_every_ratio_is_written_one_way():
    assert ratio_text(1 / 3.17) == "3.17× slower" and ratio_text(1.2) == "1.20× faster" and ratio_text(1.0) == "1.00×"
    assert ci_text(RatioCI(0.5, 0.49, 0.51)) == "2.00× slower [1.96–2.04×]"
    assert ci_text(RatioCI(1.5, 1.4, 1.6)) == "1.50× faster [1.40–1.60×]"


def test_a_run_stores_its_reference_at_start_middle_and_end(tmp_path):
    import accelbench

    db = str(tmp_path / "r.sqlite")
    results = accelbench.run("matmul", sizes=[64], dtypes="float32", devices="cpu", backends="numpy", db=db)
    with Store(db, create=False) as store:
        stored = store.machine(results.run_id)[machine_reference.KEY]
    assert [r["at"] for r in stored["readings"]] == list(machine_reference.POINTS)
    assert stored["kernel"] == machine_reference.KERNEL and stored["spread"] >= 0
