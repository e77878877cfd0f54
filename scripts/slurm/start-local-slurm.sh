#!/usr/bin/env bash
# Start a single-node Slurm cluster on this machine, for tests of the Slurm
# scheduler. Idempotent: safe to run again while it is up (it only checks it).
# slurm.conf.in also declares 16 fake 8-GPU nodes in partition `fakegpu`, which
# never run anything: tests ask `sbatch --test-only` whether a job shape fits them.
#
# Needs root and Debian (apt). Daemons are started directly, not via systemd,
# because CI machines have no systemd as init. Prints, as its last line:
#   slurm ready: <node> cpus=<n>
# On failure it prints the tails of the daemon logs and exits non-zero.
#
# Env: SLURM_START_TIMEOUT  seconds to wait for the node, and again for the
#      test job (default 60 each).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TEMPLATE=$SCRIPT_DIR/slurm.conf.in
TIMEOUT=${SLURM_START_TIMEOUT:-60}

NODE=$(hostname -s)
# Debian's Slurm reads /etc/slurm/slurm.conf, so clients need no SLURM_CONF.
CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
STATE_DIR=/var/spool/slurmctld
SPOOL_DIR=/var/spool/slurmd
LOG_DIR=/var/log/slurm
RUN_DIR=/run

MUNGE_KEY=/etc/munge/munge.key
MUNGE_RUN=/run/munge
MUNGE_LOG=/var/log/munge/munged.log

log() { echo "[start-local-slurm] $*" >&2; }

dump_logs() {
    local f
    # *.out hold what a daemon printed before it opened its log (bad config).
    for f in "$MUNGE_LOG" "$LOG_DIR"/slurmctld.{out,log} "$LOG_DIR"/slurmd.{out,log}; do
        [ -s "$f" ] || continue
        echo "----- tail of $f -----" >&2
        tail -n 40 "$f" >&2
    done
}

die() {
    log "ERROR: $*"
    dump_logs
    exit 1
}

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# --- 1. packages -------------------------------------------------------------

install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
        command -v sinfo >/dev/null && command -v munged >/dev/null; then
        return
    fi
    log "installing slurm-wlm and munge"
    # Keep package scripts from starting the daemons with no config: we start
    # them ourselves below. Only add a policy-rc.d if there is none already.
    local added_policy=
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        added_policy=1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurm-wlm munge >/dev/null
    [ -z "$added_policy" ] || rm -f /usr/sbin/policy-rc.d
}

# --- 2. munge ----------------------------------------------------------------

ensure_munge_key() {
    [ -s "$MUNGE_KEY" ] && return
    log "creating $MUNGE_KEY"
    mkdir -p "$(dirname "$MUNGE_KEY")"
    # mungekey ships with munge >= 0.5.14; it writes a random key.
    mungekey --create --keyfile="$MUNGE_KEY"
}

start_munge() {
    ensure_munge_key
    # munged runs as the munge user and insists on these owners and modes;
    # /run/munge is normally made by systemd-tmpfiles, which we don't have.
    install -d -o munge -g munge -m 0755 "$MUNGE_RUN"
    install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
    chown munge:munge "$MUNGE_KEY"
    chmod 0400 "$MUNGE_KEY"
    if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
        return
    fi
    log "starting munged"
    # A dead munged leaves its socket and pid file behind; munged refuses to
    # start over a socket it cannot tell is stale, so remove them first.
    rm -f "$MUNGE_RUN"/munged.pid "$MUNGE_RUN"/munge.socket.2*
    runuser -u munge -- munged </dev/null >/dev/null 2>&1 ||
        die "munged failed to start"
    munge -n </dev/null | unmunge >/dev/null || die "munge round trip failed"
}

# --- 3. config ---------------------------------------------------------------

# The hardware part of `slurmd -C`'s node line, e.g.
# "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105".
# Using slurmd's own numbers means slurmd never reports less than configured,
# which would make slurmctld drain the node ("Low RealMemory" etc.).
node_hardware() {
    slurmd -C | head -n 1 | sed -e 's/^NodeName=[^ ]* //'
}

