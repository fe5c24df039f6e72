#!/bin/bash
# The account's EC2 vCPU quota, checked before RunInstances (Service Quotas
# in the fake EC2, tests/fake/servicequotas.py, on the same port; signatures
# checked by botocore).  Job: 2 x g5.2xlarge (8 vCPUs each, quota "Running
# On-Demand G and VT instances" L-DB2E81BA) over us-east-1 then us-west-2.
#  a. us-east-1's quota (8) has no room for 16: the region is left at once
#     (no RunInstances, no key pair or group there) and us-west-2's offer
#     is launched; each region's quota is read once;
#  b. every region too small: exit 21 naming the quota, its code, the
#     region, the vCPUs needed, the quota and those in use;
#  c. Service Quotas refusing access, or without the quota: the launch goes
#     on (said at -v);
#  d. instances already running count as use (DescribeInstances, every
#     page): 16 of 24 in use leave no room for 16 more; spot instances do
#     not count against an On-Demand quota;
#  e. EC2 at the fake without a Service Quotas endpoint: not asked (public
#     Service Quotas would answer for another account).
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/ec2_parts.sh"

cat > job.yaml <<'EOF'
name: qq
provider: aws
nodes: 2
resources:
  gpu: A10G:1
  instance_types: g5.2xlarge
regions: [us-east-1, us-west-2]
run:
  command: python train.py
EOF
# quotas JSON: set the fake's Service Quotas values
quotas() { fake -X POST -d "$1" "$URL/_fake/servicequotas" > /dev/null; }
# sq FROM: "region:QuotaCode[!error]" of each GetServiceQuota after line FROM
sq() { logq "' '.join(l['region'] + ':' + l['params'].get('QuotaCode', '') + ('!' + l['error'] if l['error'] else '') for l in L if l.get('service') == 'servicequotas')" "$1"; }
# runs FROM: the regions of the RunInstances calls after line FROM
runs() { logq "' '.join(l['region'] for l in L if l['action'] == 'RunInstances')" "$1"; }

# ---- a. a region without room is skipped at once --------------------------------
part a
export AWS_ENDPOINT_URL_SERVICE_QUOTAS="$URL"
quotas '{"regions": {"us-east-1": {"L-DB2E81BA": 8}, "us-west-2": {"L-DB2E81BA": 16}}}'
run_rc rc g -y -o json apply -f job.yaml "${P[@]}" > "$T/a.json" 2> "$T/a.err"
[ "$rc" = 0 ] || cat "$T/a.err"
expect_eq "a: apply exits 0" 0 "$rc"
expect_eq "a: each region's quota read once" "us-east-1:L-DB2E81BA us-west-2:L-DB2E81BA" "$(sq 0)"
expect_eq "a: RunInstances in us-west-2 only (head, then the worker)" "us-west-2 us-west-2" "$(runs 0)"
expect_eq "a: nothing made in us-east-1 (no key pair, no group)" "0 0" \
    "$(world '" ".join(str(x) for x in (sum(1 for k in d["key_pairs"] if k["region"] == "us-east-1"), sum(1 for g in d["security_groups"] if g["name"].startswith("gpuctl-") and g["region"] == "us-east-1")))')"
expect_eq "a: the reason, then the next offer: one event line" \
    "gpuctl: aws: cluster qq needs 16 vCPUs in us-east-1 (2 x g5.2xlarge, 8 vCPUs each) but the quota 'Running On-Demand G and VT instances' (L-DB2E81BA) there is 8 vCPUs and 0 are in use: ask for 16 or more in Service Quotas (aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-DB2E81BA --region us-east-1 --desired-value 16), stop instances that count against it, or use fewer nodes or another region; trying offer 2 of 2: aws g5.2xlarge us-west-2 on-demand" \
    "$(grep '^gpuctl: aws: cluster qq' "$T/a.err")"
expect_eq "a: the try in us-east-1 failed at its first zone with a quota error" \
    "failed us-east-1a:error:quota" \
    "$(st '" ".join([d["clusters"][0]["phase"]] + [a["zone"] + ":" + a["outcome"] + ":" + a["error_code"] for a in d["clusters"][0]["attempts"]])')"
expect_eq "a: both nodes run in us-west-2" "running us-west-2 us-west-2" \
    "$(st '" ".join([d["clusters"][-1]["phase"]] + [n["region"] for n in d["clusters"][-1]["nodes"]])')"
g -y destroy qq > /dev/null 2>&1

