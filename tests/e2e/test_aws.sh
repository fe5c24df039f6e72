#!/bin/bash
# The aws provider end to end against the fake EC2 endpoint
# (tests/fake/ec2.py, which verifies every signature with botocore):
#  1. apply a 4-node spot cluster with EFA and a placement group; zone
#     us-east-1a has room for one node only (the abandoned head is
#     terminated and the next zone tried), and the first RunInstances in
#     us-east-1b is throttled once (retried with the same ClientToken);
#     the exact EC2 calls, their parameters, the tags and the recorded
#     attempts are checked;
#  2. a second apply is a no-op; status shows the nodes and the attempts;
#  3. destroy terminates by tag, waits, removes the placement groups,
#     security group and key pair: nothing is left;
#  4. plan --live reads DescribeSpotPriceHistory; check reports working and
#     refused credentials; a quota error moves to the next region, and a
#     zone that just had no capacity comes last (it cools down).
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" "$T/home"
cd "$T/work"
export GPUCTL_CONFIG_DIR="$T/config"
unset GPUCTL_CATALOG XDG_CONFIG_HOME AWS_PROFILE AWS_DEFAULT_PROFILE AWS_REGION \
      AWS_DEFAULT_REGION AWS_SESSION_TOKEN AWS_SECURITY_TOKEN AWS_ENDPOINT_URL
export HOME="$T/home"                      # no ~/.aws, no ~/.ssh: gpuctl makes a key
export AWS_CONFIG_FILE="$T/home/aws-config" AWS_SHARED_CREDENTIALS_FILE="$T/home/aws-creds"
export AWS_EC2_METADATA_DISABLED=true
# The AWS documentation's example key (aws.md section 1.8).
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE
export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export GPUCTL_AWS_POLL_S=0.05

# The fake's world, with a p4d spot price in us-east-1 unlike the catalog's
# (2.4655) so that plan --live shows where its price came from.
python3 "$GPUCTL_SOURCE_DIR/tests/fake/ec2.py" --print-seed |
    python3 -c 'import json,sys; d=json.load(sys.stdin); d["instance_types"]["p4d.24xlarge"]["spot"]["us-east-1"]=1.9; json.dump(d, sys.stdout)' > "$T/seed.json"
cat > "$T/faults.json" <<'EOF'
[{"action": "RunInstances", "zone": "us-east-1a", "capacity": 1},
 {"action": "RunInstances", "zone": "us-east-1b", "code": "RequestLimitExceeded", "times": 1}]
EOF
start_fake ec2 ec2.py --seed "$T/seed.json" --faults "$T/faults.json" --page-size 2
export AWS_ENDPOINT_URL_EC2="http://127.0.0.1:$FAKE_PORT"
export GPUCTL_CHECKIP_URL="http://127.0.0.1:$FAKE_PORT/_fake/checkip"
LOG="$T/ec2.log"
fake() { curl -sS --noproxy '*' "$@"; }   # the fake's control API
# actions FROM: the EC2 actions logged after line FROM, space-separated
actions() { python3 - "$LOG" "$1" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])][int(sys.argv[2]):]
print(" ".join(l["action"] + ("!" + l["error"] if l["error"] else "") for l in lines if not l["action"].startswith("_fake/")))
PY
}
log_lines() { if [ -f "$LOG" ]; then wc -l < "$LOG"; else echo 0; fi; }

cat > job.yaml <<'EOF'
name: effa
provider: aws
nodes: 4
resources:
  gpu: A100-40GB:8
  interconnect: efa
  instance_types: p4d.24xlarge
region: us-east-1
spot:
  policy: spot
  max_price: 9.5
labels: { team: vision }
run:
  command: python train.py
EOF

# ---- 4a. plan: catalog prices, then live ones -------------------------------
run_rc rc g -o json plan -f job.yaml > "$T/plan.json"
expect_eq "plan exits 0" 0 "$rc"
expect_eq "plan: catalog spot price for p4d in us-east-1" "aws p4d.24xlarge us-east-1 2.4655" \
    "$(json_get "$T/plan.json" '" ".join(str(x) for x in (d["chosen"]["provider"], d["chosen"]["instance_type"], d["chosen"]["region"], d["chosen"]["price"]["node_usd_hr"]))')"
