"""The cluster layer's logic, against Slurm output recorded on a real Slurm: parsing squeue and
scontrol, state mapping, what the files say once Slurm forgot a job, the job matrix, the manifest,
gathering into a database, and the batch script itself (run by bash, outside Slurm)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from accelbench.cli.main import main
from accelbench.cluster.gather import gather, select
from accelbench.cluster.manifest import JobRecord, add_jobs, load_manifest, record_states
from accelbench.cluster.script import JobSettings, render_script
from accelbench.cluster.slurm import SlurmUnavailable, expand_nodelist, parse_parsable, query, submit, wait
from accelbench.cluster.states import (JobState, category, normalize_state, parse_scontrol,
                                       parse_scontrol_fields, parse_squeue, state_from_log,
                                       state_from_status)
from accelbench.cluster.targets import Target, expand_targets, parse_jobs_per
from accelbench.errors import UsageError
from accelbench.store.db import Store
from accelbench.store.export import read_json, validate_document
from cluster_folder import OK_STATUS, finish_job, job_record

# Recorded on a real Slurm 22.05 (scripts/slurm/start_local_slurm.sh), 2026-12-02.
SQUEUE_ENDED = """\
4|CANCELLED|vm|debug|None
1|COMPLETED|vm|debug|None
2|FAILED|vm|debug|NonZeroExitCode
3|TIMEOUT|vm|debug|TimeLimit
"""
SQUEUE_PENDING = """\
8|PENDING||debug|None
9|PENDING||debug|Priority
"""
SCONTROL_FAILED = 'JobId=2 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901758 Nice=0 Account=(null) QOS=(null) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0 RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-02T09:41:23 EligibleTime=2026-12-02T09:41:23 AccrueTime=2026-12-02T09:41:23 StartTime=2026-12-02T09:41:25 EndTime=2026-12-02T09:41:25 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T09:41:25 Scheduler=Main Partition=debug AllocNode:Sid=localhost:11771 ReqNodeList=(null) ExcNodeList=(null) NodeList=vm BatchHost=vm NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp/sx StdErr=/tmp/sx/2.out StdIn=/dev/null StdOut=/tmp/sx/2.out Power='
SCONTROL_TIMEOUT = 'JobId=3 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901757 Nice=0 Account=(null) QOS=(null) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=00:01:15 TimeLimit=00:01:00 TimeMin=N/A SubmitTime=2026-12-02T09:41:34 EligibleTime=2026-12-02T09:41:34 AccrueTime=2026-12-02T09:41:34 StartTime=2026-12-02T09:41:34 EndTime=2026-12-02T09:42:49 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T09:41:34 Scheduler=Main Partition=debug AllocNode:Sid=localhost:11771 ReqNodeList=(null) ExcNodeList=(null) NodeList=vm BatchHost=vm NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp/sx StdErr=/tmp/sx/3.err StdIn=/dev/null StdOut=/tmp/sx/3.out Power='
SCONTROL_PENDING_SPACES = 'JobId=9 JobName=two words UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901751 Nice=0 Account=(null) QOS=(null) JobState=PENDING Reason=Priority Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-02T09:45:57 EligibleTime=2026-12-02T09:45:57 AccrueTime=Unknown StartTime=Unknown EndTime=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T09:45:57 Scheduler=Main Partition=debug AllocNode:Sid=localhost:11771 ReqNodeList=(null) ExcNodeList=(null) NodeList= NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=20489M,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp/sx/a b StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power='
LOG_TIMEOUT = 'slurmstepd-vm: error: *** JOB 3 ON vm CANCELLED AT 2026-12-02T09:42:49 DUE TO TIME LIMIT ***'
LOG_CANCELLED = 'slurmstepd-vm: error: *** JOB 4 ON vm CANCELLED AT 2026-12-02T09:41:37 ***'


# -- helpers ----------------------------------------------------------------------------------


def _done(argv, rc=0, out="", err=""):
    return subprocess.CompletedProcess(argv, rc, out, err)


class FakeSlurm:
    """Replays recorded Slurm answers. `squeue`: one text, or a list served one poll at a time
    (the last repeats); `scontrol`: job id -> record; an id it lacks gets Slurm's own error."""

    def __init__(self, squeue="", scontrol=None, squeue_rc=0, squeue_err=""):
        self.squeue = squeue if isinstance(squeue, list) else [squeue]
        self.scontrol = scontrol or {}
        self.squeue_rc, self.squeue_err = squeue_rc, squeue_err
        self.calls = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        if argv[0] == "squeue":
            text = self.squeue.pop(0) if len(self.squeue) > 1 else self.squeue[0]
            return _done(argv, self.squeue_rc, text, self.squeue_err)
        if argv[:3] == ["scontrol", "show", "job"]:
            record = self.scontrol.get(argv[-1])
            if record is None:
                return _done(argv, 1, "", "slurm_load_jobs error: Invalid job id specified\n")
            return _done(argv, 0, record + "\n")
        raise AssertionError(f"unexpected command {argv}")


