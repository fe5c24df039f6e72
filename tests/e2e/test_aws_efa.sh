#!/bin/bash
# Public addresses of EFA nodes with several network cards (p4d.24xlarge:
# 4 cards) against the fake EC2 endpoint (tests/fake/ec2.py), which, like
# EC2, refuses AssociateAddress while an instance is pending (by instance
# id: InvalidInstanceID, by interface id: IncorrectInstanceState), refuses
# an address on an efa-only interface and AllocateAddress beyond the
# region's quota (5 unless seeded).  Regression: gpuctl associated each
# node's Elastic IP right after RunInstances, while pending, only warned
# when EC2 refused, and every p4d/p5 node ended without a public address.
# Each part has its own fake (answers in one page), state and cache:
#  a. a 2-node cluster: an ENA primary and four efa-only interfaces per
#     node, exactly two Elastic IPs, each on a node's primary interface by
#     interface id once the nodes run; a second apply makes none; destroy
#     disassociates and releases both;
#  b. EC2 still refusing "pending" after the node runs: retried, then the
#     addresses are associated; a refusal that is not about pending, or
#     one that lasts: the apply fails, nothing is left, no address bills;
#  c. the quota: a cluster needing more addresses than are free is refused
#     with exit 21 before anything is made in the region, and fails over
#     to a region with room; AddressLimitExceeded at AllocateAddress
#     (another allocation took the room) fails over the same way;
#  d. an apply killed after AllocateAddress, before AssociateAddress: the
#     re-run associates the addresses it made, allocates none; an
#     AllocateAddress whose answer was lost is not sent again: the address
#     it made is found and used, one address per node;
#  e. the same with 5 nodes at the quota of 5: no AddressLimitExceeded;
#  f. destroy releases an address that an AllocateAddress in flight made
#     after destroy first listed them; DescribeAddresses refused: exit 8,
#     naming the permission; TerminateInstances refused: exit 20, naming
#     the instances left.
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/ec2_parts.sh"
# nothing_left: instances, gpuctl groups, placement groups, key pairs, addresses
NOTHING='" ".join(str(x) for x in (sum(1 for i in d["instances"] if i["state"] != "terminated"), sum(1 for g in d["security_groups"] if not g.get("default")), len(d["placement_groups"]), len(d["key_pairs"]), len(d["addresses"])))'
# spec NAME NODES [EXTRA-YAML]: p4d.24xlarge nodes (EFA on 4 cards)
spec() {
    cat > "$1.yaml" <<EOF
name: $1
provider: aws
nodes: $2
resources:
  gpu: A100-40GB:8
  instance_types: p4d.24xlarge
region: us-east-1
${3:-}
run:
  command: python train.py
EOF
}
# LAYOUT: per running node, its interfaces as card:device:type, and where
# each of the cluster's addresses sits (card:device:type of its interface)
LAYOUT='" | ".join(" ".join("%d:%d:%s" % (n["card"], n["device"], n["type"]) for n in i["network_interfaces"]) for i in d["instances"] if i["state"] == "running")'
EIPS='" ".join(sorted("%s:%d:%d:%s:%s" % (i["id"], n["card"], n["device"], n["type"], i["public_ip"] == a["public_ip"]) for a in d["addresses"] for i in d["instances"] if i["id"] == a["instance_id"] for n in i["network_interfaces"] if n["id"] == a["network_interface_id"]))'

# ---- a. a 2-node p4d cluster ------------------------------------------------------
part a
spec efa2 2 "labels: {team: vision}"
run_rc rc g -y -o json apply -f efa2.yaml "${P[@]}" > "$T/a.json" 2> "$T/a.err"
[ "$rc" = 0 ] || cat "$T/a.err"
expect_eq "a: apply exits 0" 0 "$rc"
UID_=$(json_get "$T/a.json" 'd["cluster_status"]["uid"]')
# Hand-checked: zones, the type, the region's Elastic IP quota and its
# addresses (none) before anything is made; image, VPC, subnet, key, group
# and its rules, placement group; the head, the worker; two polls
# (pending, running); the running nodes, the cluster's addresses (none);
# two addresses allocated at once, associated at once; the refresh.
expect_eq "a: the EC2 calls of the apply, in order" \
"DescribeInstanceTypeOfferings DescribeInstanceTypes DescribeAccountAttributes DescribeAddresses DescribeImages DescribeVpcs DescribeSubnets ImportKeyPair CreateSecurityGroup AuthorizeSecurityGroupIngress AuthorizeSecurityGroupIngress AuthorizeSecurityGroupEgress CreatePlacementGroup RunInstances RunInstances DescribeInstances DescribeInstances DescribeInstances DescribeAddresses AllocateAddress AllocateAddress AssociateAddress AssociateAddress DescribeInstances" \
    "$(actions 0)"