# ---- b. no region has room: exit 21 ------------------------------------------------
part b
export AWS_ENDPOINT_URL_SERVICE_QUOTAS="$URL"
quotas '{"regions": {"us-east-1": {"L-DB2E81BA": 8}, "us-west-2": {"L-DB2E81BA": 0}}}'
run_rc rc g -y apply -f job.yaml "${P[@]}" > "$T/b.out" 2> "$T/b.err"
expect_eq "b: exit 21 (quota)" 21 "$rc"
expect_match "b: the last region's quota named" \
    "^gpuctl: error: .*aws: cluster qq needs 16 vCPUs in us-west-2 \\(2 x g5.2xlarge, 8 vCPUs each\\) but the quota 'Running On-Demand G and VT instances' \\(L-DB2E81BA\\) there is 0 vCPUs and 0 are in use: ask for 16 or more" \
    "$(cat "$T/b.err")"
expect_eq "b: no RunInstances anywhere" "" "$(runs 0)"

# ---- c. Service Quotas refuses: RunInstances decides -------------------------------
part c
export AWS_ENDPOINT_URL_SERVICE_QUOTAS="$URL"
quotas '{"deny": true}'
sed 's/^regions: .*/region: us-east-1/' job.yaml > c.yaml
run_rc rc g -v -y apply -f c.yaml "${P[@]}" > "$T/c.out" 2> "$T/c.err"
[ "$rc" = 0 ] || cat "$T/c.err"
expect_eq "c: apply exits 0" 0 "$rc"
expect_eq "c: asked once, refused" "us-east-1:L-DB2E81BA!AccessDeniedException" "$(sq 0)"
expect_eq "c: launched in us-east-1" "us-east-1 us-east-1" "$(runs 0)"
expect_match "c: -v says the quota is not checked" \
    "aws: the vCPU quota 'Running On-Demand G and VT instances' \\(L-DB2E81BA\\) in us-east-1 is not checked: .*AccessDeniedException.*; RunInstances decides" \
    "$(cat "$T/c.err")"
g -y destroy qq > /dev/null 2>&1
# a quota the region does not have (NoSuchResourceException): the same
quotas '{"deny": false, "regions": {"us-east-1": {"L-DB2E81BA": null}}}'
n0=$(log_lines)
run_rc rc g -v -y apply -f c.yaml "${P[@]}" > "$T/c2.out" 2> "$T/c2.err"
[ "$rc" = 0 ] || cat "$T/c2.err"
expect_eq "c: no such quota: apply exits 0, launched in us-east-1" \
    "0 us-east-1:L-DB2E81BA!NoSuchResourceException us-east-1 us-east-1" "$rc $(sq "$n0") $(runs "$n0")"
expect_match "c: -v says so" \
    "aws: the vCPU quota 'Running On-Demand G and VT instances' \\(L-DB2E81BA\\) in us-east-1 is not checked: .*NoSuchResourceException.*; RunInstances decides" \
    "$(cat "$T/c2.err")"
g -y destroy qq > /dev/null 2>&1

# ---- d. running instances count as use (every page) --------------------------------
part d --page-size 1
export AWS_ENDPOINT_URL_SERVICE_QUOTAS="$URL"
quotas '{"regions": {"us-east-1": {"L-DB2E81BA": 24, "L-3819A6DF": 128}, "us-west-2": {"L-DB2E81BA": 0}}}'
# a spot cluster first: it counts against the spot quota, not On-Demand's
sed -e 's/^name: qq/name: spot1/' -e 's/^regions: .*/region: us-east-1/' job.yaml > spot1.yaml
printf 'spot: spot\n' >> spot1.yaml
run_rc rc g -y apply -f spot1.yaml "${P[@]}" > /dev/null 2> "$T/d0.err"
[ "$rc" = 0 ] || cat "$T/d0.err"
expect_eq "d: a spot cluster of 2 (spot quota L-3819A6DF)" "0 us-east-1:L-3819A6DF" "$rc $(sq 0)"
sed -e 's/^name: qq/name: first/' -e 's/^regions: .*/region: us-east-1/' job.yaml > first.yaml
n0=$(log_lines)
run_rc rc g -y apply -f first.yaml "${P[@]}" > /dev/null 2> "$T/d1.err"
[ "$rc" = 0 ] || cat "$T/d1.err"
expect_eq "d: the first On-Demand cluster fits (16 of 24, the spot nodes not counted)" "0 us-east-1 us-east-1" \
    "$rc $(runs "$n0")"
n0=$(log_lines)
run_rc rc g -v -y apply -f job.yaml "${P[@]}" > /dev/null 2> "$T/d2.err"
expect_eq "d: the second finds no room anywhere: exit 21" 21 "$rc"
expect_match "d: the first cluster's 16 vCPUs are in use" \
    "the quota 'Running On-Demand G and VT instances' \\(L-DB2E81BA\\) there is 24 vCPUs and 16 are in use: ask for 32 or more .*--region us-east-1 --desired-value 32\\)" \
    "$(cat "$T/d2.err")"
expect_eq "d: the quota read once per region this run; no RunInstances" \
    "us-east-1:L-DB2E81BA us-west-2:L-DB2E81BA|" "$(sq "$n0")|$(runs "$n0")"
