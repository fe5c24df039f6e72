#!/bin/bash
# `gpuctl watch NAME` on the local provider (the controller for a cluster
# applied without --wait; spot recovery under it: test_aws_recover.sh, and
# the engine's test_engine_watch):
# - after `apply` without --wait, watch follows the job to its end: the
#   nodes' logs ("[node N] ..."), the node table, "job succeeded: rank 0
#   exit status 0", exit 0; again on the ended cluster, the same at once;
# - -o json matches docs/schema/watch.schema.json, with recover true and
#   the cluster's status;
# - a job that fails: exit 10, naming rank 0's status; --timeout on a job
#   still running: exit 12, the nodes keep running;
# - refusals: no such cluster (7, with the closest name), a spec of
#   another cluster (3), -f with --no-recover (3), no NAME (3).
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/work"
cd "$T/work"
spec() { # NAME COMMAND
    cat > "$1.yaml" <<SPEC
name: $1
provider: local
nodes: 2
resources:
  cpus: 1+
run:
  command: $2
  nproc_per_node: 1
SPEC
}

spec wa 'sleep 2; echo "trained on rank $RANK"'
run_rc rc g -y apply -f wa.yaml > "$T/apply.txt" 2>&1
expect_eq "apply without --wait" 0 "$rc"
run_rc rc g watch wa > "$T/w1.out" 2> "$T/w1.err"
expect_eq "watch exits 0 when rank 0 exits 0" 0 "$rc"
out=$(cat "$T/w1.out")
expect_match "it streams each node's log" '^\[node 0\] (\[default0\]:)?trained on rank 0$' "$out"
expect_match "of both nodes" '^\[node 1\] (\[default0\]:)?trained on rank 1$' "$out"
expect_match "then the node table" '^0 +wa-0 +succeeded ' "$out"
expect_eq "and the job's end" "job succeeded: rank 0 exit status 0" "$(tail -1 "$T/w1.out")"
expect_match "a local cluster buys no spot: nothing to replace, said so" \
    '^gpuctl: wa buys no spot: watching its job$' "$(cat "$T/w1.err")"
run_rc rc g watch wa > "$T/w2.out" 2>&1
expect_eq "watch of an ended cluster: its outcome at once" 0 "$rc"
expect_eq "the same end" "job succeeded: rank 0 exit status 0" "$(tail -1 "$T/w2.out")"
run_rc rc g -o json watch wa > "$T/w.json" 2> /dev/null
expect_eq "-o json: exit 0" 0 "$rc"
check_schema "$T/w.json" watch
expect_eq "-o json: the fields" "watch wa True 0 True succeeded 0 None succeeded" \
    "$(json_get "$T/w.json" "' '.join(str(x) for x in [d['command'], d['cluster'], d['recover'], d['created'], d['waited'], d['phase'], d['exit_code'], d['error'], d['cluster_status']['phase']])")"

spec wf 'exit 3'
run_rc rc g -y apply -f wf.yaml > /dev/null 2>&1
expect_eq "apply of a failing job" 0 "$rc"
run_rc rc g watch --no-recover wf > "$T/wf.out" 2> "$T/wf.err"
expect_eq "watch exits 10 when the job fails" 10 "$rc"
expect_eq "naming rank 0's status" "job failed: rank 0 exit status 3" "$(tail -1 "$T/wf.out")"
expect_match "and the error" "^gpuctl: error: cluster 'wf': job failed, rank 0 exit status 3\$" "$(cat "$T/wf.err")"

spec ws 'sleep 60'
run_rc rc g -y apply -f ws.yaml > /dev/null 2>&1
expect_eq "apply of a long job" 0 "$rc"
run_rc rc g watch ws --timeout 2 > "$T/ws.out" 2> "$T/ws.err"
expect_eq "watch --timeout exits 12" 12 "$rc"
expect_match "the nodes keep running" "^gpuctl: error: cluster 'ws' still running after 2s; the nodes keep running\$" "$(cat "$T/ws.err")"
expect_match "they do" '^0 +ws-0 +running ' "$(g status ws)"
g -y destroy ws > /dev/null 2>&1

run_rc rc g watch wx > /dev/null 2> "$T/nf.err"
expect_eq "no such cluster: exit 7" 7 "$rc"
expect_match "with the closest names" "no cluster named 'wx'" "$(cat "$T/nf.err")"
run_rc rc g watch wa -f wf.yaml > /dev/null 2> "$T/other.err"
expect_eq "a spec of another cluster: exit 3" 3 "$rc"
expect_eq "said" "gpuctl: error: wf.yaml is the spec of cluster 'wf', not 'wa'" "$(cat "$T/other.err")"
run_rc rc g watch wa -f wa.yaml --no-recover > /dev/null 2> "$T/both.err"
expect_eq "-f with --no-recover: exit 3" 3 "$rc"
run_rc rc g watch > /dev/null 2>&1
expect_eq "no NAME: exit 3" 3 "$rc"
finish