# -- states: recorded squeue / scontrol output ------------------------------------------------


def test_squeue_output_gives_each_jobs_state_node_and_reason():
    states = parse_squeue(SQUEUE_ENDED)
    assert {j: s.state for j, s in states.items()} == {
        "1": "COMPLETED", "2": "FAILED", "3": "TIMEOUT", "4": "CANCELLED"}
    assert states["3"].reason == "TimeLimit" and states["3"].node == "vm" and states["3"].partition == "debug"
    assert [states[j].category for j in "1234"] == ["succeeded", "failed", "failed", "failed"]
    pending = parse_squeue(SQUEUE_PENDING)
    assert pending["9"].state == "PENDING" and pending["9"].reason == "Priority" and pending["9"].node == ""
    assert not pending["9"].terminal


def test_scontrol_record_gives_state_exit_code_reason_and_node():
    failed = parse_scontrol(SCONTROL_FAILED)["2"]
    assert (failed.state, failed.exit_code, failed.reason, failed.node) == ("FAILED", "3:0", "NonZeroExitCode", "vm")
    assert failed.describe() == "FAILED (exit 3:0, NonZeroExitCode; from scontrol)"
    timeout = parse_scontrol(SCONTROL_TIMEOUT)["3"]
    assert (timeout.state, timeout.exit_code, timeout.reason) == ("TIMEOUT", "0:15", "TimeLimit")


def test_scontrol_values_with_spaces_stay_whole():
    fields = parse_scontrol_fields(SCONTROL_PENDING_SPACES)
    assert fields["JobName"] == "two words" and fields["WorkDir"] == "/tmp/sx/a b"
    assert fields["TRES"] == "cpu=1,mem=20489M,node=1,billing=1" and fields["AllocNode:Sid"] == "localhost:11771"
    state = parse_scontrol(SCONTROL_PENDING_SPACES)["9"]
    assert state.state == "PENDING" and state.node == "" and state.partition == "debug"


@pytest.mark.parametrize("text, name, group", [
    ("CANCELLED by 1000", "CANCELLED", "failed"), ("CD", "COMPLETED", "succeeded"),
    ("OOM", "OUT_OF_MEMORY", "failed"), ("NF", "NODE_FAIL", "failed"), ("RUNNING+", "RUNNING", "active"),
    ("completing", "COMPLETING", "active"), ("", "UNKNOWN", "failed"),
    ("SOME_FUTURE_STATE", "SOME_FUTURE_STATE", "active"),  # unknown names: wait (bounded), never "failed"
])
def test_state_names_are_normalised_and_grouped(text, name, group):
    assert normalize_state(text) == name and category(name) == group


@pytest.mark.parametrize("log, state", [
    (LOG_TIMEOUT, "TIMEOUT"), (LOG_CANCELLED, "CANCELLED"),
    ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup.", "OUT_OF_MEMORY"),
    ("slurmstepd: error: Detected 2 oom_kill events in StepId=7.batch. Some of the step tasks have been "
     "OOM Killed.\nslurmstepd: error: *** JOB 7 ON n1 CANCELLED AT 2026-01-01T00:00:00 ***", "OUT_OF_MEMORY"),
    ("slurmstepd: error: *** JOB 8 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO PREEMPTION ***", "PREEMPTED"),
    ("torch.cuda.OutOfMemoryError: CUDA out of memory", None),  # a program's own words are not Slurm's
    ("accelbench run: error: nothing to run", None),
])
def test_slurmstepd_messages_in_a_log_name_the_state(log, state):
    assert state_from_log(log) == state


