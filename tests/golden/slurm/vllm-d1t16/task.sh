#!/bin/bash
set -u
i=$1
dir=/shared/runs/r1/workers
log="$dir/worker-$i.log"
# The first rank to end tells the harness how the worker ended.
finish() {
    [ -e "$dir/worker-$i.exit" ] || echo "${2:-$1}" > "$dir/worker-$i.exit"
    exit "$1"
}
export AGENT_EVAL_HOST=$(ip -4 -o addr show dev ib0 | awk '{split($4, a, "/"); print a[1]; exit}')
if [ -z "$AGENT_EVAL_HOST" ]; then
    echo "no IPv4 address on $(hostname)" >> "$log"
    finish 1
fi
export GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-ib0}
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-ib0}
# Ports 20000-21999: outside the kernel's ephemeral ports and SGLang's own.
pick_port() { shuf -n 1 -i 20000-21999; }
# Written then renamed, so no one reads half a file.
publish() { echo "$1" > "$2.tmp" && mv "$2.tmp" "$2"; }
port_taken() { tail -c "+$(($1 + 1))" "$log" | grep -qiE 'address already in use|address in use|errno 98'; }
leader() {
    local attempt start code
    for attempt in $(seq 5); do
        export AGENT_EVAL_PORT=$(pick_port)
        export AGENT_EVAL_DIST_HOST=$AGENT_EVAL_HOST AGENT_EVAL_DIST_PORT=$(pick_port)
        publish "$attempt $AGENT_EVAL_DIST_HOST $AGENT_EVAL_DIST_PORT $AGENT_EVAL_PORT" "$head"
        publish "$AGENT_EVAL_HOST:$AGENT_EVAL_PORT" "$dir/worker-$i.addr"
        start=$(stat -c %s "$log" 2>/dev/null || echo 0)
        /shared/envs/serve/bin/python -m vllm.entrypoints.cli.main serve '/ckpt/step 500' --tensor-parallel-size 16 --pipeline-parallel-size 1 --host "$AGENT_EVAL_HOST" --port "$AGENT_EVAL_PORT" --nnodes 2 --node-rank 0 --master-addr "$AGENT_EVAL_DIST_HOST" --master-port "$AGENT_EVAL_DIST_PORT" >> "$log" 2>&1
        code=$?
        port_taken "$start" || break
        echo "[agent-eval] a port was taken (attempt $attempt); relaunching" >> "$log"
    done
    finish "$code"
}
head="$dir/worker-$i.head"
same() { [ "$(cat "$head")" = "$1" ]; }
moved() {
    for _ in $(seq 30); do
        same "$1" || return 0
        sleep 1
    done
    return 1
}
follower() {
    local current pid code
    log="$dir/worker-$i.rank-$SLURM_PROCID.log"
    until [ -s "$head" ]; do sleep 1; done
    while :; do
        current=$(cat "$head")
        read -r _ AGENT_EVAL_DIST_HOST AGENT_EVAL_DIST_PORT AGENT_EVAL_PORT <<< "$current"
        export AGENT_EVAL_DIST_HOST AGENT_EVAL_DIST_PORT AGENT_EVAL_PORT
        /shared/envs/serve/bin/python -m vllm.entrypoints.cli.main serve '/ckpt/step 500' --tensor-parallel-size 16 --pipeline-parallel-size 1 --host "$AGENT_EVAL_HOST" --port "$AGENT_EVAL_PORT" --nnodes 2 --node-rank "$AGENT_EVAL_NODE_RANK" --master-addr "$AGENT_EVAL_DIST_HOST" --master-port "$AGENT_EVAL_DIST_PORT" --headless >> "$log" 2>&1 &
        pid=$!
        while kill -0 "$pid" 2>/dev/null && same "$current"; do sleep 2; done
        moved "$current" || break
        kill "$pid" 2>/dev/null; wait "$pid"
    done
    wait "$pid"; code=$?
    finish "$code" "$code (node rank $SLURM_PROCID, log $log)"
}
export AGENT_EVAL_NODE_RANK=$SLURM_PROCID
if [ "$SLURM_PROCID" = 0 ]; then leader; else follower; fi
