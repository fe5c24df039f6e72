#!/bin/bash
# Start-up cost of a job on the node: the wall time of the local quickstart's
# `gpuctl apply -f quickstart.yaml --wait` (2 nodes x 2 processes, each node
# its own bootstrap and torchrun) against a bare `torchrun --standalone` of
# the same script with the same 4 processes on the same machine.  Runs are
# interleaved (apply, bare, apply, bare, ...), each in a fresh copy of
# examples/ (no checkpoint to resume from) and, for apply, a fresh state
# directory; the cluster is destroyed after each.  Prints each run, the
# medians, the ratio (target <= 1.15), the time to the first training line
# ("epoch 1/20") of each, and the load average before and after.
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

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }

echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$W/apply" && : >"$W/bare"
for i in $(seq "$N"); do
    cp -r "$SRC/examples" "$W/a$i"
    read -r ms first < <(run_timed "$W/a$i" "$BIN" --state-dir "$W/state$i" apply \
        -f quickstart.yaml --wait --timeout 900)
    "$BIN" --state-dir "$W/state$i" -y destroy quickstart >/dev/null 2>&1 || true
    echo "$ms $first" >>"$W/apply"
    printf 'run %d apply --wait  %6d ms  (first epoch line at %d ms)\n' "$i" "$ms" "$first"

    cp -r "$SRC/examples" "$W/b$i"
    read -r ms first < <(run_timed "$W/b$i" env OMP_NUM_THREADS=1 \
        GPUCTL_CHECKPOINT_DIR=./checkpoints/quickstart "$TORCHRUN" --standalone --nnodes=1 \
        --nproc_per_node=4 "${TEE[@]}" train_ddp.py --epochs 20)
    echo "$ms $first" >>"$W/bare"
    printf 'run %d bare torchrun %6d ms  (first epoch line at %d ms)\n' "$i" "$ms" "$first"
done
a=$(cut -d' ' -f1 "$W/apply" | median)
b=$(cut -d' ' -f1 "$W/bare" | median)
af=$(cut -d' ' -f2 "$W/apply" | median)
bf=$(cut -d' ' -f2 "$W/bare" | median)
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'median of %d: apply --wait %d ms, bare torchrun %d ms, ratio %s (target <= 1.15)\n' \
    "$N" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", a / b}')"
printf 'median time to the first epoch line: apply --wait %d ms, bare torchrun %d ms\n' "$af" "$bf"