n0=$(log_lines)
run_rc rc g -o json plan -f job.yaml --live > "$T/plan-live.json"
expect_eq "plan --live exits 0" 0 "$rc"
# zone a at the seeded 1.9; b, c, d at 1.9 x 1.01, 1.02, 1.03: the lowest is a's
expect_eq "plan --live: the live price" "1.9" \
    "$(json_get "$T/plan-live.json" 'd["chosen"]["price"]["node_usd_hr"]')"
expect_match "plan --live says where prices came from" "live from the provider's API" \
    "$(json_get "$T/plan-live.json" '" ".join(d["notes"])')"
expect_eq "plan --live made one DescribeSpotPriceHistory call per page (4 zones, pages of 2)" \
    "DescribeSpotPriceHistory DescribeSpotPriceHistory" "$(actions "$n0")"
check_schema "$T/plan-live.json" plan

# catalog update --provider aws rebuilds the aws rows from DescribeInstanceTypes,
# the Price List and DescribeSpotPriceHistory: tests/e2e/test_catalog_cmd.sh
# (section 5b) runs it against this fake with a world of its own and the fake
# Price List.

# ---- check ----------------------------------------------------------------------
run_rc rc g check aws > "$T/check.txt" 2>&1
expect_eq "check aws: exit 0" 0 "$rc"
expect_match "check names the source and the endpoint" \
    "aws +ok +credentials from environment.*endpoint http://127.0.0.1:$FAKE_PORT" "$(cat "$T/check.txt")"
# No region configured, on an EC2 machine: the region its metadata gives
EC2_PORT=$FAKE_PORT
start_fake imds imds.py --region ap-northeast-1
run_rc rc env -u AWS_EC2_METADATA_DISABLED AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$FAKE_PORT" \
    "$GPUCTL_BIN" --state-dir "$STATE" check aws > "$T/check-imds.txt" 2>&1
FAKE_PORT=$EC2_PORT
expect_eq "check aws on EC2 without a region: exit 0" 0 "$rc"
expect_match "uses the instance's region" "region ap-northeast-1 \(from EC2 instance metadata\)" \
    "$(cat "$T/check-imds.txt")"
run_rc rc env AWS_SECRET_ACCESS_KEY=wrong-secret-not-this "$GPUCTL_BIN" --state-dir "$STATE" \
    -o json check aws > "$T/check-bad.json" 2> /dev/null
expect_eq "check with a wrong secret: exit 20 (auth)" 20 "$rc"
expect_match "the refusal is EC2's AuthFailure" "AuthFailure" \
    "$(json_get "$T/check-bad.json" 'd["providers"][0]["error"]["message"]')"
