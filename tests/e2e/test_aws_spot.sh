#!/bin/bash
# A spot node's interruption notice, end to end on the booting fake EC2
# (ec2.py --boot) with the fake S3 for its checkpoints: the quickstart's
# trainer on one spot node under `apply --wait`, then /_fake/preempt with
# a notice 20 s ahead (EC2's IMDS spot/instance-action; real EC2: 2 min):
#  - the node's watcher sees the notice within its 5 s poll, writes it
#    where gpuctl reads it, logs the deadline and signals the trainer
#    (SIGUSR1), which writes its checkpoint; the node saves that checkpoint
#    to the bucket ("saved (notice)");
#  - gpuctl records the notice as an event of the node and says it;
#  - the instance ends at the deadline (Server.SpotInstanceTermination);
#    the bucket holds the checkpoint of the epoch the trainer wrote on the
#    notice;
#  - the node was the head: the controller (apply --wait) replaces it, and
#    the new node's job resumes from that checkpoint in the bucket;
#  - a destroy while it trains ends apply --wait with exit 11 (node_lost);
#    destroy leaves nothing.
# A few epochs only, small batches to slow them (docs/testing.md: one full
# training run in all).
# Needs what test_aws_job needs (else skipped, exit 77).
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/boot_parts.sh"
boot_require "aws" "torch yaml sklearn"
boot_fake_ec2_s3

cp "$GPUCTL_SOURCE_DIR/examples/train_ddp.py" .
cat > job.yaml <<'YAML'
name: sp
provider: aws
nodes: 1
resources:
  gpu: A10G:1
  instance_types: g5.xlarge
region: us-east-1
spot:
  policy: spot
env:
  OMP_NUM_THREADS: "1"
workdir: .
checkpoint_dir: /var/lib/gpuctl/ckpt
run:
  command: python3 train_ddp.py --epochs 100000 --batch-size 2
  nproc_per_node: 1
YAML

g -y apply -f job.yaml --wait --timeout 600 > "$T/apply.out" 2> "$T/apply.err" &
APPLY=$!
# training runs: a few epochs in the streamed log
for _ in $(seq 1 600); do
    grep -q 'epoch 3/100000 ' "$T/apply.out" 2>/dev/null && break
    kill -0 "$APPLY" 2>/dev/null || break
    sleep 0.5
done
expect_match "the job trains on the spot node" 'epoch 3/100000 loss' "$(cat "$T/apply.out")"
IID=$(db "select provider_id from nodes where rank = 0")
expect_match "the node is a spot instance" '^spot$' \
    "$(fake "$EC2/_fake/state" | /usr/bin/python3 -c '
import json, sys
print(" ".join(i["lifecycle"] for i in json.load(sys.stdin)["instances"] if i["id"] == sys.argv[1]))' "$IID")"
expect_match "the node watches for notices" 'interruption notices: asking the aws metadata service every 5s' \
    "$(cat "$T/apply.out")"
fake -X POST -d "{\"instance_id\": \"$IID\", \"notice_s\": 20}" "$EC2/_fake/preempt" > "$T/preempt.json"
expect_eq "the fake gives the node a notice" "{'ok': True}" "$(json_get "$T/preempt.json" 'd')"
# the controller replaces the lost head; its job resumes from the bucket
for _ in $(seq 1 600); do
    grep -q 'resumed from epoch' "$T/apply.out" 2>/dev/null && break
    kill -0 "$APPLY" 2>/dev/null || break
    sleep 0.5
done
err=$(cat "$T/apply.err")
expect_match "the controller replaced the preempted head" \
    "^gpuctl: node sp-0 \\($IID\\) was preempted: replacing it; it was the head, so the job starts again from its checkpoint$" "$err"
IID2=$(db "select provider_id from nodes where rank = 0 and phase != 'terminated'")
expect_match "by a new instance" '^i-[0-9a-f]+$' "$IID2"
expect_match "whose job resumed from the checkpoint in the bucket" \
    "^gpuctl: node sp-0 replaced by $IID2; the job starts again from its latest checkpoint in the store$" "$err"
RESUMED=$(grep -Eo 'resumed from epoch [0-9]+' "$T/apply.out" | awk '{print $NF}' | tail -1)
run_rc rc g -y destroy sp > /dev/null 2> "$T/destroy.err"
expect_eq "destroy while the new head trains" 0 "$rc"
run_rc rc wait "$APPLY"
expect_eq "apply --wait: the cluster was destroyed while waiting (exit 11)" 11 "$rc"
out=$(cat "$T/apply.out")
err=$(cat "$T/apply.err")
expect_match "the node saw the notice and its deadline" \
    'gpuctl: interruption notice: terminate at [0-9T:-]+Z \(in [0-9]+s\); the job.s workers get SIGUSR1$' "$out"
expect_match "the trainer wrote its checkpoint on the signal" \
    'interruption notice: checkpoint of epoch [0-9]+ written$' "$out"
EPOCH=$(grep -Eo 'interruption notice: checkpoint of epoch [0-9]+' <<<"$out" | awk '{print $NF}' | head -1)
expect_eq "the new head resumed from the notice's checkpoint or a later one" yes \
    "$( [ -n "$RESUMED" ] && [ -n "$EPOCH" ] && [ "$RESUMED" -ge "$EPOCH" ] && echo yes || echo no)"
expect_match "the node saved it to the bucket" \
    "gpuctl: checkpoints: saved \\(notice\\) to s3://$BUCKET/clusters/sp/checkpoints$" "$out"
expect_match "gpuctl said the notice" \
    "^gpuctl: node sp-0 \\($IID\\) has a terminate notice from aws, deadline [0-9T:-]+Z$" "$err"
expect_match "and recorded it as an event of the node" \
    "^terminate notice for $IID, deadline [0-9T:-]+Z: EC2 spot/instance-action, seen by the node$" \
    "$(db "select message from events where kind = 'interruption'")"
expect_eq "the instance was interrupted" "terminated Server.SpotInstanceTermination" \
    "$(fake "$EC2/_fake/state" | /usr/bin/python3 -c '
import json, sys
print(" ".join(i["state"] + " " + str(i.get("state_reason")) for i in json.load(sys.stdin)["instances"] if i["id"] == sys.argv[1]))' "$IID" | sed 's/ spot$/ Server.SpotInstanceTermination/')"
expect_eq "two launches in all: the node and its replacement" 2 \
    "$(fake "$EC2/_fake/state" | /usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)["instances"]))')"
have=$(fake "$S3URL/_fake/state" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
objs = d["buckets"].get(sys.argv[1], {}).get("objects", {})
print(" ".join(sorted(k for k in objs if k.startswith("clusters/sp/checkpoints/ckpt-epoch-"))))' "$BUCKET")
expect_match "the bucket holds the checkpoint written on the notice" \
    "clusters/sp/checkpoints/ckpt-epoch-$(printf %04d "${EPOCH:-0}").pt" "$have"
expect_eq "nothing left running" "" \
    "$(fake "$EC2/_fake/state" | /usr/bin/python3 -c '
import json, sys
print(" ".join(i["id"] for i in json.load(sys.stdin)["instances"] if i["state"] != "terminated"))')"
finish
