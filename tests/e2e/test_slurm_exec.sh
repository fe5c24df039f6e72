#!/bin/bash
# Later jobs and secrets on a live Slurm cluster's nodes (slurm_cluster.sh:
# node1 at 127.0.0.2, node2 at 127.0.0.3), a 2-node cluster kept up by
# lifecycle.idle_timeout after its first job:
# - gpuctl ssh: the step has the node's GPUCTL_HOME (JOB_DIR/job-ID/node-R)
#   and nothing of gpuctl's environment;
# - gpuctl exec, issued while the first job runs: queued after it on both
#   nodes, each node's rank and the world size from the rendezvous, the
#   spec's env and secrets; its exit status passes through;
# - apply of a spec whose run.command changed: the job runs again on the
#   same allocation (the same Slurm job), attached with --wait;
# - secrets (one from the environment, one from a file): the first job,
#   an exec'd one and the re-run see the values; no value in the state, the
#   job directory (node.env, the bootstrap, the logs, sbatch's output; the
#   secrets file is gone once the job started), Slurm's own files (the
#   batch script and environment slurmctld saved, spools, logs), the batch
#   script Slurm keeps, or `scontrol show job -d`;
# - a job cancelled while it waits in the queue leaves no secrets file.
# A few seconds of job each, no training.  Skipped (77) without Slurm or root.
# (the nodes' commands are in single quotes: their shells expand them)
# shellcheck disable=SC2016
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
# values no file holds by chance; the jobs compare hashes (none in the spec)
V1="v1-$(printf %s "$T" | sha256sum | cut -c1-16)"
V2="v2-$(printf %s "$V1" | sha256sum | cut -c1-16)"
printf '%s\n' "$V2" > tok && chmod 600 tok
h() { printf %s "$1" | sha256sum | cut -c1-16; }
H1=$(h "$V1") H2=$(h "$V2")
export MY_TOKEN="$V1"
grep_values() { grep -rlF -e "$V1" -e "$V2" "$@" 2>/dev/null || true; }
# spec NAME COMMAND: the 2-node spec with env, secrets and idle_timeout
spec() {
    cat <<EOF
name: $1
provider: slurm
nodes: 2
env:
  FOO: bar
secrets:
  MY_TOKEN:
  FROMFILE: file:./tok
lifecycle:
  max_duration: 10m
  idle_timeout: 120s
run:
  command: $2
  nproc_per_node: 1
  rdzv_port: $(free_port)
EOF
}
# (the first job: both values by their hash, then its end time)
spec sx "sleep 4; [ \"\$(printf %s \"\$MY_TOKEN\" | sha256sum | cut -c1-16)\" = $H1 ] && [ \"\$(printf %s \"\$FROMFILE\" | sha256sum | cut -c1-16)\" = $H2 ] && echo \"secrets arrived on \$RANK\"; date +%s%N > \"\$GPUCTL_HOME/job1.end\"" > sx.yaml
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
expect_eq "the secrets file is gone once the job started" "" "$(ls -A "$T/jobs/.secrets")"
expect_eq "its directory is the user's alone" "700" "$(stat -c %a "$T/jobs/.secrets")"

# 1. gpuctl ssh: a step with the node's GPUCTL_HOME, and still nothing of
# gpuctl's environment
for r in 0 1; do
    GPUCTL_LEAK=x run_rc rc g ssh sx --node "$r" -- 'echo "$GPUCTL_HOME $SLURMD_NODENAME ${GPUCTL_LEAK:-none}"' > "$T/sh.out" 2> "$T/sh.err"
    expect_eq "ssh --node $r: the node's GPUCTL_HOME in the job's step on node$((r + 1))" \
        "0 $T/jobs/job-$job/node-$r node$((r + 1)) none" "$rc $(cat "$T/sh.out")"
done

