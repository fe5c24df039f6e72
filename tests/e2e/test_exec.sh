#!/bin/bash
# `gpuctl exec` on the local provider: a new job on the live nodes of a
# 2-node cluster (lifecycle.idle_timeout keeps them up after their job),
# with the same rendezvous wiring:
# - issued while the first job runs, it is queued after it on every node
#   (it starts after the first job ended: the nodes' records and node.log);
# - its output comes back as `[node N] ...`, RANK and WORLD_SIZE are the
#   nodes' own, the job env of the spec stays;
# - the exit status is the job's (`-- 'exit 3'` gives 3);
# - the same nodes run it (no new node directory, the bootstrap's pid the
#   same), with a rendezvous id of its own;
# - -f with a spec whose shape differs is refused, pointing at apply;
# - plan of a changed spec: only the job's fields, a job to run again;
#   a shape field, refused with the diff (old -> new);
# - nodes where gpuctl's bootstrap never ran (no phase, no job.sh): exec
#   fails at once (127), each node saying why, instead of waiting 300 s
#   for a runner as for a node still booting; apply of a job change
#   without --wait fails (6) and keeps the cluster's spec.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/work"
cd "$T/work"
cat > ex.yaml <<'SPEC'
name: ex
provider: local
nodes: 2
resources:
  cpus: 1+
env:
  FOO: bar
lifecycle:
  idle_timeout: 300s
run:
  command: sleep 4; date +%s%N > "$GPUCTL_HOME/job1.end"
  nproc_per_node: 1
SPEC

all_running() {
    g -o json status ex | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if all(n["phase"] == "running" for n in d["clusters"][0]["nodes"]) else 1)'
}

run_rc rc g -y apply -f ex.yaml > "$T/apply.txt"
expect_eq "apply starts the cluster" 0 "$rc"
for _ in $(seq 240); do all_running && break; sleep 0.25; done
expect_eq "both nodes run their first job" 0 "$(all_running && echo 0 || echo 1)"
h0=$(find "$STATE/local" -mindepth 1 -maxdepth 1 -type d -name 'ex-0-*')
h1=$(find "$STATE/local" -mindepth 1 -maxdepth 1 -type d -name 'ex-1-*')
pid0=$(cat "$h0/pid")

# 1. queued after the running job, on every node
run_rc rc g exec ex -- 'date +%s%N > "$GPUCTL_HOME/job2.start"; echo $RANK $WORLD_SIZE $FOO' > "$T/exec1.txt" 2>&1
expect_eq "exec exits with the job's status 0" 0 "$rc"
out=$(cat "$T/exec1.txt")
# torch 1.x's torchrun prefixes a worker's lines with [default0]:
expect_match "node 0 printed its rank, the world size and the spec's env" '^\[node 0\] (\[default0\]:)?0 2 bar$' "$out"
expect_match "node 1 printed its rank, the world size and the spec's env" '^\[node 1\] (\[default0\]:)?1 2 bar$' "$out"
expect_match "exec said it waited for the running job" '^\[node 0\] .* gpuctl: job x[0-9a-f]{12} queued: waiting for the running job to end$' "$out"
for h in "$h0" "$h1"; do
    end=$(cat "$h/job1.end")
    start=$(cat "$h/job2.start")
    expect_eq "node $(basename "$h"): the exec'd job started after the first ended" yes \
        "$([ "$start" -gt "$end" ] && echo yes || echo no)"
done
id=$(cat "$h0/job_id")
expect_match "the job id is the exec's" '^x[0-9a-f]{12}$' "$id"
# node.log: the first job's end, then the new job's header
log=$(grep -n -e 'gpuctl: exit status 0$' -e "gpuctl: === job $id: rendezvous id [0-9a-f]*-$id ===\$" "$h0/node.log" | cut -d: -f1 | tr '\n' ' ')
expect_match "node.log: the first job's end before the new job's header" '^[0-9]+ [0-9]+ [0-9]+ $' "$log"
expect_eq "the records describe the latest job" "succeeded 0" "$(cat "$h0/phase") $(cat "$h0/exit_status")"
expect_match "the job record says it ended" '^ended [0-9]+$' "$(cat "$h0/job")"
expect_eq "the same node process (no new node)" "$pid0" "$(cat "$h0/pid")"
expect_eq "no new node directory" 2 "$(find "$STATE/local" -mindepth 1 -maxdepth 1 -type d -name 'ex-*' | wc -l)"
events=$(python3 -c 'import sqlite3, sys; print("\n".join(r[0] + " " + r[1] for r in sqlite3.connect(sys.argv[1]).execute("SELECT kind, message FROM events WHERE kind = '"'exec'"'")))' "$STATE/gpuctl.db")
expect_eq "an exec event records the job" "exec job $id on 2 nodes: exit status 0" "$events"

# 2. the job's exit status passes through
run_rc rc g exec ex -- 'exit 3' > "$T/exec2.txt" 2>&1
expect_eq "exec -- 'exit 3' exits 3" 3 "$rc"
expect_match "and ends with one line saying so" '^job x[0-9a-f]{12} failed: exit status 3 on node 0 \(the first by rank\)$' "$(cat "$T/exec2.txt")"
expect_eq "the node records the failed job" "failed 3" "$(cat "$h0/phase") $(cat "$h0/exit_status")"

