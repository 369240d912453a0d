import json

from accelbench.cli.main import main
from accelbench.store.db import Store


def test_export_then_import_into_another_database(tmp_path, capsys):
    source, target, document = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "run.json"
    assert main(["run", "reduce", "--sizes", "2048", "--backend", "numpy", "--rigor", "quick",
                 "--db", str(source), "--no-progress"]) == 0
    assert main(["export", "latest", "-o", str(document), "--db", str(source)]) == 0
    assert main(["import", str(document), "--tag", "node=n1", "--db", str(target)]) == 0
    assert main(["import", str(document), "--db", str(target)]) == 0  # a second import adds nothing
    capsys.readouterr()
    with Store(source) as a, Store(target) as b:
        (run_a,), (run_b,) = a.runs(), b.runs()
        assert run_a.id == run_b.id and b.tags(run_b.id) == {"node": "n1"}
        assert [m.to_dict() for m in a.results(run_a.id)] == [m.to_dict() for m in b.results(run_b.id)]
    assert main(["runs", "--json", "--db", str(target)]) == 0
    assert json.loads(capsys.readouterr().out)[0]["id"] == run_a.id


def test_import_rejects_a_bad_document_naming_the_field(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "accelbench-results", "format_version": 1, "runs": [{"id": 5}]}))
    assert main(["import", str(bad), "--db", str(tmp_path / "c.sqlite")]) == 2
    assert "runs[0]" in capsys.readouterr().err


def test_unknown_run_reference_exits_2(tmp_path, capsys):
    Store(tmp_path / "e.sqlite").close()  # a database without that run (a missing one: test_hostile_db)
    assert main(["export", "nosuchrun", "--db", str(tmp_path / "e.sqlite")]) == 2
    assert "nosuchrun" in capsys.readouterr().err


def test_a_caveat_whose_figures_hold_an_infinite_interval_is_exported(tmp_path, capsys):
    """A measurement of a few samples has a CI of ±inf, kept in its warning's figures: the export
    wrote it as `Infinity` and failed (found exporting a PoCL run, issue 28). Exported as null now."""
    from accelbench.results import Check, Measurement, Spec, Work
    from accelbench.verdict import TARGET, Caveat

    target = Caveat("95% CI of the median undefined with 4 samples, target ±5%", TARGET,
                    {"rel_ci_halfwidth": float("inf"), "samples": 4})
    db, document = tmp_path / "a.sqlite", tmp_path / "run.json"
    with Store(db) as store:
        store.restore_run("r-inf", started_at="2026-12-05T12:00:00Z", finished_at=None, status="complete",
                          accelbench_version="0.1.0", selection={}, machine={"hostname": "box"}, tags={},
                          results=(Measurement(Spec.make("reduce", "numpy", "cpu", n=2048, dtype="float64"),
                                               {"compute": (1e-5, 2e-5, 1e-5, 3e-5)}, 1e-4, Work(2048, 8 * 2048),
                                               Check(True, 1e-16, 1e-12, "within tolerance", "cpu"),
                                               warnings=(target,), verdict="noisy", verdict_reasons=(target,)),),
                          skips=())
    assert main(["export", "latest", "-o", str(document), "--db", str(db)]) == 0
    (result,) = json.loads(document.read_text())["runs"][0]["results"]
    assert result["warnings"][0]["figures"] == {"rel_ci_halfwidth": None, "samples": 4}
    assert main(["import", str(document), "--db", str(tmp_path / "b.sqlite")]) == 0
    capsys.readouterr()
