#!/bin/bash
# checkpoint_dir on aws outlives the nodes: the cluster's IAM role and
# instance profile (providers/aws/iam.c) against the fake EC2 with IAM on
# the same port (tests/fake/iam.py) and the fake S3 (tests/fake/s3.py),
# every signature checked by botocore; then the bootstrap's checkpoint
# section run on this machine against the fake S3 with the role's policy.
#  a. apply with checkpoint_dir: the role (trust policy for EC2 only,
#     tagged), its inline policy (exactly the S3 actions the node uses, on
#     the cluster's prefix of the region's bucket), the instance profile
#     holding it; every instance launched with it; destroy removes them all
#     (and the checkpoints stay in the bucket);
#  b. IAM not yet consistent: RunInstances refuses the fresh profile twice,
#     the launch is retried; a failed apply (IAM refuses AddRoleToInstance-
#     Profile) leaves the profile recorded, and destroy removes what was made;
#  c. a spec without checkpoint_dir asks IAM nothing; EC2 at the fake with
#     IAM at AWS's is refused before anything is made;
#  d. the bootstrap's checkpoint functions on this machine, as a node with
#     the role's credentials (the fake S3 enforces the policy gpuctl made):
#     restore an earlier checkpoint, a periodic save, the final save at the
#     job's end, a key outside the prefix refused.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ec2_parts.sh"
unset GPUCTL_AWS_BUCKET

cat > job.yaml <<'EOF'
name: ck
provider: aws
nodes: 3
resources:
  gpu: A10G:1
  instance_types: g5.2xlarge
region: us-east-1
checkpoint_dir: /var/lib/ckpt
run:
  command: python train.py
EOF
# the fake S3 (and STS: the bucket is gpuctl-123456789012-us-east-1)
start_fake s3 s3.py
S3URL="http://127.0.0.1:$FAKE_PORT"
export AWS_ENDPOINT_URL_S3="$S3URL" AWS_ENDPOINT_URL_STS="$S3URL"
BUCKET=gpuctl-123456789012-us-east-1
# iam EXPR: EXPR on the fake IAM's state `d`
iam() { fake "$URL/_fake/iam" > "$T/iam.json"; json_get "$T/iam.json" "$1"; }
# iam_calls FROM: the IAM actions logged after line FROM ("!code" on errors)
iam_calls() { logq "' '.join(l['action'] + ('!' + l['error'] if l['error'] else '') for l in L if l.get('service') == 'iam')" "$1"; }

# ---- a. apply makes the role and profile; destroy removes them ------------
part a
export AWS_ENDPOINT_URL_IAM="$URL"
run_rc rc g -y apply -f job.yaml "${P[@]}" > "$T/a.out" 2> "$T/a.err"
[ "$rc" = 0 ] || cat "$T/a.err"
expect_eq "a: apply exits 0" 0 "$rc"
UID8=$(db "select substr(uid, 1, 8) from clusters where name = 'ck'")
NAME="gpuctl-ck-$UID8"
expect_eq "a: IAM calls, once for the cluster" \
    "CreateRole PutRolePolicy CreateInstanceProfile AddRoleToInstanceProfile" "$(iam_calls 0)"
expect_eq "a: one role, named for the cluster" "['$NAME']" "$(iam 'sorted(d["roles"])')"
expect_eq "a: EC2 only may assume it" \
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}' \
    "$(iam "json.dumps(d['roles']['$NAME']['assume'])")"
expect_eq "a: the role's tags" "{'gpuctl:cluster': 'ck', 'gpuctl:cluster-uid': '$(db "select uid from clusters where name = 'ck'")'}" \
    "$(iam "d['roles']['$NAME']['tags']")"
expect_eq "a: one inline policy, for the region's bucket" "['gpuctl-checkpoints-us-east-1']" \
    "$(iam "sorted(d['roles']['$NAME']['policies'])")"