expect_eq "a: the quota read is vpc-max-elastic-ips" "vpc-max-elastic-ips" \
    "$(calls DescribeAccountAttributes 'r[0]["AttributeName.1"]')"
expect_eq "a: each launch: an ENA primary, efa-only on card 0 device 1 and on device 0 of cards 1-3, no public address asked" \
    "0:0:interface 0:1:efa-only 1:0:efa-only 2:0:efa-only 3:0:efa-only False|0:0:interface 0:1:efa-only 1:0:efa-only 2:0:efa-only 3:0:efa-only False" \
    "$(calls RunInstances '"|".join(" ".join(p[f"NetworkInterface.{k}.NetworkCardIndex"] + ":" + p[f"NetworkInterface.{k}.DeviceIndex"] + ":" + p[f"NetworkInterface.{k}.InterfaceType"] for k in range(1, 6) if f"NetworkInterface.{k}.DeviceIndex" in p) + " " + str(any(k.endswith("AssociatePublicIpAddress") for k in p) or "NetworkInterface.6.DeviceIndex" in p) for p in r)')"
expect_eq "a: every interface deleted with its instance" "True" \
    "$(calls RunInstances 'all(p[f"NetworkInterface.{k}.DeleteOnTermination"] == "true" for p in r for k in range(1, 6))')"
expect_eq "a: the fake: two running nodes, an ENA primary and four efa-only interfaces each" \
    "0:0:interface 0:1:efa-only 1:0:efa-only 2:0:efa-only 3:0:efa-only | 0:0:interface 0:1:efa-only 1:0:efa-only 2:0:efa-only 3:0:efa-only" \
    "$(world "$LAYOUT")"
expect_eq "a: the efa-only interfaces have no IP address" "0 8" \
    "$(world '" ".join(str(x) for x in (sum(1 for i in d["instances"] for n in i["network_interfaces"] if n["type"] == "efa-only" and n["private_ip"]), sum(1 for i in d["instances"] for n in i["network_interfaces"] if n["type"] == "efa-only")))')"
expect_eq "a: exactly two Elastic IPs, one on each node's primary (ENA) interface, which is the node's public address" \
    "i-00000000000000001:0:0:interface:True i-00000000000000002:0:0:interface:True" \
    "$(world "$EIPS")"
expect_eq "a: associated by interface id (never by instance id), AllowReassociation=false, once each" \
    "['AllocationId', 'AllowReassociation', 'NetworkInterfaceId'] false 2" \
    "$(calls AssociateAddress '" ".join((str(sorted(set(k for p in r for k in p if k != "_error"))), " ".join(sorted(set(p["AllowReassociation"] for p in r))), str(len(set(p["NetworkInterfaceId"] for p in r)))))')"
expect_eq "a: the addresses carry the cluster's tags and labels" \
    "{'gpuctl:cluster': 'efa2', 'gpuctl:cluster-uid': '$UID_', 'team': 'vision'} 1" \
    "$(world '" ".join((str(d["addresses"][0]["tags"]), str(len(set(str(a["tags"]) for a in d["addresses"])))))')"
expect_match "a: apply says so" "aws: 2 node\(s\) of efa2 in us-east-1: an Elastic IP each on the primary network interface" \
    "$(cat "$T/a.err")"
n0=$(log_lines)
run_rc rc g -y apply -f efa2.yaml "${P[@]}" > "$T/a2.txt" 2>&1
expect_eq "a: a second apply: exit 0" 0 "$rc"
expect_eq "a: it looks (the running nodes, the cluster's addresses) and makes no address" \
    "DescribeInstances DescribeAddresses DescribeInstances" "$(actions "$n0")"
