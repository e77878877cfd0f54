#!/usr/bin/env bash
# Stop the single-node Slurm cluster started by start-local-slurm.sh:
# slurmd, slurmctld, then munged. Safe to run when nothing is running.
# Processes are found by their pid files only, never by name, so nothing
# else on the machine is touched. Job/controller state is kept on disk;
# pass --purge to also delete it (the next start then begins at JobId=1).
set -euo pipefail

RUN_DIR=/run
MUNGE_PID=/run/munge/munged.pid
STATE_DIRS=(/var/spool/slurmctld /var/spool/slurmd)

log() { echo "[stop-local-slurm] $*" >&2; }

# True if the pid file names a live process whose command is $2.
pid_alive() {
    local pidfile=$1 name=$2 pid
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [ -n "$pid" ] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]
}

# SIGTERM, then up to 10 s for a clean exit (slurmctld saves its state),
# then SIGKILL.
stop_daemon() {
    local pidfile=$1 name=$2 pid
    pid_alive "$pidfile" "$name" || return 0
    pid=$(cat "$pidfile" 2>/dev/null) || return 0
    log "stopping $name (pid $pid)"
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 50); do
        pid_alive "$pidfile" "$name" || return 0
        sleep 0.2
    done
    log "$name still running, killing it"
    kill -9 "$pid" 2>/dev/null || true
}

main() {
    [ "$(id -u)" = 0 ] || { echo "must run as root" >&2; exit 1; }
    stop_daemon "$RUN_DIR/slurmd.pid" slurmd
    stop_daemon "$RUN_DIR/slurmctld.pid" slurmctld
    stop_daemon "$MUNGE_PID" munged
    if [ "${1:-}" = --purge ]; then
        log "removing ${STATE_DIRS[*]}"
        rm -rf "${STATE_DIRS[@]}"
    fi
    log "stopped"
}

main "$@"
