#!/bin/bash
# The real job loop on aws, end to end on the booting fake EC2 (ec2.py
# --boot: every instance runs its user-data as a node in namespaces of its
# own, with sshd and IMDS) and the fake S3 beside it, which the nodes reach
# at the fake EC2's host address and which judges the nodes' instance-profile
# credentials by the role's policy gpuctl wrote:
#  1. `apply --wait` of the quickstart on 2 nodes x 2 processes with
#     `workdir` (sent over ssh, .gpuctlignore honoured), `data` (pushed to
#     the bucket, fetched by each node) and `checkpoint_dir` (restored from
#     and saved to the bucket): the job reaches >= 95 % test accuracy, the
#     streamed logs show both nodes, the checkpoints are in the bucket;
#     `logs -f` followed both nodes to the job's exit status 0;
#  2. destroy, then apply again: the new nodes (new instance ids, new role)
#     resume from the checkpoint in the bucket ("resumed from epoch 20"),
#     and stay up after their job (lifecycle.idle_timeout): `apply --wait`
#     returns at the job's end all the same;
#  3. a change of the code: apply --wait runs the job again on the same
#     instances, the changed file the only one sent; `gpuctl exec` runs a
#     command there with the rendezvous wiring;
#  4. a node more: the two instances stay, a third one boots with no job of
#     its own, and the job runs on all three with the new world size.
# This is the one full training run of the aws tests (docs/testing.md).
# Needs root, namespaces, sshd, rsync, the AWS CLI and /usr/bin/python3 with
# torch and sklearn (else skipped, exit 77).
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/boot_parts.sh"
boot_require "rsync aws" "torch yaml sklearn"
boot_fake_ec2_s3

cp "$GPUCTL_SOURCE_DIR/examples/train_ddp.py" .
mkdir -p scratch ds
head -c 100000 /dev/zero > scratch/big.bin      # ignored: never sent
printf 'scratch/\n' > .gpuctlignore
printf 'digits of sklearn\n' > ds/README
cat > job.yaml <<'YAML'
name: qs
provider: aws
nodes: 2
resources:
  gpu: A10G:1
  instance_types: g5.xlarge
region: us-east-1
env:
  OMP_NUM_THREADS: "1"
workdir: .
data:
  ds: ./ds
checkpoint_dir: /var/lib/gpuctl/ckpt
run:
  command: test -s "$GPUCTL_DATA_DIR/ds/README" && python3 train_ddp.py --epochs 20
  nproc_per_node: 2
YAML

# ---- 1. the quickstart on two booted nodes -----------------------------------
g -y apply -f job.yaml --wait --timeout 900 > "$T/apply.out" 2> "$T/apply.err" &
APPLY=$!
# follow the logs as soon as the cluster is recorded
for _ in $(seq 1 300); do
    g status qs > /dev/null 2>&1 && break
    sleep 0.2
done
run_rc lrc g logs qs -f > "$T/follow.out" 2> "$T/follow.err"
run_rc rc wait "$APPLY"
expect_eq "apply --wait: both nodes exit 0" 0 "$rc"
[ "$rc" = 0 ] || { tail -30 "$T/apply.err"; for f in "$T"/boot/i-*/console; do tail -20 "$f"; done; }
expect_eq "logs -f ends with the job's exit status" 0 "$lrc"
expect_match "logs -f followed node 0" '^\[node 0\] .*rank 0/4 ready' "$(cat "$T/follow.out")"
expect_match "logs -f followed node 1" '^\[node 1\] .*rank [23]/4 ready' "$(cat "$T/follow.out")"
out="$(cat "$T/apply.out" "$T/apply.err")"
# train_ddp.py, job.yaml, .gpuctlignore, ds/README; scratch/ ignored
expect_eq "the workdir went over ssh to both nodes, the ignored directory not" \
    "workdir: 4 files|workdir: 4 files" \
    "$(grep -Eo '^workdir: [0-9]+ files' <<<"$out" | paste -sd'|')"
expect_match "the data set was pushed to the bucket before the nodes started" \
    "data ds: 1 file\\(s\\) sent" "$out"
acc=$(grep -Eo 'final test_accuracy [0-9.]+' <<<"$out" | awk '{print $3}' | tail -1)
echo "# final test accuracy on the booted nodes: $acc"
expect_eq "the quickstart reaches >= 95 % test accuracy" yes \
    "$(/usr/bin/python3 -c "print('yes' if float('${acc:-0}') >= 0.95 else 'no')")"
expect_match "apply --wait streamed both nodes' logs" '\[node 1\] ' "$out"
first=$(sed -n 's/^gpuctl: the job.s first output came \([0-9.]*\) s after apply began$/\1/p' "$T/apply.err")
echo "# time from apply to the job's first output on the booted nodes: ${first:-none} s"
expect_match "apply --wait says when the job's first output came" '^[0-9]+\.[0-9]$' "$first"
expect_match "each node fetched the data set before setup" "\\[node 1\\] .*data ds: fetching s3://$BUCKET/data/ds" \
    "$(cat "$T/follow.out")"
