#!/bin/bash
# Crash safety of apply on the local provider:
#  - apply killed right after recording a node, then applied again: the
#    missing node is created, none twice;
#  - apply killed after the provider made a node but before it was recorded:
#    the client token finds that node again, no duplicate;
#  - apply killed inside the provider's create: the half-made node
#    directory (user-data, env values) goes on re-apply and on destroy;
#  - a create that fails removes what the apply made; nothing stays running;
#  - a job that fails: apply --wait exits 10 and reports rank 0's status.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" && cd "$T/work"
cat > job.yaml <<'YAML'
name: faulty
nodes: 2
run:
  command: python3 -c "import os; print('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'], 'node', os.environ['GPUCTL_NODE_RANK'])"
  nproc_per_node: 1
YAML

node_dirs() { find "$STATE/local" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }

# 1. killed after recording node 0
run_rc rc env GPUCTL_TEST_FAULT=kill-after-record:0 "$GPUCTL_BIN" --state-dir "$STATE" apply -f job.yaml
expect_eq "apply killed (SIGKILL)" 137 "$rc"
g -o json status faulty > "$T/s1.json"
expect_eq "after the kill: node 0 made, node 1 pending" "pending" \
    "$(json_get "$T/s1.json" '[n["phase"] for n in d["clusters"][0]["nodes"]][1]')"
expect_eq "one node directory" 1 "$(node_dirs)"
run_rc rc g -o json apply -f job.yaml --wait --timeout 300 > "$T/a1.json"
expect_eq "re-apply completes the job" 0 "$rc"
expect_eq "re-apply created only the missing node" 1 "$(json_get "$T/a1.json" 'd["created"]')"
expect_eq "two node directories, not three" 2 "$(node_dirs)"
expect_match "both nodes ran" "rank 1 of 2" "$(g logs faulty)"
g -y destroy faulty > /dev/null

# 2. killed between the provider's create and the record
run_rc rc env GPUCTL_TEST_FAULT=kill-before-record:1 "$GPUCTL_BIN" --state-dir "$STATE" apply -f job.yaml
expect_eq "apply killed before recording node 1" 137 "$rc"
expect_eq "the provider has both nodes" 2 "$(node_dirs)"
run_rc rc g -o json apply -f job.yaml --wait --timeout 300 > "$T/a2.json"
expect_eq "re-apply adopts node 1 and completes" 0 "$rc"
expect_eq "still two node directories" 2 "$(node_dirs)"
expect_eq "node 1 recorded once" 1 \
    "$(json_get "$T/a2.json" 'sum(1 for n in d["cluster_status"]["nodes"] if n["rank"] == 1)')"
g -y destroy faulty > /dev/null
expect_eq "destroy removed both" 0 "$(node_dirs)"

# 2b. (regression) apply killed in the middle of the provider's create
#     (GPUCTL_TEST_FAULT=kill-after-node-dir: the node directory written, the
#     node not started) left local/<node>-a1/ with the user-data and the
#     job's env values, which neither a re-apply nor destroy removed.
cat > leaky.yaml <<'YAML'
name: leaky
nodes: 2
env: { API_TOKEN: hunter2-e2e-secret }
run:
  command: python3 -c "import os; print('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])"
  nproc_per_node: 1
