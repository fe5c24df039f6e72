#!/bin/bash
# gpuctl gc against the fake EC2 (tests/fake/ec2.py, IAM inside it):
#  1. cluster "keep" applied by gpuctl (lifecycle.max_duration: its
#     instance carries gpuctl:expires-at, two hours ahead); behind gpuctl's
#     back (signed botocore calls, no state record) an instance, a
#     security group and a key pair tagged for cluster "lost" in us-east-1
#     and us-west-2, its IAM role and instance profile, and an untagged
#     instance and security group;
#  2. gc lists exactly lost's resources (table and JSON), deletes nothing;
#  3. gc -y removes them: the untagged ones and keep's survive; a second
#     gc lists nothing;
#  4. an instance tagged with live cluster "late"'s uid and an expiry
#     passed: late's resources are listed "expired at ...", and gc -y
#     destroys late (its record says destroyed), keep stays;
#  5. a region that cannot be read: what the others hold is listed, exit
#     8 names the region; a security group EC2 refuses to delete: exit 8
#     names what is left.
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/ec2_parts.sh" || exit 1

part gc
# norm: the table with runs of blanks squeezed and instance ages replaced
norm() { tr -s ' ' | sed -E 's/launched [0-9a-z?]+ ago/launched AGE ago/'; }
# back ARGS: signed EC2/IAM calls behind gpuctl's back (botocore), printing
# what they made as shell assignments
back() { python3 - "$URL" "$@" <<'PY'
import sys, botocore.session
url, what = sys.argv[1], sys.argv[2:]
s = botocore.session.get_session()
def client(svc, region):
    return s.create_client(svc, region_name=region, endpoint_url=url, aws_access_key_id="AKIDEXAMPLE",
                           aws_secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
def tags(rtype, t):
    return [{"ResourceType": rtype, "Tags": [{"Key": k, "Value": v} for k, v in t.items()]}]
ami = {"us-east-1": "ami-01000000000000002", "us-west-2": "ami-02000000000000002"}
cmd = what[0]
if cmd == "tagged":   # REGION VAR CLUSTER UID [EXPIRES]: instance, SG, key pair
    region, var, cluster, uid = what[1:5]
    t = {"gpuctl:cluster": cluster, "gpuctl:cluster-uid": uid}
    ti = dict(t, **({"gpuctl:expires-at": what[5]} if len(what) > 5 else {}))
    ec2 = client("ec2", region)
    i = ec2.run_instances(ImageId=ami[region], InstanceType="g4dn.xlarge", MinCount=1, MaxCount=1,
                          TagSpecifications=tags("instance", ti))["Instances"][0]["InstanceId"]
    print("%s_I=%s" % (var, i))
    if len(what) > 5:
        sys.exit(0)
    g = ec2.create_security_group(GroupName="gpuctl-%s-%s" % (cluster, region), Description="by hand",
                                  TagSpecifications=tags("security-group", t))["GroupId"]
    k = ec2.import_key_pair(KeyName="gpuctl-%s-%s" % (cluster, region), PublicKeyMaterial=open("key.pub", "rb").read(),
                            TagSpecifications=tags("key-pair", t))["KeyPairId"]
    print("%s_G=%s %s_K=%s" % (var, g, var, k))
elif cmd == "untagged":   # REGION
    ec2 = client("ec2", what[1])
    i = ec2.run_instances(ImageId=ami[what[1]], InstanceType="g4dn.xlarge", MinCount=1,
                          MaxCount=1)["Instances"][0]["InstanceId"]
    g = ec2.create_security_group(GroupName="mine", Description="not gpuctl's")["GroupId"]
    print("U_I=%s U_G=%s" % (i, g))
elif cmd == "iam":   # NAME CLUSTER UID
    iam = client("iam", "us-east-1")
    t = [{"Key": "gpuctl:cluster", "Value": what[2]}, {"Key": "gpuctl:cluster-uid", "Value": what[3]}]
    iam.create_role(RoleName=what[1], AssumeRolePolicyDocument='{"Version":"2012-10-17","Statement":[]}', Tags=t)
    iam.create_instance_profile(InstanceProfileName=what[1], Tags=t)
    iam.add_role_to_instance_profile(InstanceProfileName=what[1], RoleName=what[1])
    iam.create_role(RoleName="gpuctl-someone-elses", AssumeRolePolicyDocument='{"Version":"2012-10-17","Statement":[]}')
PY
}

cat > keep.yaml <<'EOF'
name: keep
provider: aws
resources:
  gpu: T4:1
  instance_types: g4dn.xlarge
region: us-east-1
lifecycle:
  max_duration: 2h
run:
  command: python train.py
EOF
sed 's/^name: keep/name: late/' keep.yaml > late.yaml

# ---- 1. a live cluster, and what was made behind gpuctl's back ---------------
t0=$(date -u +%s)
run_rc rc g -y apply -f keep.yaml "${P[@]}" > /dev/null 2> "$T/keep.err"
[ "$rc" = 0 ] || cat "$T/keep.err"
expect_eq "1: keep applied" 0 "$rc"
KEEP_I=$(db "select provider_id from nodes")
KEEP_UID=$(db "select uid from clusters where name = 'keep'")
exp=$(world "[i['tags'].get('gpuctl:expires-at') for i in d['instances'] if i['id'] == '$KEEP_I'][0]")
python3 - "$exp" "$t0" <<'PY' && ok "1: keep's instance expires two hours after its launch ($exp)" || fail "1: expires-at '$exp' is not launch + 2h"
import datetime, sys
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
sys.exit(0 if int(sys.argv[2]) + 7200 <= t <= int(sys.argv[2]) + 7200 + 120 else 1)
PY
expect_eq "1: only instances carry the expiry" "[]" \
    "$(world "[g['id'] for g in d['security_groups'] if 'gpuctl:expires-at' in g['tags']]")"
ssh-keygen -q -t ed25519 -N '' -C '' -f key > /dev/null
LOST_UID=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
eval "$(back tagged us-east-1 E lost $LOST_UID)"
eval "$(back tagged us-west-2 W lost $LOST_UID)"
eval "$(back untagged us-east-1)"
back iam gpuctl-lost-0f1e2d3c lost $LOST_UID
fake -X POST "$URL/_fake/advance" > /dev/null

# ---- 2. gc lists lost's resources, and deletes nothing --------------------------
n0=$(log_lines)
run_rc rc g gc > "$T/gc1.out" 2> "$T/gc1.err"
expect_eq "2: gc exits 0" 0 "$rc"
expect_eq "2: gc lists exactly lost's resources" "PROVIDER REGION KIND ID CLUSTER WHY DETAIL
aws us-east-1 instance $E_I lost no live cluster g4dn.xlarge running, launched AGE ago
aws us-east-1 security-group $E_G lost no live cluster gpuctl-lost-us-east-1
aws us-east-1 key-pair gpuctl-lost-us-east-1 lost no live cluster $E_K
aws us-west-2 instance $W_I lost no live cluster g4dn.xlarge running, launched AGE ago
aws us-west-2 security-group $W_G lost no live cluster gpuctl-lost-us-west-2
aws us-west-2 key-pair gpuctl-lost-us-west-2 lost no live cluster $W_K
aws - iam-role gpuctl-lost-0f1e2d3c lost no live cluster IAM role (global)
aws - iam-instance-profile gpuctl-lost-0f1e2d3c lost no live cluster IAM instance profile (global)" \
    "$(norm < "$T/gc1.out")"
expect_eq "2: it says how to delete them" \
    "gpuctl: note: 8 resource(s) listed, nothing deleted; 'gpuctl gc -y' deletes them" \
    "$(cat "$T/gc1.err")"
# every region at once: DescribeRegions, then the five Describe calls of each
# of the three regions (one batch: in any order), then IAM
expect_eq "2: the calls" "DescribeRegions | $(for r in 1 2 3; do echo DescribeAddresses DescribeInstances DescribeKeyPairs DescribePlacementGroups DescribeSecurityGroups; done | tr ' ' '\n' | sort | paste -sd' ') | ListRoles ListRoleTags ListRoleTags ListInstanceProfiles ListInstanceProfileTags" \
    "$(actions "$n0" | python3 -c 'import sys; a = sys.stdin.read().split(); print(a[0], "|", " ".join(sorted(a[1:16])), "|", " ".join(a[16:]))')"
expect_eq "2: every Describe filters by the tag key" "True" \
    "$(calls DescribeSecurityGroups "all(x.get('Filter.1.Name') == 'tag-key' and x.get('Filter.1.Value.1') == 'gpuctl:cluster-uid' for x in r)" "$n0")"
expect_eq "2: instances: the live states" "pending running stopping stopped" \
    "$(calls DescribeInstances "' '.join(r[0][k] for k in sorted(r[0]) if k.startswith('Filter.2.Value'))" "$n0")"
run_rc rc g -o json gc > "$T/gc1.json" 2> /dev/null
expect_eq "2: gc -o json exits 0" 0 "$rc"
check_schema "$T/gc1.json" gc
expect_eq "2: json: the resources" "us-east-1:instance:$E_I:lost:no-live-cluster:False us-east-1:security-group:$E_G:lost:no-live-cluster:False us-east-1:key-pair:gpuctl-lost-us-east-1:lost:no-live-cluster:False us-west-2:instance:$W_I:lost:no-live-cluster:False us-west-2:security-group:$W_G:lost:no-live-cluster:False us-west-2:key-pair:gpuctl-lost-us-west-2:lost:no-live-cluster:False None:iam-role:gpuctl-lost-0f1e2d3c:lost:no-live-cluster:False None:iam-instance-profile:gpuctl-lost-0f1e2d3c:lost:no-live-cluster:False" \
    "$(json_get "$T/gc1.json" "' '.join(':'.join(str(r[k]) for k in ('region', 'kind', 'id', 'cluster', 'why', 'deleted')) for r in d['resources'])")"
expect_eq "2: json: the provider, the uid" "listed $LOST_UID" \
    "$(json_get "$T/gc1.json" "d['providers'][0]['status'] + ' ' + d['resources'][0]['cluster_uid']")"
expect_eq "2: nothing was deleted" "running running" \
    "$(world "' '.join(i['state'] for i in d['instances'] if i['id'] in ('$E_I', '$W_I'))")"

# ---- 3. gc -y removes them; the rest survives -------------------------------------
run_rc rc g -y gc > "$T/gc2.out" 2> "$T/gc2.err"
[ "$rc" = 0 ] || cat "$T/gc2.err"
expect_eq "3: gc -y exits 0" 0 "$rc"
expect_eq "3: it says what it deleted" "deleted 8 of 8 resource(s)" "$(tail -1 "$T/gc2.out")"
expect_match "3: by cluster" "aws: removed 8 resource\\(s\\) of cluster lost \\($LOST_UID\\)" "$(cat "$T/gc2.err")"
expect_eq "3: lost's instances terminated, the others run" \
    "$(printf '%s\n' "$E_I:terminated" "$KEEP_I:running" "$U_I:running" "$W_I:terminated" | sort | paste -sd' ')" \
    "$(world "' '.join(sorted(i['id'] + ':' + i['state'] for i in d['instances']))")"
expect_eq "3: lost's security groups and key pairs are gone; keep's and the untagged one stay" \
    "gpuctl-keep-${KEEP_UID:0:8} mine | gpuctl-keep-${KEEP_UID:0:8}" \
    "$(world "' '.join(sorted(g['name'] for g in d['security_groups'] if g['name'] != 'default')) + ' | ' + ' '.join(sorted(k['name'] for k in d['key_pairs']))")"
expect_eq "3: lost's IAM role and profile are gone; an untagged role stays" "gpuctl-someone-elses |" \
    "$(world "' '.join(sorted(d['iam']['roles'])) + ' |' + ''.join(' ' + p for p in sorted(d['iam']['profiles']))")"
run_rc rc g gc > "$T/gc3.out" 2> "$T/gc3.err"
expect_eq "3: a second gc: exit 0" 0 "$rc"
expect_eq "3: a second gc lists nothing" \
    "nothing to collect (aws): everything tagged by gpuctl belongs to a live cluster" "$(cat "$T/gc3.out")"
expect_eq "3: keep is live" "keep" "$(st "' '.join(c['name'] for c in d['clusters'] if not c.get('destroyed_at'))")"

# ---- 4. expired: a resource of live cluster late whose expiry passed ------------
run_rc rc g -y apply -f late.yaml "${P[@]}" > /dev/null 2> "$T/late.err"
[ "$rc" = 0 ] || cat "$T/late.err"
expect_eq "4: late applied" 0 "$rc"
LATE_I=$(db "select provider_id from nodes n join clusters c on c.id = n.cluster_id where c.name = 'late'")
LATE_UID=$(db "select uid from clusters where name = 'late'")
LATE_G=$(world "[g['id'] for g in d['security_groups'] if g['tags'].get('gpuctl:cluster') == 'late'][0]")
eval "$(back tagged us-east-1 X late "$LATE_UID" 2020-01-01T00:00:00Z)"
fake -X POST "$URL/_fake/advance" > /dev/null
run_rc rc g gc > "$T/gc4.out" 2> /dev/null
expect_eq "4: gc exits 0" 0 "$rc"
expect_eq "4: late's resources are listed as expired, keep's are not" "PROVIDER REGION KIND ID CLUSTER WHY DETAIL
aws us-east-1 instance $LATE_I late expired at 2020-01-01T00:00:00Z g4dn.xlarge running, launched AGE ago
aws us-east-1 instance $X_I late expired at 2020-01-01T00:00:00Z g4dn.xlarge running, launched AGE ago
aws us-east-1 security-group $LATE_G late expired at 2020-01-01T00:00:00Z gpuctl-late-${LATE_UID:0:8}
aws us-east-1 key-pair gpuctl-late-${LATE_UID:0:8} late expired at 2020-01-01T00:00:00Z $(world "[k['id'] for k in d['key_pairs'] if k['name'] == 'gpuctl-late-${LATE_UID:0:8}'][0]")" \
    "$(norm < "$T/gc4.out")"
run_rc rc g -o json gc > "$T/gc4.json" 2> /dev/null
check_schema "$T/gc4.json" gc
LATE_EXP=$(world "[i['tags']['gpuctl:expires-at'] for i in d['instances'] if i['id'] == '$LATE_I'][0]")
expect_eq "4: json: why, and each one's own expiry" "expired:$LATE_EXP expired:2020-01-01T00:00:00Z expired:None expired:None" \
    "$(json_get "$T/gc4.json" "' '.join(r['why'] + ':' + str(r['expires_at']) for r in d['resources'])")"
run_rc rc g -y gc > "$T/gc5.out" 2> "$T/gc5.err"
[ "$rc" = 0 ] || cat "$T/gc5.err"
expect_eq "4: gc -y exits 0" 0 "$rc"
expect_eq "4: late is destroyed, keep is live" "keep" \
    "$(st "' '.join(c['name'] for c in d['clusters'] if c['phase'] != 'terminated')")"
expect_eq "4: late's instances terminated, keep's runs" \
    "$(printf '%s\n' "$KEEP_I:running" "$LATE_I:terminated" "$X_I:terminated" | sort | paste -sd' ')" \
    "$(world "' '.join(sorted(i['id'] + ':' + i['state'] for i in d['instances'] if i['id'] in ('$KEEP_I', '$LATE_I', '$X_I')))")"

# ---- 5. a region not read; a group EC2 will not delete --------------------------
eval "$(back tagged us-west-2 Z lost $LOST_UID)"
fake -X POST "$URL/_fake/advance" > /dev/null
fake -X POST "$URL/_fake/faults" -d '[{"action": "DescribeKeyPairs", "region": "ap-northeast-1", "code": "UnauthorizedOperation"}]' > /dev/null
run_rc rc g gc > "$T/gc6.out" 2> "$T/gc6.err"
expect_eq "5: a region not read: exit 8" 8 "$rc"
expect_match "5: the error names the region" "^gpuctl: error: aws: not listed, so not known to be clean: ap-northeast-1 \\(aws: DescribeKeyPairs \\(ap-northeast-1\\): UnauthorizedOperation" "$(cat "$T/gc6.err")"
expect_eq "5: what the others hold is listed" "instance $Z_I|security-group $Z_G|key-pair gpuctl-lost-us-west-2" \
    "$(norm < "$T/gc6.out" | tail -n +2 | cut -d' ' -f3,4 | paste -sd'|')"
run_rc rc g gc --region us-west-2 > /dev/null 2>&1
expect_eq "5: --region us-west-2 alone: exit 0" 0 "$rc"
fake -X DELETE "$URL/_fake/faults" > /dev/null
fake -X POST "$URL/_fake/faults" -d '[{"action": "DeleteSecurityGroup", "code": "DependencyViolation"}]' > /dev/null
run_rc rc g -y -o json gc --region us-west-2 > "$T/gc7.json" 2> "$T/gc7.err"
expect_eq "5: a group left: exit 8" 8 "$rc"
check_schema "$T/gc7.json" gc
expect_match "5: the error names what is left" "aws: the resources of 1 cluster\\(s\\) are left: cluster lost \\($LOST_UID\\): aws: left behind: SecurityGroup $Z_G \\(aws: DeleteSecurityGroup \\(us-west-2\\): DependencyViolation" \
    "$(json_get "$T/gc7.json" "d['error']['message']")"
expect_eq "5: json: partial, nothing counted deleted" "partial False" \
    "$(json_get "$T/gc7.json" "d['error']['code'] + ' ' + str(any(r['deleted'] for r in d['resources']))")"
fake -X DELETE "$URL/_fake/faults" > /dev/null
run_rc rc g -y gc > /dev/null 2>&1
expect_eq "5: once EC2 lets it: exit 0" 0 "$rc"
run_rc rc g gc > "$T/gc8.out" 2>&1
expect_eq "5: nothing left" "nothing to collect (aws): everything tagged by gpuctl belongs to a live cluster" "$(cat "$T/gc8.out")"

finish