keys=$(fake "$S3URL/_fake/state" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
objs = d["buckets"].get(sys.argv[1], {}).get("objects", {})
print(sum(1 for k in objs if k.startswith("clusters/qs/checkpoints/ckpt-epoch-")))' "$BUCKET")
expect_eq "the head saved every epoch's checkpoint to the bucket" 20 "$keys"
expect_eq "the nodes ended and powered themselves off" "terminated terminated" \
    "$(fake "$EC2/_fake/state" | /usr/bin/python3 -c '
import json, sys
print(" ".join(sorted(i["state"] for i in json.load(sys.stdin)["instances"])))')"

# ---- 2. destroy, apply again: resumed from the bucket ----------------------------
# (the nodes now stay up after their job: lifecycle.idle_timeout)
cleanup_extra
run_rc rc g -y destroy qs > /dev/null 2> "$T/destroy.err"
expect_eq "destroy" 0 "$rc"
sed -e 's/^checkpoint_dir: .*/&\nlifecycle:\n  idle_timeout: 900s/' job.yaml > job2.yaml
# --wait returns at the job's end although the instances stay up (it waited
# for the idle timeout before: the instances run, only the log tells)
run_rc rc g -y apply -f job2.yaml --wait --timeout 600 > "$T/apply2.out" 2> "$T/apply2.err"
expect_eq "apply --wait again: exit 0" 0 "$rc"
[ "$rc" = 0 ] || tail -30 "$T/apply2.err"
expect_match "it ends with the job, the nodes kept up" "^gpuctl: the job ended; the nodes of qs stay up for later jobs until lifecycle.idle_timeout stops them \(gpuctl destroy qs stops them now\)$" "$(cat "$T/apply2.err")"
expect_match "and says rank 0's exit status" "^job succeeded: rank 0 exit status 0$" "$(cat "$T/apply2.out")"
run_rc rc g logs qs -f > "$T/follow2.out" 2>&1
expect_eq "logs -f: the job ended with exit status 0" 0 "$rc"
expect_match "the new nodes resumed from the checkpoint in the bucket" "resumed from epoch 20" \
    "$(cat "$T/follow2.out")"
ids() { fake "$EC2/_fake/state" | /usr/bin/python3 -c '
import json, sys
print(" ".join(sorted(i["id"] + ":" + i["state"] for i in json.load(sys.stdin)["instances"] if i["state"] != "terminated")))'; }
ids2=$(ids)
expect_match "two nodes stay up after their job" '^i-[0-9a-f]+:running i-[0-9a-f]+:running$' "$ids2"

# ---- 3. a code change: apply runs the job again on the same nodes -------------
printf '# v2: a change of the code\n' >> train_ddp.py
expect_eq "plan: the job runs again, as the workdir's files changed" "rerun workdir (its files)" \
    "$(g -o json plan -f job2.yaml | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["action"], d.get("rerun"))')"
run_rc rc g -y apply -f job2.yaml --wait > "$T/apply3.out" 2> "$T/apply3.err"
expect_eq "apply --wait of the change: exit 0" 0 "$rc"
[ "$rc" = 0 ] || tail -30 "$T/apply3.err"
expect_match "only the changed file moved, to each node" \
    '^workdir: 1 file, [0-9.]+ KiB sent to node 0\|workdir: 1 file, [0-9.]+ KiB sent to node 1$' \
    "$(grep '^workdir:' "$T/apply3.err" | sort | paste -sd'|')"
expect_match "the job ran again on the nodes, from the checkpoint on their disk" \
    '^\[node 0\] .*resumed from epoch 20' "$(cat "$T/apply3.out")"
expect_match "apply names the job" '^cluster qs: job r[0-9a-f]{12} ran on the same nodes \(changed: workdir \(its files\)\)$' \
    "$(cat "$T/apply3.out")"
expect_eq "on the same instances" "$ids2" "$(ids)"
run_rc rc g exec qs -- 'echo "hello from $RANK of $WORLD_SIZE"' > "$T/exec.out" 2>&1
expect_eq "exec on the aws nodes: exit 0" 0 "$rc"
expect_match "exec ran on node 1 with the rendezvous wiring" '^\[node 1\] (\[default[01]\]:)?hello from [23] of 4$' \
    "$(cat "$T/exec.out")"

# ---- 4. one node more: the two instances stay, a third comes -----------------
# (job3.yaml is written into the workdir: its files changed too)
sed -e 's/^nodes: 2/nodes: 3/' job2.yaml > job3.yaml
expect_eq "plan: a resize" "resize nodes 2 -> 3, workdir (its files)" \
    "$(g -o json plan -f job3.yaml | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["action"], d.get("resize"))')"
run_rc rc g -y apply -f job3.yaml --wait > "$T/apply4.out" 2> "$T/apply4.err"
expect_eq "apply --wait of the resize: exit 0" 0 "$rc"
[ "$rc" = 0 ] || tail -30 "$T/apply4.err"
expect_match "apply says so" '^cluster qs: resized: deleted 0 node\(s\), created 1; job r[0-9a-f]{12} ran on all 3 \(changed: nodes 2 -> 3, workdir \(its files\)\)$' \
    "$(cat "$T/apply4.out")"
ids3=$(ids)
expect_eq "the two instances stayed, a third runs" "3 $ids2" \
    "$(wc -w <<< "$ids3") $(for i in $ids2; do grep -qw "$i" <<< "$ids3" && echo "$i"; done | paste -sd' ')"
expect_match "the new node ran the job with 3 nodes x 2 processes" '^\[node 2\] .*rank [0-5]/6 ready' "$(cat "$T/apply4.out")"
cleanup_extra
run_rc rc g -y destroy qs > /dev/null 2>> "$T/destroy.err"
expect_eq "destroy again" 0 "$rc"
expect_eq "destroy keeps the checkpoints" 20 "$(fake "$S3URL/_fake/state" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
objs = d["buckets"].get(sys.argv[1], {}).get("objects", {})
print(sum(1 for k in objs if k.startswith("clusters/qs/checkpoints/ckpt-epoch-")))' "$BUCKET")"
finish
