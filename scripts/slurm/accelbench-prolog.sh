#!/usr/bin/env bash
# A Slurm prolog that runs `accelbench check --json` before a job and drains the node on a fault.
#
# Install (every compute node):   cp accelbench-prolog.sh /etc/slurm/prolog.d/50-accelbench-check.sh
#   slurm.conf:  Prolog=/etc/slurm/prolog.d/*     (a node prolog, run as root by slurmd)
#                PrologFlags=Alloc                 (optional: check when the node is allocated)
#
# What it does with the check's exit status (docs/health-check.md):
#   0 healthy, 3 inconclusive (the node was busy): exit 0, the job runs. A busy node is never drained.
#   1 a fault: `scontrol update nodename=$SLURMD_NODENAME state=drain reason="accelbench check: ..."`
#     naming the FAIL checks and the first one's summary, then exit 1: Slurm requeues the job, held unless
#     SchedulerParameters=nohold_on_prolog_fail (then it runs elsewhere) (man slurm.conf, Prolog); where
#     Slurm then sets its own drain reason, ours is also in slurmd's log (printed below).
#   anything else (the check could not run, or it overran ACCELBENCH_CHECK_TIMEOUT_S): the node is NOT
#     drained for a broken check; the cause goes to stderr (slurmd's log) and the job runs.
#
# Settings (environment, e.g. in slurmd's environment or at the top of the installed copy):
#   ACCELBENCH               the accelbench command (default: accelbench on PATH)
#   ACCELBENCH_PYTHON        a python3 to read the JSON report (default: python3 on PATH)
#   ACCELBENCH_CHECK_LEVEL   quick (default; seconds), standard (about a minute), long
#   ACCELBENCH_CHECK_TIMEOUT_S  the whole check's limit (default 120)
#   ACCELBENCH_CHECK_REPORT  keep the last report here (default: a temporary file, removed)
#   SCONTROL                 the scontrol command (default: scontrol on PATH)
set -u

accelbench="${ACCELBENCH:-accelbench}"
python="${ACCELBENCH_PYTHON:-python3}"
level="${ACCELBENCH_CHECK_LEVEL:-quick}"
limit_s="${ACCELBENCH_CHECK_TIMEOUT_S:-120}"
scontrol="${SCONTROL:-scontrol}"
node="${SLURMD_NODENAME:-$(hostname -s)}"
say() { echo "accelbench-prolog ($node, job ${SLURM_JOB_ID:-?}): $*" >&2; }

if [ -n "${ACCELBENCH_CHECK_REPORT:-}" ]; then
  report="$ACCELBENCH_CHECK_REPORT"
else
  report="$(mktemp "${TMPDIR:-/tmp}/accelbench-prolog.XXXXXX")" || { say "cannot make a temporary file: not checked"; exit 0; }
  trap 'rm -f "$report"' EXIT
fi

rc=0
timeout --kill-after=10 "$limit_s" "$accelbench" check --level "$level" --json > "$report" || rc=$?

case $rc in
  0) exit 0 ;;
  3) say "inconclusive: the node was busy while it was measured; the job runs (not drained)"; exit 0 ;;
  1) ;;
  124|137) say "the check did not finish within ${limit_s} s: not drained for that; see the check's own limits"; exit 0 ;;
  *) say "the check could not run (exit $rc): not drained for that"; exit 0 ;;
esac

# a fault: name the FAIL checks and the first one's summary (one line, control characters dropped)
reason="$("$python" - "$report" <<'PY'
import json, re, sys
try:
    with open(sys.argv[1], encoding="utf-8") as handle:
        findings = json.load(handle)["findings"]
    failed = [f for f in findings if f.get("status") == "FAIL"]
except Exception as exc:  # the exit status said a fault; its report did not say which
    print(f"a FAIL (report unreadable: {type(exc).__name__})")
    raise SystemExit(0)
names = ", ".join(str(f.get("check", "?")) for f in failed) or "?"
first = str(failed[0].get("summary", "")) if failed else ""
text = re.sub(r"[\x00-\x1f\x7f]+", " ", f"{names} FAIL: {first}")
print(text[:200])
PY
)"
[ -n "$reason" ] || reason="a FAIL (no report)"
say "drained: accelbench check: $reason"
if ! "$scontrol" update nodename="$node" state=drain reason="accelbench check: $reason"; then
  say "scontrol update failed: the node is NOT drained"
fi
exit 1
