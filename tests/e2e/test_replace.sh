#!/bin/bash
# apply of a spec whose shape changed to a live local cluster whose nodes
# stay up after their job (lifecycle.idle_timeout):
#  1. only the node count (2 -> 3): a resize. plan shows the node added and
#     the job to run again; apply asks first: without a terminal and without
#     -y it refuses and changes nothing, "n" on a terminal cancels,
#     --dry-run says what it would do; a saved plan carries it out: the two
#     node processes stay, a third node comes, and the job runs on all three
#     with world size 3 (and counts on from the checkpoint_dir);
#  2. 3 -> 1 with another env, -y -o json: nodes 1 and 2 are deleted, node 0
#     stays and runs the job alone;
#  3. another shape field (run.nproc_per_node): a replacement. plan lists
#     each node deleted and created; "y" on a terminal: the old node
#     processes end, new nodes run the job with the new world size; the
#     cluster keeps its name and uid;
#  4. the job's first output is said, recorded and in -o json.
source "$(dirname "$0")/lib.sh" || exit 1
# alive PID...: those of the processes that still run, space-separated
alive() { local p out=(); for p in "$@"; do if kill -0 "$p" 2>/dev/null; then out+=("$p"); fi; done; echo "${out[*]}"; }
# live NAME FIELD: that field of cluster NAME's live nodes, space-separated
live() { g -o json status "$1" | python3 -c 'import json,sys; c=json.load(sys.stdin)["clusters"][0]; print(" ".join(str(n[sys.argv[1]]) for n in c["nodes"] if n["phase"] != "terminated"))' "$2"; }
# pids: the node processes of cluster rp's live nodes, by rank
pids() { local id p out=(); for id in $(live rp provider_id); do read -r p _ < "$STATE/local/$id/pid"; out+=("$p"); done; echo "${out[*]}"; }
# lastlines: each live node's last "step N world W" line, sorted (which
# node gets which global rank is the rendezvous's choice), |-separated
lastlines() { local id; for id in $(live rp provider_id); do grep -ho 'step [0-9]* world [0-9]*' "$STATE/local/$id/node.log" | tail -n1; done | sort | paste -sd'|'; }
event() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select message from events where kind = ? order by id desc", (sys.argv[2],)).fetchone()[0])' "$STATE/gpuctl.db" "$1"; }
mkdir -p "$T/work/ckpt"
cd "$T/work"
cat > rp.yaml <<'SPEC'
name: rp
provider: local
nodes: 2
resources:
  cpus: 1+
checkpoint_dir: ./ckpt
lifecycle:
  idle_timeout: 300s
run:
  # each run counts on from the last checkpoint and says its world size
  command: c=$GPUCTL_CHECKPOINT_DIR/step-$RANK; n=$(cat $c 2>/dev/null || echo 0); echo $((n + 1)) > $c; echo "step $((n + 1)) world $WORLD_SIZE"
  nproc_per_node: 1
SPEC
sed -e 's/^nodes: 2/nodes: 3/' rp.yaml > rp3.yaml

run_rc rc g -y apply -f rp.yaml --wait > "$T/a1.txt" 2>&1
expect_eq "the first apply runs the job" 0 "$rc"
pids_before=$(pids)
ids_before=$(live rp provider_id)
uid=$(g -o json status rp | python3 -c 'import json,sys; print(json.load(sys.stdin)["clusters"][0]["uid"])')
expect_eq "both nodes counted step 1" "1 1" "$(cat ckpt/step-0 ckpt/step-1 | paste -sd' ')"

# 1. the node count: a resize
run_rc rc g plan -f rp3.yaml --detailed-exitcode > "$T/p1.txt" 2>&1
expect_eq "plan --detailed-exitcode: changes (2)" 2 "$rc"
expect_match "the cluster line with the diff" '^  ~ cluster rp: its live nodes stay, nodes are added or removed to the new count \(changed: nodes 2 -> 3\)$' "$(cat "$T/p1.txt")"
expect_match "the job runs again" "^  ~ job of cluster 'rp': runs again on all its nodes, the kept ones after any job running there, with the new world size$" "$(cat "$T/p1.txt")"
expect_match "the new node" '^  \+ node rp-2 \(rank 2\): local local local/local, on-demand, 0.0000 USD/hour$' "$(cat "$T/p1.txt")"
expect_eq "no node of the two is in the plan" "" "$(grep -E '^  [-+] node rp-[01] ' "$T/p1.txt" || true)"
expect_match "the summary" '^Plan: 1 to create \(0 cluster, 1 node\), 1 job to run again, 0 nodes to delete; apply asks first \(-y in scripts\)\.$' "$(cat "$T/p1.txt")"
run_rc rc g -o json plan -f rp3.yaml --out p3.json > /dev/null 2>&1
expect_eq "plan --out: exit 0" 0 "$rc"
check_schema p3.json plan
expect_eq "plan JSON: the action, the diff and the changes" \
    "resize|nodes 2 -> 3|rerun job|resize cluster|create node rp-2" \
    "$(json_get p3.json '"|".join([d["action"], d["resize"]] + [" ".join((c["action"], c["resource"]) + ((c["name"],) if c["resource"] == "node" else ())) for c in d["changes"]])')"

