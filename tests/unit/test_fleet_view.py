"""`submit --each-node`'s node choice, gathering a sweep with nodes not measured, and the fleet view
(`accelbench fleet`) over a real SQLite store: headline figures, valid-only comparison, stored
history, exit codes, JSON and the HTML page."""
from __future__ import annotations

import json
import math

import pytest

from accelbench.cli.gather_cmd import gather_and_report, progress_counts
from accelbench.cli.main import main
from accelbench.cluster.fleet import NodeEntry, build_fleet
from accelbench.cluster.gather import gather
from accelbench.cluster.manifest import JobRecord, add_jobs, load_manifest
from accelbench.cluster.nodes import choose_nodes, feature_matcher, parse_nodes, plan_sweep
from accelbench.cluster.states import JobState
from accelbench.cluster.targets import Target
from accelbench.errors import UsageError
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.store.db import Store

# Recorded on the several-node Slurm 22.05 of scripts/slurm/start_local_fleet.sh, 2026-12-03, after
# `scontrol update nodename=fleet5 state=down reason="bad dimm"` and fleet6 drained.
NODES_RECORDED = "".join((
    'NodeName=fleet1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=4.72 AvailableFeatures=typea ActiveFeatures=typea Gres=(null) NodeAddr=vm NodeHostName=vm Port=6951 Version=22.05.8 OS=Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=16644 Sockets=1 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=fleet  BootTime=2026-12-02T13:37:46 SlurmdStartTime=2026-12-03T07:57:21 LastBusyTime=2026-12-03T08:01:11 CfgTRES=cpu=1,mem=1000M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n'
    'NodeName=fleet5 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=4.72 AvailableFeatures=typeb ActiveFeatures=typeb Gres=(null) NodeAddr=vm NodeHostName=vm Port=6955 Version=22.05.8 OS=Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=16644 Sockets=1 Boards=1 State=DOWN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=fleet  BootTime=2026-12-02T13:37:47 SlurmdStartTime=2026-12-03T07:57:21 LastBusyTime=2026-12-03T08:06:08 CfgTRES=cpu=1,mem=1000M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=bad dimm [root@2026-12-03T08:06:11]\n'
    'NodeName=fleet6 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=4.72 AvailableFeatures=typeb ActiveFeatures=typeb Gres=(null) NodeAddr=vm NodeHostName=vm Port=6956 Version=22.05.8 OS=Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=16644 Sockets=1 Boards=1 State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=fleet  BootTime=2026-12-02T13:37:47 SlurmdStartTime=2026-12-03T07:57:21 LastBusyTime=2026-12-03T08:06:08 CfgTRES=cpu=1,mem=1000M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=fan failure (test) [root@2026-12-03T08:06:11]\n'
))
# a GPU node of another site, written in the same format (GRES, two features, not responding)
GPU_NODE = ("NodeName=gpu07 Arch=x86_64 CoresPerSocket=32 CPUAlloc=0 CPUTot=64 AvailableFeatures=a100,ib "
            "ActiveFeatures=a100,ib Gres=gpu:a100:4 NodeAddr=gpu07 NodeHostName=gpu07 State=IDLE* "
            "Partitions=gpu,gpu-long Reason=Not responding [slurm@2026-12-01T10:00:00]\n")


def test_scontrol_nodes_give_state_features_gres_and_reason():
    nodes = {n.name: n for n in parse_nodes(NODES_RECORDED + GPU_NODE)}
    assert list(nodes) == ["fleet1", "fleet5", "fleet6", "gpu07"]
    assert nodes["fleet1"].measurable and nodes["fleet1"].features == ("typea",)
    assert nodes["fleet1"].partitions == ("fleet",) and nodes["fleet1"].gres == ""
    assert not nodes["fleet5"].measurable and nodes["fleet5"].why_not_measured().startswith("DOWN (state DOWN): bad dimm [root@")
    assert not nodes["fleet6"].measurable
    assert nodes["fleet6"].why_not_measured().startswith("DRAIN (state IDLE+DRAIN): fan failure (test) [root@")
    gpu = nodes["gpu07"]
    assert not gpu.measurable and "NOT_RESPONDING" in gpu.why_not_measured()
    assert gpu.info() == {"features": "a100,ib", "gres": "gpu:a100:4", "state": "IDLE*", "partitions": "gpu,gpu-long"}
    assert gpu.node_type == "a100,ib"


def test_nodes_are_chosen_by_partition_name_and_feature_expression():
    nodes = parse_nodes(NODES_RECORDED + GPU_NODE)
    names = lambda chosen: [n.name for n in chosen]  # noqa: E731
    assert names(choose_nodes(nodes, partitions=["fleet"], names=[], constraints=[])) == ["fleet1", "fleet5", "fleet6"]
    assert names(choose_nodes(nodes, partitions=[], names=[], constraints=["typeb"])) == ["fleet5", "fleet6"]
    assert names(choose_nodes(nodes, partitions=[], names=[], constraints=["a100&ib"])) == ["gpu07"]
    assert names(choose_nodes(nodes, partitions=[], names=[], constraints=["typea|a100"])) == ["fleet1", "gpu07"]
    assert names(choose_nodes(nodes, partitions=[], names=["fleet6"], constraints=[])) == ["fleet6"]
    with pytest.raises(UsageError, match="knows no node nosuch"):
        choose_nodes(nodes, partitions=[], names=["nosuch"], constraints=[])
    for refused in ("a&b|c", "[a|b]", "a*2"):
        with pytest.raises(UsageError, match="--each-node"):
            feature_matcher(refused)


