# Shared by start-local-slurm.sh and stop-local-slurm.sh; sourced, not run.

# True if the pid file names a live process whose command is $2 (guards
# against a stale pid file whose pid was reused by something else).
pid_alive() {
    local pidfile=$1 name=$2 pid
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [ -n "$pid" ] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]
}

# SIGTERM, then up to 10 s for a clean exit (slurmctld saves its state),
# then SIGKILL. Needs the sourcing script's log function.
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