expect_eq "a: still exactly two addresses" 2 "$(world 'len(d["addresses"])')"
n0=$(log_lines)
run_rc rc g -y destroy efa2 > "$T/a3.txt" 2>&1
[ "$rc" = 0 ] || cat "$T/a3.txt"
expect_eq "a: destroy: exit 0" 0 "$rc"
# the addresses first: disassociated (termination would do it only once
# the instances are terminated), released; then the instances and the
# rest; last the addresses again (one that an AllocateAddress in flight
# made meanwhile: part f)
expect_eq "a: destroy: the addresses, then the instances, then the rest, then the addresses again" \
    "DescribeAddresses DisassociateAddress DisassociateAddress ReleaseAddress ReleaseAddress DescribeInstances TerminateInstances DescribeInstances DescribePlacementGroups DeletePlacementGroup DescribeSecurityGroups DeleteSecurityGroup DescribeKeyPairs DeleteKeyPair DescribeAddresses" \
    "$(actions "$n0")"
expect_match "a: destroy says how many instances it terminated by tag" \
    "aws: terminated 2 instance\(s\) of efa2 in us-east-1 found by its tag" "$(cat "$T/a3.txt")"
expect_eq "a: nothing left: no instance, group, placement group, key pair or address" "0 0 0 0 0" \
    "$(world "$NOTHING")"

# ---- b. EC2 refusing "pending" after the node runs ------------------------------------
# The first association is refused once by interface (IncorrectInstanceState)
# and once by instance wording (InvalidInstanceID naming a pending instance):
# both retried.
cat > "$T/b-faults.json" <<'EOF'
[{"action": "AssociateAddress", "code": "IncorrectInstanceState", "times": 1,
  "message": "The pending-instance-creation instance to which 'eni-0' is attached is not in a valid state for this operation"},
 {"action": "AssociateAddress", "code": "InvalidInstanceID", "times": 1,
  "message": "The pending instance 'i-0' is not in a valid state for this operation."}]
EOF
part b --faults "$T/b-faults.json"
spec retry 2
run_rc rc g -y -o json apply -f retry.yaml "${P[@]}" > "$T/b.json" 2> "$T/b.err"
[ "$rc" = 0 ] || cat "$T/b.err"
expect_eq "b: refused as pending twice, retried: exit 0" 0 "$rc"
expect_eq "b: two refused, then both associated in the next round (sorted)" \
    "AssociateAddress AssociateAddress AssociateAddress!IncorrectInstanceState AssociateAddress!InvalidInstanceID" \
    "$(actions 0 | tr ' ' '\n' | grep AssociateAddress | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "b: two addresses, each on a primary interface" \
    "i-00000000000000001:0:0:interface:True i-00000000000000002:0:0:interface:True" "$(world "$EIPS")"
g -y destroy retry > /dev/null 2>&1
expect_eq "b: destroy leaves nothing" "0 0 0 0 0" "$(world "$NOTHING")"
# A refusal that is not about pending: no retry; the apply fails, the nodes
# and the addresses go (a new cluster: closed, its resources removed).
fake -X POST -d '[{"action": "AssociateAddress", "code": "InvalidInstanceID", "message": "The instance ID '"'"'i-0'"'"' is not in a valid state for this operation."}]' "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y -o json apply -f retry.yaml "${P[@]}" > "$T/b2.json" 2> "$T/b2.err"
expect_eq "b: another refusal: exit 6 (provider)" "6 provider" "$rc $(json_get "$T/b2.json" 'd["error"]["code"]')"
expect_match "b: the error names the node and EC2's answer" \
    "^aws: 2 node\(s\) of retry in us-east-1 got no public address \(Elastic IP\); i-0+3: aws: AssociateAddress \(us-east-1\): InvalidInstanceID: The instance ID 'i-0' is not in a valid state" \
    "$(json_get "$T/b2.json" 'd["error"]["message"]')"
expect_eq "b: one round, not retried" 2 "$(calls AssociateAddress 'len(r)' "$n0")"
# regression: the line was printed before AssociateAddress, also when it failed
expect_eq "b: it does not say the nodes got an Elastic IP each" "" \
    "$(grep 'an Elastic IP each' "$T/b2.err")"
expect_eq "b: both addresses released at once; then the nodes removed and the rest cleaned" \
    "ReleaseAddress ReleaseAddress TerminateInstances TerminateInstances DescribeAddresses DescribeInstances" \
    "$(actions "$n0" | sed 's/.*AssociateAddress!InvalidInstanceID //' | cut -d' ' -f1-6)"