if grep -q "wrong-secret-not-this" "$T/check-bad.json" "$STATE"/* 2>/dev/null; then
    fail "the secret appears in output or state"
else
    ok "the secret appears nowhere"
fi

# ---- a workdir goes to EC2 nodes over ssh (test_aws_deliver.sh): taken ----------
{ cat job.yaml; echo "workdir: ."; } > wd.yaml
run_rc rc g -y apply -f wd.yaml --dry-run > /dev/null 2> "$T/wd.err"
expect_eq "workdir on aws: apply --dry-run exits 0" 0 "$rc"
{ cat job.yaml; echo "checkpoint_dir: ckpt"; } > ck.yaml
run_rc rc g -y apply -f ck.yaml --dry-run > /dev/null 2> "$T/ck.err"
expect_eq "a relative checkpoint_dir on aws: exit 4" 4 "$rc"
expect_match "says it must be absolute" "checkpoint_dir: 'ckpt' must be an absolute path on the aws nodes" "$(cat "$T/ck.err")"
expect_eq "and nothing was made here" "no" "$([ -e ckpt ] && echo yes || echo no)"
n0=$(log_lines)
{ cat job.yaml; echo "image: ubuntu"; } > img.yaml
run_rc rc g -y apply -f img.yaml --dry-run > /dev/null 2> "$T/img.err"
expect_eq "an image aws cannot use: exit 4, also in a dry run" 4 "$rc"
expect_match "names the field" "img.yaml: image: 'ubuntu' is neither 'pytorch'" "$(cat "$T/img.err")"
# 40 KB of random (incompressible) env: over 16 KB even gzipped
{ cat job.yaml; echo "env:"; printf '  BIG: "%s"\n' "$(head -c 30000 /dev/urandom | base64 -w0)"; } > big.yaml
run_rc rc g -y apply -f big.yaml > /dev/null 2> "$T/big.err"
expect_eq "user-data over EC2's 16 KB even gzipped: exit 4" 4 "$rc"
expect_match "says the sizes" "user-data is [0-9]+ bytes after gzip; aws allows 16384" "$(cat "$T/big.err")"
expect_eq "neither made an EC2 call" "" "$(actions "$n0")"

# ---- 1. apply -------------------------------------------------------------------
n0=$(log_lines)
t0=$(date -u +%s)
run_rc rc g -y -o json apply -f job.yaml --poll-interval 0.05 > "$T/apply.json" 2> "$T/apply.err"
[ "$rc" = 0 ] || cat "$T/apply.err"
expect_eq "apply exits 0" 0 "$rc"
expect_eq "four nodes created" 4 "$(json_get "$T/apply.json" 'd["created"]')"
UID_=$(json_get "$T/apply.json" 'd["cluster_status"]["uid"]')
U8=${UID_:0:8}
# Hand-checked sequence: zones (2 pages: a b | c; d has no p4d), then in
# zone a the type's EFA facts; its nodes have several network interfaces
# (no public address at launch), so the region's Elastic IP quota (5) and
# its addresses (none) are read before anything is made; the image (3
# amazon PyTorch x86_64 images in pages of 2), VPC, subnet, key, group,
# its rules one a call (all from the group itself, SSH from the caller,
# all to the group), placement group and the head's launch; the workers'
# launch meets no capacity (room for one); the head is terminated; zone
# b: its subnet and placement group, the head (throttled once, then
# retried), the workers; two polls until all run, each one
# DescribeInstances by tag over five instances in pages of two (3 calls);
# then the running ones (four: 2 pages) and the cluster's addresses
# (none): an Elastic IP each, allocated at once, then associated at once;
# last the apply's refresh (3 calls).
SEQ=$(actions "$n0")
expect_eq "the EC2 calls of the apply, in order" \
"DescribeInstanceTypeOfferings DescribeInstanceTypeOfferings DescribeInstanceTypes DescribeAccountAttributes DescribeAddresses DescribeImages DescribeImages DescribeVpcs DescribeSubnets ImportKeyPair CreateSecurityGroup AuthorizeSecurityGroupIngress AuthorizeSecurityGroupIngress AuthorizeSecurityGroupEgress CreatePlacementGroup RunInstances RunInstances!InsufficientInstanceCapacity TerminateInstances DescribeSubnets CreatePlacementGroup RunInstances!RequestLimitExceeded RunInstances RunInstances DescribeInstances DescribeInstances DescribeInstances DescribeInstances DescribeInstances DescribeInstances DescribeInstances DescribeInstances DescribeAddresses AllocateAddress AllocateAddress AllocateAddress AllocateAddress AssociateAddress AssociateAddress AssociateAddress AssociateAddress DescribeInstances DescribeInstances DescribeInstances" \
    "$SEQ"
# run_params PYEXPR: evaluate on the list `r` of logged RunInstances params
runs() { python3 - "$LOG" "$1" <<'PY'
import json, sys
r = [l["params"] | {"_error": l["error"]} for l in map(json.loads, open(sys.argv[1])) if l["action"] == "RunInstances"]
print(eval(sys.argv[2]))
PY
}
expect_eq "five RunInstances: head a, workers a (refused), head b twice, workers b" \
    "1/1/us-east-1a 3/3/us-east-1a 1/1/us-east-1b 1/1/us-east-1b 3/3/us-east-1b" \
    "$(runs '" ".join(p["MinCount"] + "/" + p["MaxCount"] + "/" + p["Placement.AvailabilityZone"] for p in r)')"
expect_eq "client tokens: per cluster and attempt; the throttled call retried with its token" \
    "effa-0-$U8-a1 effa-w1-$U8-a1 effa-0-$U8-a2 effa-0-$U8-a2 effa-w1-$U8-a2" \
    "$(runs '" ".join(p["ClientToken"] for p in r)')"
expect_eq "placement group per zone" "gpuctl-effa-$U8-us-east-1b" \
    "$(runs 'r[-1]["Placement.GroupName"]')"
expect_eq "an ENA primary, then an efa-only interface on card 0 device 1 and on each other card's device 0" \
    "0:0:interface 0:1:efa-only 1:0:efa-only 2:0:efa-only 3:0:efa-only" \
    "$(runs '" ".join(r[-1][f"NetworkInterface.{k}.NetworkCardIndex"] + ":" + r[-1][f"NetworkInterface.{k}.DeviceIndex"] + ":" + r[-1][f"NetworkInterface.{k}.InterfaceType"] for k in range(1, 6))')"
expect_eq "five interfaces, no sixth" "False" "$(runs '"NetworkInterface.6.DeviceIndex" in r[-1]')"
expect_eq "no public address with several cards" "False" \
    "$(runs 'any(k.endswith("AssociatePublicIpAddress") for k in r[-1])')"
expect_eq "spot, one-time, terminate on interruption, max price" \
    "spot one-time terminate 9.5000" \
    "$(runs '" ".join(r[-1]["InstanceMarketOptions." + k] for k in ("MarketType", "SpotOptions.SpotInstanceType", "SpotOptions.InstanceInterruptionBehavior", "SpotOptions.MaxPrice"))')"
expect_eq "IMDSv2 only, shutdown terminates, newest PyTorch DLAMI, gp3 root" \
    "required terminate ami-01000000000000002 /dev/sda1 gp3 true" \
    "$(runs '" ".join(r[-1][k] for k in ("MetadataOptions.HttpTokens", "InstanceInitiatedShutdownBehavior", "ImageId", "BlockDeviceMapping.1.DeviceName", "BlockDeviceMapping.1.Ebs.VolumeType", "BlockDeviceMapping.1.Ebs.DeleteOnTermination"))')"
expect_eq "tag specifications: instance, volume, network-interface, spot request" \
    "instance volume network-interface spot-instances-request" \
    "$(runs '" ".join(r[-1][f"TagSpecification.{i}.ResourceType"] for i in range(1, 5))')"
HEAD_IP=$(json_get "$T/apply.json" '[n["private_ip"] for n in d["cluster_status"]["nodes"] if n["rank"] == 0][0]')
expect_match "the workers' user-data carries the head's address" \
    "GPUCTL_HEAD_IP='$HEAD_IP'" "$(runs 'r[-1]["UserData"]')"
expect_match "the workers find their rank from the launch index" \
    "ami-launch-index" "$(runs 'r[-1]["UserData"]')"
expect_eq "the head's user-data: rank 0, no launch index" "True False" \
    "$(runs '("export GPUCTL_NODE_RANK=0" in r[-2]["UserData"], "ami-launch-index" in r[-2]["UserData"])' | tr -d '(),')"

fake "http://127.0.0.1:$FAKE_PORT/_fake/state" > "$T/world.json"
world() { json_get "$T/world.json" "$1"; }
expect_eq "five instances started: the abandoned head terminated, four running" \
    "running running running running terminated" \
    "$(world '" ".join(sorted(i["state"] for i in d["instances"]))')"
expect_eq "every instance tagged with the cluster, its uid, role and labels" "True" \
    "$(world "all(i['tags'].get('gpuctl:cluster') == 'effa' and i['tags'].get('gpuctl:cluster-uid') == '$UID_' and i['tags'].get('team') == 'vision' and i['tags'].get('gpuctl:role') in ('head', 'worker') for i in d['instances'])")"
# job.yaml sets no lifecycle.max_duration nor budget.max_total: the nodes'
# default end, 72 h (spec.h), is their expiry tag (gc uses it)
world "[i['tags'].get('gpuctl:expires-at', '') for i in d['instances']]" > "$T/expires.txt"
python3 - "$T/expires.txt" "$t0" <<'PY' && ok "every instance expires 72 h (the default end) after its launch" || fail "expires-at not launch + 72h: $(cat "$T/expires.txt")"
import ast, datetime, sys
ts = ast.literal_eval(open(sys.argv[1]).read())
t0 = int(sys.argv[2])
def at(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
sys.exit(0 if len(ts) == 5 and all(t0 + 259200 <= at(s) <= t0 + 259200 + 120 for s in ts) else 1)
PY
expect_eq "the running ones in us-east-1b, one head and three workers by launch index" \
    "us-east-1b:head:0 us-east-1b:worker:0 us-east-1b:worker:1 us-east-1b:worker:2" \
    "$(world '" ".join(sorted(i["zone"] + ":" + i["tags"]["gpuctl:role"] + ":" + str(i["launch_index"]) for i in d["instances"] if i["state"] == "running"))')"
expect_eq "each running node reached by an Elastic IP on its primary interface" "4 4" \
    "$(world '" ".join(str(x) for x in (sum(1 for i in d["instances"] if i["state"] == "running" and i["public_ip"] and i["public_ip"].startswith("203.0.113.")), sum(1 for a in d["addresses"] if a["instance_id"] and a["tags"].get("gpuctl:cluster-uid") == "'$UID_'")))')"
expect_eq "exactly four addresses, each on card 0 device 0 (the ENA interface) of its own running node, which shows it" \
    "4 4 True" \
    "$(world 'len(d["addresses"]), len({a["instance_id"] for a in d["addresses"]}), all(n["id"] == a["network_interface_id"] and (n["card"], n["device"], n["type"]) == (0, 0, "interface") and i["state"] == "running" and i["public_ip"] == a["public_ip"] for a in d["addresses"] for i in d["instances"] if i["id"] == a["instance_id"] for n in i["network_interfaces"] if n["id"] == a["network_interface_id"])' | tr -d '(),')"
expect_eq "the addresses carry the cluster's tags and labels" \
    "{'gpuctl:cluster': 'effa', 'gpuctl:cluster-uid': '$UID_', 'team': 'vision'}" \
    "$(world 'sorted(set(str(a["tags"]) for a in d["addresses"]))[0] if len(set(str(a["tags"]) for a in d["addresses"])) == 1 else "differ"')"
expect_eq "associated by interface, never by instance, without reassociation" \
    "NetworkInterfaceId NetworkInterfaceId NetworkInterfaceId NetworkInterfaceId false" \
    "$(python3 -c 'import json,sys; r=[l["params"] for l in map(json.loads, open(sys.argv[1])) if l["action"] == "AssociateAddress"]; print(" ".join(sorted(k for p in r for k in p if k in ("InstanceId", "NetworkInterfaceId"))), " ".join(sorted(set(p["AllowReassociation"] for p in r))))' "$LOG")"
expect_eq "security group rules: all traffic from and to the group itself, SSH from the caller" \
    "egress:-1:None:None:self ingress:-1:None:None:self ingress:tcp:22:22:203.0.113.7/32" \
    "$(world '" ".join(sorted(("egress" if r["egress"] else "ingress") + ":" + r["protocol"] + ":" + str(r["from"]) + ":" + str(r["to"]) + ":" + ("self" if r["group"] == g["id"] else str(r["cidr"])) for g in d["security_groups"] if g["name"] == "gpuctl-effa-'$U8'" for r in g["rules"] if r["egress"] is False or r["group"]))')"
expect_eq "the key gpuctl made is kept 0600" "600" "$(stat -c %a "$STATE/keys/gpuctl-effa-$U8")"

# ---- 2. status, attempts, second apply ------------------------------------------------
g -o json status effa > "$T/status.json"
check_schema "$T/status.json" status
expect_eq "status: four nodes running with their IPs" "4" \
    "$(json_get "$T/status.json" 'sum(1 for n in d["clusters"][0]["nodes"] if n["phase"] == "running" and n["private_ip"].startswith("10.0.1."))')"
expect_eq "status: the attempts in order" \
    "1:0:us-east-1a:created 1:1:us-east-1a:error:capacity 1:2:us-east-1a:error:capacity 1:3:us-east-1a:error:capacity 2:0:us-east-1b:created 2:1:us-east-1b:created 2:2:us-east-1b:created 2:3:us-east-1b:created" \
    "$(json_get "$T/status.json" '" ".join(":".join(str(a[k]) for k in ("attempt", "rank", "zone", "outcome", "error_code") if a[k] != "") for a in d["clusters"][0]["attempts"])')"
n0=$(log_lines)
run_rc rc g -y apply -f job.yaml > "$T/apply2.txt" 2>&1
expect_eq "second apply: exit 0" 0 "$rc"
expect_match "second apply: unchanged" "cluster effa: unchanged" "$(cat "$T/apply2.txt")"
# the running nodes (four, pages of two) and the cluster's addresses (each
# node has its own: nothing to do), then one refresh: the five tagged
# instances (four running, the abandoned head terminated) in pages of two
expect_eq "second apply: the Elastic IPs looked at, one refresh (three pages), nothing created" \
    "DescribeInstances DescribeInstances DescribeAddresses DescribeInstances DescribeInstances DescribeInstances" \
    "$(actions "$n0")"

# ---- 3. destroy ----------------------------------------------------------------------------
n0=$(log_lines)
run_rc rc g -y destroy effa > "$T/destroy.txt" 2>&1
[ "$rc" = 0 ] || cat "$T/destroy.txt"
expect_eq "destroy: exit 0" 0 "$rc"
SEQ=$(actions "$n0")
# the Elastic IPs first (disassociated, then released, each step at once),
# then terminate by tag, wait, and the rest; the Elastic IPs again last
expect_match "destroy: the addresses, then terminate by tag, wait, then the rest" \
    "^DescribeAddresses DisassociateAddress DisassociateAddress DisassociateAddress DisassociateAddress ReleaseAddress ReleaseAddress ReleaseAddress ReleaseAddress DescribeInstances (DescribeInstances )?TerminateInstances (DescribeInstances )+DescribePlacementGroups DeletePlacementGroup DeletePlacementGroup DescribeSecurityGroups DeleteSecurityGroup DescribeKeyPairs DeleteKeyPair DescribeAddresses$" \
    "$SEQ"
expect_match "destroy: says how many instances it terminated by tag" \
    "aws: terminated 4 instance\(s\) of effa in us-east-1 found by its tag" "$(cat "$T/destroy.txt")"
fake "http://127.0.0.1:$FAKE_PORT/_fake/state" > "$T/world2.json"
expect_eq "nothing left: all instances terminated, no group, placement group, key or address" \
    "True 0 0 0 0" \
    "$(json_get "$T/world2.json" '" ".join(str(x) for x in (all(i["state"] == "terminated" for i in d["instances"]), sum(1 for g in d["security_groups"] if g["name"].startswith("gpuctl-")), len(d["placement_groups"]), len(d["key_pairs"]), len(d["addresses"])))')"
expect_eq "the generated key is gone too" "no" "$([ -e "$STATE/keys/gpuctl-effa-$U8" ] && echo yes || echo no)"
n0=$(log_lines)
run_rc rc g -y destroy effa > /dev/null 2>&1
expect_eq "destroy again: exit 0 (idempotent), no EC2 call" "0 " "$rc $(actions "$n0")"

# ---- 4b. quota: the next region; a zone that just had no capacity comes last ----------
fake -X DELETE "http://127.0.0.1:$FAKE_PORT/_fake/faults" > /dev/null
fake -X POST -d '[{"action": "RunInstances", "region": "us-east-1", "code": "VcpuLimitExceeded"}]' \
    "http://127.0.0.1:$FAKE_PORT/_fake/faults" > /dev/null
sed -i 's/^region: us-east-1$/regions: [us-east-1, us-west-2]/' job.yaml
n0=$(log_lines)
run_rc rc g -o json plan -f job.yaml --live > "$T/plan-live2.json"
expect_eq "plan --live over two regions: exit 0" 0 "$rc"
# asked at once, one batch per page round: us-east-1 (4 zones) and
# us-west-2 (3 zones) both take two pages of two
expect_eq "plan --live over two regions: two pages each" \
    "us-east-1 us-east-1 us-west-2 us-west-2" \
    "$(python3 -c 'import json,sys; print(" ".join(sorted(l["region"] for l in map(json.loads, open(sys.argv[1]).readlines()[int(sys.argv[2]):]) if l["action"] == "DescribeSpotPriceHistory")))' "$LOG" "$n0")"
expect_eq "the us-west-2 offer at its live price (catalog 7.9992, zone a)" "7.9992" \
    "$(json_get "$T/plan-live2.json" '[o["price"]["node_usd_hr"] for o in d["fallbacks"] if o["region"] == "us-west-2"][0]')"
run_rc rc g -y -o json apply -f job.yaml --poll-interval 0.05 > "$T/apply3.json" 2> "$T/apply3.err"
expect_eq "quota in us-east-1: apply still exits 0" 0 "$rc"
expect_match "it says it moves on" "trying offer 2 of 2: aws p4d.24xlarge us-west-2" \
    "$(cat "$T/apply3.err")"
g -o json status --all > "$T/status3.json"
expect_eq "the cluster runs in us-west-2" "us-west-2 us-west-2 us-west-2 us-west-2" \
    "$(json_get "$T/status3.json" '" ".join(n["region"] for n in d["clusters"][-1]["nodes"])')"
# us-east-1a cools down (spot.zone_cooldown: no capacity a moment ago),
# so it comes last, after b (its pool skip, GPUCTL_CAPACITY_SKIP_S, is
# test_engine_apply's test_capacity_skip)
expect_eq "the failed try went to us-east-1b first (a cools down) and met the quota there" \
    "us-east-1b:error:quota" \
    "$(json_get "$T/status3.json" '" ".join(a["zone"] + ":" + a["outcome"] + ":" + a["error_code"] for a in d["clusters"][-2]["attempts"])')"
fake "http://127.0.0.1:$FAKE_PORT/_fake/state" > "$T/world3.json"
expect_eq "the abandoned try in us-east-1 left no group, key or address behind" "0 0 0" \
    "$(json_get "$T/world3.json" '" ".join(str(x) for x in (sum(1 for g in d["security_groups"] if g["name"].startswith("gpuctl-") and g["region"] == "us-east-1"), sum(1 for k in d["key_pairs"] if k["region"] == "us-east-1"), sum(1 for a in d["addresses"] if a["region"] == "us-east-1")))')"
expect_eq "each us-west-2 node has its Elastic IP" "4 4" \
    "$(json_get "$T/world3.json" '" ".join(str(x) for x in (sum(1 for a in d["addresses"] if a["region"] == "us-west-2" and a["association_id"]), sum(1 for i in d["instances"] if i["region"] == "us-west-2" and i["state"] == "running" and i["public_ip"])))')"
# The head taken back (spot interruption): the cluster says so, and stays
# so however often it is looked at (regression: it turned 'pending' once the
# head's row was terminated); apply --wait, the controller, then replaces it
# by aws's head-loss rule: the workers wait for the old head's address, so
# all four nodes are made anew (the job would resume from the store).
HEAD_ID=$(json_get "$T/status3.json" '[n["provider_id"] for n in d["clusters"][-1]["nodes"] if n["rank"] == 0][0]')
fake -X POST -d "{\"instance_id\": \"$HEAD_ID\"}" "http://127.0.0.1:$FAKE_PORT/_fake/preempt" > /dev/null
for i in 1 2 3; do
    g -o json status effa > "$T/pre$i.json"
done
expect_eq "head preempted: the cluster says so, three looks in a row" "preempted preempted preempted" \
    "$(for i in 1 2 3; do json_get "$T/pre$i.json" 'd["clusters"][0]["phase"]'; done | tr '\n' ' ' | sed 's/ $//')"
run_rc rc timeout 120 "$GPUCTL_BIN" --state-dir "$STATE" -y apply -f job.yaml --wait --timeout 5 \
    --poll-interval 0.05 > /dev/null 2> "$T/head.err"
expect_eq "apply --wait on it replaces the head and waits on (exit 12 at --timeout)" 12 "$rc"
expect_match "it says why the workers go too" \
    "the head of cluster 'effa' is gone and 3 worker\\(s\\) wait for it at its old address: replacing them" \
    "$(cat "$T/head.err")"
g -o json status effa > "$T/post.json"
expect_eq "four new nodes run, none of them the old head" "running running running running no" \
    "$(json_get "$T/post.json" '" ".join([n["phase"] for n in d["clusters"][0]["nodes"] if n["phase"] != "terminated"] + ["yes" if any(n["provider_id"] == "'"$HEAD_ID"'" and n["phase"] != "terminated" for n in d["clusters"][0]["nodes"]) else "no"])')"
expect_eq "the recovery is an event of the head" "node effa-0 ($HEAD_ID) was preempted while the job runs: replacing it" \
    "$(json_get "$T/post.json" '[r["message"] for r in d["clusters"][0]["recoveries"] if r["kind"] == "recovery"][0]')"
g -y destroy effa > /dev/null 2>&1

# ---- 5. the job's result: a node that powers itself off at the end of its
# job left "gpuctl-node-exit: ... status=N" on its serial console, which
# gpuctl reads back (GetConsoleOutput): apply --wait ends with the job
cat > done.yaml <<'EOF'
name: done
provider: aws
nodes: 2
resources:
  gpu: T4:1
  instance_types: g4dn.xlarge
region: us-east-1
run:
  command: python train.py
EOF
fake -X DELETE "http://127.0.0.1:$FAKE_PORT/_fake/faults" > /dev/null
# finish_node ID RANK STATUS: the node's job ended with STATUS
finish_node() {
    python3 -c 'import json,sys; print(json.dumps({"instance_id": sys.argv[1], "console": "[  42.1] cloud-init[812]: ok\ngpuctl-node-exit: cluster=%s rank=%s status=%s\n" % tuple(sys.argv[2:])}))' \
        "$1" "$DUID" "$2" "$3" > "$T/finish.json"
    fake -X POST --data-binary @"$T/finish.json" "http://127.0.0.1:$FAKE_PORT/_fake/finish" > /dev/null
}
run_rc rc g -y -o json apply -f done.yaml --poll-interval 0.05 > "$T/done.json" 2> /dev/null
expect_eq "a 2-node job: apply exits 0" 0 "$rc"
DUID=$(json_get "$T/done.json" 'd["cluster_status"]["uid"]')
IDS=($(json_get "$T/done.json" '" ".join(n["provider_id"] for n in sorted(d["cluster_status"]["nodes"], key=lambda n: n["rank"]))'))
finish_node "${IDS[1]}" 1 0
finish_node "${IDS[0]}" 0 0
n0=$(log_lines)
run_rc rc timeout 120 "$GPUCTL_BIN" --state-dir "$STATE" -y -o json apply -f done.yaml --wait \
    --timeout 60 --poll-interval 0.05 > "$T/done-wait.json" 2> /dev/null
expect_eq "both nodes finished with 0: apply --wait exits 0" 0 "$rc"
expect_eq "the cluster succeeded with rank 0's exit status 0" "succeeded 0 succeeded succeeded" \
    "$(json_get "$T/done-wait.json" '" ".join(str(x) for x in [d["phase"], d["exit_code"]] + [n["phase"] for n in sorted(d["cluster_status"]["nodes"], key=lambda n: n["rank"])])')"
expect_eq "each node's console read once" "2" \
    "$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]).readlines()[int(sys.argv[2]):] if json.loads(l)["action"] == "GetConsoleOutput"))' "$LOG" "$n0")"
g -y destroy done > /dev/null 2>&1
# a failing job: rank 0 reports 3
run_rc rc g -y -o json apply -f done.yaml --poll-interval 0.05 > "$T/done2.json" 2> /dev/null
DUID=$(json_get "$T/done2.json" 'd["cluster_status"]["uid"]')
IDS=($(json_get "$T/done2.json" '" ".join(n["provider_id"] for n in sorted(d["cluster_status"]["nodes"], key=lambda n: n["rank"]))'))
finish_node "${IDS[0]}" 0 3
finish_node "${IDS[1]}" 1 3
run_rc rc timeout 120 "$GPUCTL_BIN" --state-dir "$STATE" -y apply -f done.yaml --wait \
    --timeout 60 --poll-interval 0.05 > "$T/done2-wait.txt" 2>&1
expect_eq "rank 0 exited 3: apply --wait exits 10 (job failed)" 10 "$rc"
expect_match "and says rank 0's status" "job failed: rank 0 exit status 3" "$(cat "$T/done2-wait.txt")"
g -y destroy done > /dev/null 2>&1

# The IAM policy in the docs lists exactly the EC2 actions the code can
# call (plus CreateTags, which tagging at creation needs), and every
# action this test saw is in it.  (Its s3: actions: tests/unit/test_aws_s3.c.)
expect_eq "docs/providers/aws-iam-policy.json: exactly the actions in providers/aws/" "ok" \
    "$(python3 - "$GPUCTL_SOURCE_DIR" "$LOG" <<'PY'
import glob, json, re, sys
src, log = sys.argv[1], sys.argv[2]
# the EC2 client's files (the S3 client's operations, s3*.c, are S3's;
# iam.c's are IAM's: test_aws_ckpt.sh)
code = "".join(open(f).read() for f in sorted(glob.glob(src + "/providers/aws/*.c"))
               if not re.match(r"s3|iam\.c", f.rsplit("/", 1)[1]))
used = set(re.findall(r'"((?:Describe|Create|Delete|Run|Terminate|Import|Authorize|Allocate|Associate|Disassociate|Release|Get)[A-Z][A-Za-z]+)"', code))
policy = json.load(open(src + "/docs/providers/aws-iam-policy.json"))
allowed = set()
for st in policy["Statement"]:
    acts = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
    allowed |= {a.split(":", 1)[1] for a in acts if a.startswith("ec2:")}
seen = {json.loads(l)["action"] for l in open(log)} - {a for a in [] }
seen = {a for a in seen if not a.startswith("_fake/")}
problems = []
if allowed - {"CreateTags"} != used:
    problems.append("policy %s vs code %s" % (sorted(allowed - {"CreateTags"} - used), sorted(used - allowed)))
if not seen <= allowed:
    problems.append("called but not allowed: %s" % sorted(seen - allowed))
print("; ".join(problems) or "ok")
PY
)"

if grep -rq "wJalrXUtnFEMI" "$STATE" "$T"/*.json "$T"/*.txt "$T"/*.err 2>/dev/null; then
    fail "the secret key appears in state or output"
else
    ok "the secret key appears in no state file or output"
fi
finish