run_rc rc g apply -f rp3.yaml < /dev/null > "$T/a2.txt" 2>&1
expect_eq "apply without -y and without a terminal: exit 3 (usage)" 3 "$rc"
expect_eq "says why and what to do" "gpuctl: error: cluster 'rp' changed its node count (nodes 2 -> 3): apply would delete 0 nodes, create 1 and run its job again on all, which needs a confirmation, and there is no terminal to ask on; pass -y (gpuctl plan shows what changes)" "$(cat "$T/a2.txt")"
# "n" on a terminal (script(1) gives it one): cancelled, nothing changed
printf 'n\n' | script -qec "$GPUCTL_BIN --state-dir $STATE apply -f rp3.yaml" /dev/null > "$T/a3.txt" 2>&1 || true
expect_match "the question names the change" "Resize cluster 'rp': delete 0 nodes, create 1, and run its job again on all of them \(changed: nodes 2 -> 3\)\? \[y/N\]" "$(cat "$T/a3.txt")"
expect_match "answered no: cancelled" "apply cancelled; nothing was changed" "$(cat "$T/a3.txt")"
run_rc rc g apply -f rp3.yaml --dry-run > "$T/a4.txt" 2>&1
expect_eq "--dry-run: exit 0" 0 "$rc"
expect_eq "--dry-run says what it would do" "cluster rp: would resize: create 1 node(s), delete 0, and run its job again on all (changed: nodes 2 -> 3) (dry run, nothing changed)" "$(cat "$T/a4.txt")"
expect_eq "still the same nodes" "$ids_before" "$(live rp provider_id)"

run_rc rc g apply p3.json --wait > "$T/a5.txt" 2>&1
expect_eq "apply PLANFILE --wait: exit 0" 0 "$rc"
expect_match "it says what it did" '^cluster rp: resized: deleted 0 node\(s\), created 1; job r[0-9a-f]{12} ran on all 3 \(changed: nodes 2 -> 3\)$' "$(cat "$T/a5.txt")"
expect_eq "the two node processes stayed" "$pids_before" "$(cut -d' ' -f1-2 <<< "$(pids)")"
expect_match "a third node of a new launch attempt" "^$ids_before rp-2-[0-9a-f]{8}-a2$" "$(live rp provider_id)"
expect_eq "the job ran on all three with world size 3" "step 1 world 3|step 2 world 3|step 2 world 3" "$(lastlines)"
expect_eq "counting on from the checkpoint" "2 2 1" "$(cat ckpt/step-0 ckpt/step-1 ckpt/step-2 | paste -sd' ')"
expect_eq "the history says so" "resizing the cluster: 2 -> 3 node(s) (changed: nodes 2 -> 3)" "$(event replace)"
expect_eq "a plan now has nothing to do" none "$(g -o json plan -f rp3.yaml | python3 -c 'import json,sys; print(json.load(sys.stdin)["action"])')"

# 2. 3 -> 1 with another env (a job field too), -y -o json
pid0=$(cut -d' ' -f1 <<< "$(pids)")
sed -e 's/^nodes: 2/nodes: 1/' -e 's/^lifecycle:/env:\n  X: "1"\nlifecycle:/' rp.yaml > rp1.yaml
run_rc rc g -y -o json apply -f rp1.yaml --wait > "$T/a6.json" 2> "$T/a6.err"
expect_eq "apply -y -o json 3 -> 1: exit 0" 0 "$rc"
check_schema "$T/a6.json" apply
expect_match "apply JSON: resized, 2 removed, none created, the job" "^nodes 3 -> 1, env\|2\|True\|0\|r[0-9a-f]{12}$" \
    "$(json_get "$T/a6.json" '"|".join(str(x) for x in (d["replaced"]["changed"], d["replaced"]["removed"], d["replaced"]["resized"], d["created"], d["replaced"]["job"]))')"
