#!/bin/bash
# The aws provider against the fake EC2 endpoint (tests/fake/ec2.py) when
# things go wrong, and the spec fields test_aws.sh leaves out.  Each part
# has its own fake, state directory and cache (so the action sequences do
# not depend on the order of the parts), answers in one page
# (--page-size 0) unless said, and pending for one DescribeInstances:
#  a. a partial launch: the fake takes a worker back at once (stateReason
#     Server.InsufficientInstanceCapacity); the attempt fails while the
#     nodes start, zone a is cleared and zone b used;
#  b. an InternalError (500) on RunInstances and slow DescribeInstances:
#     the retried RunInstances carries the same ClientToken;
#  c. spot preemption seen by status;
#  d. the user's own SSH public key is imported as is;
#  k. a changed SSH source address reaches the security group on a re-run;
#  e. a non-EFA type: one NIC with a public address, no placement group;
#     an explicit AMI; an io2 root disk;
#  f. an on-demand head with spot workers;
#  g. apply killed after RunInstances, before the record: the re-run finds
#     the instances by client token, launches nothing twice;
#  h. refused and missing credentials: exit 20, nothing made, no secret;
#  i. no capacity in any zone: exit 22, the zones named, the record closed,
#     what the try made deleted; the zones skipped for a while;
#  l. apply killed while the workers' RunInstances is in flight (2 s on the
#     fake): the re-run sends it again with the same token, exactly 4
#     instances for 4 nodes;
#  m. a failed lookup by client token stops the re-run before any launch;
#  n. as l, and the resent call meets IdempotentParameterMismatch: the
#     nodes of the first call are taken in by token;
#  o. answers no retry can cure (an HTML 500, a JSON 404) fail at once;
#     an HTML 200 is no RunInstances answer; a gateway's 503 is retried
#     and says so; retries show as progress lines; SIGINT ends a call
#     waiting to retry;
#  p. a failed apply whose clean-up cannot finish shows as failed;
#  r. one lookup of a killed apply's batch sees nothing (eventual
#     consistency): that node is sent again with the batch's token, never
#     a new one, and found;
#  s. workers whose head a clean-up removed are replaced with the new head;
#  q. a type that no zone of the region offers: exit 22, nothing made
#     (regression: an empty zone list was sorted as qsort(NULL, 0), which
#     the sanitizer build aborts on).
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/ec2_parts.sh"
no_secret() {
    if grep -rqF -- "$1" "$STATE" "$T"/*.json "$T"/*.txt "$T"/*.err "$T/$2.log" 2>/dev/null; then
        fail "$3: the secret appears in state, output or the request log"
    else
        ok "$3: the secret appears nowhere"
    fi
}
# spec NAME NODES TYPE GPU [EXTRA-YAML]
spec() {
    cat > "$1.yaml" <<EOF
name: $1
provider: aws
nodes: $2
resources:
  gpu: $4
  instance_types: $3
region: us-east-1
${5:-}
run:
  command: python train.py
EOF
}
# attempts EXPR-FILTER: "attempt:rank:zone:outcome:error_code" of cluster NAME
attempts() {
    st "' '.join(':'.join(str(a[k]) for k in ('attempt', 'rank', 'zone', 'outcome', 'error_code')) for a in [c for c in d['clusters'] if c['name'] == '$1'][-1]['attempts'])"
}

# ---- a. a partial launch ------------------------------------------------------
echo '[{"action": "RunInstances", "zone": "us-east-1a", "partial": 1}]' > "$T/a-faults.json"
part a --faults "$T/a-faults.json"
spec parta 3 p4d.24xlarge A100-40GB:8 ""
run_rc rc g -y -o json apply -f parta.yaml "${P[@]}" > "$T/a.json" 2> "$T/a.err"
[ "$rc" = 0 ] || cat "$T/a.err"
expect_eq "a: apply exits 0" 0 "$rc"
U8=$(json_get "$T/a.json" 'd["cluster_status"]["uid"][:8]')
# Hand-checked: zones (a b c: d has no p*), the type, the Elastic IP
# quota and addresses (p4d nodes have several network interfaces), the
# image, VPC, subnet a, key, group and its rules, placement group a; the
# head, the workers' batch (the fake brings up the first of the two); the
# first poll shows worker 2 terminated for want of capacity: the three
# nodes of zone a are terminated one by one (none had an Elastic IP yet:
# those come once all run); zone b: subnet, placement group, head,
# workers, two polls (pending, running); the running nodes and the
# cluster's addresses (none), three Elastic IPs allocated at once and
# associated at once; the apply's refresh.
expect_eq "a: the EC2 calls of the apply, in order" \
"DescribeInstanceTypeOfferings DescribeInstanceTypes DescribeAccountAttributes DescribeAddresses DescribeImages DescribeVpcs DescribeSubnets ImportKeyPair CreateSecurityGroup AuthorizeSecurityGroupIngress AuthorizeSecurityGroupIngress AuthorizeSecurityGroupEgress CreatePlacementGroup RunInstances RunInstances DescribeInstances TerminateInstances TerminateInstances TerminateInstances DescribeSubnets CreatePlacementGroup RunInstances RunInstances DescribeInstances DescribeInstances DescribeInstances DescribeAddresses AllocateAddress AllocateAddress AllocateAddress AssociateAddress AssociateAddress AssociateAddress DescribeInstances" \
    "$(actions 0)"
expect_eq "a: RunInstances: head and workers in a, then in b" \
    "1/us-east-1a/parta-0-$U8-a1 2/us-east-1a/parta-w1-$U8-a1 1/us-east-1b/parta-0-$U8-a2 2/us-east-1b/parta-w1-$U8-a2" \
    "$(calls RunInstances '" ".join(p["MinCount"] + "/" + p["Placement.AvailabilityZone"] + "/" + p["ClientToken"] for p in r)')"
expect_eq "a: zone a's three instances terminated one per call, in rank order" \
    "i-00000000000000001 i-00000000000000002 i-00000000000000003" \
    "$(calls TerminateInstances '" ".join(p["InstanceId.1"] + ("+" if "InstanceId.2" in p else "") for p in r)')"
expect_eq "a: the fake: zone a's three terminated (worker 2 for want of capacity), zone b's three running" \
    "us-east-1a:head:terminated:user us-east-1a:worker:terminated:user us-east-1a:worker:terminated:capacity us-east-1b:head:running:None us-east-1b:worker:running:None us-east-1b:worker:running:None" \
    "$(world '" ".join(i["zone"] + ":" + i["tags"]["gpuctl:role"] + ":" + i["state"] + ":" + str(i["state_reason"]) for i in d["instances"])')"
expect_eq "a: the nodes run in us-east-1b" \
    "0:running:us-east-1b:i-00000000000000004 1:running:us-east-1b:i-00000000000000005 2:running:us-east-1b:i-00000000000000006" \
    "$(st '" ".join(str(n["rank"]) + ":" + n["phase"] + ":" + n["zone"] + ":" + n["provider_id"] for n in d["clusters"][0]["nodes"])')"
# Zone a's batch was made, then lost worker 2 while starting: the attempts
# must say so (and status shows the failover table), not "created" only.
expect_match "a: the attempts of zone a: rank 2 lost for want of capacity" "(^| )1:2:us-east-1a:error:capacity( |$)" \
    "$(st "' '.join(':'.join(str(a[k]) for k in ('attempt', 'rank', 'zone', 'outcome', 'error_code')) for a in d['clusters'][0]['attempts'] if a['attempt'] == 1)")"
expect_eq "a: the attempts: zone b made all three" "2:0:us-east-1b:created 2:1:us-east-1b:created 2:2:us-east-1b:created" \
    "$(st "' '.join(':'.join(str(a[k]) for k in ('attempt', 'rank', 'zone', 'outcome')) for a in d['clusters'][0]['attempts'] if a['attempt'] == 2)")"
expect_match "a: status shows the failover" "launch attempts \(failover\)" "$(g status parta 2>&1)"
expect_eq "a: three nodes created (zone b's; zone a's were taken back)" 3 "$(json_get "$T/a.json" 'd["created"]')"
expect_match "a: it moves on to zone b" "no capacity for p4d.24xlarge in us-east-1a; trying zone us-east-1b" "$(cat "$T/a.err")"
expect_match "a: it says why it left zone a" "node parta-2 \(i-00000000000000003\) ended while starting: instance terminated: Server.InsufficientInstanceCapacity" \
    "$(cat "$T/a.err")"
g -y destroy parta > /dev/null 2>&1
expect_eq "a: destroy leaves nothing" "True 0 0 0" \
    "$(world '" ".join(str(x) for x in (all(i["state"] == "terminated" for i in d["instances"]), sum(1 for g in d["security_groups"] if g["name"].startswith("gpuctl-")), len(d["placement_groups"]), len(d["key_pairs"])))')"

# ---- b. InternalError once on RunInstances; slow DescribeInstances ---------------
cat > "$T/b-faults.json" <<'EOF'
[{"action": "RunInstances", "code": "InternalError", "times": 1},
 {"action": "DescribeInstances", "delay_ms": 2000}]
EOF
part b --faults "$T/b-faults.json"
spec slow 2 g4dn.xlarge T4:1 ""
run_rc rc g -y -o json apply -f slow.yaml "${P[@]}" > "$T/b.json" 2> "$T/b.err"
[ "$rc" = 0 ] || cat "$T/b.err"
expect_eq "b: apply exits 0" 0 "$rc"
U8=$(json_get "$T/b.json" 'd["cluster_status"]["uid"][:8]')
# g4dn.xlarge: all four zones; no EFA: no placement group; the head's
# RunInstances answered 500 InternalError once and was retried; the worker
# alone (no batch); two slow polls and the refresh.
expect_eq "b: the EC2 calls of the apply, in order" \
"DescribeInstanceTypeOfferings DescribeInstanceTypes DescribeImages DescribeVpcs DescribeSubnets ImportKeyPair CreateSecurityGroup AuthorizeSecurityGroupIngress AuthorizeSecurityGroupIngress AuthorizeSecurityGroupEgress RunInstances!InternalError RunInstances RunInstances DescribeInstances DescribeInstances DescribeInstances" \
    "$(actions 0)"
expect_eq "b: the retried RunInstances carries the same ClientToken (and body)" \
    "slow-0-$U8-a1:500 slow-0-$U8-a1:200 slow-1-$U8-a1:200 True" \
    "$(logq '" ".join(l["client_token"] + ":" + str(l["status"]) for l in L if l["action"] == "RunInstances") + " " + str([l["params"] for l in L if l["action"] == "RunInstances"][0] == [l["params"] for l in L if l["action"] == "RunInstances"][1])')"
expect_eq "b: every DescribeInstances was delayed" "delay delay delay" \
    "$(logq '" ".join(l["fault"] for l in L if l["action"] == "DescribeInstances")')"
expect_eq "b: two instances, both running, none twice" "running running" \
    "$(world '" ".join(i["state"] for i in d["instances"])')"
expect_eq "b: status: both nodes running" "running running" \
    "$(st '" ".join(n["phase"] for n in d["clusters"][0]["nodes"])')"
g -y destroy slow > /dev/null 2>&1

# ---- f. an on-demand head, spot workers; c. a worker preempted ---------------------
part f
spec mixed 3 g4dn.xlarge T4:1 "spot: {policy: spot, head: on-demand}"
run_rc rc g -y -o json apply -f mixed.yaml "${P[@]}" > "$T/f.json" 2> "$T/f.err"
[ "$rc" = 0 ] || cat "$T/f.err"
expect_eq "f: apply exits 0" 0 "$rc"
expect_eq "f: the head's RunInstances: one node, no InstanceMarketOptions" "1 []" \
    "$(calls RunInstances 'r[0]["MinCount"] + " " + str(sorted(k for k in r[0] if k.startswith("InstanceMarketOptions")))')"
expect_eq "f: the workers' RunInstances: two nodes, spot, one-time, terminate, no MaxPrice" \
    "2 spot one-time terminate False" \
    "$(calls RunInstances '" ".join([r[1]["MinCount"], r[1]["InstanceMarketOptions.MarketType"], r[1]["InstanceMarketOptions.SpotOptions.SpotInstanceType"], r[1]["InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior"], str("InstanceMarketOptions.SpotOptions.MaxPrice" in r[1])])')"
expect_eq "f: only the workers' call tags a spot request" "3 4" \
    "$(calls RunInstances '" ".join(str(sum(1 for k in p if k.endswith(".ResourceType"))) for p in r)')"
expect_eq "f: the fake: head on-demand, workers spot" "head:None worker:spot worker:spot" \
    "$(world '" ".join(i["tags"]["gpuctl:role"] + ":" + str(i["lifecycle"]) for i in d["instances"])')"
expect_eq "f: status: the nodes' market" "0:False 1:True 2:True" \
    "$(st '" ".join(str(n["rank"]) + ":" + str(n["spot"]) for n in d["clusters"][0]["nodes"])')"
W1=$(st '[n["provider_id"] for n in d["clusters"][0]["nodes"] if n["rank"] == 1][0]')
H0=$(st '[n["provider_id"] for n in d["clusters"][0]["nodes"] if n["rank"] == 0][0]')
fake -X POST -d "{\"instance_id\": \"$W1\"}" "$URL/_fake/preempt" > "$T/preempt.json"
expect_eq "c: the fake preempts worker 1" "{'ok': True}" "$(json_get "$T/preempt.json" 'd')"
expect_match "c: the on-demand head cannot be preempted" "is not a spot instance" \
    "$(fake -X POST -d "{\"instance_id\": \"$H0\"}" "$URL/_fake/preempt")"
n0=$(log_lines)
g -o json status mixed > "$T/c.json"
expect_eq "c: status: worker 1 preempted, the others running, the cluster running" \
    "running 0:running 1:preempted 2:running" \
    "$(json_get "$T/c.json" 'd["clusters"][0]["phase"] + " " + " ".join(str(n["rank"]) + ":" + n["phase"] for n in d["clusters"][0]["nodes"])')"
expect_eq "c: the preempted node has ended" "True" \
    "$(json_get "$T/c.json" '[n["ended_at"] is not None for n in d["clusters"][0]["nodes"] if n["rank"] == 1][0]')"
expect_eq "c: status asked once, by tag" "DescribeInstances" "$(actions "$n0")"
expect_eq "c: the cluster is degraded, naming the node and what EC2 said" \
    "1 mixed-1 $W1 preempted instance terminated: Server.SpotInstanceTermination" \
    "$(json_get "$T/c.json" '" ".join(str(v) for v in d["clusters"][0]["degraded"].values())')"
g status mixed > "$T/c.out"
expect_match "c: status says degraded" "^mixed +aws +3 +degraded " "$(cat "$T/c.out")"
expect_match "c: and why" "^mixed is degraded: node mixed-1 \\($W1\\) preempted: instance terminated: Server.SpotInstanceTermination\$" \
    "$(cat "$T/c.out")"
g -y destroy mixed > /dev/null 2>&1

# ---- d. the user's own key; e. a non-EFA type, an explicit AMI, an io2 disk -------
part e
# an ed25519 public key line: string "ssh-ed25519", then a 32-byte key
KEYLINE=$(python3 -c 'import base64, struct; t = b"ssh-ed25519"; k = bytes(range(32)); print("ssh-ed25519 " + base64.b64encode(struct.pack(">I", len(t)) + t + struct.pack(">I", 32) + k).decode() + " alice@example")')
printf '%s\n' "$KEYLINE" > "$T/alice.pub"
spec plain 2 g4dn.xlarge T4:1 "image: ami-01000000000000008"
sed -i 's/^resources:$/resources:\n  interconnect: none\n  disk: {size: 200GB, tier: nvme, iops: 20000}/' plain.yaml
run_rc rc env GPUCTL_SSH_PUBLIC_KEY="$T/alice.pub" "$GPUCTL_BIN" --state-dir "$STATE" -y -o json \
    apply -f plain.yaml "${P[@]}" > "$T/e.json" 2> "$T/e.err"
[ "$rc" = 0 ] || cat "$T/e.err"
expect_eq "e: apply exits 0" 0 "$rc"
U8=$(json_get "$T/e.json" 'd["cluster_status"]["uid"][:8]')
expect_eq "e: the EC2 calls: no placement group" \
"DescribeInstanceTypeOfferings DescribeInstanceTypes DescribeImages DescribeVpcs DescribeSubnets ImportKeyPair CreateSecurityGroup AuthorizeSecurityGroupIngress AuthorizeSecurityGroupIngress AuthorizeSecurityGroupEgress RunInstances RunInstances DescribeInstances DescribeInstances DescribeInstances" \
    "$(actions 0)"
expect_eq "e: the explicit image looked up by its id alone" "{'ImageId.1': 'ami-01000000000000008', '_error': None}" \
    "$(calls DescribeImages 'r[0]')"
expect_eq "e: both launches use it as is" "ami-01000000000000008 ami-01000000000000008" \
    "$(calls RunInstances '" ".join(p["ImageId"] for p in r)')"
expect_eq "e: one NIC: device 0, a public address, no interface type or card" \
    "NetworkInterface.1.AssociatePublicIpAddress=true NetworkInterface.1.DeleteOnTermination=true NetworkInterface.1.DeviceIndex=0 NetworkInterface.1.SecurityGroupId.1=sg NetworkInterface.1.SubnetId=subnet-01000000000000001" \
    "$(calls RunInstances '" ".join(sorted(k + "=" + v.split("-")[0] if k.endswith("SecurityGroupId.1") else k + "=" + v for k, v in r[0].items() if k.startswith("NetworkInterface")))')"
expect_eq "e: the worker's launch has the same NIC" "True" \
    "$(calls RunInstances 'str({k: v for k, v in r[0].items() if k.startswith("NetworkInterface")} == {k: v for k, v in r[1].items() if k.startswith("NetworkInterface")})')"
expect_eq "e: no placement group in either launch" "[]" \
    "$(calls RunInstances 'sorted(k for p in r for k in p if k.startswith("Placement.") and k != "Placement.AvailabilityZone")')"
expect_eq "e: the root disk: io2, 200 GiB, 20000 IOPS, deleted with the instance" \
    "/dev/sda1 io2 200 20000 true" \
    "$(calls RunInstances '" ".join(r[-1]["BlockDeviceMapping.1." + k] for k in ("DeviceName", "Ebs.VolumeType", "Ebs.VolumeSize", "Ebs.Iops", "Ebs.DeleteOnTermination"))')"
expect_eq "e: the fake: public addresses, io2 volumes of 200 GiB" \
    "198.51.100.1:io2:200:20000 198.51.100.2:io2:200:20000" \
    "$(world '" ".join(str(i["public_ip"]) + ":" + i["block_devices"][0]["type"] + ":" + str(i["block_devices"][0]["size"]) + ":" + str(i["block_devices"][0]["iops"]) for i in d["instances"])')"
expect_eq "d: ImportKeyPair's PublicKeyMaterial is exactly the user's line" "$KEYLINE" \
    "$(calls ImportKeyPair 'base64.b64decode(r[0]["PublicKeyMaterial"]).decode()')"
expect_eq "d: the fake: one ed25519 key pair with that key, used by both instances" \
    "gpuctl-plain-$U8 ed25519 True gpuctl-plain-$U8 gpuctl-plain-$U8" \
    "$(world '" ".join([d["key_pairs"][0]["name"], d["key_pairs"][0]["type"], str(d["key_pairs"][0]["public_key"] == "'"$KEYLINE"'")] + [i["key_name"] for i in d["instances"]])')"
expect_eq "d: nothing written under <state>/keys" "" "$(ls -A "$STATE/keys" 2>/dev/null)"
g -y destroy plain > /dev/null 2>&1
expect_eq "d: destroy deletes the imported key pair" "0" "$(world 'len(d["key_pairs"])')"
expect_eq "d: and leaves the user's key file alone" "$KEYLINE" "$(cat "$T/alice.pub")"

# ---- g. apply killed between RunInstances and the record --------------------------
part g
spec killed 4 g4dn.xlarge T4:1 ""
run_rc rc env GPUCTL_TEST_FAULT=kill-before-record:2 "$GPUCTL_BIN" --state-dir "$STATE" -y \
    apply -f killed.yaml "${P[@]}" > /dev/null 2> "$T/g1.err"
expect_eq "g: apply killed (SIGKILL) after the workers' RunInstances" 137 "$rc"
expect_eq "g: the killed apply: head, then the three workers in one call" \
"DescribeInstanceTypeOfferings DescribeInstanceTypes DescribeImages DescribeVpcs DescribeSubnets ImportKeyPair CreateSecurityGroup AuthorizeSecurityGroupIngress AuthorizeSecurityGroupIngress AuthorizeSecurityGroupEgress RunInstances RunInstances" \
    "$(actions 0)"
U8=$(st 'd["clusters"][0]["uid"][:8]')
expect_eq "g: the state: the head recorded, the workers not" \
    "0:i-00000000000000001 1: 2: 3:" \
    "$(st '" ".join(str(n["rank"]) + ":" + n["provider_id"] for n in d["clusters"][0]["nodes"])')"
expect_eq "g: the fake already has all four" 4 "$(world 'sum(1 for i in d["instances"] if i["state"] != "terminated")')"
n0=$(log_lines)
run_rc rc g -y -o json apply -f killed.yaml "${P[@]}" > "$T/g2.json" 2> "$T/g2.err"
[ "$rc" = 0 ] || cat "$T/g2.err"
expect_eq "g: the re-run apply exits 0" 0 "$rc"
expect_eq "g: it creates nothing, it adopts three, so it is not unchanged" "0 3 False" \
    "$(json_get "$T/g2.json" '" ".join(str(x) for x in (d["created"], d["adopted"], d["unchanged"]))')"
expect_eq "g: it looks the workers up by client token, waits for them to run, refreshes" \
    "DescribeInstances DescribeInstances DescribeInstances DescribeInstances DescribeInstances" \
    "$(actions "$n0")"
expect_eq "g: by the batch's token (the launch index is picked from the answer)" \
    "client-token=killed-w1-$U8-a1 client-token=killed-w1-$U8-a1 client-token=killed-w1-$U8-a1" \
    "$(calls DescribeInstances '" ".join(p["Filter.1.Name"] + "=" + p["Filter.1.Value.1"] for p in r[:3])' "$n0")"
expect_eq "g: each worker adopted as the instance of its launch index" \
    "0:i-00000000000000001 1:i-00000000000000002 2:i-00000000000000003 3:i-00000000000000004" \
    "$(st '" ".join(str(n["rank"]) + ":" + n["provider_id"] for n in d["clusters"][0]["nodes"])')"
expect_eq "g: the fake: exactly four instances, none terminated, two launches" "4 4 2" \
    "$(world '" ".join(str(x) for x in (len(d["instances"]), sum(1 for i in d["instances"] if i["state"] != "terminated"), len(d["reservations"])))')"
expect_eq "g: the workers' launch indexes" "0 1 2" \
    "$(world '" ".join(str(i["launch_index"]) for i in d["instances"][1:])')"
expect_eq "g: status: all four running" "running running running running" \
    "$(st '" ".join(n["phase"] for n in d["clusters"][0]["nodes"])')"
run_rc rc g -y destroy killed > /dev/null 2>&1
expect_eq "g: destroy exits 0" 0 "$rc"
expect_eq "g: destroy leaves nothing" "True 0 0 0" \
    "$(world '" ".join(str(x) for x in (all(i["state"] == "terminated" for i in d["instances"]), sum(1 for g in d["security_groups"] if g["name"].startswith("gpuctl-")), len(d["placement_groups"]), len(d["key_pairs"])))')"

# ---- h. refused and missing credentials ---------------------------------------------
part h
spec denied 2 g4dn.xlarge T4:1 ""
BAD=wrong-secret-h-0123456789
run_rc rc env AWS_SECRET_ACCESS_KEY=$BAD "$GPUCTL_BIN" --state-dir "$STATE" -y -o json \
    apply -f denied.yaml "${P[@]}" > "$T/h.json" 2> "$T/h.err"
expect_eq "h: a wrong secret: exit 20" 20 "$rc"
expect_eq "h: error auth, exit_status 20" "auth 20" \
    "$(json_get "$T/h.json" 'd["error"]["code"] + " " + str(d["error"]["exit_status"])')"
expect_match "h: the message is EC2's AuthFailure" "AuthFailure" "$(json_get "$T/h.json" 'd["error"]["message"]')"
expect_eq "h: one call, refused" "DescribeInstanceTypeOfferings!AuthFailure" "$(actions 0)"
# what EC2 said, apart: its code, the 401, the request id of that call (the
# fake's log), and no use in sending it again
RID_H=$(logq '[l["request_id"] for l in L if l["action"] == "DescribeInstanceTypeOfferings"][-1]')
expect_eq "h: the fake's request id" "00000000-0000-4000-8000-000000000001" "$RID_H"
expect_eq "h: -o json: remote_code, http_status, request_id, retryable" \
    "AuthFailure 401 $RID_H False" \
    "$(json_get "$T/h.json" '" ".join(str(d["error"][k]) for k in ("remote_code", "http_status", "request_id", "retryable"))')"
check_schema "$T/h.json" apply
expect_eq "h: the error line names the request id once" 1 "$(grep -c -- "request id $RID_H" "$T/h.err")"
expect_eq "h: nothing made at the fake" "0 0 0 0" \
    "$(world '" ".join(str(x) for x in (len(d["instances"]), sum(1 for g in d["security_groups"] if not g.get("default")), len(d["placement_groups"]), len(d["key_pairs"])))')"
g -o json status > "$T/h-status.json"
expect_eq "h: no live cluster left in the state" "[]" "$(json_get "$T/h-status.json" '[c["name"] for c in d["clusters"]]')"
no_secret "$BAD" h "h: wrong secret"
no_secret "$SECRET" h "h: the real secret"
run_rc rc env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$GPUCTL_BIN" --state-dir "$STATE" -y \
    -o json apply -f denied.yaml "${P[@]}" > "$T/h2.json" 2> "$T/h2.err"
expect_eq "h: no credentials at all: exit 20" 20 "$rc"
expect_eq "h: error auth" "auth" "$(json_get "$T/h2.json" 'd["error"]["code"]')"
expect_eq "h: no request made, so no remote details" "code exit_status message" \
    "$(json_get "$T/h2.json" '" ".join(sorted(d["error"]))')"
# the chain (providers/aws/config.c): environment, the two files (shown
# with ~ for $HOME), no container variables, metadata disabled
expect_eq "h: the message lists what was tried" \
    "no AWS credentials found for profile 'default': tried environment variables, shared credentials file ~/aws-creds (no such file), config file ~/aws-config (no such file), EC2 instance metadata (disabled by AWS_EC2_METADATA_DISABLED); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give the profile keys (aws configure)" \
    "$(json_get "$T/h2.json" 'd["error"]["message"]')"
expect_eq "h: still no EC2 call made" "DescribeInstanceTypeOfferings!AuthFailure" "$(actions 0)"
# a command without its own document: the error document carries them too
run_rc rc env AWS_SECRET_ACCESS_KEY=$BAD "$GPUCTL_BIN" --state-dir "$STATE" -o json \
    plan -f denied.yaml --live > "$T/h3.json" 2> "$T/h3.err"
expect_eq "h: plan --live with a wrong secret: exit 20" 20 "$rc"
check_schema "$T/h3.json" error
RID_H3=$(logq 'L[-1]["request_id"] + " " + str(L[-1]["error"])')
expect_eq "h: plan --live: remote_code, http_status, request_id, retryable" \
    "AuthFailure 401 ${RID_H3%% *} False" \
    "$(json_get "$T/h3.json" '" ".join(str(d["error"][k]) for k in ("remote_code", "http_status", "request_id", "retryable"))')"
expect_eq "h: ... of the last call, refused" "AuthFailure" "${RID_H3#* }"
no_secret "$BAD" h "h: plan --live, wrong secret"

# ---- i. no capacity in any zone of the region -----------------------------------------
echo '[{"action": "RunInstances", "region": "us-east-1", "code": "InsufficientInstanceCapacity"}]' > "$T/i-faults.json"
part i --faults "$T/i-faults.json"
spec full 2 p4d.24xlarge A100-40GB:8 ""
run_rc rc g -y -o json apply -f full.yaml "${P[@]}" > "$T/i1.json" 2> "$T/i1.err"
expect_eq "i: no capacity anywhere: exit 22" 22 "$rc"
expect_eq "i: error capacity" "capacity 22" \
    "$(json_get "$T/i1.json" 'd["error"]["code"] + " " + str(d["error"]["exit_status"])')"
expect_match "i: the error lists the zones tried" \
    "^aws: no capacity for p4d.24xlarge on-demand in us-east-1 \(zones tried: us-east-1a, us-east-1b, us-east-1c\); last: aws: RunInstances \(us-east-1\): InsufficientInstanceCapacity" \
    "$(json_get "$T/i1.json" 'd["error"]["message"]')"
# the last refusal's details, through the failover walk: EC2's code, its
# 500, the request id of the last RunInstances, not to be retried as is
RID_I=$(logq '[l["request_id"] for l in L if l["action"] == "RunInstances"][-1]')
expect_match "i: the fake's request id" "^00000000-0000-4000-8000-0000000000[0-9][0-9]$" "$RID_I"
expect_eq "i: -o json: remote_code, http_status, request_id, retryable" \
    "InsufficientInstanceCapacity 500 $RID_I False" \
    "$(json_get "$T/i1.json" '" ".join(str(d["error"][k]) for k in ("remote_code", "http_status", "request_id", "retryable"))')"
expect_match "i: the message holds that request id" "\(request id $RID_I\)$" \
    "$(json_get "$T/i1.json" 'd["error"]["message"]')"
check_schema "$T/i1.json" apply
# the Elastic IP quota once for the region; each zone: subnet, placement
# group, the head refused; then the cleanup by tag: no address, no
# instance; the three placement groups, the group, the key; the addresses
# again
expect_eq "i: the EC2 calls, in order" \
"DescribeInstanceTypeOfferings DescribeInstanceTypes DescribeAccountAttributes DescribeAddresses DescribeImages DescribeVpcs DescribeSubnets ImportKeyPair CreateSecurityGroup AuthorizeSecurityGroupIngress AuthorizeSecurityGroupIngress AuthorizeSecurityGroupEgress CreatePlacementGroup RunInstances!InsufficientInstanceCapacity DescribeSubnets CreatePlacementGroup RunInstances!InsufficientInstanceCapacity DescribeSubnets CreatePlacementGroup RunInstances!InsufficientInstanceCapacity DescribeAddresses DescribeInstances DescribePlacementGroups DeletePlacementGroup DeletePlacementGroup DeletePlacementGroup DescribeSecurityGroups DeleteSecurityGroup DescribeKeyPairs DeleteKeyPair DescribeAddresses" \
    "$(actions 0)"
expect_eq "i: one RunInstances per zone, one node each (the head)" "1/us-east-1a 1/us-east-1b 1/us-east-1c" \
    "$(calls RunInstances '" ".join(p["MinCount"] + "/" + p["Placement.AvailabilityZone"] for p in r)')"
U8=$(st '[c for c in d["clusters"] if c["name"] == "full"][-1]["uid"][:8]')
expect_eq "i: the placement groups deleted are the three it made" \
    "gpuctl-full-$U8-us-east-1a gpuctl-full-$U8-us-east-1b gpuctl-full-$U8-us-east-1c" \
    "$(calls DeletePlacementGroup '" ".join(sorted(p["GroupName"] for p in r))')"
expect_eq "i: the fake: no instance, group, key or placement group left" "0 0 0 0" \
    "$(world '" ".join(str(x) for x in (len(d["instances"]), sum(1 for g in d["security_groups"] if not g.get("default")), len(d["placement_groups"]), len(d["key_pairs"])))')"
expect_eq "i: the record is closed: failed, destroyed" "full:failed:True" \
    "$(st '" ".join(c["name"] + ":" + c["phase"] + ":" + str(c["destroyed_at"] is not None) for c in d["clusters"])')"
g -o json status > "$T/i-status.json"
expect_eq "i: no live cluster" "[]" "$(json_get "$T/i-status.json" '[c["name"] for c in d["clusters"]]')"
expect_eq "i: the attempts: each zone's head, no capacity" \
    "1:0:us-east-1a:error:capacity 2:0:us-east-1b:error:capacity 3:0:us-east-1c:error:capacity" "$(attempts full)"
n0=$(log_lines)
run_rc rc g -y -o json apply -f full.yaml "${P[@]}" > "$T/i2.json" 2> "$T/i2.err"
expect_eq "i: again at once: exit 22" 22 "$rc"
expect_match "i: every zone skipped" \
    "zones tried: us-east-1a \(skipped\), us-east-1b \(skipped\), us-east-1c \(skipped\)" \
    "$(json_get "$T/i2.json" 'd["error"]["message"]')"
expect_eq "i: the skipped attempts" \
    "1:0:us-east-1a:skipped:capacity 2:0:us-east-1b:skipped:capacity 3:0:us-east-1c:skipped:capacity" "$(attempts full)"
expect_eq "i: no launch, nothing made: the zones, then the cleanup finds nothing" \
    "DescribeInstanceTypeOfferings DescribeAddresses DescribeInstances DescribePlacementGroups DescribeSecurityGroups DescribeKeyPairs DescribeAddresses" "$(actions "$n0")"
expect_eq "i: two closed records" "failed failed" "$(st '" ".join(c["phase"] for c in d["clusters"] if c["name"] == "full")')"
n0=$(log_lines)
run_rc rc env GPUCTL_CAPACITY_SKIP_S=0 "$GPUCTL_BIN" --state-dir "$STATE" -y -o json \
    apply -f full.yaml "${P[@]}" > "$T/i3.json" 2> "$T/i3.err"
expect_eq "i: GPUCTL_CAPACITY_SKIP_S=0: exit 22 again" 22 "$rc"
expect_eq "i: ... after trying every zone again" "1/us-east-1a 1/us-east-1b 1/us-east-1c" \
    "$(calls RunInstances '" ".join(p["MinCount"] + "/" + p["Placement.AvailabilityZone"] for p in r)' "$n0")"
expect_eq "i: its attempts" \
    "1:0:us-east-1a:error:capacity 2:0:us-east-1b:error:capacity 3:0:us-east-1c:error:capacity" "$(attempts full)"
expect_eq "i: and nothing left at the fake" "0 0 0 0" \
    "$(world '" ".join(str(x) for x in (len(d["instances"]), sum(1 for g in d["security_groups"] if not g.get("default")), len(d["placement_groups"]), len(d["key_pairs"])))')"

# ---- j. a plan offer whose type no zone of the spec offers: the next offer ------------
# The plan: us-east-1 (cheaper), then ap-northeast-1.  zones: leaves us-east-1
# only its zone d, which has no p* type (DescribeInstanceTypeOfferings): that
# offer cannot launch, nothing was made, so the record closes and the next
# offer is tried, as after a zone without capacity.
part j
spec zoned 1 p4d.24xlarge A100-40GB:8 ""
sed -i 's/^region: us-east-1$/regions: [us-east-1, ap-northeast-1]\nzones: [us-east-1d, ap-northeast-1a]/' zoned.yaml
run_rc rc g -y -o json apply -f zoned.yaml "${P[@]}" > "$T/j.json" 2> "$T/j.err"
[ "$rc" = 0 ] || cat "$T/j.err"
expect_eq "j: apply moves on to the next offer and exits 0" 0 "$rc"
expect_eq "j: us-east-1 was only asked for its zones" "DescribeInstanceTypeOfferings" \
    "$(logq '" ".join(l["action"] for l in L if l["region"] == "us-east-1")')"
expect_eq "j: the node runs in ap-northeast-1a" "ap-northeast-1:ap-northeast-1a:running" \
    "$(st '" ".join(n["region"] + ":" + n["zone"] + ":" + n["phase"] for c in d["clusters"] if c["destroyed_at"] is None for n in c["nodes"])')"
expect_eq "j: the records: the us-east-1 try closed, the cluster running" "failed:True running:False" \
    "$(st '" ".join(c["phase"] + ":" + str(c["destroyed_at"] is not None) for c in d["clusters"])')"
g -y destroy zoned > /dev/null 2>&1

# ---- k. an apply killed after the security group was made, run again from
# another address: the new SSH rule is added (regression: the rules went in
# one call, which EC2 refuses whole when one of them exists)
echo '[{"action": "RunInstances", "delay_ms": 4000, "times": 1}]' > "$T/k-faults.json"
part k --faults "$T/k-faults.json"
spec sshk 1 g4dn.xlarge T4:1 ""
# (the user's key: no key to generate, so the kill lands in RunInstances)
export GPUCTL_SSH_PUBLIC_KEY="$T/alice.pub"
run_rc rc env GPUCTL_SSH_CIDR=198.51.100.0/24 GPUCTL_TEST_FAULT=kill-in-create:0:1000 \
    "$GPUCTL_BIN" --state-dir "$STATE" -y apply -f sshk.yaml "${P[@]}" > /dev/null 2>&1
expect_eq "k: the first apply is killed while RunInstances hangs" 137 "$rc"
run_rc rc env GPUCTL_SSH_CIDR=192.0.2.0/24 "$GPUCTL_BIN" --state-dir "$STATE" -y apply \
    -f sshk.yaml "${P[@]}" > /dev/null 2> "$T/k.err"
[ "$rc" = 0 ] || cat "$T/k.err"
expect_eq "k: the second apply exits 0" 0 "$rc"
expect_eq "k: SSH from both addresses, the group's own rule once" \
    "-1:self tcp:192.0.2.0/24 tcp:198.51.100.0/24" \
    "$(world '" ".join(sorted(r["protocol"] + ":" + ("self" if r["group"] == g["id"] else str(r["cidr"])) for g in d["security_groups"] if g["name"].startswith("gpuctl-sshk-") for r in g["rules"] if not r["egress"]))')"
g -y destroy sshk > /dev/null 2>&1
unset GPUCTL_SSH_PUBLIC_KEY

# ---- l. apply killed while the workers' RunInstances is in flight (regression:
# the re-run found nothing by client token, since the call had not landed yet,
# and launched the workers again under a new token: 7 instances for 4 nodes)
# (RunInstances takes 2 s here, not the 1 s that shows it on an idle machine:
# the re-run's lookups must come while the first call is in flight also on a
# loaded one; nothing else runs between the kill and the re-run)
echo '[{"action": "RunInstances", "delay_ms": 2000}]' > "$T/l-faults.json"
part l --faults "$T/l-faults.json"
spec inflight 4 g4dn.xlarge T4:1 ""
run_rc rc env GPUCTL_TEST_FAULT=kill-in-create:1:200 "$GPUCTL_BIN" --state-dir "$STATE" -y \
    apply -f inflight.yaml "${P[@]}" > /dev/null 2> "$T/l1.err"
n0=$(log_lines)
run_rc rc2 g -y -o json apply -f inflight.yaml "${P[@]}" > "$T/l2.json" 2> "$T/l2.err"
expect_eq "l: apply killed (SIGKILL) 0.2 s into the workers' RunInstances" 137 "$rc"
U8=$(st 'd["clusters"][0]["uid"][:8]')
[ "$rc2" = 0 ] || cat "$T/l2.err"
expect_eq "l: the re-run apply exits 0" 0 "$rc2"
expect_eq "l: the re-run looked the workers up while the first call was still in flight" \
    "DescribeInstances DescribeInstances DescribeInstances RunInstances RunInstances" \
    "$(logq '" ".join(l["action"] for l in L if l["action"] == "RunInstances" or any(v.startswith("inflight-w1-") for v in l["params"].values()))' "$n0")"
expect_eq "l: both RunInstances carried the workers' first token" \
    "inflight-w1-$U8-a1 inflight-w1-$U8-a1" \
    "$(calls RunInstances '" ".join(p["ClientToken"] for p in r)' "$n0")"
# and the same parameters: the expiry tag is the node's record time plus its
# end, not the time of each call (regression: a second between the calls
# made EC2's idempotency refuse the retry, IdempotentParameterMismatch)
expect_eq "l: both RunInstances carried the same expires-at" "1 2" \
    "$(calls RunInstances 'str(len(set(v for p in r for k, v in p.items() if k.endswith(".Value") and p.get(k[:-5] + "Key") == "gpuctl:expires-at"))) + " " + str(len(r))' "$n0")"
expect_eq "l: the fake: exactly 4 instances, all live, in 2 launches" "4 4 2" \
    "$(world '" ".join(str(x) for x in (len(d["instances"]), sum(1 for i in d["instances"] if i["state"] != "terminated"), len(d["reservations"])))')"
expect_eq "l: exactly 4 node records, each with its own instance" \
    "0:i-00000000000000001 1:i-00000000000000002 2:i-00000000000000003 3:i-00000000000000004" \
    "$(st '" ".join(str(n["rank"]) + ":" + n["provider_id"] for n in d["clusters"][0]["nodes"])')"
expect_eq "l: every node bills in the ledger once" "0 1 2 3" "$(db 'SELECT GROUP_CONCAT(n.rank, " ") FROM ledger l JOIN nodes n ON n.id = l.node_id WHERE l.stop_at IS NULL')"
run_rc rc g -y destroy inflight > /dev/null 2>&1
expect_eq "l: destroy exits 0 and leaves no instance running" "0 True" \
    "$rc $(world 'all(i["state"] == "terminated" for i in d["instances"])')"

# ---- m. a lookup that fails is not "no such node": the re-run stops --------------------
part m
spec lookup 2 g4dn.xlarge T4:1 ""
run_rc rc env GPUCTL_TEST_FAULT=kill-before-record:1 "$GPUCTL_BIN" --state-dir "$STATE" -y \
    apply -f lookup.yaml "${P[@]}" > /dev/null 2> "$T/m1.err"
expect_eq "m: apply killed after the worker's RunInstances, before its record" 137 "$rc"
U8=$(st 'd["clusters"][0]["uid"][:8]')
fake -X POST -d '{"action": "DescribeInstances", "code": "UnauthorizedOperation"}' \
    "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y apply -f lookup.yaml "${P[@]}" > /dev/null 2> "$T/m2.err"
expect_eq "m: the re-run exits 20 when the lookup by client token is refused" 20 "$rc"
expect_match "m: it names the node and its token" \
    "could not look up node lookup-1 \\(client token lookup-1-$U8-a1\\)" "$(cat "$T/m2.err")"
expect_eq "m: it launched nothing" "DescribeInstances!UnauthorizedOperation" "$(actions "$n0")"
expect_eq "m: the worker's intent stays recorded: its token, no instance" "lookup-1-$U8-a1|" \
    "$(db 'SELECT client_token || "|" || provider_id FROM nodes WHERE rank = 1')"
fake -X DELETE "$URL/_fake/faults" > /dev/null
run_rc rc g -y -o json apply -f lookup.yaml "${P[@]}" > "$T/m3.json" 2> "$T/m3.err"
expect_eq "m: once the lookup works, the re-run adopts the worker" "0 0 1" \
    "$rc $(json_get "$T/m3.json" '" ".join(str(x) for x in (d["created"], d["adopted"]))')"
expect_eq "m: the fake: exactly 2 instances" "2" "$(world 'len(d["instances"])')"
g -y destroy lookup > /dev/null 2>&1

# ---- n. as l, and the call sent again is refused as IdempotentParameterMismatch
# (the first landed after the lookup, with other parameters): its nodes are
# taken in by token, nothing more is launched
part n --faults "$T/l-faults.json"
spec latecall 3 g4dn.xlarge T4:1 ""
run_rc rc env GPUCTL_TEST_FAULT=kill-in-create:1:300 "$GPUCTL_BIN" --state-dir "$STATE" -y \
    apply -f latecall.yaml "${P[@]}" > /dev/null 2> "$T/n1.err"
expect_eq "n: apply killed while the workers' RunInstances is in flight" 137 "$rc"
fake -X POST -d '{"action": "RunInstances", "code": "IdempotentParameterMismatch", "times": 1}' \
    "$URL/_fake/faults" > /dev/null
run_rc rc g -y apply -f latecall.yaml "${P[@]}" > /dev/null 2> "$T/n2.err"
[ "$rc" = 0 ] || cat "$T/n2.err"
expect_eq "n: the re-run exits 0" 0 "$rc"
expect_eq "n: the fake: exactly 3 instances, all live" "3 3" \
    "$(world '" ".join(str(x) for x in (len(d["instances"]), sum(1 for i in d["instances"] if i["state"] != "terminated")))')"
expect_eq "n: the workers recorded as the first call's instances" \
    "0:i-00000000000000001 1:i-00000000000000002 2:i-00000000000000003" \
    "$(st '" ".join(str(n["rank"]) + ":" + n["provider_id"] for n in d["clusters"][0]["nodes"])')"
g -y destroy latecall > /dev/null 2>&1

# ---- o. what retrying cannot cure fails at once; retries show; Ctrl-C ends a call
# (regression: an HTML 500 and other answers without an EC2 error were retried
# six times in silence, 24-36 s, and SIGINT waited for all of it)
part o
spec html 1 g4dn.xlarge T4:1 ""
fake -X POST -d '{"action": "RunInstances", "body": "<html><body>501 Not Implemented</body></html>", "times": 1}' \
    "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y apply -f html.yaml "${P[@]}" > /dev/null 2> "$T/o1.err"
expect_eq "o: an HTML 500 on RunInstances: exit 6" 6 "$rc"
expect_eq "o: sent once, not retried" 1 "$(calls RunInstances 'len(r)' "$n0")"
expect_match "o: the error says the answer was no EC2 error" \
    "RunInstances \\(us-east-1\\): HTTP 500 with no EC2 error in the answer \\(Content-Type text/html\\): the endpoint may not serve this action" \
    "$(cat "$T/o1.err")"
g -y destroy html > /dev/null 2>&1
fake -X POST -d '{"action": "RunInstances", "body": "{\"message\": \"no\"}", "status": 404, "content_type": "application/json", "times": 1}' \
    "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y apply -f html.yaml "${P[@]}" > /dev/null 2> "$T/o2.err"
expect_eq "o: a JSON 404: exit 6, sent once" "6 1" "$rc $(calls RunInstances 'len(r)' "$n0")"
g -y destroy html > /dev/null 2>&1
# an HTML page with HTTP 200 (a proxy's): nothing is known to be launched
# (regression: "RunInstances returned 0 instance(s) for 1 requested; they
# were terminated", when nothing was)
fake -X POST -d '{"action": "RunInstances", "body": "<html><body>Welcome</body></html>", "status": 200, "times": 1}' \
    "$URL/_fake/faults" > /dev/null
run_rc rc g -y apply -f html.yaml "${P[@]}" > /dev/null 2> "$T/o6.err"
expect_eq "o: an HTML 200 on RunInstances: exit 6" 6 "$rc"
expect_match "o: the error says the answer was no RunInstances answer and the outcome is unknown" \
    "^gpuctl: error: aws: RunInstances \\(us-east-1\\): the answer is not an EC2 RunInstances answer \\(its root element is <html>\\): whether instances were launched is unknown \\(any that were carry the cluster's tag: destroy removes them\\)" \
    "$(grep 'error:' "$T/o6.err")"
g -y destroy html > /dev/null 2>&1
# a gateway's HTML 503, six times (Retry-After: 0): retried, and the error
# says so (regression: "the endpoint may not serve this action")
fake -X POST -d '{"action": "RunInstances", "body": "<html><body>503 Service Unavailable</body></html>", "status": 503, "retry_after": 0, "times": 6}' \
    "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y apply -f html.yaml "${P[@]}" > /dev/null 2> "$T/o7.err"
expect_eq "o: six HTML 503s: exit 6, six tries" "6 6" "$rc $(calls RunInstances 'len(r)' "$n0")"
expect_match "o: the error says what came back, and how often" \
    "^gpuctl: error: aws: RunInstances \\(us-east-1\\): the endpoint answered HTTP 503 without an EC2 error 6 time\\(s\\) \\(Content-Type text/html\\)($|;)" \
    "$(grep 'error:' "$T/o7.err")"
expect_eq "o: and not that the endpoint may not serve the action" "" \
    "$(grep 'may not serve' "$T/o7.err")"
fake -X DELETE "$URL/_fake/faults" > /dev/null
g -y destroy html > /dev/null 2>&1
fake -X POST -d '{"action": "RunInstances", "code": "RequestLimitExceeded", "times": 2}' \
    "$URL/_fake/faults" > /dev/null
run_rc rc g -y apply -f html.yaml "${P[@]}" > /dev/null 2> "$T/o3.err"
expect_eq "o: throttled twice, then launched: exit 0" 0 "$rc"
expect_eq "o: each retry is a progress line" \
    "aws: RunInstances (us-east-1): RequestLimitExceeded (HTTP 503); retrying in (attempt 2 of 6)|aws: RunInstances (us-east-1): RequestLimitExceeded (HTTP 503); retrying in (attempt 3 of 6)" \
    "$(grep retrying "$T/o3.err" | sed 's/retrying in [0-9.]* s/retrying in/' | paste -sd'|')"
g -y destroy html > /dev/null 2>&1
# Ctrl-C while RunInstances waits to be retried: the call ends at once
fake -X POST -d '{"action": "RunInstances", "code": "InternalError"}' "$URL/_fake/faults" > /dev/null
spec intr 1 g4dn.xlarge T4:1 ""
"$GPUCTL_BIN" --state-dir "$STATE" -y apply -f intr.yaml "${P[@]}" > /dev/null 2> "$T/o4.err" &
apid=$!
for _ in $(seq 1 400); do grep -q retrying "$T/o4.err" 2>/dev/null && break; sleep 0.05; done
kill -INT "$apid"
t0=$(date +%s%N)
run_rc rc wait "$apid"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "o: SIGINT while RunInstances waits to be retried: exit 130" 130 "$rc"
if [ "$ms" -lt 2000 ]; then ok "o: it ended within 2 s of the signal (${ms} ms)"; else fail "o: it took ${ms} ms after the signal"; fi
expect_match "o: it says what it left" \
    "interrupted while waiting to retry \\(after [0-9] attempts?\\); cluster 'intr' stays recorded with 0 node\\(s\\) and 1 whose create has no answer \\(they may exist\\): gpuctl apply finishes it, gpuctl destroy intr removes it" \
    "$(cat "$T/o4.err")"
fake -X DELETE "$URL/_fake/faults" > /dev/null
run_rc rc g -y apply -f intr.yaml "${P[@]}" > /dev/null 2> "$T/o5.err"
U8=$(st '[c for c in d["clusters"] if c["name"] == "intr"][0]["uid"][:8]')
expect_eq "o: apply again finishes it with the same token: one instance" "0 intr-0-$U8-a1" \
    "$rc $(world '" ".join(i["client_token"] for i in d["instances"] if i["client_token"].startswith("intr-"))')"
g -y destroy intr > /dev/null 2>&1

# ---- p. a failed apply whose clean-up cannot finish stays recorded as failed
# (regression: it showed as pending in status --all)
echo '[{"action": "RunInstances", "code": "InsufficientInstanceCapacity"}, {"action": "DeleteSecurityGroup", "code": "UnauthorizedOperation"}]' > "$T/p-faults.json"
part p --faults "$T/p-faults.json"
spec stuck 2 g4dn.xlarge T4:1 ""
run_rc rc g -y apply -f stuck.yaml "${P[@]}" > /dev/null 2> "$T/p1.err"
expect_eq "p: no capacity anywhere: exit 22" 22 "$rc"
expect_match "p: it says the cluster stays recorded" "cluster 'stuck' stays recorded: run 'gpuctl destroy stuck'" "$(cat "$T/p1.err")"
expect_eq "p: status --all: failed, not destroyed" "failed False" \
    "$(st '" ".join(str(x) for c in d["clusters"] if c["name"] == "stuck" for x in (c["phase"], c["destroyed_at"] is not None))')"
expect_match "p: the table says failed too" "stuck +aws +2 +failed" "$(g status --all 2>&1)"
fake -X DELETE "$URL/_fake/faults" > /dev/null
run_rc rc g -y destroy stuck > /dev/null 2>&1
expect_eq "p: destroy removes what was left: exit 0, no group left" "0 0" \
    "$rc $(world 'sum(1 for g in d["security_groups"] if g["name"].startswith("gpuctl-"))')"

# ---- q. a type no zone of the region offers ---------------------------------------------
# The fake's us-east-1 offers p4d.24xlarge in none of its zones, so
# DescribeInstanceTypeOfferings answers an empty list.
python3 "$GPUCTL_SOURCE_DIR/tests/fake/ec2.py" --print-seed | python3 -c '
import json, sys
d = json.load(sys.stdin)
for r in d["regions"]:
    if r["name"] == "us-east-1":
        r["unoffered"] = {z: ["p4d.*"] for z in r["zones"]}
json.dump({"regions": d["regions"]}, sys.stdout)' > "$T/q-seed.json"
part q --seed "$T/q-seed.json"
spec nowhere 2 p4d.24xlarge A100-40GB:8 ""
run_rc rc g -y -o json apply -f nowhere.yaml "${P[@]}" > "$T/q.json" 2> "$T/q.err"
expect_eq "q: offered in no zone: exit 22 (capacity), no sanitizer abort" "22 capacity" \
    "$rc $(json_get "$T/q.json" 'd["error"]["code"]' 2>/dev/null)"
expect_eq "q: the error says so" "aws: p4d.24xlarge is not offered in any zone of us-east-1" \
    "$(json_get "$T/q.json" 'd["error"]["message"]' 2>/dev/null)"
expect_eq "q: only the zones asked (no attempt: nothing to clean)" "DescribeInstanceTypeOfferings" \
    "$(actions 0)"
expect_eq "q: nothing made at the fake" "0 0 0 0" \
    "$(world '" ".join(str(x) for x in (len(d["instances"]), sum(1 for g in d["security_groups"] if not g.get("default")), len(d["placement_groups"]), len(d["key_pairs"])))')"

# ---- r. a batch found in part: DescribeInstances is eventually consistent, so
# the lookups of one batch may disagree (regression: the nodes not seen were
# taken for gone and launched anew under a new token, the first instances
# then ran unrecorded: 5 instances for 4 nodes)
part r
spec mixed 4 g4dn.xlarge T4:1 ""
run_rc rc env GPUCTL_TEST_FAULT=kill-before-record:1 "$GPUCTL_BIN" --state-dir "$STATE" -y \
    apply -f mixed.yaml "${P[@]}" > /dev/null 2> "$T/r1.err"
expect_eq "r: apply killed after the workers' RunInstances, before their record" 137 "$rc"
U8=$(st 'd["clusters"][0]["uid"][:8]')
fake -X POST -d '{"action": "DescribeInstances", "empty": true, "times": 1}' "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y apply -f mixed.yaml "${P[@]}" > /dev/null 2> "$T/r2.err"
[ "$rc" = 0 ] || cat "$T/r2.err"
expect_eq "r: the re-run exits 0" 0 "$rc"
expect_eq "r: rank 1 not seen at first; sent again with its batch's token (EC2: another launch under that token), then found" \
    "DescribeInstances DescribeInstances DescribeInstances RunInstances!IdempotentParameterMismatch DescribeInstances" \
    "$(actions "$n0" | tr ' ' '\n' | grep -E '^(DescribeInstances|RunInstances)' | head -5 | paste -sd' ')"
expect_eq "r: the fake: exactly 4 instances, all live" "4 4" \
    "$(world '" ".join(str(x) for x in (len(d["instances"]), sum(1 for i in d["instances"] if i["state"] != "terminated")))')"
expect_eq "r: each node recorded as its own instance" \
    "0:i-00000000000000001 1:i-00000000000000002 2:i-00000000000000003 3:i-00000000000000004" \
    "$(st '" ".join(str(n["rank"]) + ":" + n["provider_id"] for n in d["clusters"][0]["nodes"])')"
g -y destroy mixed > /dev/null 2>&1

# ---- s. workers whose head is gone are replaced with the new head (regression:
# a clean-up that removed the head but not the workers left them waiting for
# the old head's address while a new head was made; all of them billed)
# (the nodes stay pending until /_fake/advance; the boot wait times out)
echo '[{"action": "TerminateInstances", "code": "UnauthorizedOperation", "after": 1}]' > "$T/s-faults.json"
part s --pending-polls 1000000 --faults "$T/s-faults.json"
spec orphans 3 g4dn.xlarge T4:1 ""
run_rc rc env GPUCTL_BOOT_TIMEOUT_S=1 "$GPUCTL_BIN" --state-dir "$STATE" -y apply -f orphans.yaml \
    "${P[@]}" > /dev/null 2> "$T/s1.err"
expect_eq "s: the nodes do not come up in time, the clean-up removes the head only: exit 12" 12 "$rc"
expect_match "s: the error says what stays" "cluster 'orphans' stays recorded with 2 node\\(s\\): gpuctl apply finishes it, gpuctl destroy orphans removes it" "$(cat "$T/s1.err")"
expect_eq "s: status --all: failed (a worker runs, the head is gone)" "failed" \
    "$(st '[c["phase"] for c in d["clusters"] if c["name"] == "orphans"][0]')"
fake -X DELETE "$URL/_fake/faults" > /dev/null
fake -X POST "$URL/_fake/advance" > /dev/null
n0=$(log_lines)
( for _ in $(seq 1 600); do fake -X POST "$URL/_fake/advance" > /dev/null 2>&1 || true; sleep 0.1; done ) &
adv=$!
run_rc rc g -y apply -f orphans.yaml "${P[@]}" > /dev/null 2> "$T/s2.err"
kill "$adv" 2> /dev/null || true
wait "$adv" 2> /dev/null || true
[ "$rc" = 0 ] || cat "$T/s2.err"
expect_eq "s: apply again exits 0" 0 "$rc"
expect_match "s: it says why it replaces the workers" "the head of cluster 'orphans' is gone and 2 worker\\(s\\) wait for it at its old address: replacing them" "$(cat "$T/s2.err")"
expect_eq "s: the old workers terminated first, then a head and two workers" \
    "TerminateInstances TerminateInstances RunInstances RunInstances" \
    "$(actions "$n0" | tr ' ' '\n' | grep -E '^(TerminateInstances|RunInstances)' | paste -sd' ')"
expect_eq "s: three live instances; every worker's user-data names the live head's address" "3 True" \
    "$(world 'str(len([i for i in d["instances"] if i["state"] != "terminated"])) + " " + str(all("GPUCTL_HEAD_IP=" + repr([h for h in d["instances"] if h["state"] != "terminated" and h["tags"].get("gpuctl:role") == "head"][0]["private_ip"]) in i["user_data"] for i in d["instances"] if i["state"] != "terminated" and i["tags"].get("gpuctl:role") == "worker"))')"
expect_eq "s: status: running" "running" "$(st '[c["phase"] for c in d["clusters"] if c["name"] == "orphans"][0]')"
g -y destroy orphans > /dev/null 2>&1

no_secret "$SECRET" i "all parts"

finish
