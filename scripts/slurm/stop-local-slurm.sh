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

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"


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