YAML
unstarted() { local k=0 d; for d in "$STATE"/local/*/; do [ -d "$d" ] && [ ! -s "$d/pid" ] && k=$((k + 1)); done; echo $k; }
secret_files() { grep -rl hunter2-e2e-secret "$STATE/local" 2>/dev/null | wc -l; }
run_rc rc env GPUCTL_TEST_FAULT=kill-after-node-dir:1 "$GPUCTL_BIN" --state-dir "$STATE" apply -f leaky.yaml
expect_eq "apply killed inside node 1's create" 137 "$rc"
expect_eq "node 1's directory is there, not started" "2 1" "$(node_dirs) $(unstarted)"
expect_eq "and it holds the env value" yes "$(grep -rlq hunter2-e2e-secret "$STATE"/local/leaky-1-*-a1 && echo yes || echo no)"
run_rc rc g -o json apply -f leaky.yaml --wait --timeout 300 > "$T/a2b.json"
expect_eq "re-apply creates node 1 and the job runs" "0 1" "$rc $(json_get "$T/a2b.json" 'd["created"]')"
expect_eq "two node directories, not three; none left unstarted" "2 0" "$(node_dirs) $(unstarted)"
g -y destroy leaky > /dev/null
expect_eq "destroy leaves no node directory and no env value" "0 0" "$(node_dirs) $(secret_files)"
run_rc rc env GPUCTL_TEST_FAULT=kill-after-node-dir:1 "$GPUCTL_BIN" --state-dir "$STATE" apply -f leaky.yaml
expect_eq "killed inside node 1's create again" "137 2 1" "$rc $(node_dirs) $(unstarted)"
run_rc rc g -y destroy leaky > "$T/d2b.txt"
expect_eq "destroy right after: exit 0, node 0 deleted" "0 cluster leaky: destroyed (1 node(s) deleted)" "$rc $(cat "$T/d2b.txt")"
expect_eq "and node 1's leftover is gone too, env value and all" "0 0" "$(node_dirs) $(secret_files)"

# 3. a failing create cleans up what the apply made
run_rc rc env GPUCTL_TEST_FAULT=fail-create:1 "$GPUCTL_BIN" --state-dir "$STATE" apply -f job.yaml 2> "$T/err3.txt"
expect_eq "failed apply exits 6 (provider)" 6 "$rc"
expect_match "error names the node" "injected provider failure creating faulty-1" "$(cat "$T/err3.txt")"
expect_eq "node 0 was removed again" 0 "$(node_dirs)"
g -o json status > "$T/s3.json"
expect_eq "no live cluster left" 0 "$(json_get "$T/s3.json" 'len(d["clusters"])')"
g -o json status --all > "$T/s3a.json"
expect_eq "history shows the failed attempt" "failed" \
    "$(json_get "$T/s3a.json" '[c["phase"] for c in d["clusters"] if c["name"] == "faulty"][-1]')"
run_rc rc g apply -f job.yaml --wait --timeout 300 > /dev/null
expect_eq "apply after a failed apply works" 0 "$rc"
g -y destroy faulty > /dev/null

# 3b. no capacity for node 1 on the only offer the plan has: the failover
# walk ends at once, node 0 is removed, and the exit status is capacity (22)
run_rc rc env GPUCTL_TEST_FAULT=fail-create:1:capacity "$GPUCTL_BIN" --state-dir "$STATE" apply -f job.yaml 2> "$T/err3b.txt"
expect_eq "no capacity on every offer: exit 22" 22 "$rc"
expect_eq "the error is the provider's own (one offer, no fallback)" \
    "gpuctl: error: local: injected capacity failure creating faulty-1" "$(tail -1 "$T/err3b.txt")"
expect_eq "node 0 was removed again" 0 "$(node_dirs)"
g -o json status > "$T/s3b.json"
expect_eq "no live cluster left" 0 "$(json_get "$T/s3b.json" 'len(d["clusters"])')"

# 4. the job fails: exit 10, rank 0's own status in JSON
cat > fail.yaml <<'YAML'
name: failing
run: { command: "exit 3", nproc_per_node: 1 }
YAML
run_rc rc g -o json apply -f fail.yaml --wait --timeout 300 > "$T/a4.json"
expect_eq "failed job: apply exits 10" 10 "$rc"
expect_eq "json: phase failed, exit_code 3" "failed 3" "$(json_get "$T/a4.json" 'd["phase"], d["exit_code"]' | tr -d "(),'")"
check_schema "$T/a4.json" apply
run_rc rc g logs failing -f > "$T/l4.txt"
expect_eq "logs -f ends with the job's exit status 3, having printed it" "3 exit status 3" \
    "$rc $(grep -o 'exit status 3$' "$T/l4.txt" | tail -1)"
g -y destroy failing > /dev/null

# 5. a spec the machine cannot satisfy: nothing is created
cat > gpu.yaml <<'YAML'
name: needs-gpus
resources: { gpu: "H100:64" }
run: { command: "true" }
YAML
run_rc rc g apply -f gpu.yaml 2> "$T/err5.txt"
expect_eq "no capacity: exit 22" 22 "$rc"
expect_match "says why" "resources.gpu does not fit this machine" "$(cat "$T/err5.txt")"
expect_eq "nothing recorded" 0 "$(g -o json status | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["clusters"]))')"

# 5b. (regression) destroy after a kill between create and record: the
#     unrecorded node is found by its client token and deleted too.
run_rc rc env GPUCTL_TEST_FAULT=kill-before-record:1 "$GPUCTL_BIN" --state-dir "$STATE" apply -f job.yaml
expect_eq "killed before recording node 1" 137 "$rc"
expect_eq "the provider has both nodes" 2 "$(node_dirs)"
run_rc rc g -y destroy faulty > "$T/d5b.txt"
expect_eq "destroy exits 0" 0 "$rc"
expect_eq "destroy deleted both, the unrecorded one too" "cluster faulty: destroyed (2 node(s) deleted)" "$(cat "$T/d5b.txt")"
expect_eq "no node directory left" 0 "$(node_dirs)"

# 5c. (regression) a failed apply after an interrupted one keeps the
#     missing node pending, so the next apply still creates it.
run_rc rc env GPUCTL_TEST_FAULT=kill-after-record:0 "$GPUCTL_BIN" --state-dir "$STATE" apply -f job.yaml
expect_eq "first apply killed after node 0" 137 "$rc"
run_rc rc env GPUCTL_TEST_FAULT=fail-create:1 "$GPUCTL_BIN" --state-dir "$STATE" apply -f job.yaml 2>/dev/null
expect_eq "second apply fails creating node 1" 6 "$rc"
run_rc rc g -o json apply -f job.yaml --wait --timeout 300 > "$T/a5c.json"
expect_eq "third apply creates node 1 and the job runs" "0 1" "$rc $(json_get "$T/a5c.json" 'd["created"]')"
g -y destroy faulty > /dev/null

# 6. a node whose bootstrap is killed: destroy still takes all of its
#    processes (torchrun and the workers live in other process groups).
cat > long.yaml <<'YAML'
name: longrun
nodes: 2
run: { command: "sleep 307", nproc_per_node: 1 }
YAML
g apply -f long.yaml > /dev/null
for _ in $(seq 100); do
    [ "$(pgrep -fc 'sleep 307' || true)" -ge 2 ] && break
    sleep 0.2
done
expect_eq "both workers started" 2 "$(pgrep -fc 'sleep 307' || true)"
pg=$(cut -d' ' -f1 "$STATE"/local/longrun-1-*/pid)
kill -9 -- "-$pg"
sleep 0.5