def test_status_file_says_which_step_failed():
    assert state_from_status("12", OK_STATUS).state == "COMPLETED"
    failed = state_from_status("12", {**OK_STATUS, "run_exit_code": 2, "export_exit_code": 2})
    assert failed.state == "FAILED" and failed.exit_code == "2:0" and "accelbench run exited 2" in failed.reason
    export_failed = state_from_status("12", {**OK_STATUS, "export_exit_code": 1})
    assert export_failed.state == "FAILED" and "accelbench export" in export_failed.reason


# -- querying and waiting -----------------------------------------------------------------------


def test_query_asks_scontrol_only_about_ended_or_missing_jobs():
    slurm = FakeSlurm(squeue="2|FAILED|vm|debug|NonZeroExitCode\n9|PENDING||debug|Priority\n",
                      scontrol={"2": SCONTROL_FAILED})
    states = query(["2", "9", "77"], slurm)
    assert states["2"].exit_code == "3:0" and states["2"].source == "scontrol"
    assert states["9"].state == "PENDING" and states["9"].source == "squeue"
    assert "77" not in states  # neither knows it: the files decide later
    assert [c[-1] for c in slurm.calls if c[0] == "scontrol"] == ["2", "77"]
    assert slurm.calls[0][:4] == ["squeue", "-h", "-t", "all"] and slurm.calls[0][-1] == "2,9,77"


def test_query_when_slurm_forgot_every_job_returns_nothing():
    slurm = FakeSlurm(squeue="", squeue_rc=1, squeue_err="slurm_load_jobs error: Invalid job id specified\n")
    assert query(["5", "6"], slurm) == {}


def test_query_raises_when_slurmctld_is_unreachable():
    slurm = FakeSlurm(squeue_rc=1, squeue_err="slurm_load_jobs error: Unable to contact slurm controller "
                                              "(connect failure)\n")
    with pytest.raises(SlurmUnavailable, match="Unable to contact"):
        query(["5"], slurm)


class FakeTime:
    def __init__(self):
        self.now_s, self.sleeps = 0.0, []

    def clock(self):
        return self.now_s

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now_s += seconds


def test_wait_follows_each_job_until_all_have_ended():
    polls = ["5|PENDING||debug|Priority\n6|PENDING||debug|Priority\n",
             "5|RUNNING|vm|debug|None\n6|PENDING||debug|Resources\n",
             "5|COMPLETED|vm|debug|None\n6|RUNNING|vm|debug|None\n",
             "5|COMPLETED|vm|debug|None\n6|TIMEOUT|vm|debug|TimeLimit\n"]
    slurm, fake, heard = FakeSlurm(squeue=polls), FakeTime(), []
    states, finished = wait(["5", "6"], timeout_s=60, poll_s=2, runner=slurm,
                            on_change=lambda s: heard.append((s.job_id, s.state)),
                            clock=fake.clock, sleep=fake.sleep)
    assert finished and states["5"].state == "COMPLETED" and states["6"].state == "TIMEOUT"
    assert heard == [("5", "PENDING"), ("6", "PENDING"), ("5", "RUNNING"), ("5", "COMPLETED"),
                     ("6", "RUNNING"), ("6", "TIMEOUT")]
    assert fake.sleeps == [2, 2, 2]


def test_wait_gives_up_at_its_timeout():
    slurm, fake = FakeSlurm(squeue="5|PENDING||debug|Resources\n"), FakeTime()
    states, finished = wait(["5"], timeout_s=10, poll_s=3, runner=slurm, clock=fake.clock, sleep=fake.sleep)
    assert not finished and states["5"].state == "PENDING"
    assert fake.now_s == 10 and fake.sleeps == [3, 3, 3, 1]  # the last sleep ends at the deadline


def test_wait_counts_a_job_slurm_forgot_as_ended():
    slurm, fake = FakeSlurm(squeue="", squeue_rc=1, squeue_err="Invalid job id specified"), FakeTime()
    states, finished = wait(["5"], timeout_s=10, runner=slurm, clock=fake.clock, sleep=fake.sleep)
    assert finished and states == {} and fake.sleeps == []