expect_eq "node 0 stayed, alone" "0 $pid0" "$(live rp rank) $(pids)"
expect_eq "and ran the job with world size 1" "step 3 world 1" "$(lastlines)"

# 2b. a resize while a job runs on the nodes that stay: refused, nothing
# changes (new nodes could not join the rendezvous the running job holds)
sed -e 's|^  command: .*|  command: until [ -e $GPUCTL_CHECKPOINT_DIR/go ]; do sleep 0.2; done|' rp1.yaml > rps.yaml
run_rc rc g -y apply -f rps.yaml > /dev/null 2>&1
expect_eq "2b. a job that waits on node 0 (a re-run, without --wait): exit 0" 0 "$rc"
sed -e 's/^nodes: 1/nodes: 2/' rps.yaml > rps2.yaml
run_rc rc g -y apply -f rps2.yaml > "$T/a6b.txt" 2>&1
expect_eq "2b. a resize while it runs: exit 3" 3 "$rc"
expect_eq "2b. says why and what to do" "gpuctl: error: cluster 'rp': a job still runs on rp-0; a resize runs the job again on every node with the new world size, and new nodes cannot join while it runs: apply again once it has ended (gpuctl logs -f rp follows it)" "$(cat "$T/a6b.txt")"
expect_eq "2b. nothing changed" "0 $pid0" "$(live rp rank) $(pids)"
touch ckpt/go
run_rc rc g logs rp -f > /dev/null 2>&1
expect_eq "2b. the job ended" 0 "$rc"
run_rc rc g -y apply -f rp1.yaml --wait > /dev/null 2>&1
expect_eq "2b. the spec before it again (a re-run): exit 0" 0 "$rc"

# 3. another shape field: the nodes are replaced
sed -e 's/^  nproc_per_node: 1/  nproc_per_node: 2/' rp1.yaml > rpn.yaml
run_rc rc g plan -f rpn.yaml > "$T/p2.txt" 2>&1
expect_match "plan: the cluster replaced, with the diff" '^  -/\+ cluster rp: its nodes are replaced by new ones on local \(changed: run\.nproc_per_node 1 -> 2\); its name and store \(checkpoints, data\) stay$' "$(cat "$T/p2.txt")"
expect_match "the node deleted, with its id and phase" "^  - node rp-0 \(rank 0\): local local local, rp-0-[0-9a-f]{8}-a1 \(succeeded\)$" "$(cat "$T/p2.txt")"
expect_match "the node created" '^  \+ node rp-0 \(rank 0\): local local local/local, on-demand, 0.0000 USD/hour$' "$(cat "$T/p2.txt")"
expect_match "the summary" '^Plan: 1 to create \(0 cluster, 1 node\), 1 node to delete; apply asks first \(-y in scripts\)\.$' "$(cat "$T/p2.txt")"
run_rc rc g apply -f rpn.yaml < /dev/null > "$T/a7.txt" 2>&1
expect_eq "the replacement without -y or a terminal: exit 3" 3 "$rc"
expect_eq "says why" "gpuctl: error: cluster 'rp' changed (run.nproc_per_node 1 -> 2): apply would replace its 1 node, which needs a confirmation, and there is no terminal to ask on; pass -y (gpuctl plan shows what is replaced)" "$(cat "$T/a7.txt")"
printf 'y\n' | script -qec "$GPUCTL_BIN --state-dir $STATE apply -f rpn.yaml --wait" /dev/null > "$T/a8.txt" 2>&1 || true
expect_match "the question" "Replace cluster 'rp': delete its 1 node and create 1 on local \(changed: run\.nproc_per_node 1 -> 2\)\? \[y/N\]" "$(cat "$T/a8.txt")"
expect_match "answered yes: replaced" "cluster rp: replaced: deleted 1 node\(s\), created 1 \(changed: run\.nproc_per_node 1 -> 2\)" "$(cat "$T/a8.txt")"
expect_match "4. and when the job's first output came" "gpuctl: the job.s first output came [0-9]+\.[0-9] s after apply began" "$(cat "$T/a8.txt")"
expect_match "4. recorded as a timing event" "^the job's first output [0-9]+\.[0-9] s after apply began$" "$(event timing)"
for _ in $(seq 50); do [ -z "$(alive "$pid0")" ] && break; sleep 0.1; done
expect_eq "the old node process ended" "" "$(alive "$pid0")"
expect_match "a new node 0" '^rp-0-[0-9a-f]{8}-a3$' "$(live rp provider_id)"
expect_match "it ran the job with 2 processes" "^step [0-9]+ world 2$" "$(lastlines)"
expect_eq "the same cluster (uid)" "$uid" "$(g -o json status rp | python3 -c 'import json,sys; print(json.load(sys.stdin)["clusters"][0]["uid"])')"
expect_eq "the history says so" "replacing the cluster's nodes on local (changed: run.nproc_per_node 1 -> 2)" "$(event replace)"

