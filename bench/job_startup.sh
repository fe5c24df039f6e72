#!/bin/bash
# Start-up cost of a job on the node: the wall time of the local quickstart's
# `gpuctl apply -f quickstart.yaml --wait` (2 nodes x 2 processes, each node
# its own bootstrap and torchrun agent) against
#   - the same job run by hand: two torchrun agents on this machine (2 x 2
#     processes, c10d rendezvous on loopback) with the flags the bootstrap
#     gives torchrun; the ratio to this is the target (<= 1.15), since it
#     leaves out what any 2-node job costs (a second agent importing torch,
#     the rendezvous) and measures what gpuctl adds: planning, state, the
#     node's bootstrap, and apply --wait noticing the end;
#   - a bare `torchrun --standalone` of the same script with the same 4
#     processes and torchrun's default flags (one agent): shown, no target.
# Runs are interleaved (apply, 2-node, standalone, apply, ...), each in a
# fresh copy of examples/ (no checkpoint to resume from) and, for apply, a
# fresh state directory; the cluster is destroyed after each.  Prints each
# run, the medians, the ratios, the time to the first training line ("epoch
# 1/20") of each, and the load average before and after.
#
#   bench/job_startup.sh [GPUCTL_BIN [RUNS]]     (defaults: build/gpuctl 3)
set -euo pipefail
BIN=$(realpath "${1:-build/gpuctl}")
N=${2:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-bench-startup.XXXXXX")
trap 'rm -rf "$W"' EXIT
TORCHRUN=${TORCHRUN:-$(command -v torchrun)}
# torch 1.x's torchrun fails at start without these (as the bootstrap knows)
TEE=()
if [[ $(/usr/bin/python3 -c 'import importlib.metadata as m; print(m.version("torch"))') == 1.* ]]; then
    TEE=(--redirects 1 --tee 1)
fi

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# run_timed LABEL DIR CMD...: run CMD in DIR; print "TOTAL_MS FIRST_MS", FIRST_MS
# the time to the first line that says "epoch 1/" (-1 when none).
run_timed() {
    local dir=$1
    shift
    local t0 first=-1 line
    t0=$(now_ms)
    while IFS= read -r line; do
        if [ "$first" -lt 0 ] && [[ $line == *"epoch 1/"* ]]; then
            first=$(($(now_ms) - t0))
        fi
    done < <(cd "$dir" && "$@" 2>&1)
    echo "$(($(now_ms) - t0)) $first"
}

# bare2: the quickstart's job as two torchrun agents on this machine, with
# the bootstrap's flags (templates/bootstrap.sh, "--- torchrun ---"), both
# started at once as a user would by hand: the head (is_host=1) hosts the
# rendezvous; both print (global rank 0, which prints the epochs, may be on
# either).
bare2() {
    local port args
    port=$(/usr/bin/python3 -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    args=(--nnodes=2 --nproc_per_node=2 --rdzv_backend=c10d --rdzv_endpoint="127.0.0.1:$port"
        --rdzv_id="bench-$port" --monitor_interval=0.1 --max_restarts=0 "${TEE[@]}")
    export OMP_NUM_THREADS=1 GPUCTL_CHECKPOINT_DIR=./checkpoints/quickstart
    "$TORCHRUN" "${args[@]}" --rdzv_conf=is_host=0 train_ddp.py --epochs 20 &
    "$TORCHRUN" "${args[@]}" --rdzv_conf=is_host=1 train_ddp.py --epochs 20
    wait
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }

echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$W/apply" && : >"$W/bare2" && : >"$W/bare"
for i in $(seq "$N"); do
    cp -r "$SRC/examples" "$W/a$i"
    read -r ms first < <(run_timed "$W/a$i" "$BIN" --state-dir "$W/state$i" apply \
        -f quickstart.yaml --wait --timeout 900)
    "$BIN" --state-dir "$W/state$i" -y destroy quickstart >/dev/null 2>&1 || true
    echo "$ms $first" >>"$W/apply"
    printf 'run %d apply --wait     %6d ms  (first epoch line at %d ms)\n' "$i" "$ms" "$first"

    cp -r "$SRC/examples" "$W/c$i"
    read -r ms first < <(run_timed "$W/c$i" bare2)
    echo "$ms $first" >>"$W/bare2"
    printf 'run %d 2-node torchrun %6d ms  (first epoch line at %d ms)\n' "$i" "$ms" "$first"

    cp -r "$SRC/examples" "$W/b$i"
    read -r ms first < <(run_timed "$W/b$i" env OMP_NUM_THREADS=1 \
        GPUCTL_CHECKPOINT_DIR=./checkpoints/quickstart "$TORCHRUN" --standalone --nnodes=1 \
        --nproc_per_node=4 "${TEE[@]}" train_ddp.py --epochs 20)
    echo "$ms $first" >>"$W/bare"
    printf 'run %d standalone       %6d ms  (first epoch line at %d ms)\n' "$i" "$ms" "$first"
done
med() { cut -d' ' -f"$2" "$W/$1" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
a=$(med apply 1) c=$(med bare2 1) b=$(med bare 1)
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'median of %d: apply --wait %d ms, 2-node torchrun %d ms, standalone %d ms\n' \
    "$N" "$a" "$c" "$b"
printf 'ratio to the 2-node torchrun %s (target <= 1.15); to the standalone %s\n' \
    "$(ratio "$a" "$c")" "$(ratio "$a" "$b")"
printf 'median time to the first epoch line: apply --wait %d ms, 2-node %d ms, standalone %d ms\n' \
    "$(med apply 2)" "$(med bare2 2)" "$(med bare 2)"
