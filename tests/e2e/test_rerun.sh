#!/bin/bash
# apply of a changed spec to a live cluster (local provider, 2 nodes kept
# up by lifecycle.idle_timeout):
# - nothing changed, a file only touched, a file the job wrote under an
#   ignored directory: unchanged (the workdir counts by content, with the
#   delivery's .gitignore);
# - a changed file of the workdir: plan says the job runs again (exit 2 with
#   --detailed-exitcode), apply --wait runs it on the same nodes (same
#   bootstrap process, no new node directory) with the new code;
# - a secret reaches a re-run from the bootstrap's environment, no file;
# - a changed file of a data set: pushed again, the job runs again;
# - a changed run.command: the same, and its exit status 3 is apply's 10;
# - without --wait: started on the nodes, apply returns;
# - without --wait, nodes whose job runner does not take the job (a broken
#   job.sh): apply fails (exit 6) naming them, the cluster keeps the
#   spec it had (plan still runs the change again), and once the runners
#   work again the next apply runs it;
# - a changed node count: a resize, not a re-run (test_replace.sh);
# - --dry-run says what would run and changes nothing.
source "$(dirname "$0")/lib.sh"
export RR_TOKEN=rr-secret-value-4711
mkdir -p "$T/work/code/out"
cd "$T/work"
printf 'print("v1")\n' > code/a.py
printf 'out/\n' > code/.gitignore
mkdir -p ds
printf 'd1\n' > ds/f
cat > rr.yaml <<'SPEC'
name: rr
provider: local
nodes: 2
resources:
  cpus: 1+
workdir: ./code
data:
  ds: ./ds
secrets:
  TOK: env:RR_TOKEN
lifecycle:
  idle_timeout: 300s
run:
  command: python3 a.py; cat "$GPUCTL_DATA_DIR/ds/f"; echo "token ${#TOK}"; echo "$GPUCTL_JOB_ID" >> "out/jobs-$RANK"
  nproc_per_node: 1
SPEC

action() { g -o json plan -f "${1:-rr.yaml}" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["action"], d.get("rerun", "-"))'; }

run_rc rc g -y apply -f rr.yaml --wait > "$T/a1.txt" 2>&1
expect_eq "the first apply runs the job" 0 "$rc"
h0=$(find "$STATE/local" -mindepth 1 -maxdepth 1 -type d -name 'rr-0-*')
h1=$(find "$STATE/local" -mindepth 1 -maxdepth 1 -type d -name 'rr-1-*')
pid0=$(cat "$h0/pid")
expect_eq "job 1 ran on both nodes" "1|1" "$(cat code/out/jobs-0 code/out/jobs-1 | paste -sd'|')"

# 1. nothing that counts changed
expect_eq "no change: plan has nothing to do" "none -" "$(action)"
touch code/a.py
expect_eq "a file only touched: nothing to do" "none -" "$(action)"
run_rc rc g -y apply -f rr.yaml > "$T/a2.txt" 2>&1
expect_eq "apply with nothing changed: exit 0" 0 "$rc"
expect_match "it says so" '^cluster rr: unchanged \(succeeded\)$' "$(cat "$T/a2.txt")"