# 3b. a replacement whose new node cannot be made: the old one is gone, but
# the cluster stays recorded (its name, uid and history) with its node to
# create; the next apply makes it (a trial found an interrupted replacement
# closed the cluster as a new one's failed first attempt)
sed -e 's/^  nproc_per_node: 2/  nproc_per_node: 1/' rpn.yaml > rpm.yaml
run_rc rc env GPUCTL_TEST_FAULT=fail-create:0:capacity "$GPUCTL_BIN" --state-dir "$STATE" -y apply -f rpm.yaml > "$T/a10.txt" 2>&1
expect_eq "3b. the create fails: exit 22 (capacity)" 22 "$rc"
expect_match "3b. the cluster stays recorded" "cluster 'rp' stays recorded with 0 node\(s\): gpuctl apply finishes it, gpuctl destroy rp removes it" "$(cat "$T/a10.txt")"
expect_eq "3b. the same cluster (uid), its node to create" "$uid pending" \
    "$(g -o json status rp | python3 -c 'import json,sys; c=json.load(sys.stdin)["clusters"][0]; print(c["uid"], " ".join(n["phase"] for n in c["nodes"] if n["phase"] != "terminated"))')"

# 4. the next apply makes it; -o json of a --wait apply has the first
# output's time
run_rc rc g -y -o json apply -f rpm.yaml --wait > "$T/a9.json" 2> /dev/null
expect_eq "4. apply -y -o json --wait: exit 0" 0 "$rc"
check_schema "$T/a9.json" apply
expect_eq "4. the node made, the first output's time in seconds after apply began" "1 True" \
    "$(json_get "$T/a9.json" '"%d %s" % (d["created"], 0 < d["first_output_s"] < 300)')"

# 4b. torchrun's own lines (its OMP_NUM_THREADS notice with 2 processes a
# node) are not the job's first output (a trial found they were)
cat > fo.yaml <<'SPEC'
name: fo
provider: local
nodes: 1
run:
  command: sleep 6; echo hi
  nproc_per_node: 2
SPEC
run_rc rc g -y -o json apply -f fo.yaml --wait > "$T/fo.json" 2> /dev/null
expect_eq "4b. apply --wait: exit 0" 0 "$rc"
expect_eq "4b. the first output is the job's, after its 6 s sleep" True "$(json_get "$T/fo.json" 'd["first_output_s"] >= 6')"
g -y destroy fo > /dev/null

# 5. a destroy while apply --wait runs a job again: exit 11 (lost), not 10
# (a trial found 10)
pids=$(pids)
rm -f ckpt/go
sed -e 's|^  command: .*|  command: until [ -e $GPUCTL_CHECKPOINT_DIR/go ]; do sleep 0.2; done|' rpm.yaml > rpw.yaml
g -y apply -f rpw.yaml --wait > "$T/a11.txt" 2>&1 &
apply_pid=$!
for _ in $(seq 300); do
    [ "$(cut -d' ' -f1 "$STATE/local/$(live rp provider_id)/job" 2>/dev/null)" = running ] &&
        grep -q '^r' "$STATE/local/$(live rp provider_id)/job_id" 2>/dev/null && break
    sleep 0.1
done
g -y destroy rp > /dev/null
run_rc rc wait "$apply_pid"
expect_eq "5. apply --wait of a job its cluster's destroy took: exit 11" 11 "$rc"
expect_match "5. it says so" "^gpuctl: error: cluster 'rp' was destroyed while job r[0-9a-f]{12} ran$" "$(cat "$T/a11.txt")"
for _ in $(seq 100); do
    # shellcheck disable=SC2086
    left=$(alive $pids)
    [ -z "$left" ] && break
    sleep 0.1
done
expect_eq "destroy: no node process is left" "" "$left"
finish