expect_eq "b: nothing left, nothing billing" "0 0 0 0 0" "$(world "$NOTHING")"
# "pending" that lasts: EIP_TRIES (8) rounds, then the same
fake -X DELETE "$URL/_fake/faults" > /dev/null
fake -X POST -d '[{"action": "AssociateAddress", "code": "IncorrectInstanceState", "message": "The pending-instance-creation instance to which '"'"'eni-0'"'"' is attached is not in a valid state for this operation"}]' "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y -o json apply -f retry.yaml "${P[@]}" > "$T/b3.json" 2> "$T/b3.err"
expect_eq "b: pending for good: exit 6" 6 "$rc"
expect_eq "b: eight rounds of two" 16 "$(calls AssociateAddress 'len(r)' "$n0")"
expect_match "b: says it retried" "IncorrectInstanceState: .* \(still so after 8 tries\)" \
    "$(json_get "$T/b3.json" 'd["error"]["message"]')"
expect_eq "b: nothing left" "0 0 0 0 0" "$(world "$NOTHING")"

# ---- c. the Elastic IP quota ---------------------------------------------------------
# us-east-1 allows 3 Elastic IPs, us-west-2 2, ap-northeast-1 the default 5
echo '{"max_elastic_ips": {"us-east-1": 3, "us-west-2": 2}}' > "$T/c-seed.json"
part c --seed "$T/c-seed.json"
spec one 2
run_rc rc g -y apply -f one.yaml "${P[@]}" > /dev/null 2> "$T/c1.err"
[ "$rc" = 0 ] || cat "$T/c1.err"
expect_eq "c: a first cluster takes 2 of us-east-1's 3: exit 0" "0 2" "$rc $(world 'len(d["addresses"])')"
spec two 2
n0=$(log_lines)
run_rc rc g -y -o json apply -f two.yaml "${P[@]}" > "$T/c2.json" 2> "$T/c2.err"
expect_eq "c: a second needs 2, 1 is free: exit 21 (quota)" "21 quota" \
    "$rc $(json_get "$T/c2.json" 'd["error"]["code"]')"
expect_eq "c: the message says the numbers and the fix" \
    "aws: cluster two needs 2 more Elastic IP(s) in us-east-1, one per node (p4d.24xlarge has 4 network cards, and EC2 gives no public address at launch to an instance with several network interfaces), but only 1 of the region's 3 (vpc-max-elastic-ips) are free (2 allocated): raise the 'EC2-VPC Elastic IPs' quota in Service Quotas, release unused Elastic IPs, or use fewer nodes or another region" \
    "$(json_get "$T/c2.json" 'd["error"]["message"]')"
# the quota before anything: no key, group, placement group or instance;
# the failed try's cleanup by tag finds nothing
expect_eq "c: nothing launched or made: the zones, the type, the quota, then the cleanup" \
    "DescribeInstanceTypeOfferings DescribeInstanceTypes DescribeAccountAttributes DescribeAddresses DescribeAddresses DescribeInstances DescribePlacementGroups DescribeSecurityGroups DescribeKeyPairs DescribeAddresses" \
    "$(actions "$n0")"
expect_eq "c: the fake: still only the first cluster's 2 nodes and 2 addresses, one group, one key" "2 2 1 1" \
    "$(world '" ".join(str(x) for x in (len(d["instances"]), len(d["addresses"]), sum(1 for g in d["security_groups"] if not g.get("default")), len(d["key_pairs"])))')"
expect_eq "c: the attempt says quota" "us-east-1:error:quota" \
    "$(g -o json status --all | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(a["region"] + ":" + a["outcome"] + ":" + a["error_code"] for c in d["clusters"] if c["name"] == "two" for a in c["attempts"]))')"
# with a second region that has room: the failover moves there
sed -i 's/^region: us-east-1$/regions: [us-east-1, ap-northeast-1]/' two.yaml
n0=$(log_lines)
run_rc rc g -y -o json apply -f two.yaml "${P[@]}" > "$T/c3.json" 2> "$T/c3.err"
[ "$rc" = 0 ] || cat "$T/c3.err"
expect_eq "c: over two regions: exit 0" 0 "$rc"
expect_match "c: it says why it moved on" "needs 2 more Elastic IP\(s\) in us-east-1.*trying offer 2 of 2: aws p4d.24xlarge ap-northeast-1" \
    "$(tr '\n' ' ' < "$T/c3.err")"
expect_eq "c: nothing launched in us-east-1 by this apply" "[]" \
    "$(calls RunInstances '[p["Placement.AvailabilityZone"] for p in r if p["Placement.AvailabilityZone"].startswith("us-east-1")]' "$n0")"
