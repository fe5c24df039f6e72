#!/bin/bash
# Node-level spot recovery end to end on the booting fake EC2 (ec2.py
# --boot) with the fake S3: the quickstart's trainer (DDP, gloo) on an
# on-demand head and a spot worker, applied without --wait (as from CI) and
# then followed by `gpuctl watch`, the controller; the worker gets a
# notice (20 s ahead: the watcher on the node, and gpuctl, ask every 5 s;
# EC2 gives 2 min) and is then terminated (Server.SpotInstanceTermination):
#  - the worker's watcher saw the notice; gpuctl recorded it;
#  - the controller replaced only that node (one RunInstances more, for
#    rank 1, with the head's address); the head was never restarted (one
#    bootstrap on it, its instance running throughout);
#  - the head's torchrun restarted its workers into a new rendezvous round
#    that the new node joined; the job resumed from the last checkpoint
#    written before the loss (no epoch lost), went on and succeeded;
#  - the worker's zone cools down (spot.zone_cooldown, 30m by default) and
#    the replacement goes to another zone of the region (g5.xlarge has no
#    EFA: no placement group keeps it there);
#  - looks at EC2 that failed before (DescribeInstances answering 500)
#    were asked again and replaced nothing;
#  - each recovery is an event; destroy leaves nothing.
# Needs what test_aws_job needs (else skipped, exit 77).
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/boot_parts.sh"
boot_require "aws" "torch yaml sklearn"
boot_fake_ec2_s3

cp "$GPUCTL_SOURCE_DIR/examples/train_ddp.py" .
cat > job.yaml <<'YAML'
name: rc
provider: aws
nodes: 2
resources:
  gpu: A10G:1
  instance_types: g5.xlarge
region: us-east-1
spot:
  policy: spot
  head: on-demand
env:
  OMP_NUM_THREADS: "1"
workdir: .
checkpoint_dir: /var/lib/gpuctl/ckpt
run:
  command: python3 train_ddp.py --epochs 60 --batch-size 4
  nproc_per_node: 1
YAML

run_rc rc g -y apply -f job.yaml > "$T/apply0.out" 2> "$T/apply0.err"
expect_eq "apply without --wait returns once the nodes run" 0 "$rc"
g watch rc --timeout 900 > "$T/apply.out" 2> "$T/apply.err" &
APPLY=$!
for _ in $(seq 1 600); do
    grep -q 'epoch 4/60 ' "$T/apply.out" 2>/dev/null && break
    kill -0 "$APPLY" 2>/dev/null || break
    sleep 0.5
done
expect_match "the job trains on both nodes" 'epoch 4/60 loss' "$(cat "$T/apply.out")"
HEAD=$(db "select provider_id from nodes where rank = 0")
W1=$(db "select provider_id from nodes where rank = 1")
expect_eq "an on-demand head, a spot worker" "on-demand spot" \
    "$(inst "' '.join(i.get('lifecycle') or 'on-demand' for h in ['$HEAD', '$W1'] for i in d['instances'] if i['id'] == h)")"
# transient describe failures first: EC2 answers DescribeInstances with a
# 500 eight times in a row, at least one of watch's looks in full (the
# HTTP layer tries each four times; other calls may take some); a failed
# look is asked again, never taken for a loss
fake -X POST -d '{"action": "DescribeInstances", "code": "InternalError", "status": 500, "times": 8}' \
    "$EC2/_fake/faults" > /dev/null
faults_left() { fake "$EC2/_fake/faults" | /usr/bin/python3 -c 'import json, sys; print(sum(r.get("left", 0) or 0 for r in json.load(sys.stdin)))'; }
for _ in $(seq 1 120); do
    [ "$(faults_left)" = 0 ] && grep -q 'could not ask the provider about rc' "$T/apply.err" && break
    sleep 0.5
done
expect_eq "the faults are spent" "0" "$(faults_left)"
expect_match "a look failed: watch asked again" '^[1-9]' \
    "$(grep -c "^gpuctl: could not ask the provider about rc (.*); asking again$" "$T/apply.err")"
fake -X POST -d "{\"instance_id\": \"$W1\", \"notice_s\": 20}" "$EC2/_fake/preempt" > "$T/preempt.json"
expect_eq "the fake gives the worker a notice" "{'ok': True}" "$(json_get "$T/preempt.json" 'd')"
run_rc rc wait "$APPLY"
expect_eq "watch: the job succeeded after the recovery" 0 "$rc"
[ "$rc" = 0 ] || { tail -40 "$T/apply.err"; tail -60 "$T/apply.out"; }
out=$(cat "$T/apply.out")
err=$(cat "$T/apply.err")
expect_match "the worker saw the notice" \
    '\[node 1\] .*gpuctl: interruption notice: terminate at [0-9T:-]+Z \(in [0-9]+s\); the job.s workers get SIGUSR1$' "$out"
expect_match "gpuctl replaced the preempted worker" \
    "^gpuctl: node rc-1 \\($W1\\) was preempted: replacing it; the other nodes keep their job$" "$err"
