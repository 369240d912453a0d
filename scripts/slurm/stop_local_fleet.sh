#!/usr/bin/env bash
# Stop the several-node Slurm started by start_local_fleet.sh: every slurmd, slurmctld, munged,
# by their pid files (never by name), waiting (bounded) for each. Idempotent.
# Usage: scripts/slurm/stop_local_fleet.sh [--purge]   (--purge also removes the scratch folder)
set -uo pipefail

S="${ACCELBENCH_FLEET_DIR:-/tmp/accelbench-fleet}"
STOP_TIMEOUT_S=15
say() { echo "stop_local_fleet: $*" >&2; }

stop() {
  local pidfile="$1" name="$2" pid i
  [ -s "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  if [ ! -r "/proc/$pid/comm" ] || [ "$(cat "/proc/$pid/comm")" != "$name" ]; then
    rm -f "$pidfile"   # stale: that pid may be another program's now
    return 0
  fi
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT_S * 10; i++)); do
    [ -d "/proc/$pid" ] || { say "stopped $name ($pid)"; rm -f "$pidfile"; return 0; }
    sleep 0.1
  done
  say "$name ($pid) ignored SIGTERM for ${STOP_TIMEOUT_S}s: sending SIGKILL"
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

for pidfile in "$S"/slurmd-*.pid; do
  [ -e "$pidfile" ] && stop "$pidfile" slurmd
done
stop "$S/slurmctld.pid" slurmctld
stop "$S/munge/munged.pid" munged
if [ "${1:-}" = "--purge" ]; then
  rm -rf "$S"
  say "removed $S"
fi
exit 0
