#!/usr/bin/env bash
# Stop the single-node SLURM cluster started by scripts/slurm/start-cluster.sh.
#
# Cancels the cluster's jobs, then stops slurmd, slurmctld and munged by the PIDs in
# $RESISPEC_SLURM_DIR/run (default /tmp/resispec-slurm/run): SIGTERM, then SIGKILL after
# 15 s. A PID is only signalled when /proc/PID/comm still names the expected daemon. Removes the
# /etc/slurm/slurm.conf link start-cluster.sh made when it points to this cluster.
# Idempotent: a cluster that is not running is not an error. Config, state and logs stay
# in RESISPEC_SLURM_DIR (pass --purge to delete the directory as well).
set -uo pipefail

DIR="${RESISPEC_SLURM_DIR:-/tmp/resispec-slurm}"
CONF="$DIR/etc/slurm.conf"
DEFAULT_CONF="${RESISPEC_SLURM_DEFAULT_CONF:-/etc/slurm/slurm.conf}"
export PATH="$PATH:/usr/sbin:/sbin"

log() { echo "stop-cluster: $*" >&2; }

daemon_pid() {  # daemon_pid NAME: print the PID of NAME from its PID file, if that process is NAME
    local file="$DIR/run/$1.pid" pid
    [[ -s "$file" ]] || return 1
    pid="$(cat "$file")"
    [[ -r "/proc/$pid/comm" && "$(cat "/proc/$pid/comm")" == "$1" ]] || return 1
    echo "$pid"
}

cancel_jobs() {
    daemon_pid slurmctld >/dev/null || return 0
    SLURM_CONF="$CONF" scancel --full --quiet --partition=debug 2>/dev/null || true
    local i
    for ((i = 0; i < 10; i++)); do
        [[ -z "$(SLURM_CONF="$CONF" squeue -h -t RUNNING,COMPLETING,PENDING -o %i 2>/dev/null)" ]] && return 0
        sleep 1
    done
    log "jobs still listed after 10 s; stopping the daemons anyway"
}

stop_daemon() {
    local name="$1" pid i
    pid="$(daemon_pid "$name")" || { log "$name not running"; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 30; i++)); do
        [[ -d "/proc/$pid" ]] || { log "stopped $name (pid $pid)"; rm -f "$DIR/run/$name.pid"; return 0; }
        sleep 0.5
    done
    log "$name (pid $pid) ignored SIGTERM for 15 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$DIR/run/$name.pid"
}

cancel_jobs
stop_daemon slurmd
stop_daemon slurmctld
stop_daemon munged
# the link start-cluster.sh made at SLURM's default config path, if it points to this cluster
if [[ -L "$DEFAULT_CONF" && "$(readlink "$DEFAULT_CONF")" == "$CONF" ]]; then
    rm -f "$DEFAULT_CONF"
fi
if [[ "${1:-}" == "--purge" ]]; then
    rm -rf -- "$DIR"
    log "removed $DIR"
fi