# 3. -f: the spec's job, refused when the cluster's shape differs
sed -e 's/^nodes: 2/nodes: 3/' ex.yaml > ex3.yaml
run_rc rc g exec ex -f ex3.yaml > "$T/exec3.txt" 2>&1
expect_eq "exec -f with another node count is a usage error" 3 "$rc"
expect_match "and says what to do" '^gpuctl: error: the spec changes cluster ex itself \(nodes: 2 -> 3\), not only its job, and exec runs jobs on the nodes there are: gpuctl apply -f ex3\.yaml changes them \(gpuctl plan -f ex3\.yaml shows how\)$' "$(cat "$T/exec3.txt")"
sed -e 's/^  command: .*/  command: echo "from-spec $RANK $FOO"/' -e 's/FOO: bar/FOO: baz/' ex.yaml > ex2.yaml
run_rc rc g exec ex -f ex2.yaml > "$T/exec4.txt" 2>&1
expect_eq "exec -f with only the job changed runs it" 0 "$rc"
expect_match "with the spec's new env" '^\[node 1\] (\[default0\]:)?from-spec 1 baz$' "$(cat "$T/exec4.txt")"

# 4. plan of a changed spec: only the job (apply runs it again on the same
# nodes), or the cluster's shape (old -> new: here only the node count, on
# nodes kept up: a resize)
run_rc rc g plan -f ex2.yaml > "$T/plan2.txt" 2>&1
expect_eq "plan of a job change: exit 0" 0 "$rc"
expect_match "it shows the job running again and what changed" \
    "^  ~ job of cluster 'ex': runs again on the same nodes, after any job running there \(changed: env, run\.command\)\$" \
    "$(cat "$T/plan2.txt")"
run_rc rc g plan -f ex3.yaml > "$T/plan3.txt" 2>&1
expect_eq "plan of a node-count change: exit 0" 0 "$rc"
expect_match "it shows the resize with the diff" \
    "^  ~ cluster ex: its live nodes stay, nodes are added or removed to the new count \(changed: nodes 2 -> 3\)\$" \
    "$(cat "$T/plan3.txt")"

# 4b. nodes without gpuctl's bootstrap: no phase (the bootstrap's first
# record), no job.sh
for h in "$h0" "$h1"; do mv "$h/phase" "$h/phase.away"; mv "$h/job.sh" "$h/job.sh.away"; done
SECONDS=0
run_rc rc g exec ex -- true > "$T/exec8.txt" 2>&1
took=$SECONDS
expect_eq "exec on nodes without a bootstrap exits 127" 127 "$rc"
expect_eq "at once (< 30 s), not after the wait for a booting node's runner" "yes" \
    "$([ "$took" -lt 30 ] && echo yes || echo "no: ${took}s")"
out=$(cat "$T/exec8.txt")
expect_match "node 0 says why" "^\[node 0\] gpuctl: no gpuctl bootstrap on this node: $h0/phase is missing\$" "$out"
expect_match "node 1 says why" "^\[node 1\] gpuctl: no gpuctl bootstrap on this node: $h1/phase is missing\$" "$out"
expect_match "and the end in one line" '^job x[0-9a-f]{12} failed: exit status 127 on node 0 \(the first by rank\)$' "$out"
SECONDS=0
run_rc rc g -y apply -f ex2.yaml > "$T/apply8.txt" 2>&1
took=$SECONDS
expect_eq "apply of a job change there (no --wait): exit 6" 6 "$rc"
expect_eq "at once (< 30 s)" "yes" "$([ "$took" -lt 30 ] && echo yes || echo "no: ${took}s")"
expect_match "naming the nodes and why" "^gpuctl: error: job r[0-9a-f]{12} did not start on 2 of 2 nodes: node 0: exit status 127: gpuctl: no gpuctl bootstrap on this node: $h0/phase is missing; node 1: exit status 127: gpuctl: no gpuctl bootstrap on this node: $h1/phase is missing\$" "$(cat "$T/apply8.txt")"
run_rc rc g plan -f ex2.yaml > "$T/plan8.txt" 2>&1
expect_match "the cluster keeps its spec: plan still runs the job again" \
    "^  ~ job of cluster 'ex': runs again on the same nodes, after any job running there \(changed: env, run\.command\)\$" \
    "$(cat "$T/plan8.txt")"
for h in "$h0" "$h1"; do mv "$h/phase.away" "$h/phase"; mv "$h/job.sh.away" "$h/job.sh"; done

# 5. usage
run_rc rc g exec ex > "$T/exec5.txt" 2>&1
expect_eq "exec without a command is a usage error" 3 "$rc"
run_rc rc g exec nosuch -- true > "$T/exec6.txt" 2>&1
expect_eq "exec on no cluster: not found" 7 "$rc"
run_rc rc g exec exx -- true > "$T/exec7.txt" 2>&1
expect_eq "exec on a mistyped name: not found" 7 "$rc"
expect_eq "with the closest name" "gpuctl: error: no cluster named 'exx'; did you mean 'ex'?" "$(cat "$T/exec7.txt")"

g -y destroy ex >/dev/null
finish
