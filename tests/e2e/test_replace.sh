#!/bin/bash
# apply of a spec whose shape changed (here the node count) to a live local
# cluster: plan shows the replacement (the old nodes deleted, the new ones
# created, the diff); apply asks first: without a terminal and without -y
# it refuses and changes nothing, "n" on a terminal cancels, --dry-run
# says what it would do; -y, "y" or a saved plan replace the nodes: the
# old node processes end, the new nodes run the job with the new world
# size and resume from the checkpoint_dir; the cluster keeps its name, uid
# and history.
source "$(dirname "$0")/lib.sh" || exit 1
# alive PID...: those of the processes that still run, space-separated
alive() { local p out=(); for p in "$@"; do if kill -0 "$p" 2>/dev/null; then out+=("$p"); fi; done; echo "${out[*]}"; }
# live NAME FIELD: that field of cluster NAME's live nodes, space-separated
live() { g -o json status "$1" | python3 -c 'import json,sys; c=json.load(sys.stdin)["clusters"][0]; print(" ".join(str(n[sys.argv[1]]) for n in c["nodes"] if n["phase"] != "terminated"))' "$2"; }
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
pids_before=$(for f in "$STATE"/local/rp-*/pid; do read -r p _ < "$f"; echo "$p"; done | paste -sd' ')
ids_before=$(live rp provider_id)
uid=$(g -o json status rp | python3 -c 'import json,sys; print(json.load(sys.stdin)["clusters"][0]["uid"])')
expect_eq "both nodes counted step 1" "1 1" "$(cat ckpt/step-0 ckpt/step-1 | paste -sd' ')"

# 1. plan shows the replacement
run_rc rc g plan -f rp3.yaml --detailed-exitcode > "$T/p1.txt" 2>&1
expect_eq "plan --detailed-exitcode: changes (2)" 2 "$rc"
expect_match "the cluster line with the diff" '^  -/\+ cluster rp: its nodes are replaced by new ones on local \(changed: nodes 2 -> 3\); its name and store \(checkpoints, data\) stay$' "$(cat "$T/p1.txt")"
expect_match "each old node, deleted" "^  - node rp-0 \(rank 0\): local local local, rp-0-[0-9a-f]{8}-a1 \(succeeded\)$" "$(cat "$T/p1.txt")"
expect_match "each new node, created" '^  \+ node rp-2 \(rank 2\): local local local/local, on-demand, 0.0000 USD/hour$' "$(cat "$T/p1.txt")"
expect_match "the summary" '^Plan: 3 to create \(0 cluster, 3 nodes\), 2 nodes to delete; apply asks first \(-y in scripts\)\.$' "$(cat "$T/p1.txt")"
run_rc rc g -o json plan -f rp3.yaml --out p3.json > "$T/p1.json" 2>/dev/null
expect_eq "plan --out: exit 0" 0 "$rc"
check_schema p3.json plan
expect_eq "plan JSON: the action, the diff and the changes" \
    "replace|nodes 2 -> 3|replace cluster local|delete node rp-0 0|delete node rp-1 1|create node rp-0 0|create node rp-1 1|create node rp-2 2" \
    "$(json_get p3.json '"|".join([d["action"], d["replace"]] + [" ".join(str(x) for x in (c["action"], c["resource"], c.get("provider") if c["resource"] == "cluster" else c["name"], "" if c["resource"] == "cluster" else c["rank"])).strip() for c in d["changes"]])')"
expect_eq "the deleted nodes are named by their ids" "$ids_before" \
    "$(json_get p3.json '" ".join(c["provider_id"] for c in d["changes"] if c["action"] == "delete")')"

# 2. apply asks: no terminal, no -y: refused; nothing changes
run_rc rc g apply -f rp3.yaml < /dev/null > "$T/a2.txt" 2>&1
expect_eq "apply without -y and without a terminal: exit 3 (usage)" 3 "$rc"
expect_eq "says why and what to do" "gpuctl: error: cluster 'rp' changed its shape (nodes 2 -> 3): apply would replace its 2 nodes, which needs a confirmation, and there is no terminal to ask on; pass -y (gpuctl plan shows what is replaced)" "$(cat "$T/a2.txt")"
# shellcheck disable=SC2086  # the pids, one word each
expect_eq "the nodes still run" "$pids_before" "$(alive $pids_before)"
# "n" on a terminal (script(1) gives it one): cancelled, nothing changed
printf 'n\n' | script -qec "$GPUCTL_BIN --state-dir $STATE apply -f rp3.yaml" /dev/null > "$T/a3.txt" 2>&1 || true
expect_match "the question names the change" "Replace cluster 'rp': delete its 2 nodes and create 3 on local \(changed: nodes 2 -> 3\)\? \[y/N\]" "$(cat "$T/a3.txt")"
expect_match "answered no: cancelled" "apply cancelled; nothing was changed" "$(cat "$T/a3.txt")"
run_rc rc g apply -f rp3.yaml --dry-run > "$T/a4.txt" 2>&1
expect_eq "--dry-run: exit 0" 0 "$rc"
expect_eq "--dry-run says what it would do" "cluster rp: would replace its nodes: create 3 (changed: nodes 2 -> 3) (dry run, nothing changed)" "$(cat "$T/a4.txt")"
expect_eq "still the same nodes" "$ids_before" "$(live rp provider_id)"