# -- submitting -------------------------------------------------------------------------------


@pytest.mark.parametrize("stdout, job_id", [("42\n", "42"), ("42;cluster2\n", "42"),
                                            ("sbatch: warning: x\n43\n", "43"), ("", None)])
def test_parsable_sbatch_output(stdout, job_id):
    assert parse_parsable(stdout) == job_id


def test_sbatch_refusal_keeps_its_message(tmp_path):
    def refusing(argv):
        assert argv[:2] == ["sbatch", "--parsable"]
        return _done(argv, 1, "", "sbatch: error: Invalid generic resource (gres) specification\n")
    sent = submit(tmp_path / "job.sbatch", refusing)
    assert sent.job_id is None and sent.message == "sbatch: error: Invalid generic resource (gres) specification"


def test_job_matrix_is_the_product_of_the_lists():
    targets = expand_targets(nodes=["n1", "n2"], partitions=["gpu"], gres=["gpu:a100:1", "gpu:v100:1"],
                             constraints=[], repeat=1)
    assert [(t.node, t.gres) for t in targets] == [("n1", "gpu:a100:1"), ("n1", "gpu:v100:1"),
                                                   ("n2", "gpu:a100:1"), ("n2", "gpu:v100:1")]
    assert targets[0].sbatch_options() == ["--partition=gpu", "--nodelist=n1", "--gres=gpu:a100:1"]
    twice = expand_targets(nodes=[], partitions=[], gres=[], constraints=[], repeat=2)
    assert [t.label() for t in twice] == ["any node", "any node #2"]


def test_jobs_per_leaves_other_lists_to_slurm_whole():
    targets = expand_targets(nodes=[], partitions=["a", "b"], gres=[], constraints=["v100", "a100"],
                             jobs_per=parse_jobs_per("constraint"))
    assert [(t.partition, t.constraint) for t in targets] == [("a,b", "v100"), ("a,b", "a100")]
    one = expand_targets(nodes=[], partitions=["a"], gres=[], constraints=["v100", "a100"],
                         jobs_per=parse_jobs_per("partition"))
    assert [t.constraint for t in one] == ["v100|a100"]  # Slurm's "any of these features"


def test_job_matrix_limits():
    with pytest.raises(UsageError, match="--jobs-per: unknown 'node'"):
        parse_jobs_per("node")
    with pytest.raises(UsageError, match="more than --max-jobs 3"):
        expand_targets(nodes=["a", "b"], partitions=["p", "q"], gres=[], constraints=[], max_jobs=3)
    with pytest.raises(UsageError, match="--repeat"):
        expand_targets(nodes=[], partitions=[], gres=[], constraints=[], repeat=0)


def test_hostlists_are_expanded_by_scontrol():
    def scontrol(argv):
        assert argv == ["scontrol", "show", "hostnames", "gpu[01-03]"]
        return _done(argv, 0, "gpu01\ngpu02\ngpu03\n")
    assert expand_nodelist("gpu[01-03]", scontrol) == ["gpu01", "gpu02", "gpu03"]

    def never(argv):
        raise AssertionError("a plain list needs no scontrol")
    assert expand_nodelist("n1, n2,", never) == ["n1", "n2"]


# -- manifest ---------------------------------------------------------------------------------


def test_manifest_appends_and_round_trips(tmp_path):
    first, second = job_record("12", 1, partition="gpu", gres="gpu:1"), job_record("13", 2, node="n2", repeat=2)
    add_jobs(tmp_path, [first])
    add_jobs(tmp_path, [second, JobRecord("sub2", 1, Target(), "s", "t", (), rejected="sbatch: error: x")])
    loaded = load_manifest(tmp_path)
    assert [r.to_dict() for r in loaded[:2]] == [first.to_dict(), second.to_dict()]
    assert loaded[2].job_id is None and loaded[2].rejected == "sbatch: error: x"
    assert json.loads((tmp_path / "manifest.json").read_text())["format"] == "accelbench-cluster-manifest"


def _add_many(results_dir, submission):
    for index in range(1, 16):
        add_jobs(results_dir, [job_record(f"{submission}0{index}", index, submission=submission)])