def test_a_sweep_pins_one_job_to_each_usable_node_and_lists_the_others():
    nodes = parse_nodes(NODES_RECORDED + GPU_NODE)
    sweep = plan_sweep(nodes, partitions=["gpu-long", "fleet"], gres=[], repeat=2, max_jobs=64)
    assert [(t.node, t.partition, t.repeat) for t in sweep.targets] == [("fleet1", "fleet", 1), ("fleet1", "fleet", 2)]
    assert [n.name for n in sweep.unmeasured] == ["fleet5", "fleet6", "gpu07"]
    assert sweep.targets[0].sbatch_options() == ["--partition=fleet", "--nodelist=fleet1"]
    with pytest.raises(UsageError, match="more than --max-jobs 1"):
        plan_sweep(nodes, partitions=[], gres=[], repeat=2, max_jobs=1)


def test_gather_names_an_unmeasured_node_and_does_not_count_it_as_failed(tmp_path, capsys):
    results = tmp_path / "results"
    drained = parse_nodes(NODES_RECORDED)[2]
    add_jobs(results, [JobRecord("sub1", 1, Target(node="fleet6"), "", "t", ("reduce",), node_info=drained.info(),
                                 unmeasured=drained.why_not_measured())])
    (record,) = load_manifest(results)
    assert record.unmeasured.startswith("DRAIN") and record.node_info["features"] == "typeb"
    with Store(tmp_path / "db.sqlite") as store:
        (outcome,) = gather(results, store, runner=lambda argv: pytest.fail(f"Slurm asked: {argv}")).outcomes
    assert outcome.status == "unmeasured" and outcome.state.state == "NOT_MEASURED"
    assert gather_and_report(results, tmp_path / "db.sqlite", records=[record], known={}) == 0
    out = capsys.readouterr().out
    assert "[--] node fleet6 not measured: DRAIN (state IDLE+DRAIN): fan failure (test)" in out
    assert "0 job(s): 0 ok, 0 failed, 0 still queued or running; 1 node(s) not measured" in out


def test_wait_progress_counts_done_pending_running_and_failed():
    states = {"1": JobState("1", "COMPLETED", "squeue"), "2": JobState("2", "PENDING", "squeue"),
              "3": JobState("3", "RUNNING", "squeue"), "4": JobState("4", "TIMEOUT", "scontrol"),
              "5": JobState("5", "RUNNING", "squeue")}  # 5: then forgotten by Slurm: it ended
    assert progress_counts(["1", "2", "3", "4", "5", "6"], states, {"2", "3", "6"}) == \
        {"done": 2, "pending": 2, "running": 1, "failed": 1}


# -- the fleet view over a real store --------------------------------------------------------

SPEC = Spec.make("matmul", "numpy", "cpu", n=512, dtype="float32")
SMALL = Spec.make("matmul", "numpy", "cpu", n=128, dtype="float32")


def _measurement(spec: Spec, rate_flop_s: float, verdict: str = "valid") -> Measurement:
    flops = 2.0 * spec.param("n") ** 3
    seconds = flops / rate_flop_s
    samples = tuple(seconds * (1 + 0.002 * math.sin(i)) for i in range(30))
    return Measurement(spec=spec, phases_s={"compute": samples}, first_call_s=seconds * 2,
                       work=Work(flops, 3.0 * 4 * spec.param("n") ** 2), check=Check(True, 1e-7, 1e-3),
                       verdict=verdict)


def _store_sweep(store: Store, submission: str, rates: dict[str, float], node_type: str = "typea",
                 verdicts: dict[str, str] | None = None) -> list[NodeEntry]:
    entries = []
    for index, (node, rate) in enumerate(rates.items()):
        run_id = f"{submission}-{index:03d}"
        verdict = (verdicts or {}).get(node, "valid")
        store.restore_run(run_id, started_at=f"2026-12-0{1 + len(submission) % 2}T00:00:{index:02d}+00:00",
                          finished_at=None, status="complete", accelbench_version="test", selection={},
                          machine={"hostname": node},
                          tags={"node": node, "node_features": node_type, "submission": submission},
                          results=[_measurement(SPEC, rate, verdict), _measurement(SMALL, rate / 2, verdict)],
                          skips=())
        entries.append(NodeEntry(node, node_type, "measured", run_ids=(run_id,)))
    return entries