expect_eq "c: the addresses: us-east-1 2, ap-northeast-1 2" "ap-northeast-1:2 us-east-1:2" \
    "$(world '" ".join(sorted(set("%s:%d" % (a["region"], sum(1 for b in d["addresses"] if b["region"] == a["region"])) for a in d["addresses"])))')"
# AllocateAddress refused for want of room after the check (another
# allocation took it): no node is associated, what was allocated goes,
# the nodes go, and the next region is tried; none left: exit 21
g -y destroy two > /dev/null 2>&1
sed -i 's/^regions: .*$/regions: [us-east-1, ap-northeast-1]/' two.yaml
g -y destroy one > /dev/null 2>&1
fake -X POST -d '[{"action": "AllocateAddress", "code": "AddressLimitExceeded", "times": 1, "message": "The maximum number of addresses has been reached."}, {"action": "RunInstances", "region": "ap-northeast-1", "code": "VcpuLimitExceeded"}]' "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y -o json apply -f two.yaml "${P[@]}" > "$T/c4.json" 2> "$T/c4.err"
expect_eq "c: AddressLimitExceeded at AllocateAddress, then no other region: exit 21" "21 quota" \
    "$rc $(json_get "$T/c4.json" 'd["error"]["code"]')"
expect_match "c: us-east-1's failure says what happened" \
    "launch in us-east-1/us-east-1a failed \(aws: 1 node\(s\) of two in us-east-1 got no public address \(Elastic IP\); i-[0-9a-f]+: aws: AllocateAddress \(us-east-1\): AddressLimitExceeded: The maximum number of addresses has been reached\." \
    "$(cat "$T/c4.err")"
expect_eq "c: no address associated, the one allocated released" \
    "AllocateAddress AllocateAddress!AddressLimitExceeded ReleaseAddress" \
    "$(actions "$n0" | tr ' ' '\n' | grep -E 'Address$|Address!' | grep -v Describe | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "c: nothing left anywhere" "0 0 0 0 0" "$(world "$NOTHING")"

# ---- d. killed between AllocateAddress and AssociateAddress ------------------------------
# AssociateAddress waits 1.5 s and then loses the connection without
# acting (gpuctl retries it); gpuctl is killed once both addresses exist.
cat > "$T/d-faults.json" <<'EOF'
[{"action": "AssociateAddress", "delay_ms": 1500}, {"action": "AssociateAddress", "drop": true}]
EOF
part d --faults "$T/d-faults.json"
spec killed 2
"$GPUCTL_BIN" --state-dir "$STATE" -y apply -f killed.yaml "${P[@]}" > /dev/null 2> "$T/d1.err" &
APPLY=$!
for _ in $(seq 1 600); do
    [ "$(world 'len(d["addresses"])')" = 2 ] && break
    kill -0 "$APPLY" 2>/dev/null || break
    sleep 0.1
done
kill -KILL "$APPLY" 2>/dev/null || true
wait "$APPLY" 2>/dev/null || true
expect_eq "d: killed with two addresses allocated, none associated" "2 0" \
    "$(world '" ".join(str(x) for x in (len(d["addresses"]), sum(1 for a in d["addresses"] if a["association_id"])))')"
fake -X DELETE "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y apply -f killed.yaml "${P[@]}" > /dev/null 2> "$T/d2.err"
[ "$rc" = 0 ] || cat "$T/d2.err"
expect_eq "d: the re-run: exit 0" 0 "$rc"
expect_eq "d: it associates the two it finds, allocates none" \
    "DescribeInstances DescribeAddresses AssociateAddress AssociateAddress DescribeInstances" "$(actions "$n0")"
expect_eq "d: exactly two addresses, one on each primary interface" \
    "i-00000000000000001:0:0:interface:True i-00000000000000002:0:0:interface:True" "$(world "$EIPS")"
g -y destroy killed > /dev/null 2>&1
# AllocateAddress carried out but its answer lost (regression: the HTTP
# layer sent it again and EC2, which has no idempotency token for it, made
# a second address that billed unassociated until the next apply): not
# sent again; the cluster's addresses are listed again and the one it made
# goes to its node
echo '[{"action": "AllocateAddress", "lose_reply": true, "times": 1}]' | fake -X POST -d @- "$URL/_fake/faults" > /dev/null
spec lost 2
n0=$(log_lines)
run_rc rc g -y apply -f lost.yaml "${P[@]}" > /dev/null 2> "$T/d3.err"
[ "$rc" = 0 ] || cat "$T/d3.err"
expect_eq "d: a lost AllocateAddress answer: exit 0, two addresses, both associated" "0 2 2" \
    "$rc $(world '" ".join(str(x) for x in (len(d["addresses"]), sum(1 for a in d["addresses"] if a["association_id"])))')"
