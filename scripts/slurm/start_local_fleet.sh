#!/usr/bin/env bash
# Start a real Slurm of SEVERAL nodes on this machine (as root), for tests/cluster/test_fleet_real.py
# and for trying `accelbench submit --each-node` / `accelbench fleet` without a cluster.
# One slurmd per node name (`slurmd -N NAME`, /work/shared/notes/local-slurm.md), each on its own
# port; node features make two node types. A cluster of its own (folder, ports, munged socket),
# so it runs beside start_local_slurm.sh's one-node Slurm without either noticing the other.
#
# Usage:  eval "$(scripts/slurm/start_local_fleet.sh)"     # sets SLURM_CONF in this shell
# Stdout carries only the `export SLURM_CONF=...` line; progress goes to stderr. Idempotent.
# Settings (environment):
#   ACCELBENCH_FLEET_DIR    scratch folder (default /tmp/accelbench-fleet)
#   ACCELBENCH_FLEET_NODES  "name:feature[,feature][:gres] ..." (default: fleet1-3 typea, fleet4-6
#                           typeb with a count-only GRES fpga:2, which needs no device file)
#   ACCELBENCH_FLEET_PORT   slurmctld's port; node i listens on PORT+i (default 6950)
# Stop with scripts/slurm/stop_local_fleet.sh.
set -euo pipefail

S="${ACCELBENCH_FLEET_DIR:-/tmp/accelbench-fleet}"
NODES="${ACCELBENCH_FLEET_NODES:-fleet1:typea fleet2:typea fleet3:typea fleet4:typeb:fpga:2 fleet5:typeb:fpga:2 fleet6:typeb:fpga:2}"
PORT="${ACCELBENCH_FLEET_PORT:-6950}"
READY_TIMEOUT_S="${ACCELBENCH_SLURM_READY_TIMEOUT_S:-60}"
MIN_JOB_AGE_S="${ACCELBENCH_SLURM_MIN_JOB_AGE_S:-30}"
say() { echo "start_local_fleet: $*" >&2; }
die() { say "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (the daemons and the munge socket need it)"
mkdir -p "$S"/{state,log,munge}
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm (apt-get; output in $S/log/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  lock=(-o DPkg::Lock::Timeout=300)
  if ! { apt-get "${lock[@]}" update && apt-get "${lock[@]}" install -y slurm-wlm; } >"$S/log/apt.log" 2>&1; then
    tail -n 20 "$S/log/apt.log" >&2
    die "apt-get install slurm-wlm failed"
  fi
fi

alive() {  # pid file -> a running process of that name (a stale pid may belong to someone else)
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
node_lines="" names="" gres_types="" i=0
for spec in $NODES; do
  IFS=: read -r name features gres <<< "$spec"
  i=$((i + 1))
  mkdir -p "$S/spool-$name"
  node_lines+="NodeName=$name NodeHostname=$host Port=$((PORT + i)) CPUs=1 RealMemory=1000"
  [ -z "$features" ] || node_lines+=" Feature=$features"
  if [ -n "$gres" ]; then
    node_lines+=" Gres=$gres"
    case ",$gres_types," in *",${gres%%:*},"*) ;; *) gres_types+="${gres_types:+,}${gres%%:*}" ;; esac
  fi
  node_lines+=$' State=UNKNOWN\n'
  names+="${names:+,}$name"
done
[ -n "$names" ] || die "ACCELBENCH_FLEET_NODES names no node"

conf="$S/slurm.conf"
new_conf="$(cat <<CONF
# written by scripts/slurm/start_local_fleet.sh
ClusterName=fleet
SlurmctldHost=$host
SlurmctldPort=$PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool-%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd-%n.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd-%n.log
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
${gres_types:+GresTypes=$gres_types}
${node_lines%$'\n'}
PartitionName=fleet Nodes=$names Default=YES MaxTime=INFINITE State=UP
CONF
)"

if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$new_conf" ]; then
  if alive "$S/slurmctld.pid" slurmctld; then
    say "configuration changed: restarting the daemons"
    "$(dirname "$0")/stop_local_fleet.sh" >&2
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
for name in ${names//,/ }; do
  if ! alive "$S/slurmd-$name.pid" slurmd; then
    say "starting slurmd -N $name"
    slurmd -N "$name" || die "slurmd -N $name did not start (see $S/log/slurmd-$name.log)"
  fi
done

# bounded wait: every node answers (idle, or busy, or drained by an earlier test) before anyone submits
deadline=$(( $(date +%s) + READY_TIMEOUT_S ))
while :; do
  waiting="$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 !~ /^(idle|mix|alloc|comp|drain|drng)$/ {print $1 "=" $2}' | tr '\n' ' ' || true)"
  if [ -z "$waiting" ] && sinfo -h -N -o %N >/dev/null 2>&1; then break; fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    die "nodes not ready after ${READY_TIMEOUT_S}s: ${waiting:-sinfo gives no answer} (see $S/log/)"
  fi
  sleep 0.5
done
say "nodes $names are up (scratch folder $S, slurmctld port $PORT)"
echo "export SLURM_CONF=$conf"