def test_manifest_loses_no_job_when_submissions_write_at_once(tmp_path):
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # fresh interpreters: a fork of this one (JAX loaded) may deadlock
    workers = [context.Process(target=_add_many, args=(tmp_path, name)) for name in ("1", "2", "3")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert sorted(r.job_id for r in load_manifest(tmp_path)) == sorted(
        f"{name}0{i}" for name in "123" for i in range(1, 16))


def test_manifest_remembers_only_what_slurm_said(tmp_path):
    add_jobs(tmp_path, [job_record("12"), job_record("13", 2)])
    record_states(tmp_path, {"12": JobState("12", "TIMEOUT", "scontrol", reason="TimeLimit", exit_code="0:15"),
                             "13": JobState("13", "COMPLETED", "files")})
    twelve, thirteen = load_manifest(tmp_path)
    assert twelve.last_state["state"] == "TIMEOUT" and twelve.last_state["exit_code"] == "0:15"
    assert thirteen.last_state == {}


@pytest.mark.parametrize("text, message", [("{not json", "cannot read job manifest"),
                                           ('{"format": "other"}', "not an accelbench job manifest"),
                                           ('{"format": "accelbench-cluster-manifest", "format_version": 9}', "version 9"),
                                           ('{"format": "accelbench-cluster-manifest", "format_version": 1, '
                                            '"jobs": [{"index": 1}]}', "jobs\\[0\\]")])
def test_a_bad_manifest_is_reported_by_name(tmp_path, text, message):
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(UsageError, match=message):
        load_manifest(tmp_path)


# -- gathering --------------------------------------------------------------------------------


def test_gather_imports_with_node_job_and_partition_tags_and_is_idempotent(tmp_path):
    results = tmp_path / "results"
    add_jobs(results, [job_record("12", partition="gpu")])
    (run_id,) = finish_job(results, "12", OK_STATUS)
    slurm = FakeSlurm(squeue="12|COMPLETED|n1|gpu|None\n", scontrol={})
    with Store(tmp_path / "local.sqlite") as store:
        (first,) = gather(results, store, runner=slurm).outcomes
        assert first.status == "ok" and first.imported == [run_id]
        assert store.tags(run_id) == {"job_id": "12", "node": "n1", "partition": "gpu", "cluster": "hpc",
                                      "submission": "sub1"}
        (again,) = gather(results, store, runner=slurm).outcomes
        assert again.status == "ok" and again.imported == [] and again.present == [run_id]
        assert len(store.runs()) == 1


def test_gather_after_slurm_forgot_reads_the_status_file(tmp_path):
    results = tmp_path / "results"
    add_jobs(results, [job_record("12")])
    (run_id,) = finish_job(results, "12", OK_STATUS)
    with Store(tmp_path / "local.sqlite") as store:
        (outcome,) = gather(results, store, runner=FakeSlurm(squeue_rc=1, squeue_err="Invalid job id specified")).outcomes
    assert outcome.state.state == "COMPLETED" and outcome.state.source == "files"
    assert outcome.status == "ok" and outcome.imported == [run_id]


def test_gather_after_slurm_forgot_uses_the_state_it_last_gave(tmp_path):
    results = tmp_path / "results"
    add_jobs(results, [job_record("12")])
    record_states(results, {"12": JobState("12", "TIMEOUT", "squeue", reason="TimeLimit", node="n1")})
    (results / "logs").mkdir()
    (results / "logs" / "12.out").write_text("[1/9] matmul numpy@cpu n=4000: 1.2 s\n")
    with Store(tmp_path / "local.sqlite") as store:
        (outcome,) = gather(results, store, runner=FakeSlurm(squeue_rc=1, squeue_err="Invalid job id specified")).outcomes
    assert outcome.status == "failed" and outcome.state.state == "TIMEOUT" and outcome.state.source == "manifest"
    assert outcome.log_tail == ["12.out: [1/9] matmul numpy@cpu n=4000: 1.2 s"]


def test_gather_after_slurm_forgot_reads_slurmstepd_in_the_log(tmp_path):
    results = tmp_path / "results"
    add_jobs(results, [job_record("3")])
    (results / "logs").mkdir()
    (results / "logs" / "3.err").write_text(LOG_TIMEOUT + "\n")
    with Store(tmp_path / "local.sqlite") as store:
        (outcome,) = gather(results, store, runner=FakeSlurm(squeue_rc=1, squeue_err="Invalid job id specified")).outcomes
    assert outcome.state.state == "TIMEOUT" and outcome.status == "failed"
    assert any("DUE TO TIME LIMIT" in line for line in outcome.log_tail)


def test_gather_reports_a_job_that_left_no_trace(tmp_path):
    results = tmp_path / "results"
    add_jobs(results, [job_record("12")])
    with Store(tmp_path / "local.sqlite") as store:
        (outcome,) = gather(results, store, runner=FakeSlurm(squeue_rc=1, squeue_err="Invalid job id specified")).outcomes
    assert outcome.status == "failed" and outcome.state.state == "UNKNOWN"
    assert "no longer knows" in outcome.state.reason and "left no log" in outcome.state.reason


def test_gather_keeps_partial_results_of_a_failed_job_and_reports_bad_files(tmp_path):
    results = tmp_path / "results"
    add_jobs(results, [job_record("12"), job_record("13", 2)])
    (partial,) = finish_job(results, "12", {**OK_STATUS, "run_exit_code": 130})
    (results / "jobs" / "13.json").write_text('{"format": "accelbench-results", "format_version": 1, "runs": [{"id": 5}]}')
    slurm = FakeSlurm(squeue="12|FAILED|n1|gpu|NonZeroExitCode\n13|COMPLETED|n1|gpu|None\n", scontrol={})
    with Store(tmp_path / "local.sqlite") as store:
        twelve, thirteen = gather(results, store, runner=slurm).outcomes
        assert twelve.status == "failed" and twelve.imported == [partial]  # measured: kept, but not "ok"
        assert thirteen.status == "failed" and "runs[0].id" in thirteen.problem
        assert [r.id for r in store.runs()] == [partial]


def test_gather_reports_a_job_sbatch_refused_and_a_job_still_running(tmp_path):
    results = tmp_path / "results"
    refused = JobRecord("sub1", 1, Target(gres="gpu:1"), "s", "t", (), rejected="sbatch: error: Invalid gres")
    add_jobs(results, [refused, job_record("13", 2)])
    slurm = FakeSlurm(squeue="13|RUNNING|n1|gpu|None\n")
    with Store(tmp_path / "local.sqlite") as store:
        report = gather(results, store, runner=slurm)
    first, second = report.outcomes
    assert first.state.state == "REJECTED" and first.status == "failed" and "Invalid gres" in first.problem
    assert second.status == "active" and second.problem == "" and report.count("active") == 1


def test_gather_without_slurm_says_so_and_lets_the_files_decide(tmp_path):
    results = tmp_path / "results"
    add_jobs(results, [job_record("12")])
    finish_job(results, "12", OK_STATUS)

    def absent(argv):
        raise SlurmUnavailable("squeue not found")
    with Store(tmp_path / "local.sqlite") as store:
        report = gather(results, store, runner=absent)
    assert report.slurm_error == "squeue not found" and report.outcomes[0].status == "ok"


def test_select_picks_one_submission():
    records = [job_record("1", submission="a"), job_record("2", submission="b"), job_record("3", 2, submission="b")]
    assert [r.job_id for r in select(records, "latest")] == ["2", "3"]
    assert [r.job_id for r in select(records, "a")] == ["1"]
    with pytest.raises(UsageError, match="submissions: a, b"):
        select(records, "zzz")


# -- the batch script -------------------------------------------------------------------------


def _settings(tmp_path, *run_args, python=sys.executable):
    return JobSettings(run_args=tuple(run_args), python=python, results_dir=tmp_path / "results",
                       workdir=tmp_path, time="00:10:00", exclusive=True, extra_sbatch=("--mem=1G",))


def test_batch_script_carries_every_option_as_sbatch_lines(tmp_path):
    text = render_script(_settings(tmp_path, "reduce", "--sizes", "4096"),
                         Target(partition="gpu", node="n1", gres="gpu:1", constraint="a100"), "job 1 of 1")
    directives = [line.split(" ", 1)[1] for line in text.splitlines() if line.startswith("#SBATCH ")]
    assert directives == [
        "--job-name=accelbench", f"--output={tmp_path}/results/logs/%j.out",
        f"--error={tmp_path}/results/logs/%j.err", f"--chdir={tmp_path}", "--nodes=1", "--ntasks=1",
        "--partition=gpu", "--nodelist=n1", "--gres=gpu:1", "--constraint=a100", "--exclusive",
        "--time=00:10:00", "--mem=1G"]
    assert "-m accelbench run reduce --sizes 4096 --db \"$db\"" in text
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0  # valid bash


def _run_script(tmp_path, settings, job_id):
    script = tmp_path / "job.sbatch"
    script.write_text(render_script(settings, Target(), "test"))
    for sub in ("jobs", "logs"):
        (settings.results_dir / sub).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SLURM_JOB_ID": job_id, "SLURMD_NODENAME": "n7", "SLURM_JOB_PARTITION": "p1",
           "TMPDIR": str(tmp_path)}
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=120)