expect_eq "d: one AllocateAddress per node, the lost one not sent again; the addresses listed again, used, and once more at the end" \
    "AllocateAddress AllocateAddress DescribeAddresses AssociateAddress AssociateAddress DescribeAddresses" \
    "$(actions "$n0" | tr ' ' '\n' | sed -n '/^AllocateAddress/,$p' | grep Address | tr '\n' ' ' | sed 's/ $//')"
expect_eq "d: the lost call is the one logged without a reply" "1" \
    "$(logq 'sum(1 for l in L if l["action"] == "AllocateAddress" and l["fault"] == "lose_reply")' "$n0")"
expect_match "d: apply says it looked" \
    "aws: 1 AllocateAddress call\(s\) in us-east-1 failed or got no answer; looking for addresses of lost they may have made" \
    "$(cat "$T/d3.err")"
n0=$(log_lines)
run_rc rc g -y apply -f lost.yaml "${P[@]}" > /dev/null 2> "$T/d4.err"
expect_eq "d: the next apply has nothing to do" "0 DescribeInstances DescribeAddresses DescribeInstances" \
    "$rc $(actions "$n0")"
g -y destroy lost > /dev/null 2>&1
expect_eq "d: destroy leaves nothing" "0 0 0 0 0" "$(world "$NOTHING")"

# ---- e. a lost AllocateAddress answer with no room to spare -------------------------------
# Regression: 5 nodes at the default quota of 5; the lost call sent again
# took the fifth node's room, AllocateAddress answered AddressLimitExceeded
# for it after all 5 nodes had booted, and the apply failed with exit 21.
part e
spec full 5
echo '[{"action": "AllocateAddress", "lose_reply": true, "times": 1}]' | fake -X POST -d @- "$URL/_fake/faults" > /dev/null
run_rc rc g -y apply -f full.yaml "${P[@]}" > /dev/null 2> "$T/e1.err"
[ "$rc" = 0 ] || cat "$T/e1.err"
expect_eq "e: exit 0: five addresses, each on a node's primary interface" \
    "0 5 5" "$rc $(world '" ".join(str(x) for x in (len(d["addresses"]), len(set(a["network_interface_id"] for a in d["addresses"] if a["association_id"]))))')"
expect_eq "e: five AllocateAddress calls (one lost), none refused" "5 1 0" \
    "$(logq '" ".join(str(x) for x in (sum(1 for l in L if l["action"] == "AllocateAddress"), sum(1 for l in L if l["action"] == "AllocateAddress" and l["fault"] == "lose_reply"), sum(1 for l in L if l["action"] == "AllocateAddress" and l["error"])))')"
g -y destroy full > /dev/null 2>&1
expect_eq "e: destroy leaves nothing" "0 0 0 0 0" "$(world "$NOTHING")"

# ---- f. destroy: late addresses, refused permissions ----------------------------------
# An apply killed while its AllocateAddress calls are in flight (the fake
# holds them 2 s, then carries them out): destroy, slowed by a
# TerminateInstances held 3 s, lists the addresses before they exist.
# Regression: they were listed only then, destroy exited 0 and the
# addresses billed on, with no record left to destroy again.
part f
spec late 2
echo '[{"action": "AllocateAddress", "delay_ms": 2000}]' | fake -X POST -d @- "$URL/_fake/faults" > /dev/null
"$GPUCTL_BIN" --state-dir "$STATE" -v -y apply -f late.yaml "${P[@]}" > /dev/null 2> "$T/f1.err" &
APPLY=$!
for _ in $(seq 1 600); do
    grep -q 'calls at once (AllocateAddress' "$T/f1.err" && break
    kill -0 "$APPLY" 2>/dev/null || break
    sleep 0.05
done
sleep 0.3
kill -KILL "$APPLY" 2>/dev/null || true
wait "$APPLY" 2>/dev/null || true
expect_eq "f: killed while both AllocateAddress calls are held: no address yet" 0 \
    "$(world 'len(d["addresses"])')"