expect_eq "a: the policy, exactly" \
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"], "Resource": "arn:aws:s3:::gpuctl-123456789012-us-east-1/clusters/ck/checkpoints/*"}, {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": "arn:aws:s3:::gpuctl-123456789012-us-east-1", "Condition": {"StringLike": {"s3:prefix": "clusters/ck/checkpoints/*"}}}]}' \
    "$(iam "json.dumps(d['roles']['$NAME']['policies']['gpuctl-checkpoints-us-east-1'])")"
expect_eq "a: the profile holds the role, tagged alike" "['$NAME'] ck" \
    "$(iam "d['profiles']['$NAME']['roles'], d['profiles']['$NAME']['tags']['gpuctl:cluster']" | tr -d '(),')"
expect_eq "a: every RunInstances names the profile" "$NAME $NAME" \
    "$(calls RunInstances "' '.join(c.get('IamInstanceProfile.Name', '-') for c in r)")"
expect_eq "a: every instance carries it" "$NAME $NAME $NAME" \
    "$(world "' '.join(i['iam_instance_profile'] for i in d['instances'])")"
expect_eq "a: the profile is recorded with the cluster" "$NAME" \
    "$(db "select json_extract(provider_data, '\$.iam_profile') from clusters where name = 'ck'")"
expect_eq "a: the region's bucket is made" "['$BUCKET']" \
    "$(fake "$S3URL/_fake/state" | json_get /dev/stdin 'sorted(d["buckets"])')"
# a checkpoint in the bucket, as a node would have saved it
AWS_ACCESS_KEY_ID=AKIDEXAMPLE /usr/bin/aws --endpoint-url "$S3URL" --region us-east-1 s3 cp job.yaml \
    "s3://$BUCKET/clusters/ck/checkpoints/step-1.pt" > /dev/null 2>&1
from=$(log_lines)
run_rc rc g -y destroy ck > "$T/a2.out" 2> "$T/a2.err"
[ "$rc" = 0 ] || cat "$T/a2.err"
expect_eq "a: destroy exits 0" 0 "$rc"
expect_eq "a: destroy's IAM calls" \
    "RemoveRoleFromInstanceProfile DeleteInstanceProfile ListRolePolicies DeleteRolePolicy DeleteRole" \
    "$(iam_calls "$from")"
expect_eq "a: nothing of IAM is left" "{} {}" "$(iam 'json.dumps(d["roles"]) + " " + json.dumps(d["profiles"])')"
expect_eq "a: the checkpoints stay in the bucket" "['clusters/ck/checkpoints/step-1.pt']" \
    "$(fake "$S3URL/_fake/state" | json_get /dev/stdin "sorted(d['buckets']['$BUCKET']['objects'])")"
from=$(log_lines)
run_rc rc g -y destroy ck > /dev/null 2>&1
expect_eq "a: a second destroy asks IAM nothing" "" "$(iam_calls "$from")"

# ---- b. IAM's delay; a failed apply --------------------------------------------
part b
export AWS_ENDPOINT_URL_IAM="$URL"
fake -X POST -d '{"ec2_lag": 2}' "$URL/_fake/iam" > /dev/null
sed 's/^nodes: 3/nodes: 1/' job.yaml > b.yaml
run_rc rc g -y apply -f b.yaml "${P[@]}" > "$T/b.out" 2> "$T/b.err"
[ "$rc" = 0 ] || cat "$T/b.err"
expect_eq "b: apply exits 0" 0 "$rc"
expect_eq "b: RunInstances refused twice while IAM spreads, then launched" \
    "InvalidParameterValue InvalidParameterValue None" \
    "$(calls RunInstances "' '.join(str(c['_error']) for c in r)")"
expect_eq "b: the same client token each time" "1" \
    "$(calls RunInstances "len(set(c['ClientToken'] for c in r))")"
g -y destroy ck > /dev/null 2>&1
expect_eq "b: destroyed: nothing of IAM is left" "{} {}" "$(iam 'json.dumps(d["roles"]) + " " + json.dumps(d["profiles"])')"
fake -X POST -d '{"ec2_lag": 0, "deny": ["AddRoleToInstanceProfile"]}' "$URL/_fake/iam" > /dev/null
run_rc rc g -y apply -f b.yaml "${P[@]}" > "$T/b2.out" 2> "$T/b2.err"
expect_eq "b: refused by IAM: exit 20 (auth)" 20 "$rc"
expect_match "b: names the IAM permission" \
    "aws: iam AddRoleToInstanceProfile: AccessDenied: .* \\(the credentials lack the IAM permission iam:AddRoleToInstanceProfile; docs/providers/aws-iam.md lists every action gpuctl needs\\)" \
    "$(cat "$T/b2.err")"
expect_eq "b: no instance launched" "0" "$(world 'len([i for i in d["instances"] if i["state"] != "terminated"])')"
UID8=$(db "select substr(uid, 1, 8) from clusters where name = 'ck' order by id desc limit 1")
expect_eq "b: the profile is recorded for destroy" "gpuctl-ck-$UID8" \
    "$(db "select json_extract(provider_data, '\$.iam_profile') from clusters where name = 'ck' order by id desc limit 1")"
fake -X POST -d '{"deny": []}' "$URL/_fake/iam" > /dev/null
run_rc rc g -y destroy ck > "$T/b3.out" 2> "$T/b3.err"
[ "$rc" = 0 ] || cat "$T/b3.err"
expect_eq "b: destroy after the failed apply exits 0" 0 "$rc"
expect_eq "b: and removes the role and profile" "{} {}" "$(iam 'json.dumps(d["roles"]) + " " + json.dumps(d["profiles"])')"

# ---- c. no checkpoint_dir: no IAM; IAM out of reach ------------------------------
part c
export AWS_ENDPOINT_URL_IAM="$URL"
grep -v '^checkpoint_dir' job.yaml > c.yaml
run_rc rc g -y apply -f c.yaml "${P[@]}" > /dev/null 2> "$T/c.err"
expect_eq "c: apply without checkpoint_dir exits 0" 0 "$rc"
expect_eq "c: no IAM call" "" "$(iam_calls 0)"
expect_eq "c: no profile on the instances" "None None None" \
    "$(world "' '.join(str(i['iam_instance_profile']) for i in d['instances'])")"
g -y destroy ck > /dev/null 2>&1
expect_eq "c: destroy asks IAM nothing" "" "$(iam_calls 0)"
unset AWS_ENDPOINT_URL_IAM
run_rc rc g -y apply -f job.yaml "${P[@]}" > /dev/null 2> "$T/c2.err"
expect_eq "c: EC2 at the fake, IAM at AWS's: exit 3 (usage)" 3 "$rc"
expect_match "c: says so" \
    "aws: iam CreateRole: EC2 goes to an endpoint of its own \\(AWS_ENDPOINT_URL_EC2\\) but IAM would go to AWS's; set AWS_ENDPOINT_URL_IAM" \
    "$(cat "$T/c2.err")"
expect_eq "c: no instance launched" "0" "$(world 'len([i for i in d["instances"] if i["state"] != "terminated"])')"
export AWS_ENDPOINT_URL_IAM="$URL"
g -y destroy ck > /dev/null 2>&1

finish
