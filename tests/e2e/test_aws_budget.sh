#!/bin/bash
# budget.max_total while the job runs, end to end on the booting fake EC2
# (ec2.py --boot) with the fake S3 for the checkpoints; one on-demand
# g5.xlarge at the built-in catalog's 1.006 USD/hour (skypilot v7, us-east-1):
#  a. with no controller (apply without --wait, then gpuctl left alone): the
#     node ends itself when the cluster would have spent max_total:
#     0.012 USD / 1.006 USD/hour x 3600 = 42.94 -> 42 s after its boot
#     (GPUCTL_BUDGET_S=42 in its user-data); the job is stopped (exit status
#     124, from its console), its checkpoints saved to the bucket, the
#     instance powered off;
#  b. with the controller (apply --wait): the nodes are stopped before the
#     ledger's spend crosses max_total (0.02 USD: 71 s at 1.006 USD/hour,
#     less two polls), exit 23, the checkpoints saved on the way down.
# Needs what test_aws_job needs (else skipped, exit 77).
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/boot_parts.sh"
boot_require "aws" "torch yaml sklearn"
boot_fake_ec2_s3
ckpts() { fake "$S3URL/_fake/state" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
objs = d["buckets"].get(sys.argv[1], {}).get("objects", {})
print(sum(1 for k in objs if k.startswith("clusters/" + sys.argv[2] + "/checkpoints/ckpt-epoch-")))' "$BUCKET" "$1"; }

cp "$GPUCTL_SOURCE_DIR/examples/train_ddp.py" .
job() { # NAME MAX_TOTAL
    cat > "$1.yaml" <<YAML
name: $1
provider: aws
nodes: 1
resources:
  gpu: A10G:1
  instance_types: g5.xlarge
region: us-east-1
budget:
  max_total: $2
env:
  OMP_NUM_THREADS: "1"
workdir: .
checkpoint_dir: /var/lib/gpuctl/ckpt
run:
  command: python3 train_ddp.py --epochs 100000 --batch-size 4
  nproc_per_node: 1
YAML
}

# ---- a. the node ends itself ----------------------------------------------------
echo "# a. the node ends itself"
job bn 0.012
run_rc rc g -y apply -f bn.yaml > "$T/a.out" 2> "$T/a.err"
expect_eq "a: apply (no --wait)" 0 "$rc"
IA=$(inst "[i['id'] for i in d['instances']][0]")
expect_match "a: the node's end from the budget is in its user-data" $'\nGPUCTL_BUDGET_S=42\n' \
    "$(inst "[i['user_data'] for i in d['instances'] if i['id'] == '$IA'][0]")"
# gpuctl is gone: only the node acts from here (the fake shows the
# instance shutting-down until someone describes it)
for _ in $(seq 1 240); do
    case $(inst "[i['state'] for i in d['instances'] if i['id'] == '$IA'][0]") in
        shutting-down | terminated) break ;;
    esac
    sleep 0.5
done
expect_match "a: the node powered itself off" "^(shutting-down|terminated) guest$" \
    "$(inst "[i['state'] + ' ' + str(i.get('state_reason')) for i in d['instances'] if i['id'] == '$IA'][0]")"
expect_match "a: its job was stopped with status 124 (its console)" \
    "gpuctl-node-exit: cluster=[0-9a-f]+ rank=0 status=124" "$(cat "$T/boot/$IA/console")"
expect_match "a: its log says why" \
    "gpuctl: budget.max_total 0.0120 USD at the cluster's 1.0060 USD/hour \\(1 node\\(s\\)\\) is spent \\(42s\\); torchrun stopped" \
    "$(cat "$T/boot/$IA/fs/var-lib-gpuctl/node.log")"
n=$(ckpts bn)
echo "# a: $n checkpoint(s) in the bucket"
expect_eq "a: its checkpoints were saved to the bucket" yes "$([ "${n:-0}" -gt 0 ] && echo yes || echo no)"
g status bn > "$T/a.status" 2>&1
expect_match "a: status: failed, exit 124" "^bn +aws +1 +failed +124 " "$(cat "$T/a.status")"
run_rc rc g -y destroy bn > /dev/null 2>&1
expect_eq "a: destroy" 0 "$rc"

# ---- b. the controller stops the nodes first -------------------------------------
echo "# b. the controller stops the nodes"
job bc 0.02
run_rc rc g -y apply -f bc.yaml --wait --timeout 600 > "$T/b.out" 2> "$T/b.err"
expect_eq "b: apply --wait: exit 23 (budget)" 23 "$rc"
expect_match "b: it says why" \
    "^gpuctl: error: cluster 'bc': budget.max_total 0.02 USD would be crossed \\(0\\.01[0-9]+ USD spent, 1\\.0060 USD/hour\\): its nodes were stopped" \
    "$(cat "$T/b.err")"
IB=$(inst "[i['id'] for i in d['instances'] if i['id'] != '$IA'][0]")
expect_match "b: gpuctl terminated the node" "^(shutting-down|terminated) user$" \
    "$(inst "[i['state'] + ' ' + str(i.get('state_reason')) for i in d['instances'] if i['id'] == '$IB'][0]")"
# the node stops through its OS: its bootstrap gets SIGTERM, saves the
# checkpoints and ends (the fake gives it 30 s, as systemd gives 90 s)
LOG_B="$T/boot/$IB/fs/var-lib-gpuctl/node.log"
for _ in $(seq 1 80); do
    grep -q 'checkpoints: saved (final)' "$LOG_B" 2>/dev/null && break
    sleep 0.5
done
expect_eq "b: the job got SIGTERM, then saved its checkpoints on the way down" \
    "gpuctl: received SIGTERM; stopping|gpuctl: checkpoints: saved (final) to s3://$BUCKET/clusters/bc/checkpoints" \
    "$(grep -Eo 'gpuctl: (received SIGTERM; stopping|checkpoints: saved \(final\) .*)$' "$LOG_B" | paste -sd'|')"
n=$(ckpts bc)
echo "# b: $n checkpoint(s) in the bucket"
expect_eq "b: its checkpoints are in the bucket" yes "$([ "${n:-0}" -gt 0 ] && echo yes || echo no)"
expect_match "b: the budget stop is an event" "budget.max_total 0.02 USD: 0\\.01[0-9]+ USD spent, 1\\.0060 USD/hour: stopping the nodes" \
    "$(g status bc 2>&1)"
run_rc rc g -y destroy bc > /dev/null 2>&1
expect_eq "b: destroy" 0 "$rc"
expect_eq "nothing left running" "" \
    "$(inst "' '.join(i['id'] for i in d['instances'] if i['state'] != 'terminated')")"
finish