# 2. the code changed: the job runs again on the same nodes
printf 'print("v2")\n' > code/a.py
expect_eq "a changed file: the job runs again" "rerun workdir (its files)" "$(action)"
run_rc rc g plan -f rr.yaml --detailed-exitcode > "$T/p3.txt" 2>&1
expect_eq "plan --detailed-exitcode: 2 (changes)" 2 "$rc"
expect_match "plan shows it" "^  ~ job of cluster 'rr': runs again on the same nodes, after any job running there \(changed: workdir \(its files\)\)$" "$(cat "$T/p3.txt")"
expect_match "and counts it" '^Plan: 0 to create \(0 cluster, 0 nodes\), 1 job to run again\.$' "$(cat "$T/p3.txt")"
run_rc rc g -y apply -f rr.yaml --dry-run > "$T/d3.txt" 2>&1
expect_match "--dry-run says what would run" '^cluster rr: would run its job again on the same nodes \(changed: workdir \(its files\)\) \(dry run, nothing changed\)$' "$(cat "$T/d3.txt")"
expect_eq "and runs nothing" "1" "$(cat code/out/jobs-0)"
run_rc rc g -y apply -f rr.yaml --wait > "$T/a3.txt" 2>&1
expect_eq "apply --wait of the change: exit 0" 0 "$rc"
out=$(cat "$T/a3.txt")
expect_match "the nodes ran the new code" '^\[node 1\] (\[default0\]:)?v2$' "$out"
expect_match "apply names the job and what changed" '^cluster rr: job r[0-9a-f]{12} ran on the same nodes \(changed: workdir \(its files\)\)$' "$out"
job2=$(sed -n 's/^cluster rr: job \(r[0-9a-f]*\) ran .*/\1/p' "$T/a3.txt")
expect_eq "each node ran it once more" "1 $job2|1 $job2" "$(paste -sd' ' code/out/jobs-0)|$(paste -sd' ' code/out/jobs-1)"
expect_match "and the secret (from the bootstrap's environment, never a file)" '^\[node 1\] (\[default0\]:)?token 20$' "$out"
expect_eq "no file of the nodes or the state holds the secret" "" "$(grep -rl "$RR_TOKEN" "$STATE" code 2>/dev/null || true)"
expect_match "with the data set" '^\[node 0\] (\[default0\]:)?d1$' "$out"
expect_eq "on the same node process" "$pid0" "$(cat "$h0/pid")"
expect_eq "no new node directory" 2 "$(find "$STATE/local" -mindepth 1 -maxdepth 1 -type d -name 'rr-*' | wc -l)"
expect_eq "then nothing to do" "none -" "$(action)"

# 2b. a data set's files changed: pushed again, the job runs again
printf 'd2\n' > ds/f
expect_eq "a changed data set: the job runs again" "rerun data.ds (its files)" "$(action)"
run_rc rc g -y apply -f rr.yaml --wait > "$T/a3b.txt" 2>&1
expect_eq "apply --wait of the data change: exit 0" 0 "$rc"
expect_match "the data set was pushed again" '^gpuctl: data ds: 1 file\(s\) sent \(3 B\), 0 unchanged, 0 deleted -> ' "$(cat "$T/a3b.txt")"
expect_match "the job read the new data" '^\[node 1\] (\[default0\]:)?d2$' "$(cat "$T/a3b.txt")"
expect_eq "then nothing to do" "none -" "$(action)"

# 3. the run command changed, and fails: apply's exit status is the job's
sed -e 's/^  command: .*/  command: echo "$GPUCTL_JOB_ID" >> "out\/jobs-$RANK"; exit 3/' rr.yaml > rr3.yaml
expect_eq "run.command changed: the job runs again" "rerun run.command" "$(action rr3.yaml)"
run_rc rc g -y -o json apply -f rr3.yaml --wait > "$T/a4.json" 2> "$T/a4.err"
expect_eq "a re-run that exits 3: apply exits 10 (job_failed)" 10 "$rc"
check_schema "$T/a4.json" apply
expect_match "apply -o json names the re-run" '^run.command r[0-9a-f]{12} 3$' \
    "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["rerun"]["changed"], d["rerun"]["job"], d["exit_code"])' "$T/a4.json")"

# 4. without --wait: started, apply returns
sed -e 's/^  command: .*/  command: sleep 1; echo "$GPUCTL_JOB_ID" >> "out\/jobs-$RANK"/' rr.yaml > rr4.yaml
run_rc rc g -y apply -f rr4.yaml > "$T/a5.txt" 2>&1
expect_eq "apply of a job change without --wait: exit 0" 0 "$rc"
expect_match "it says the nodes took the job" '^cluster rr: job r[0-9a-f]{12} handed to the same nodes, which run it after any job running there \(changed: run\.command\); gpuctl logs -f rr follows it$' "$(cat "$T/a5.txt")"
job4=$(sed -n 's/^cluster rr: job \(r[0-9a-f]*\) handed .*/\1/p' "$T/a5.txt")
expect_match "logs -f right after follows that job (not the previous one's end)" "gpuctl: === job $job4: " "$(g logs rr -f 2>&1)"
for _ in $(seq 120); do [ "$(tail -n1 code/out/jobs-1 2>/dev/null)" = "$job4" ] && break; sleep 0.5; done
expect_eq "both nodes ran it" "$job4|$job4" "$(tail -qn1 code/out/jobs-0 code/out/jobs-1 | paste -sd'|')"
expect_eq "the job file handed over is gone" "" "$(find "$h0/jobs" -name '.sent.*')"