# 2. exec, while the first job runs: queued after it, the rendezvous wiring,
# the spec's env and secrets
run_rc rc g exec sx -- 'date +%s%N > "$GPUCTL_HOME/job2.start"; echo $RANK $WORLD_SIZE $FOO $(printf %s "$FROMFILE" | sha256sum | cut -c1-16)' > "$T/exec1.out" 2>&1
expect_eq "exec exits with the job's status 0" 0 "$rc"
out=$(cat "$T/exec1.out")
expect_match "node 0 printed its rank, the world size, the env and the secret's hash" "^\[node 0\] (\[default0\]:)?0 2 bar $H2\$" "$out"
expect_match "node 1 printed its rank, the world size, the env and the secret's hash" "^\[node 1\] (\[default0\]:)?1 2 bar $H2\$" "$out"
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
spec sx 'echo "again $RANK $WORLD_SIZE $SLURM_JOB_ID ${#MY_TOKEN}"' > sx2.yaml
sed -i "s/^  rdzv_port: .*/$(grep '^  rdzv_port: ' sx.yaml)/" sx2.yaml
expect_eq "plan: the job runs again" "rerun run.command" \
    "$(g -o json plan -f sx2.yaml | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["action"], d["rerun"])')"
run_rc rc g -y apply -f sx2.yaml --wait > "$T/a2.out" 2>&1
expect_eq "apply --wait of the change exits 0" 0 "$rc"
out=$(cat "$T/a2.out")
expect_match "node 0 ran it in the same Slurm job, with the secret" "^\[node 0\] (\[default0\]:)?again 0 2 $job ${#V1}\$" "$out"
expect_match "node 1 ran it in the same Slurm job, with the secret" "^\[node 1\] (\[default0\]:)?again 1 2 $job ${#V1}\$" "$out"
expect_match "apply names the job and what changed" '^cluster sx: job r[0-9a-f]{12} ran on the same nodes \(changed: run\.command\)$' "$out"
expect_eq "the same nodes of the same Slurm job" "lab/$job/0 lab/$job/1" \
    "$(g -o json status sx | python3 -c 'import json,sys; print(" ".join(n["provider_id"] for n in json.load(sys.stdin)["clusters"][0]["nodes"]))')"

# 5. the secrets: seen by the first job, kept in no file and by no Slurm
# record (the batch script and environment slurmctld saved, its spools and
# logs are under $SD)
run_rc rc g logs sx > "$T/logs.out" 2>&1
expect_match "node 0's first job saw both values" "^\[node 0\] .*secrets arrived on 0\$" "$(cat "$T/logs.out")"
expect_match "node 1's first job saw both values" "^\[node 1\] .*secrets arrived on 1\$" "$(cat "$T/logs.out")"
scontrol show job -d "$job" > "$T/show.out" 2>&1
scontrol write batch_script "$job" "$T/batch.out" > /dev/null 2>&1
expect_match "Slurm keeps the batch script: the file's name only" "^gpuctl_sec=.*/\.secrets/gpuctl-sx-[^/]*\.env\$" "$(cat "$T/batch.out")"
expect_eq "no value in the state, the job directory, Slurm's files, the batch script, scontrol or the outputs" "" \
    "$(grep_values "$STATE" "$T/jobs" "$SD" "$T/show.out" "$T/batch.out" "$T"/*.out "$T"/*.json)"
g -y destroy sx > /dev/null

# 6. a job cancelled while it waits in the queue leaves no secrets file
blocker=$(sbatch --parsable --nodes=2 --exclusive --output=/dev/null --wrap 'sleep 300')
spec sq 'true' > sq.yaml
run_rc rc g -y apply -f sq.yaml > "$T/sq.out" 2>&1
expect_eq "apply behind a busy partition exits 0" 0 "$rc"
expect_eq "the secrets file waits for the job, 0600" "600" "$(stat -c %a "$T"/jobs/.secrets/gpuctl-sq-*.env)"
g -y destroy sq > /dev/null
expect_eq "destroy removed it" "" "$(ls -A "$T/jobs/.secrets")"
scancel "$blocker"
finish