W2=$(db "select provider_id from nodes where rank = 1 and phase != 'terminated'")
expect_match "by a new instance" '^i-[0-9a-f]+$' "$W2"
expect_match "which joined the running job" \
    "^gpuctl: node rc-1 replaced by $W2; it joins the running job$" "$err"
expect_eq "three launches in all: the head, the worker, its replacement" "3" \
    "$(inst "len(d['instances'])")"
expect_eq "the head ran throughout: one bootstrap on it" "1" \
    "$(grep -c '^\[node 0\] .*gpuctl: bootstrap start' "$T/apply.out")"
expect_eq "the head ended only when its job did (it powered itself off)" "guest" \
    "$(inst "[i.get('state_reason') for i in d['instances'] if i['id'] == '$HEAD'][0]")"
before=$(awk '/was preempted|resumed from epoch/ {exit} /epoch [0-9]+\/60 loss/ {sub(/.*epoch /, ""); sub(/\/60.*/, ""); e=$0} END {print e}' "$T/apply.out")
resumed=$(grep -Eo 'resumed from epoch [0-9]+' "$T/apply.out" | awk '{print $NF}' | tail -1)
echo "# last epoch before the loss: $before, resumed from: $resumed"
expect_match "the job resumed from its checkpoint" '^[0-9]+$' "$resumed"
expect_eq "no epoch before the last checkpoint was lost" yes \
    "$( [ -n "$resumed" ] && [ -n "$before" ] && [ "$resumed" -ge "$before" ] && echo yes || echo no)"
expect_match "and trained on to its end" '\[node 0\] .*epoch 60/60 loss' "$out"
expect_match "watch ends with the job's outcome" '^job succeeded: rank 0 exit status 0$' "$out"
expect_match "the loss fell after the resume" yes "$(/usr/bin/python3 -c '
import re, sys
ls = [float(m.group(1)) for m in re.finditer(r"epoch \d+/60 loss ([0-9.]+)", open(sys.argv[1]).read())]
print("yes" if len(ls) > 2 and ls[-1] < ls[0] else "no")' "$T/apply.out")"
Z1=$(db "select zone from nodes where provider_id = '$W1'")
Z2=$(db "select zone from nodes where provider_id = '$W2'")
expect_match "the worker was in a zone of us-east-1" '^us-east-1[a-d]$' "$Z1"
expect_eq "its replacement went to another zone (the worker's cools down)" yes \
    "$( [ -n "$Z2" ] && [ "$Z2" != "$Z1" ] && echo yes || echo no)"
expect_eq "the cooldown is in the state: 30 minutes from the loss" "1800|node rc-1 ($W1) was preempted" \
    "$(db "select (until - at) || '|' || why from zone_cooldowns where zone = '$Z1'")"
expect_match "each recovery is an event" \
    "^node rc-1 \\($W1\\) was preempted while the job runs: replacing it\\|zone $Z1 of us-east-1 passed over for 30m \\(spot.zone_cooldown, until [0-9T:-]+Z\\): node rc-1 \\($W1\\) was preempted\\|zone $Z1 cools down \\(until [0-9T:-]+Z: node rc-1 \\($W1\\) was preempted\\): the replacement goes to another zone of us-east-1 first\\|replaced by $W2\$" \
    "$(db "select message from events where kind = 'recovery' order by id" | paste -sd'|')"
g status rc > "$T/status.out" 2>&1
expect_match "status lists the notice and the recovery" \
    "^interruptions, recoveries and budget stops:
AT +RANK +KIND +WHAT
[0-9T:-]+Z +1 +interruption +terminate notice for $W1, deadline [0-9T:-]+Z: EC2 spot/instance-action, seen by the node
[0-9T:-]+Z +1 +recovery +node rc-1 \\($W1\\) was preempted while the job runs: replacing it
[0-9T:-]+Z +1 +recovery +zone $Z1 of us-east-1 passed over for 30m .*
[0-9T:-]+Z +- +recovery +zone $Z1 cools down .*: the replacement goes to another zone of us-east-1 first
[0-9T:-]+Z +1 +recovery +replaced by $W2\$" "$(sed -n '/^interruptions, recoveries/,$p' "$T/status.out")"
# (expect_match's pattern is one grep pattern per line: the kinds, in order)
expect_eq "status lists them in order" "interruption recovery recovery recovery recovery" \
    "$(sed -n '/^interruptions, recoveries/,$p' "$T/status.out" | awk 'NR > 2 && NF {print $3}' | paste -sd' ')"
expect_eq "status -o json has them too" "interruption recovery recovery recovery recovery" \
    "$(g -o json status rc | /usr/bin/python3 -c 'import json,sys; print(" ".join(r["kind"] for r in json.load(sys.stdin)["clusters"][0]["recoveries"]))')"
run_rc rc g -y destroy rc > /dev/null 2> "$T/destroy.err"
expect_eq "destroy" 0 "$rc"
expect_eq "nothing left running" "" \
    "$(inst "' '.join(i['id'] for i in d['instances'] if i['state'] != 'terminated')")"
finish