render_config() {
    sed -e "s|@NODE@|$NODE|g" \
        -e "s|@NODE_HW@|$(node_hardware)|g" \
        -e "s|@STATE_DIR@|$STATE_DIR|g" \
        -e "s|@SPOOL_DIR@|$SPOOL_DIR|g" \
        -e "s|@LOG_DIR@|$LOG_DIR|g" \
        -e "s|@RUN_DIR@|$RUN_DIR|g" \
        "$TEMPLATE"
}

# Writes slurm.conf; returns 0 if it changed (daemons must then restart).
write_config() {
    mkdir -p "$CONF_DIR" "$STATE_DIR" "$SPOOL_DIR" "$LOG_DIR"
    local new
    new=$(render_config)
    if [ -f "$CONF" ] && [ "$new" = "$(cat "$CONF")" ]; then
        return 1
    fi
    log "writing $CONF"
    printf '%s\n' "$new" >"$CONF"
}

# --- 4. daemons --------------------------------------------------------------

start_slurm() {
    local restart=$1
    if [ -n "$restart" ]; then
        stop_daemon "$RUN_DIR/slurmd.pid" slurmd
        stop_daemon "$RUN_DIR/slurmctld.pid" slurmctld
    fi
    # Both daemons fork into the background and close stdio themselves; the
    # redirections keep a CI log pipe from being held open regardless.
    if ! pid_alive "$RUN_DIR/slurmctld.pid" slurmctld; then
        log "starting slurmctld"
        slurmctld </dev/null >"$LOG_DIR/slurmctld.out" 2>&1 ||
            die "slurmctld failed to start"
    fi
    if ! pid_alive "$RUN_DIR/slurmd.pid" slurmd; then
        log "starting slurmd"
        # -N: register under the configured node name even if `hostname`
        # (long form) differs from `hostname -s`.
        slurmd -N "$NODE" </dev/null >"$LOG_DIR/slurmd.out" 2>&1 ||
            die "slurmd failed to start"
    fi
}

node_state() {
    sinfo -h -n "$NODE" -o %t 2>/dev/null || true
}

# Waits until the node is idle (or busy with jobs: mix/alloc), bounded.
wait_node_ready() {
    local deadline=$((SECONDS + TIMEOUT)) state
    while [ "$SECONDS" -lt "$deadline" ]; do
        state=$(node_state)
        case "$state" in
        idle | mix | alloc) return 0 ;;
        # A node drained/downed by an earlier failure: make it usable again.
        drain* | drng | down*) scontrol update NodeName="$NODE" State=RESUME 2>/dev/null || true ;;
        esac
        sleep 1
    done
    die "node $NODE not ready after ${TIMEOUT}s (state: '${state:-none}')"
}

# Proves the whole path (slurmctld -> slurmd -> munge -> srun I/O) works.
# Retried: right after a restart slurmctld may restore the node as idle from
# its saved state before the new slurmd listens, and the launch then fails.
# Skipped when jobs are already running (that is proof enough): the test job
# would otherwise queue behind them when they fill the node.
smoke_test() {
    local deadline=$((SECONDS + TIMEOUT)) out= running
    running=$(squeue -h -t RUNNING -o %i | wc -l)
    if [ "$running" -gt 0 ]; then
        log "$running job(s) running; skipping the test job"
        return 0
    fi
    while [ "$SECONDS" -lt "$deadline" ]; do
        if out=$(timeout $((deadline - SECONDS)) srun -N1 -n1 -t 1 hostname -s </dev/null 2>&1) &&
            [ "$out" = "$NODE" ]; then
            return 0
        fi
        sleep 1
    done
    die "test job failed within ${TIMEOUT}s: $out"
}

node_cpus() {
    scontrol show node "$NODE" | sed -n 's/.*CPUTot=\([0-9]*\).*/\1/p'
}

main() {
    [ "$(id -u)" = 0 ] || { echo "must run as root" >&2; exit 1; }
    [ -f "$TEMPLATE" ] || { echo "missing $TEMPLATE" >&2; exit 1; }
    install_packages
    start_munge
    local restart=
    if write_config; then restart=1; fi
    start_slurm "$restart"
    wait_node_ready
    smoke_test
    echo "slurm ready: $NODE cpus=$(node_cpus)"
}

main "$@"
