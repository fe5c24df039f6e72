#!/bin/bash
# Wall time of short gpuctl commands, best of N runs (ms).
set -euo pipefail
BIN=${1:-build/gpuctl}
N=${2:-20}
SPEC=${3:-"$(dirname "$0")/../examples/quickstart.yaml"}
STATE=$(mktemp -d)
trap 'rm -rf "$STATE"' EXIT
best() {
    local best=999999 t0 t1 ms
    for _ in $(seq "$N"); do
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        t1=$(date +%s%N)
        ms=$(( (t1 - t0) / 1000 ))
        [ "$ms" -lt "$best" ] && best=$ms
    done
    printf '%-40s %6d.%03d ms\n' "$*" $((best / 1000)) $((best % 1000))
}
best "$BIN" version
best "$BIN" validate -f "$SPEC"
best "$BIN" --state-dir "$STATE" status