def test_the_slow_node_is_flagged_at_the_largest_size_and_a_noisy_node_is_left_out(tmp_path):
    rates = {"a1": 100e9, "a2": 102e9, "a3": 98e9, "a4": 101e9, "slow": 40e9, "busy": 30e9}
    with Store(tmp_path / "db.sqlite") as store:
        entries = _store_sweep(store, "sweep2", rates, verdicts={"busy": "noisy"})
        entries.append(NodeEntry("down1", "typea", "unmeasured", "DOWN (state DOWN): bad dimm"))
        view = build_fleet(store, entries, "sweep2")
        with_noisy = build_fleet(store, entries, "sweep2", verdicts=("valid", "noisy"))
    (node_type,) = view.types
    (headline,) = node_type.headlines  # the larger of the two sizes only
    assert headline.key == SPEC.key and headline.unit == "FLOP/s"
    assert headline.median == pytest.approx(100e9, rel=0.01)
    assert view.outlier_nodes() == ["slow"]
    assert view.unjudged() == {"busy": "no result with an admitted verdict (valid)"}
    assert [n.node for n in view.nodes("unmeasured")] == ["down1"]
    assert set(with_noisy.outlier_nodes()) == {"slow", "busy"}


def test_earlier_sweeps_in_the_store_widen_the_spread(tmp_path):
    with Store(tmp_path / "db.sqlite") as store:
        for sweep in ("sweep0", "sweep1"):  # earlier sweeps scattered by about 10%
            _store_sweep(store, sweep, {"a1": 110e9, "a2": 90e9, "a3": 100e9, "a4": 112e9, "a5": 88e9})
        _store_sweep(store, "sweepz", {"a1": 50e9, "a2": 150e9, "a3": 100e9})  # a later sweep: not history
        entries = _store_sweep(store, "sweep9", {"a1": 100e9, "a2": 100.5e9, "a3": 75e9})
        view = build_fleet(store, entries, "sweep9")
    with Store(tmp_path / "alone.sqlite") as store:  # the same sweep with no history: a3 is accused
        alone = build_fleet(store, _store_sweep(store, "sweep9", {"a1": 100e9, "a2": 100.5e9, "a3": 75e9}), "sweep9")
    assert alone.outlier_nodes() == ["a3"] and alone.types[0].headlines[0].spread.history_points == 0
    (headline,) = view.types[0].headlines
    assert headline.spread.history_points == 10 and headline.spread.points == 13
    assert view.outlier_nodes() == []  # 25% below, within what this fleet's history shows


def test_fleet_command_from_the_database_json_exit_codes_and_page(tmp_path, capsys, monkeypatch):
    db = tmp_path / "db.sqlite"
    with Store(db) as store:
        _store_sweep(store, "sweep1", {"a1": 100e9, "a2": 101e9, "a3": 99e9, "<b>x</b>": 40e9})
    assert main(["fleet", "--db", str(db), "--json", "--html", str(tmp_path / "page")]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["outliers"] == ["<b>x</b>"] and doc["submission"] == "sweep1"
    (headline,) = doc["types"][0]["headlines"]
    assert {n["node"]: n["verdict"] for n in headline["nodes"]}["a1"] == "ok"
    assert headline["spread"]["outlier_below_ratio"] < 1
    page = (tmp_path / "page" / "index.html").read_text()
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page and "data:image/png;base64," in page
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["fleet", "--db", str(db), "--fail-on", "none"]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 80
    assert ("OUTLIER <b>x</b> (typea): matmul [numpy@cpu] dtype=float32 n=512: 0.40× its type's median"
            in " ".join(line.strip() for line in text.splitlines()))
    assert main(["fleet", "--db", str(db), "--fail-on", "sometimes"]) == 2
    assert "'sometimes' is not accepted; accepted: comma-separated from outlier" in capsys.readouterr().err


def test_one_file_the_database_refuses_costs_only_its_job(tmp_path, monkeypatch):
    """The batch is stored in one transaction; if the database refuses it, each job is stored
    alone and only the job whose runs were refused is reported."""
    from accelbench.cluster.gather import JobOutcome, _import_all, _Pending
    from accelbench.store.import_file import run_records

    def pending(job_id: str, run_id: str, status: str) -> _Pending:
        run = {"id": run_id, "started_at": "2026-12-03T00:00:00+00:00", "status": status,
               "accelbench_version": "t", "machine": {"hostname": "n"}, "results": [], "skips": []}
        outcome = JobOutcome(JobRecord("s", 1, Target(node="n"), "", "t", (), job_id=job_id),
                             JobState(job_id, "COMPLETED", "squeue"))
        return _Pending(outcome, [run_id], list(run_records([run], {"node": "n"}, None)))

    good, bad = pending("1", "run-good", "complete"), pending("2", "run-bad", "no such status")
    with Store(tmp_path / "db.sqlite") as store:
        _import_all([good, bad], store)
        assert [r.id for r in store.runs()] == ["run-good"]
    assert good.outcome.imported == ["run-good"] and good.outcome.status == "ok"
    assert bad.outcome.imported == [] and "the database refused them" in bad.outcome.problem
    assert bad.outcome.status == "failed"