fake -X DELETE "$URL/_fake/faults" > /dev/null
echo '[{"action": "TerminateInstances", "delay_ms": 3000, "times": 1}]' | fake -X POST -d @- "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y destroy late > "$T/f2.txt" 2>&1
[ "$rc" = 0 ] || cat "$T/f2.txt"
expect_eq "f: destroy: exit 0" 0 "$rc"
expect_eq "f: the addresses listed before the instances (none yet) and again at the end (two, released)" \
    "DescribeAddresses DescribeAddresses ReleaseAddress ReleaseAddress" \
    "$(actions "$n0" | tr ' ' '\n' | grep -E '^(Describe|Release|Disassociate)Address' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "f: nothing left, nothing billing" "0 0 0 0 0" "$(world "$NOTHING")"
fake -X DELETE "$URL/_fake/faults" > /dev/null
# DescribeAddresses refused (an IAM policy from before Elastic IPs): the
# instances go, the addresses may stay: exit 8, naming the permission
spec noperm 2
run_rc rc g -y apply -f noperm.yaml "${P[@]}" > /dev/null 2> "$T/f3.err"
expect_eq "f: noperm: apply exits 0" 0 "$rc"
echo '[{"action": "DescribeAddresses", "code": "UnauthorizedOperation"}]' | fake -X POST -d @- "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y -o json destroy noperm > "$T/f4.json" 2> "$T/f4.err"
expect_eq "f: DescribeAddresses refused: exit 8 (partial), the instances terminated" "8 partial 0" \
    "$rc $(json_get "$T/f4.json" 'd["error"]["code"]') $(world 'sum(1 for i in d["instances"] if i["state"] != "terminated")')"
expect_match "f: the message names the missing permission and the policy file" \
    "^cluster 'noperm' stays recorded: aws: left behind: the cluster's Elastic IPs in us-east-1, if any \(they could not be listed: aws: DescribeAddresses \(us-east-1\): UnauthorizedOperation: You are not authorized to perform this operation\. \(the credentials lack the IAM permission ec2:DescribeAddresses; docs/providers/aws-iam-policy\.json lists every action gpuctl needs\) \(request id [0-9a-f-]+\)\); run destroy again$" \
    "$(json_get "$T/f4.json" 'd["error"]["message"]')"
expect_eq "f: DescribeAddresses asked once (not again at the end)" 1 \
    "$(calls DescribeAddresses 'len(r)' "$n0")"
fake -X DELETE "$URL/_fake/faults" > /dev/null
run_rc rc g -y destroy noperm > /dev/null 2>&1
expect_eq "f: with the permission, destroy again: exit 0, nothing left" "0 0 0 0 0 0" \
    "$rc $(world "$NOTHING")"
# TerminateInstances refused: exit 20 (refused credentials), naming the
# instances left
spec noterm 2
run_rc rc g -y apply -f noterm.yaml "${P[@]}" > /dev/null 2> "$T/f5.err"
IDS=$(world '", ".join(i["id"] for i in d["instances"] if i["state"] == "running")')
echo '[{"action": "TerminateInstances", "code": "UnauthorizedOperation"}]' | fake -X POST -d @- "$URL/_fake/faults" > /dev/null
run_rc rc g -y -o json destroy noterm > "$T/f6.json" 2> "$T/f6.err"
expect_eq "f: TerminateInstances refused: exit 20 (auth)" "20 auth" \
    "$rc $(json_get "$T/f6.json" 'd["error"]["code"]')"
expect_match "f: the message names the permission and the instances left" \
    "^cluster 'noterm' stays recorded: aws: TerminateInstances \(us-east-1\): UnauthorizedOperation: You are not authorized to perform this operation\. \(the credentials lack the IAM permission ec2:TerminateInstances; docs/providers/aws-iam-policy\.json lists every action gpuctl needs\) \(request id [0-9a-f-]+\); left in us-east-1: 2 instance\(s\) \($IDS\), still running or starting, and the cluster's security group, key pair and any placement group; run destroy again$" \
    "$(json_get "$T/f6.json" 'd["error"]["message"]')"
fake -X DELETE "$URL/_fake/faults" > /dev/null
run_rc rc g -y destroy noterm > /dev/null 2>&1
expect_eq "f: with the permission, destroy again: exit 0, nothing left" "0 0 0 0 0 0" \
    "$rc $(world "$NOTHING")"

finish
