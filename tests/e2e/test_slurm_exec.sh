#!/bin/bash
# Later jobs on a live Slurm cluster's nodes (slurm_cluster.sh: node1 at
# 127.0.0.2, node2 at 127.0.0.3), a 2-node cluster kept up by
# lifecycle.idle_timeout after its first job:
# - gpuctl ssh: the step has the node's GPUCTL_HOME (JOB_DIR/job-ID/node-R);
# - gpuctl exec, issued while the first job runs: queued after it on both
#   nodes, each node's rank and the world size from the rendezvous, the
#   spec's env; its exit status passes through;
# - apply of a spec whose run.command changed: the job runs again on the
#   same allocation (the same Slurm job), attached with --wait.
# A few seconds of job each, no training.  Skipped (77) without Slurm or root.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh" || exit 1
# shellcheck source=tests/e2e/slurm_cluster.sh
source "$(dirname "$0")/slurm_cluster.sh"
slurm_available || exit 77

SD="$T/slurm"
slurm_trap "$SD"
slurm_up "$SD"

# the job's software is the machine's (Debian's python3 with torch)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$T/jobs" "$T/work"
cat > "$T/config" <<EOF
[slurm "lab"]
login = local
job_dir = $T/jobs
EOF
export GPUCTL_CONFIG="$T/config" GPUCTL_CONFIG_DIR="$T/cfgdir"
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}
run_rc rc g check slurm > "$T/check.out" 2>&1
expect_eq "check slurm exits 0" 0 "$rc"

cd "$T/work"
cat > sx.yaml <<EOF
name: sx
provider: slurm
nodes: 2
env:
  FOO: bar
lifecycle:
  max_duration: 10m
  idle_timeout: 120s
run:
  command: sleep 4; date +%s%N > "\$GPUCTL_HOME/job1.end"
  nproc_per_node: 1
  rdzv_port: $(free_port)
EOF
phases() {
    g -o json status sx | python3 -c 'import json,sys; print(" ".join(n["phase"] for n in json.load(sys.stdin)["clusters"][0]["nodes"]))'
}

run_rc rc g -y apply -f sx.yaml > "$T/apply.out" 2>&1
expect_eq "apply submits the job" 0 "$rc"
for _ in $(seq 240); do [ "$(phases)" = "running running" ] && break; sleep 0.25; done
expect_eq "both nodes run the first job" "running running" "$(phases)"
g -o json status sx > "$T/st.json"
job=$(json_get "$T/st.json" 'd["clusters"][0]["nodes"][0]["provider_id"].split("/")[1]')
h0="$T/jobs/job-$job/node-0"
h1="$T/jobs/job-$job/node-1"

# 1. gpuctl ssh: a step with the node's GPUCTL_HOME, and still nothing of
# gpuctl's environment
for r in 0 1; do
    GPUCTL_LEAK=x run_rc rc g ssh sx --node "$r" -- 'echo "$GPUCTL_HOME $SLURMD_NODENAME ${GPUCTL_LEAK:-none}"' > "$T/sh.out" 2> "$T/sh.err"
    expect_eq "ssh --node $r: the node's GPUCTL_HOME in the job's step on node$((r + 1))" \
        "0 $T/jobs/job-$job/node-$r node$((r + 1)) none" "$rc $(cat "$T/sh.out")"
done

# 2. exec, while the first job runs: queued after it, the rendezvous wiring
run_rc rc g exec sx -- 'date +%s%N > "$GPUCTL_HOME/job2.start"; echo $RANK $WORLD_SIZE $FOO' > "$T/exec1.out" 2>&1
expect_eq "exec exits with the job's status 0" 0 "$rc"
out=$(cat "$T/exec1.out")
expect_match "node 0 printed its rank, the world size and the spec's env" '^\[node 0\] (\[default0\]:)?0 2 bar$' "$out"
expect_match "node 1 printed its rank, the world size and the spec's env" '^\[node 1\] (\[default0\]:)?1 2 bar$' "$out"
expect_match "exec said it waited for the running job" '^\[node 1\] .* gpuctl: job x[0-9a-f]{12} queued: waiting for the running job to end$' "$out"
for h in "$h0" "$h1"; do
    expect_eq "$(basename "$h"): the exec'd job started after the first one ended" yes \
        "$([ "$(cat "$h/job2.start")" -gt "$(cat "$h/job1.end")" ] && echo yes || echo no)"
done
id=$(cat "$h0/job_id")
expect_match "the node's latest job is the exec's" '^x[0-9a-f]{12}$' "$id"
expect_match "node.log has its header, rendezvous id of its own" "gpuctl: === job $id: rendezvous id [0-9a-f]+-$id ===" "$(cat "$h1/node.log")"

# 3. the exit status passes through
run_rc rc g exec sx -- 'exit 3' > "$T/exec2.out" 2>&1
expect_eq "exec -- 'exit 3' exits 3" 3 "$rc"
expect_eq "the nodes record the failed job" "failed 3 failed 3" \
    "$(cat "$h0/phase") $(cat "$h0/exit_status") $(cat "$h1/phase") $(cat "$h1/exit_status")"

# 4. apply of a changed run.command: the job again on the same allocation
sed -e 's/^  command: .*/  command: echo "again $RANK $WORLD_SIZE $SLURM_JOB_ID"/' sx.yaml > sx2.yaml
expect_eq "plan: the job runs again" "rerun run.command" \
    "$(g -o json plan -f sx2.yaml | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["action"], d["rerun"])')"
run_rc rc g -y apply -f sx2.yaml --wait > "$T/a2.out" 2>&1
expect_eq "apply --wait of the change exits 0" 0 "$rc"
out=$(cat "$T/a2.out")
expect_match "node 0 ran it in the same Slurm job" "^\[node 0\] (\[default0\]:)?again 0 2 $job\$" "$out"
expect_match "node 1 ran it in the same Slurm job" "^\[node 1\] (\[default0\]:)?again 1 2 $job\$" "$out"
expect_match "apply names the job and what changed" '^cluster sx: job r[0-9a-f]{12} ran on the same nodes \(changed: run\.command\)$' "$out"
expect_eq "the same nodes of the same Slurm job" "lab/$job/0 lab/$job/1" \
    "$(g -o json status sx | python3 -c 'import json,sys; print(" ".join(n["provider_id"] for n in json.load(sys.stdin)["clusters"][0]["nodes"]))')"
expect_eq "one Slurm job of the test's name" 1 "$(squeue -h -t all -n "$(squeue -h -t all -j "$job" -o %j)" -o %i | wc -l)"

g -y destroy sx > /dev/null
finish