# 7. --wait does not hold the lock: destroy goes through meanwhile.
( set +e; g apply -f long.yaml --wait --timeout 120 > /dev/null 2>&1; echo $? > "$T/wait.rc" ) &
wpid=$!
sleep 1
start=$(date +%s)
run_rc rc g -y destroy longrun > /dev/null
expect_eq "destroy during another's --wait: exit 0" 0 "$rc"
expect_eq "destroy did not wait for the waiter" yes "$([ $(( $(date +%s) - start )) -lt 20 ] && echo yes || echo no)"
wait $wpid || true
expect_eq "the waiter sees rank 0 go (exit 11)" 11 "$(cat "$T/wait.rc")"
expect_eq "no process of the job is left" 0 "$(pgrep -fc 'sleep 307' || true)"

# 8. rank 0 fails before the job starts: a worker still waiting for the
#    head is stopped, not left to wait (and bill) for nothing.
cat > headfail.yaml <<'YAML'
name: headfail
nodes: 2
setup: test "$GPUCTL_NODE_RANK" != 0
run: { command: "true", nproc_per_node: 1 }
YAML
run_rc rc g apply -f headfail.yaml --wait --timeout 120 > "$T/hf.txt" 2> "$T/hf.err"
expect_eq "setup failure on rank 0: exit 10" 10 "$rc"
expect_match "the waiting worker is stopped" "stopped node headfail-1: the job ended before this node joined" "$(cat "$T/hf.err")"
g -o json status headfail > "$T/hf.json"
expect_eq "node 1 terminated, node 0 failed with setup's status 1" "failed 1 terminated" \
    "$(json_get "$T/hf.json" '" ".join(str(x) for x in (d["clusters"][0]["nodes"][0]["phase"], d["clusters"][0]["nodes"][0]["exit_code"], d["clusters"][0]["nodes"][1]["phase"]))')"
g -y destroy headfail > /dev/null

# 9. a destroyed cluster is still shown by name with --all
run_rc rc g status --all headfail > "$T/hist.txt"
expect_eq "status --all NAME after destroy: exit 0" 0 "$rc"
expect_match "shows it terminated" "^headfail +local +2 +terminated" "$(cat "$T/hist.txt")"

# 10. a worker fails while rank 0 waits for it: after the grace period the
#     job fails (exit 10, naming the worker) and rank 0 is stopped too.
cat > workerfail.yaml <<'YAML'
name: workerfail
nodes: 2
setup: if [ "$GPUCTL_NODE_RANK" = 1 ]; then exit 3; fi
run: { command: "true", nproc_per_node: 1 }
YAML
run_rc rc g apply -f workerfail.yaml --wait --timeout 200 > /dev/null 2> "$T/wf.err"
expect_eq "worker failure: exit 10" 10 "$rc"
expect_match "names the worker" "node workerfail-1 failed \(exit status 3\) and rank 0 did not finish within 30 s" "$(cat "$T/wf.err")"
expect_match "rank 0 is stopped" "stopped node workerfail-0: a worker failed and the job cannot finish" "$(cat "$T/wf.err")"
g -y destroy workerfail > /dev/null

# 11. a node whose pid file is lost is not taken for gone: destroy still
#     finds its processes (by GPUCTL_HOME) and stops them.
g apply -f long.yaml > /dev/null
for _ in $(seq 100); do
    [ "$(pgrep -fc 'sleep 307' || true)" -ge 2 ] && break
    sleep 0.2
done
: > "$(echo "$STATE"/local/longrun-1-*/pid)"
g -o json status longrun > "$T/pl.json"
expect_eq "node with a lost pid file: failed, not terminated" failed \
    "$(json_get "$T/pl.json" 'd["clusters"][0]["nodes"][1]["phase"]')"
run_rc rc g -y destroy longrun > "$T/pl.txt"
expect_eq "destroy: exit 0, both deleted" "0 cluster longrun: destroyed (2 node(s) deleted)" "$rc $(cat "$T/pl.txt")"
expect_eq "no process of the job is left" 0 "$(pgrep -fc 'sleep 307' || true)"
finish