# 3. the saved plan (reviewed) carries it out without asking
run_rc rc g apply p3.json --wait > "$T/a5.txt" 2>&1
expect_eq "apply PLANFILE --wait: exit 0" 0 "$rc"
expect_match "it says what it replaced" '^cluster rp: replaced: deleted 2 node\(s\), created 3 \(changed: nodes 2 -> 3\)$' "$(cat "$T/a5.txt")"
expect_match "and when the job's first output came" '^gpuctl: the job.s first output came [0-9]+\.[0-9] s after apply began$' "$(cat "$T/a5.txt")"
for _ in $(seq 50); do
    # shellcheck disable=SC2086
    left=$(alive $pids_before)
    [ -z "$left" ] && break
    sleep 0.1
done
expect_eq "the old node processes ended" "" "$left"
expect_eq "the new nodes ran with world size 3" "step 2 world 3|step 2 world 3|step 1 world 3" \
    "$(for r in 0 1 2; do grep -ho 'step [0-9]* world [0-9]*' "$STATE"/local/rp-$r-*-a2/node.log | tail -n1; done | paste -sd'|')"
expect_eq "and counted on from the checkpoint" "2 2 1" "$(cat ckpt/step-0 ckpt/step-1 ckpt/step-2 | paste -sd' ')"
g -o json status rp > "$T/s.json"
expect_eq "the same cluster (uid), 3 nodes wanted" "$uid 3" \
    "$(json_get "$T/s.json" '"%s %d" % (d["clusters"][0]["uid"], d["clusters"][0]["nodes_desired"])')"
expect_match "3 live nodes of a new launch attempt" "^rp-0-[0-9a-f]{8}-a2 rp-1-[0-9a-f]{8}-a2 rp-2-[0-9a-f]{8}-a2$" "$(live rp provider_id)"
expect_eq "the history says so" "replacing the cluster's nodes on local (changed: nodes 2 -> 3)" \
    "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select message from events where kind = ?", ("replace",)).fetchone()[0])' "$STATE/gpuctl.db")"
expect_eq "a plan now has nothing to do" none "$(g -o json plan -f rp3.yaml | python3 -c 'import json,sys; print(json.load(sys.stdin)["action"])')"

# 4. -y, and -o json: back to 1 node with another env (a job field too)
sed -e 's/^nodes: 2/nodes: 1/' -e 's/^lifecycle:/env:\n  X: "1"\nlifecycle:/' rp.yaml > rp1.yaml
run_rc rc g -y -o json apply -f rp1.yaml --wait > "$T/a6.json" 2> "$T/a6.err"
expect_eq "apply -y -o json: exit 0" 0 "$rc"
check_schema "$T/a6.json" apply
expect_eq "apply JSON: what was replaced" "nodes 3 -> 1, env|3|1|None" \
    "$(json_get "$T/a6.json" '"|".join(str(x) for x in (d["replaced"]["changed"], d["replaced"]["removed"], d["created"], d["rerun"]))')"
expect_eq "apply JSON: the job's first output, in seconds after apply began" True \
    "$(json_get "$T/a6.json" '0 < d["first_output_s"] < 300')"
expect_match "recorded as a timing event" "^the job's first output [0-9]+\.[0-9] s after apply began$" \
    "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select message from events where kind = ? order by id desc", ("timing",)).fetchone()[0])' "$STATE/gpuctl.db")"
# "y" on a terminal
printf 'y\n' | script -qec "$GPUCTL_BIN --state-dir $STATE apply -f rp.yaml --wait" /dev/null > "$T/a7.txt" 2>&1 || true
expect_match "answered yes: replaced" "cluster rp: replaced: deleted 1 node\(s\), created 2 \(changed: nodes 1 -> 2, env\)" "$(cat "$T/a7.txt")"
expect_eq "2 live nodes" "0 1" "$(live rp rank)"

pids=$(for f in "$STATE"/local/rp-*/pid; do read -r p _ < "$f"; echo "$p"; done)
g -y destroy rp > /dev/null
for _ in $(seq 100); do
    # shellcheck disable=SC2086
    left=$(alive $pids)
    [ -z "$left" ] && break
    sleep 0.1
done
expect_eq "destroy: no node process is left" "" "$left"
finish
