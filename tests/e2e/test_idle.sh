#!/bin/bash
# lifecycle.idle_timeout on the local provider, decided on the node: after
# its job the node stays up (status: ended_at null) until no job has run
# for idle_timeout, then stops itself (its process group ends: ended_at set)
# and says why (the node's `stopped` record and log).
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work"
cd "$T/work"
cat > idle.yaml <<'SPEC'
name: idler
provider: local
nodes: 1
resources:
  cpus: 1+
lifecycle:
  idle_timeout: 4s
run:
  command: echo job-done
  nproc_per_node: 1
SPEC

node_ended() {
    g -o json status idler | python3 -c 'import json,sys; print(json.load(sys.stdin)["clusters"][0]["nodes"][0]["ended_at"] is not None)'
}

run_rc rc g apply -f idle.yaml --wait --timeout 300 > "$T/apply.txt"
expect_eq "apply --wait returns when the job ends: exit 0" 0 "$rc"
home=$(find "$STATE/local" -mindepth 1 -maxdepth 1 -type d -name 'idler-0-*' | head -1)
expect_eq "right after the job the node is still up" False "$(node_ended)"
expect_match "the job record says the job ended" '^ended [0-9]+$' "$(cat "$home/job")"
expect_eq "no stopped record yet" no "$([ -e "$home/stopped" ] && echo yes || echo no)"
# idle_timeout is 4 s after the job's end; give it 15 s in all
for _ in $(seq 30); do
    [ "$(node_ended)" = True ] && break
    sleep 0.5
done
expect_eq "after idle_timeout the node has stopped itself" True "$(node_ended)"
expect_eq "the stopped record says why" "idle 4s" "$(cat "$home/stopped")"
log=$(cat "$home/node.log")
expect_match "the node log says it waits" 'gpuctl: idle: the node stops after 4s with no job$' "$log"
expect_match "the node log says it stopped" 'gpuctl: no job for 4s: stopping the node$' "$log"
g -o json status idler > "$T/status.json"
check_schema "$T/status.json" status
expect_eq "the job's outcome stands" "succeeded 0" \
    "$(json_get "$T/status.json" '"%s %s" % (d["clusters"][0]["phase"], d["clusters"][0]["exit_code"])')"
g -y destroy idler > /dev/null

# Two nodes kept up after their job, whose rank 1 fails (exit 3) while
# rank 0 succeeds: apply --wait fails the job and names rank 1 with its
# own exit status.  (On local a node's exit status file tells its job's
# end; a machine kept up at a cloud tells it only through its log
# transport: test_engine_life's test_wait_kept_up_worker_failed.)
cat > pair.yaml <<'SPEC'
name: pair
provider: local
nodes: 2
resources:
  cpus: 1+
lifecycle:
  idle_timeout: 60s
run:
  command: '[ "$GPUCTL_NODE_RANK" != 1 ] || exit 3'
  nproc_per_node: 1
SPEC
run_rc rc g apply -f pair.yaml --wait --timeout 300 > "$T/pair.txt" 2> "$T/pair.err"
expect_eq "a worker's failed job fails apply --wait: exit 10" 10 "$rc"
expect_match "the error names rank 1 and its exit status" \
    "gpuctl: error: cluster 'pair': job failed, node pair-1 \\(rank 1\\) exit status 3 \\(rank 0 exited 0\\)" \
    "$(cat "$T/pair.err")"
g -y destroy pair > /dev/null
finish
