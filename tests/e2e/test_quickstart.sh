#!/bin/bash
# The quickstart end to end on the local provider: 2 nodes x 2 processes
# train on the sklearn digits to >= 95 % test accuracy; every rank is seen
# in the logs; re-apply is a no-op; destroy twice is fine.
source "$(dirname "$0")/lib.sh" || exit 1
copy_examples
cd "$T/work"

run_rc rc g -o json apply -f quickstart.yaml --wait --timeout 600 > "$T/apply.json"
expect_eq "apply --wait exits 0" 0 "$rc"
check_schema "$T/apply.json" apply
expect_eq "apply json: phase" succeeded "$(json_get "$T/apply.json" 'd["phase"]')"
expect_eq "apply json: rank 0 exit_code" 0 "$(json_get "$T/apply.json" 'd["exit_code"]')"
expect_eq "apply json: created" 2 "$(json_get "$T/apply.json" 'd["created"]')"
expect_eq "apply json: nodes" "0 succeeded,1 succeeded" \
    "$(json_get "$T/apply.json" '",".join("%d %s" % (n["rank"], n["phase"]) for n in d["cluster_status"]["nodes"])')"

g logs quickstart > "$T/logs.txt"
g -o json logs quickstart > "$T/logs.json"
check_schema "$T/logs.json" logs
expect_eq "logs json: both nodes, each with its log" "0 1 yes" \
    "$(json_get "$T/logs.json" '" ".join(str(n["rank"]) for n in d["nodes"]) + " " + ("yes" if all("gpuctl: exit status 0" in n["log"] for n in d["nodes"]) else "no")')"
run_rc rc g -o json logs quickstart --follow > /dev/null 2> "$T/e.txt"
expect_eq "logs -f -o json: exit 3" 3 "$rc"
run_rc rc g logs quickstart -f > "$T/logs-f.txt"
expect_eq "logs -f of the ended job: the same log, and the job's exit status 0" "0 same" \
    "$rc $(cmp -s "$T/logs.txt" "$T/logs-f.txt" && echo same || echo differs)"
logs=$(cat "$T/logs.txt")
for r in 0 1 2 3; do
    expect_match "rank $r seen in the logs" "rank $r/4 ready on node [01] " "$logs"
done
expect_match "both nodes logged" '^\[node 1\] ' "$logs"
acc=$(grep -Eo 'final test_accuracy [0-9.]+' "$T/logs.txt" | awk '{print $3}' | tail -1)
echo "# final test accuracy: $acc"
expect_eq "accuracy >= 0.95" yes "$(python3 -c "print('yes' if float('${acc:-0}') >= 0.95 else 'no')")"
expect_match "target reached" "target accuracy reached" "$logs"
expect_eq "20 epochs printed by rank 0" 20 "$(grep -c 'epoch [0-9]*/20 loss' "$T/logs.txt")"
expect_eq "a checkpoint per epoch" 20 "$(ls checkpoints/quickstart | grep -c '^ckpt-epoch-.*\.pt$')"

g -o json status quickstart > "$T/status.json"
check_schema "$T/status.json" status
expect_eq "status: succeeded" succeeded "$(json_get "$T/status.json" 'd["clusters"][0]["phase"]')"
expect_eq "status: cost of local nodes" 0 "$(json_get "$T/status.json" 'int(d["clusters"][0]["cost_usd"])')"
out=$(g status)
expect_match "status table shows it succeeded" '^quickstart +local +2 +succeeded +0 ' "$out"

# The same spec again changes nothing and says so.
run_rc rc g apply -f quickstart.yaml > "$T/reapply.txt"
expect_eq "re-apply exits 0" 0 "$rc"
expect_eq "re-apply says unchanged" "cluster quickstart: unchanged (succeeded)" "$(head -1 "$T/reapply.txt")"
g -o json apply -f quickstart.yaml > "$T/reapply.json"
expect_eq "re-apply json: created 0" "0 True" "$(json_get "$T/reapply.json" 'd["created"], d["unchanged"]' | tr -d '(),')"

# Destroy twice: the second is a no-op, exit 0.
run_rc rc g -y destroy quickstart > "$T/d1.txt"
expect_eq "destroy exits 0" 0 "$rc"
# 20 checkpoints and train_ddp.py's `latest`, in the spec's checkpoint_dir
expect_eq "destroy message, and where the checkpoints stay" "cluster quickstart: destroyed (2 node(s) deleted)|checkpoints kept: 21 file(s) in $PWD/checkpoints/quickstart (checkpoint_dir: your own directory on this machine; gpuctl never removes it, not even with --purge)" "$(paste -sd'|' "$T/d1.txt")"
run_rc rc g -y -o json destroy -f quickstart.yaml > "$T/d2.json"
expect_eq "second destroy exits 0" 0 "$rc"
check_schema "$T/d2.json" destroy
expect_eq "second destroy found nothing" "False 0" "$(json_get "$T/d2.json" 'd["found"], d["deleted"]' | tr -d '(),')"
expect_eq "no node directories left" 0 "$(find "$STATE/local" -mindepth 1 -maxdepth 1 | wc -l)"
g -o json status --all > "$T/all.json"
expect_eq "status --all keeps the history" terminated "$(json_get "$T/all.json" 'd["clusters"][0]["phase"]')"

# Resume: a new cluster on the same checkpoint dir starts from the last epoch.
run_rc rc g apply -f quickstart.yaml --wait --timeout 600 > /dev/null
expect_eq "second run exits 0" 0 "$rc"
expect_match "second run resumed from the checkpoint" "resumed from epoch 20" "$(g logs quickstart)"
g -y destroy quickstart > /dev/null
finish