def test_batch_script_runs_exports_and_writes_its_status_outside_slurm(tmp_path):
    settings = _settings(tmp_path, "reduce", "--sizes", "2048", "--backend", "numpy", "--rigor", "quick")
    done = _run_script(tmp_path, settings, "42")
    assert done.returncode == 0, done.stderr
    status = json.loads((settings.results_dir / "jobs" / "42.status.json").read_text())
    assert status == {**status, "job_id": "42", "node": "n7", "partition": "p1", "run_exit_code": 0,
                      "export_exit_code": 0}
    document = read_json(settings.results_dir / "jobs" / "42.json")
    validate_document(document)
    assert len(document["runs"]) == 1 and document["runs"][0]["results"]
    assert not list(tmp_path.glob("accelbench-job-42.sqlite*"))  # the job-local database is removed


def test_batch_script_exit_status_is_the_failed_steps(tmp_path):
    settings = _settings(tmp_path, "reduce", "--backend", "numpy", "--device", "nosuch:0")
    done = _run_script(tmp_path, settings, "43")
    assert done.returncode == 2
    status = json.loads((settings.results_dir / "jobs" / "43.status.json").read_text())
    assert status["run_exit_code"] == 2 and status["export_exit_code"] == 2
    assert "nosuch:0" in done.stderr and not (settings.results_dir / "jobs" / "43.json").exists()


