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
export AGENT_EVAL_HOST=$(hostname -I | awk '{print $1}')
if [ -z "$AGENT_EVAL_HOST" ]; then
    echo "no IPv4 address on $(hostname)" >> "$log"
    finish 1
fi
# Ports 20000-21999: outside the kernel's ephemeral ports and SGLang's own.
pick_port() { shuf -n 1 -i 20000-21999; }
# Written then renamed, so no one reads half a file.
publish() { echo "$1" > "$2.tmp" && mv "$2.tmp" "$2"; }
port_taken() { tail -c "+$(($1 + 1))" "$log" | grep -qiE 'address already in use|address in use|errno 98'; }
leader() {
    local attempt start code
    for attempt in $(seq 5); do
        export AGENT_EVAL_PORT=$(pick_port)
        publish "$AGENT_EVAL_HOST:$AGENT_EVAL_PORT" "$dir/worker-$i.addr"
        start=$(stat -c %s "$log" 2>/dev/null || echo 0)
        /shared/envs/serve/bin/python -m sglang.launch_server --model-path '/ckpt/step 500' --tp-size 1 --pp-size 1 --host "$AGENT_EVAL_HOST" --port "$AGENT_EVAL_PORT" >> "$log" 2>&1
        code=$?
        port_taken "$start" || break
        echo "[agent-eval] a port was taken (attempt $attempt); relaunching" >> "$log"
    done
    finish "$code"
}
leader
