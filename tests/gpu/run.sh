#!/bin/bash
# The GPU check, for a machine with NVIDIA GPUs and PyTorch 2.x (the device
# of docs/testing.md): GPU detection by the local provider, offer selection
# and plan for a GPU spec, `apply PLANFILE --wait` running a DDP job on the
# NCCL backend through the real bootstrap, and the exit codes on the way.
#
#   tests/gpu/bundle.sh build/gpuctl build-gpu     # here, after a build
#   tests/gpu/run.sh build-gpu                     # on the GPU machine
#
# Writes what it saw under $OUT (default ./gpu-out) and prints PASS/FAIL
# lines; exits non-zero when a check fails.
set -u
B=$1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/$B/lib
G=$PWD/$B/gpuctl
fails=0
check() { # check WHAT EXPECTED ACTUAL
    if [ "$2" == "$3" ]; then echo "PASS $1"; else echo "FAIL $1: expected [$2], got [$3]"; fails=$((fails + 1)); fi
}
contains() { # contains WHAT REGEX FILE
    if grep -Eq -- "$2" "$3"; then echo "PASS $1"; else echo "FAIL $1: [$2] not in $3"; fails=$((fails + 1)); fi
}

echo "== machine"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee "$OUT/nvidia-smi.txt"
ngpu=$(wc -l < "$OUT/nvidia-smi.txt")
TR=$(command -v torchrun || true)
PY=$(dirname "${TR:-/usr/bin/x}")/python3
[ -x "$PY" ] || PY=$(command -v python3)
"$PY" -c '
import sys, torch
nccl = torch.cuda.nccl.version() if torch.cuda.is_available() else None
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      "gpus", torch.cuda.device_count(), "nccl", nccl)' 2>&1 | tee "$OUT/torch.txt"
"$G" version | tee "$OUT/version.txt"

work=$(mktemp -d)
export GPUCTL_CONFIG_DIR=$work/config
S=$work/state
# The GPU's model as the catalog names its family ("NVIDIA H200" -> H200).
model=$(head -1 "$OUT/nvidia-smi.txt" | cut -d, -f2 | sed 's/^ *NVIDIA //; s/ .*//')
echo "== spec asks for $ngpu x $model on the local provider"
cat > "$work/gpu.yaml" <<YAML
name: gpucheck
provider: local
nodes: 1
resources:
  gpu: $model:$ngpu
lifecycle:
  max_duration: 10m
env:
  PATH: $(dirname "$PY"):/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  NCCL_DEBUG: INFO
workdir: $PWD/tests/gpu
checkpoint_dir: $work/ckpt
run:
  command: python3 ddp_nccl_check.py
  nproc_per_node: $ngpu
YAML
"$G" --state-dir "$S" plan -f "$work/gpu.yaml" --detailed-exitcode -o json > "$OUT/plan.json"
check "plan --detailed-exitcode on an empty state" 2 $?
"$PY" - "$OUT/plan.json" "$model" "$ngpu" <<'PY' | tee "$OUT/plan-check.txt"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["chosen"]
print("chosen", c["provider"], c["instance_type"], "gpu", c["gpu"]["model"], c["gpu"]["count"],
      "memory_gib", round(c["gpu"]["memory_gib"], 1), "action", d["action"], "changes", len(d["changes"]))
PY
contains "local offer carries the detected GPU" "chosen local local gpu $model(-[A-Za-z0-9]+)* $ngpu" "$OUT/plan-check.txt"
"$G" --state-dir "$S" plan -f "$work/gpu.yaml" --out "$work/gpu.plan.json" > "$OUT/plan.txt"
echo "== apply the saved plan and wait"
timeout 300 "$G" --state-dir "$S" apply "$work/gpu.plan.json" --wait > "$OUT/apply.log" 2>&1
rc=$?
tail -25 "$OUT/apply.log"
check "apply PLANFILE --wait exit status" 0 $rc
contains "DDP ran on NCCL with an exact all_reduce" "rank 0/$ngpu backend=nccl device=cuda:0 gpu=.*allreduce=$((ngpu * (ngpu + 1) / 2)) ok" "$OUT/apply.log"
contains "NCCL initialised (NCCL_DEBUG=INFO)" "NCCL INFO" "$OUT/apply.log"
[ -f "$work/ckpt/linear.pt" ]; check "checkpoint written to checkpoint_dir" 0 $?
"$G" --state-dir "$S" -o json status gpucheck > "$OUT/status.json"
"$G" --state-dir "$S" plan -f "$work/gpu.yaml" --detailed-exitcode > /dev/null
check "plan after apply: no changes" 0 $?
"$G" --state-dir "$S" apply "$work/gpu.plan.json" > "$OUT/stale.txt" 2>&1
check "the used plan is stale" 13 $?
echo "== a GPU this machine does not have"
sed "s/gpu: .*/gpu: T4:1/; s/name: gpucheck/name: nogpu/" "$work/gpu.yaml" > "$work/t4.yaml"
"$G" --state-dir "$S" plan -f "$work/t4.yaml" > "$OUT/t4.txt" 2>&1
check "plan for T4 on an $model machine: capacity" 22 $?
cat "$OUT/t4.txt"
"$G" --state-dir "$S" -y destroy gpucheck > /dev/null 2>&1
cp -r "$S/local" "$OUT/local-nodes" 2>/dev/null
echo "== $fails check(s) failed"
exit $((fails > 0))