# 4 live instances in 4 reservations (each cluster's head, then its worker),
# one a page: DescribeInstances followed every nextToken
expect_eq "d: DescribeInstances of the live instances in us-east-1, page by page" "4" \
    "$(logq "sum(1 for l in L if l['action'] == 'DescribeInstances' and l['region'] == 'us-east-1' and l['params'].get('Filter.1.Name') == 'instance-state-name')" "$n0")"
g -y destroy first > /dev/null 2>&1
g -y destroy spot1 > /dev/null 2>&1

# ---- e. no Service Quotas endpoint beside the fake EC2: not asked ------------------
part e
unset AWS_ENDPOINT_URL_SERVICE_QUOTAS
quotas '{"regions": {"us-east-1": {"L-DB2E81BA": 0}}}'
sed 's/^regions: .*/region: us-east-1/' job.yaml > e.yaml
run_rc rc g -v -y apply -f e.yaml "${P[@]}" > /dev/null 2> "$T/e.err"
[ "$rc" = 0 ] || cat "$T/e.err"
expect_eq "e: apply exits 0, Service Quotas not asked" "0 " "$rc $(sq 0)"
expect_match "e: -v says why" \
    "the vCPU quota 'Running On-Demand G and VT instances' \\(L-DB2E81BA\\) in us-east-1 is not checked: EC2 has its own endpoint and Service Quotas none" \
    "$(cat "$T/e.err")"
g -y destroy qq > /dev/null 2>&1

# ---- f. the failover skips plan-only offers (regression: it stopped at ----------
# the first Azure offer with exit 6, the aws offers after it never tried)
part f
cat > f.yaml <<'EOF'
name: ff
provider: [aws, azure]
resources: {gpu: T4:1}
regions: [us-east-1, eastus]
run: {command: python train.py}
EOF
fake -X POST -d '[{"action": "RunInstances", "code": "InsufficientInstanceCapacity"}]' \
    "$URL/_fake/faults" > /dev/null
n0=$(log_lines)
run_rc rc g -y apply -f f.yaml "${P[@]}" > /dev/null 2> "$T/f.err"
expect_eq "f: no capacity on any aws offer: exit 22, not 6" 22 "$rc"
expect_match "f: the Azure offer is skipped, said once each" \
    "gpuctl: skipping offer 2 of [0-9]+ \(azure Standard_NC4as_T4_v3 eastus\): provider azure is not built into this gpuctl" \
    "$(cat "$T/f.err")"
r=$(runs "$n0")
expect_eq "f: the aws offers after it were tried (RunInstances in us-east-1 only, more than one)" "us-east-1 yes" \
    "$(echo "$r" | tr ' ' '\n' | sort -u | paste -sd' ') $([ "$(echo "$r" | wc -w)" -gt 1 ] && echo yes)"
fake -X DELETE "$URL/_fake/faults" > /dev/null

# ---- g. a cluster asked at another EC2 endpoint than it was made at -------------
# (regression: the other endpoint answered that the instances do not exist,
# and they were recorded as gone while they ran on)
part g
unset AWS_ENDPOINT_URL_SERVICE_QUOTAS
sed 's/^regions: .*/region: us-east-1/' job.yaml > g.yaml
run_rc rc g -y apply -f g.yaml "${P[@]}" > /dev/null 2> "$T/g.err"
[ "$rc" = 0 ] || cat "$T/g.err"
expect_eq "g: apply at the fake exits 0" 0 "$rc"
start_fake g-other ec2.py --page-size 0
OTHER="http://127.0.0.1:$FAKE_PORT"
run_rc rc env AWS_ENDPOINT_URL_EC2="$OTHER" "$GPUCTL_BIN" --state-dir "$STATE" -o json status qq > "$T/g-st.json" 2> "$T/g-st.err"
expect_match "g: status at another endpoint says where the cluster was made" \
    "aws: this cluster was made at the EC2 endpoint $URL, but gpuctl is now set for $OTHER \\(from AWS_ENDPOINT_URL_EC2\\); give the endpoint it was made with" \
    "$(cat "$T/g-st.err")"
expect_eq "g: its nodes are still recorded running" "running running" \
    "$(st '" ".join(n["phase"] for n in d["clusters"][0]["nodes"])')"
run_rc rc env AWS_ENDPOINT_URL_EC2="$OTHER" "$GPUCTL_BIN" --state-dir "$STATE" -y destroy qq > /dev/null 2> "$T/g-d.err"
expect_eq "g: destroy at another endpoint: exit 8 (nothing removed), nothing recorded as gone" \
    "8 running running" "$rc $(st '" ".join(n["phase"] for n in d["clusters"][0]["nodes"])')"
expect_match "g: and says why" "this cluster was made at the EC2 endpoint $URL" "$(cat "$T/g-d.err")"
run_rc rc g -y destroy qq > /dev/null 2>&1
expect_eq "g: destroy at the endpoint it was made at: exit 0" 0 "$rc"

finish