# 4b. without --wait, the nodes' job runners do not take the job (a job.sh
# that stops at once): the job did not start, apply fails after waiting
# 30 s for them and the cluster keeps the spec it had
sed -e 's/^  command: .*/  command: echo "$GPUCTL_JOB_ID" >> "out\/jobs-$RANK"; echo 4b/' rr.yaml > rr4b.yaml
expect_eq "another run.command: the job runs again" "rerun run.command" "$(action rr4b.yaml)"
n_before=$(wc -l < code/out/jobs-0)
for h in "$h0" "$h1"; do
    mv "$h/job.sh" "$h/job.sh.away"
    printf '#!/bin/bash\necho "job.sh: broken" >&2\nexit 1\n' > "$h/job.sh"
done
run_rc rc g -y apply -f rr4b.yaml > "$T/a5b.txt" 2>&1
expect_eq "a job the nodes' runners did not take: apply exits 6 (provider)" 6 "$rc"
job4b=$(sed -n 's/^gpuctl: error: job \(r[0-9a-f]*\) .*/\1/p' "$T/a5b.txt")
expect_eq "it names each node and what it said" \
    "gpuctl: error: job $job4b did not start on 2 of 2 nodes: node 0: exit status 1: gpuctl: the node's job runner did not take job $job4b within 30s; node 1: exit status 1: gpuctl: the node's job runner did not take job $job4b within 30s" \
    "$(grep '^gpuctl: error: ' "$T/a5b.txt")"
expect_eq "and does not say the job was handed over" "" "$(grep 'handed to the same nodes' "$T/a5b.txt" || true)"
expect_eq "the job file is not left on the nodes" "" "$(find "$h0/jobs" "$h1/jobs" -name '.sent.*')"
expect_eq "the cluster keeps the spec it had: plan still runs the change again" \
    "rerun run.command" "$(action rr4b.yaml)"
expect_eq "and the spec it was applied with has nothing to run" "none -" "$(action rr4.yaml)"
expect_eq "nothing ran" "$n_before" "$(wc -l < code/out/jobs-0)"
for h in "$h0" "$h1"; do mv -f "$h/job.sh.away" "$h/job.sh"; done
run_rc rc g -y apply -f rr4b.yaml > "$T/a5c.txt" 2>&1
expect_eq "with the runners back, the next apply runs the change: exit 0" 0 "$rc"
expect_match "handed to the same nodes" '^cluster rr: job r[0-9a-f]{12} handed to the same nodes, which run it after any job running there \(changed: run\.command\); gpuctl logs -f rr follows it$' "$(cat "$T/a5c.txt")"
job4c=$(sed -n 's/^cluster rr: job \(r[0-9a-f]*\) handed .*/\1/p' "$T/a5c.txt")
for _ in $(seq 120); do [ "$(tail -n1 code/out/jobs-1 2>/dev/null)" = "$job4c" ] && break; sleep 0.5; done
expect_eq "both nodes ran it" "$job4c|$job4c" "$(tail -qn1 code/out/jobs-0 code/out/jobs-1 | paste -sd'|')"
expect_eq "then nothing to do" "none -" "$(action rr4b.yaml)"

# 5. the node count changed: not a re-run, a resize (test_replace.sh)
sed -e 's/^nodes: 2/nodes: 3/' rr4b.yaml > rr5.yaml
expect_eq "a node-count change is a resize" "resize -" "$(action rr5.yaml)"

g -y destroy rr > /dev/null
finish
