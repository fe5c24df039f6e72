#!/bin/bash
# The cluster's job status derived from every node (docs/cli.md "status"):
# rank 0 exits 0 while rank 1's job exits 3 is a failed job, not a
# succeeded one, naming the node, in `status NAME`, `status -o json` and
# `apply --wait` (a user trial found `succeeded`).  On local; refresh.c
# derives it the same way for every provider (test_engine_life.c).
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" && cd "$T/work"
cat > two.yaml <<'YAML'
name: two
nodes: 2
run: '[ "$GPUCTL_NODE_RANK" = 1 ] && exit 3 || true'
YAML
run_rc rc g apply -f two.yaml --wait --timeout 300 > "$T/apply.out" 2> "$T/apply.err"
expect_eq "apply --wait of a job whose rank 1 exits 3: exit 10" 10 "$rc"
expect_eq "names the node" "gpuctl: error: cluster 'two': job failed, node two-1 (rank 1) exit status 3 (rank 0 exited 0)" \
    "$(grep '^gpuctl: error:' "$T/apply.err")"
expect_eq "apply's node table is followed by the node that failed" "job failed: node two-1 (rank 1) exited with status 3" \
    "$(grep '^job failed: node' "$T/apply.out" | head -1)"
# a user trial: the summary then said "job failed: rank 0 exit status 0",
# which read as a contradiction
expect_eq "apply --wait's summary names the failing node, and rank 0's 0" \
    "job failed: node two-1 (rank 1) exit status 3 (rank 0 exited 0)" \
    "$(tail -1 "$T/apply.out")"

run_rc rc g status two > "$T/st.txt" 2>&1
expect_eq "status two: exit 0" 0 "$rc"
expect_match "the cluster is failed (rank 0's exit status 0)" "^two +local +2 +failed +0 " "$(cat "$T/st.txt")"
expect_match "rank 0 succeeded" "^0 +two-0 +succeeded .* 0 " "$(cat "$T/st.txt")"
expect_match "rank 1 failed with 3" "^1 +two-1 +failed .* 3 " "$(cat "$T/st.txt")"
expect_eq "and says which node" "job failed: node two-1 (rank 1) exited with status 3" \
    "$(grep '^job failed' "$T/st.txt")"

g -o json status two > "$T/st.json"
check_schema "$T/st.json" status
expect_eq "json: phase, rank 0's exit_code, failed_node" \
    "failed 0 {\"exit_code\": 3, \"name\": \"two-1\", \"rank\": 1}" \
    "$(json_get "$T/st.json" '" ".join([d["clusters"][0]["phase"], str(d["clusters"][0]["exit_code"]), json.dumps(d["clusters"][0]["failed_node"], sort_keys=True)])')"
g -y destroy two > /dev/null 2>&1

# every node exits 0: succeeded, no failed_node
sed -e 's/^name: two$/name: ok2/' -e 's/exit 3/exit 0/' two.yaml > ok2.yaml
run_rc rc g apply -f ok2.yaml --wait --timeout 300 > "$T/ok-apply.out" 2>&1
expect_eq "apply --wait of a job whose nodes all exit 0: exit 0, rank 0's status in the summary" \
    "0 job succeeded: rank 0 exit status 0" "$rc $(grep '^job ' "$T/ok-apply.out")"
g -o json status ok2 > "$T/ok.json"
expect_eq "json: succeeded, 0, null" "succeeded 0 None" \
    "$(json_get "$T/ok.json" '" ".join(str(x) for x in (d["clusters"][0]["phase"], d["clusters"][0]["exit_code"], d["clusters"][0]["failed_node"]))')"
run_rc rc g status ok2 > "$T/ok.txt" 2>&1
expect_eq "no failed-node line" "" "$(grep '^job failed' "$T/ok.txt" || true)"
g -y destroy ok2 > /dev/null 2>&1
finish