# -- the commands, without Slurm --------------------------------------------------------------


def test_submit_dry_run_writes_scripts_and_submits_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    code = main(["submit", "reduce", "--sizes", "4096", "--nodelist", "n1,n2", "--gres", "gpu:1",
                 "--results-dir", str(results), "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0 and "2 batch script(s) written" in out
    scripts = sorted((results / "scripts").glob("*.sbatch"))
    assert len(scripts) == 2 and "#SBATCH --nodelist=n2" in scripts[1].read_text()
    assert not (results / "manifest.json").exists()


def test_submit_checks_the_selection_before_any_job(tmp_path, capsys):
    assert main(["submit", "nosuchworkload", "--results-dir", str(tmp_path), "--dry-run"]) == 2
    assert "unknown workload 'nosuchworkload'" in capsys.readouterr().err
    assert main(["submit", "reduce", "--backend", "nosuch", "--results-dir", str(tmp_path), "--dry-run"]) == 2
    assert main(["submit", "reduce", "--results-dir", str(tmp_path / "a b"), "--dry-run"]) == 2
    assert "without spaces" in capsys.readouterr().err
    assert main(["submit", "reduce", "--sbatch-arg=--comment=two words", "--results-dir", str(tmp_path),
                 "--dry-run"]) == 2
    assert "one sbatch option without spaces" in capsys.readouterr().err
    assert not (tmp_path / "scripts").exists()  # nothing written before the checks pass


def test_submit_without_slurm_says_what_is_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["submit", "reduce", "--results-dir", str(tmp_path / "r")]) == 2
    assert "sbatch not found" in capsys.readouterr().err
    assert not (tmp_path / "r" / "manifest.json").exists()


def test_gather_needs_a_manifest(tmp_path, capsys):
    assert main(["gather", str(tmp_path)]) == 2
    assert "no job manifest" in capsys.readouterr().err
