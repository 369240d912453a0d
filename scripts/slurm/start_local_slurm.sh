#!/usr/bin/env bash
# Start a real one-node Slurm on this machine (as root), for tests/cluster and for trying
# `accelbench submit` without a cluster. Follows /work/shared/notes/local-slurm.md:
# munged with its socket in a scratch folder, slurmctld + slurmd, proctrack/linuxproc and
# task/none (no cgroups needed), one node with this machine's CPUs.
#
# Usage:  eval "$(scripts/slurm/start_local_slurm.sh)"     # sets SLURM_CONF in this shell
# Stdout carries only the `export SLURM_CONF=...` line; progress goes to stderr.
# Idempotent: daemons already running from the same folder are left alone.
# Scratch folder: $ACCELBENCH_SLURM_DIR, default /tmp/accelbench-slurm.
# Stop with scripts/slurm/stop_local_slurm.sh.
set -euo pipefail

S="${ACCELBENCH_SLURM_DIR:-/tmp/accelbench-slurm}"
READY_TIMEOUT_S="${ACCELBENCH_SLURM_READY_TIMEOUT_S:-60}"
# Slurm forgets an ended job after MinJobAge s (clusters: 300). Short here, so tests/cluster sees
# a job pass out of squeue/scontrol within seconds, the case `accelbench gather` must handle.
MIN_JOB_AGE_S="${ACCELBENCH_SLURM_MIN_JOB_AGE_S:-10}"
say() { echo "start_local_slurm: $*" >&2; }
die() { say "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (the daemons and the munge socket need it)"

mkdir -p "$S"/{state,spool,log,munge}
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm (apt-get; output in $S/log/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  lock=(-o DPkg::Lock::Timeout=300)   # another apt-get (a colleague, unattended upgrades) may hold the lock
  if ! { apt-get "${lock[@]}" update && apt-get "${lock[@]}" install -y slurm-wlm; } >"$S/log/apt.log" 2>&1; then
    tail -n 20 "$S/log/apt.log" >&2
    die "apt-get install slurm-wlm failed"
  fi
fi

# pid file -> running process whose command name matches (a stale pid may belong to someone else)
alive() {
  local pidfile="$1" name="$2" pid
  [ -s "$pidfile" ] || return 1
  pid="$(cat "$pidfile")"
  [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$name" ]
}

chown munge:munge "$S/munge" && chmod 755 "$S/munge"   # 700 fails: clients must reach the socket
if [ ! -s /etc/munge/munge.key ]; then
  say "creating /etc/munge/munge.key"
  mungekey --create --keyfile=/etc/munge/munge.key >&2 || die "mungekey failed"
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
fi

host="$(hostname -s)"
cpus="$(nproc)"
memory_mb="$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.85}' /proc/meminfo)"  # headroom: never drained for "low memory"
conf="$S/slurm.conf"
new_conf="$(cat <<EOF
# written by scripts/slurm/start_local_slurm.sh
ClusterName=local
SlurmctldHost=$host
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=$MIN_JOB_AGE_S
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
)"

if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$new_conf" ]; then
  if alive "$S/slurmctld.pid" slurmctld || alive "$S/slurmd.pid" slurmd; then
    say "configuration changed: restarting the daemons"
    "$(dirname "$0")/stop_local_slurm.sh" >&2
  fi
  printf '%s\n' "$new_conf" > "$conf"
fi
export SLURM_CONF="$conf"

if ! alive "$S/munge/munged.pid" munged; then
  say "starting munged"
  runuser -u munge -- munged --socket="$S/munge/munge.socket" --pid-file="$S/munge/munged.pid" \
    --log-file="$S/munge/munged.log" --seed-file="$S/munge/munged.seed" --force >&2 \
    || die "munged did not start (see $S/munge/munged.log)"
fi
if ! alive "$S/slurmctld.pid" slurmctld; then
  say "starting slurmctld"
  slurmctld || die "slurmctld did not start (see $S/log/slurmctld.log)"
fi
if ! alive "$S/slurmd.pid" slurmd; then
  say "starting slurmd"
  slurmd || die "slurmd did not start (see $S/log/slurmd.log)"
fi

# bounded wait: the node must be idle (or already running jobs) before anyone submits
deadline=$(( $(date +%s) + READY_TIMEOUT_S ))
state=""
while :; do
  state="$(sinfo -h -n "$host" -o %t 2>/dev/null | head -1 || true)"
  case "$state" in idle|mix|alloc|comp) break ;; esac
  if [ "$(date +%s)" -ge "$deadline" ]; then
    die "node $host not idle after ${READY_TIMEOUT_S}s (sinfo says '${state:-nothing}'; see $S/log/)"
  fi
  sleep 0.5
done
say "node $host is $state (scratch folder $S)"
echo "export SLURM_CONF=$conf"
