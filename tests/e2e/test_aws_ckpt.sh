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
#     (and the checkpoints stay in the bucket, said so); destroy --purge
#     then removes them;
#  b. IAM not yet consistent: RunInstances refuses the fresh profile twice,
#     the launch is retried; a failed apply (IAM refuses AddRoleToInstance-
#     Profile) leaves the profile recorded, and destroy removes what was made;
#  c. a spec without checkpoint_dir asks IAM nothing; EC2 at the fake with
#     IAM at AWS's is refused before anything is made;
#  d. the bootstrap's checkpoint functions on this machine, as a node with
#     the role's credentials (the fake S3 enforces the policy gpuctl made):
#     restore an earlier checkpoint, a periodic save, the final save at the
#     job's end, a key outside the prefix refused; then the cluster
#     destroyed and applied again (a new uid and role): its new head
#     resumes from what the old one saved.
source "$(dirname "$0")/lib.sh" || exit 1
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
expect_eq "a: one inline policy, for the region's bucket" "['gpuctl-store-us-east-1']" \
    "$(iam "sorted(d['roles']['$NAME']['policies'])")"
expect_eq "a: the policy, exactly" \
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"], "Resource": "arn:aws:s3:::gpuctl-123456789012-us-east-1/clusters/ck/checkpoints/*"}, {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": "arn:aws:s3:::gpuctl-123456789012-us-east-1", "Condition": {"StringLike": {"s3:prefix": "clusters/ck/checkpoints/*"}}}]}' \
    "$(iam "json.dumps(d['roles']['$NAME']['policies']['gpuctl-store-us-east-1'])")"
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
/usr/bin/python3 - "$S3URL" "$BUCKET" job.yaml <<'PY'
import sys
import botocore.session
c = botocore.session.get_session().create_client(
    "s3", region_name="us-east-1", endpoint_url=sys.argv[1], aws_access_key_id="AKIDEXAMPLE",
    aws_secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
c.put_object(Bucket=sys.argv[2], Key="clusters/ck/checkpoints/step-1.pt", Body=open(sys.argv[3], "rb").read())
PY
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
expect_eq "a: destroy says where they are kept" \
    "checkpoints kept: 1 file(s) at s3://$BUCKET/clusters/ck/checkpoints; gpuctl destroy --purge ck removes them" \
    "$(sed -n 2p "$T/a2.out")"
from=$(log_lines)
run_rc rc g -y destroy ck > /dev/null 2>&1
expect_eq "a: a second destroy asks IAM nothing" "" "$(iam_calls "$from")"
run_rc rc g -y destroy --purge ck > "$T/a3.out" 2> "$T/a3.err"
expect_eq "a: destroy --purge after the destroy: the checkpoints removed from the bucket" \
    "0|checkpoints removed: 1 file(s) at s3://$BUCKET/clusters/ck/checkpoints|[]" \
    "$rc|$(sed -n 2p "$T/a3.out")|$(fake "$S3URL/_fake/state" | json_get /dev/stdin "sorted(d['buckets']['$BUCKET']['objects'])")"

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
    "aws: iam AddRoleToInstanceProfile: AccessDenied: .* \\(the credentials lack the IAM permission iam:AddRoleToInstanceProfile; docs/providers/aws-iam-policy.json lists every action gpuctl needs\\)" \
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

# The IAM policy in the docs allows exactly the IAM actions iam.c and orphans.c call
# (plus TagRole and TagInstanceProfile, which IAM checks for tags given at
# creation, PassRole, which RunInstances checks, and the spot service-linked
# role), and every IAM action this test saw.
expect_eq "docs/providers/aws-iam-policy.json: exactly the IAM actions of providers/aws/iam.c and orphans.c" "ok" \
    "$(python3 - "$GPUCTL_SOURCE_DIR" "$T" <<'PY'
import glob, json, re, sys
src, t = sys.argv[1], sys.argv[2]
code = open(src + "/providers/aws/iam.c").read()
used = set(re.findall(r'(?:call_ok|aws_iam_call)\(c, region, "([A-Za-z]+)"', code))
# gpuctl gc's listing (orphans.c), its IAM actions marked IAM_ACTION("...")
used |= set(re.findall(r'IAM_ACTION\("([A-Za-z]+)"\)', open(src + "/providers/aws/orphans.c").read()))
policy = json.load(open(src + "/docs/providers/aws-iam-policy.json"))
allowed = set()
for st in policy["Statement"]:
    acts = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
    allowed |= {a.split(":", 1)[1] for a in acts if a.startswith("iam:")}
extra = {"TagRole", "TagInstanceProfile", "PassRole", "CreateServiceLinkedRole"}
seen = set()
for f in glob.glob(t + "/*.log"):
    for l in open(f):
        l = json.loads(l)
        if l.get("service") == "iam":
            seen.add(l["action"])
problems = []
if allowed - extra != used:
    problems.append("policy %s vs code %s" % (sorted(allowed - extra - used), sorted(used - allowed)))
if not seen <= allowed or len(seen) < 9:
    problems.append("seen %s, not allowed: %s" % (sorted(seen), sorted(seen - allowed)))
print("; ".join(problems) or "ok")
PY
)"

# ---- d. the bootstrap's checkpoints, run here as the head node ---------------------
# The head's user-data as gpuctl sent it (the fake EC2 keeps it), run on this
# machine with the role's credentials; the fake S3 enforces the role's
# policy exactly as gpuctl wrote it to the fake IAM.
part d
if [ ! -x /usr/bin/aws ]; then
    # the node's store functions are the AWS CLI's (.ci/run installs it)
    echo "# skip d: needs /usr/bin/aws (Debian package awscli)"
    finish
    exit
fi
export AWS_ENDPOINT_URL_IAM="$URL"
N="$T/node"
mkdir -p "$N/bin"
ln -s /usr/bin/aws "$N/bin/aws"     # Debian's AWS CLI v2 (the DLAMI has v2)
# The job waits until step-2.pt is in the bucket (a periodic save, every
# 4 s), then writes step-3.pt and ends at once: only the final save can
# move that one.
cat > d.yaml <<EOF
name: ck
provider: aws
nodes: 1
resources:
  gpu: A10G:1
  instance_types: g5.2xlarge
region: us-east-1
checkpoint_dir: $N/ckpt
run:
  command: ls "\$GPUCTL_CHECKPOINT_DIR" > $N/restored.txt; echo two > "\$GPUCTL_CHECKPOINT_DIR/step-2.pt"; until curl -s $S3URL/_fake/state | grep -q checkpoints/step-2.pt; do sleep 0.2; done; echo three > "\$GPUCTL_CHECKPOINT_DIR/step-3.pt"
  nproc_per_node: 1
EOF
run_rc rc g -y apply -f d.yaml "${P[@]}" > /dev/null 2> "$T/d.err"
[ "$rc" = 0 ] || cat "$T/d.err"
expect_eq "d: apply exits 0" 0 "$rc"
# an earlier checkpoint in the bucket, and one of another cluster
for k in clusters/ck/checkpoints/step-1.pt clusters/other/checkpoints/theirs.pt; do
    /usr/bin/aws --endpoint-url "$S3URL" --region us-east-1 s3 cp d.yaml "s3://$BUCKET/$k" > /dev/null
done
# the role's credentials: its inline policy from the fake IAM, in the fake S3
NAME=$(iam 'list(d["roles"])[0]')
python3 - "$T/iam.json" "$NAME" > "$T/principal.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({"access_key": "ASIAROLEEXAMPLE", "secret_key": "roleSecretExample",
                  "session_token": "roleSessionToken",
                  "policy": d["roles"][sys.argv[2]]["policies"]["gpuctl-store-us-east-1"]}))
PY
fake -X POST --data-binary @"$T/principal.json" "$S3URL/_fake/principals" > /dev/null
# the head's bootstrap out of its #cloud-config (the block under content: |1)
world 'd["instances"][0]["user_data"]' > "$T/ud.txt"
python3 - "$T/ud.txt" > "$N/bootstrap.sh" <<'PY'
import sys
t = open(sys.argv[1]).read()
body = t.split("  content: |1\n", 1)[1].split("\nruncmd:", 1)[0]
print("\n".join(l[3:] for l in body.split("\n")))
PY
expect_eq "d: the bootstrap keeps its checkpoints in the bucket" \
    "GPUCTL_STORE_ENDPOINT=$S3URL GPUCTL_CKPT_URL=s3://$BUCKET/clusters/ck/checkpoints" \
    "$(grep -E '^GPUCTL_(CKPT_URL|STORE_ENDPOINT)=' "$N/bootstrap.sh" | tr -d "'" | tr '\n' ' ' | sed 's/ $//')"
S3FROM=$(wc -l < "$T/s3.log")
run_rc rc env -i PATH="$N/bin:/usr/bin:/bin:/usr/sbin:/sbin" HOME="$N" GPUCTL_HOME="$N/home" \
    GPUCTL_POWEROFF=0 GPUCTL_CONSOLE="$N/console" GPUCTL_CKPT_SAVE_S=4 \
    AWS_ACCESS_KEY_ID=ASIAROLEEXAMPLE AWS_SECRET_ACCESS_KEY=roleSecretExample \
    AWS_SESSION_TOKEN=roleSessionToken AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
    bash "$N/bootstrap.sh"
[ "$rc" = 0 ] || cat "$N/home/node.log"
expect_eq "d: the node's job exits 0" 0 "$rc"
expect_eq "d: restored before the job: the earlier checkpoint only" "step-1.pt" "$(cat "$N/restored.txt")"
expect_eq "d: the bucket holds the three checkpoints (and the other cluster's)" \
    "['clusters/ck/checkpoints/step-1.pt', 'clusters/ck/checkpoints/step-2.pt', 'clusters/ck/checkpoints/step-3.pt', 'clusters/other/checkpoints/theirs.pt']" \
    "$(fake "$S3URL/_fake/state" | json_get /dev/stdin "sorted(d['buckets']['$BUCKET']['objects'])")"
expect_eq "d: step-2.pt saved while the job ran, step-3.pt at its end, each once" \
    "step-2.pt step-3.pt" \
    "$(python3 -c 'import json,sys; print(" ".join(l["key"].rsplit("/",1)[1] for l in map(json.loads, list(open(sys.argv[1]))[int(sys.argv[2]):]) if l["op"] == "PutObject"))' "$T/s3.log" "$S3FROM")"
expect_eq "d: node.log: the restore, then the saves, the last one final" \
    "restoring $N/ckpt from s3://$BUCKET/clusters/ck/checkpoints|1 file(s) in $N/ckpt|saving every 4s if global rank 0 runs here|saved (periodic) to s3://$BUCKET/clusters/ck/checkpoints|saved (final) to s3://$BUCKET/clusters/ck/checkpoints" \
    "$(sed -n 's/^[0-9TZ:-]* gpuctl: checkpoints: //p' "$N/home/node.log" | uniq | tr '\n' '|' | sed 's/|$//')"
expect_eq "d: every request of the node with the role's key, none refused" "ASIAROLEEXAMPLE 0" \
    "$(python3 -c 'import json,sys; L=list(map(json.loads, list(open(sys.argv[1]))[int(sys.argv[2]):])); print(" ".join(sorted(set(l["akid"] for l in L))), sum(1 for l in L if l["status"] >= 400))' "$T/s3.log" "$S3FROM")"
# outside the prefix: refused by the role's policy
role() { env AWS_ACCESS_KEY_ID=ASIAROLEEXAMPLE AWS_SECRET_ACCESS_KEY=roleSecretExample \
    AWS_SESSION_TOKEN=roleSessionToken AWS_EC2_METADATA_DISABLED=true \
    /usr/bin/aws --endpoint-url "$S3URL" --region us-east-1 s3 "$@"; }
run_rc rc role cp "s3://$BUCKET/clusters/other/checkpoints/theirs.pt" "$T/theirs" 2> "$T/d1.err"
expect_eq "d: another cluster's checkpoint: refused" "1" "$rc"
expect_match "d: with 403 Forbidden" "An error occurred \\(403\\) when calling the HeadObject operation: Forbidden" "$(cat "$T/d1.err")"
run_rc rc role cp d.yaml "s3://$BUCKET/data/x" > /dev/null 2> "$T/d2.err"
expect_eq "d: a write outside the prefix: refused" "1" "$rc"
expect_match "d: with AccessDenied" "An error occurred \\(AccessDenied\\) when calling the PutObject operation: Access Denied" "$(cat "$T/d2.err")"
run_rc rc role ls "s3://$BUCKET/" > /dev/null 2> "$T/d3.err"
expect_eq "d: listing the whole bucket: refused (the CLI's 254: a service error)" "254" "$rc"
run_rc rc role rm "s3://$BUCKET/clusters/ck/checkpoints/step-1.pt" > /dev/null 2> "$T/d4.err"
expect_eq "d: deleting a checkpoint: refused (the node never deletes)" "1" "$rc"
g -y destroy ck > /dev/null 2>&1

# destroyed and applied again: a new cluster (new uid, new role) whose head
# restores what the old one saved
run_rc rc g -y apply -f d.yaml "${P[@]}" > /dev/null 2> "$T/d5.err"
[ "$rc" = 0 ] || cat "$T/d5.err"
expect_eq "d: applied again: exit 0" 0 "$rc"
NAME2=$(iam 'list(d["roles"])[0]')
expect_eq "d: a new role, for the same prefix" "yes clusters/ck/checkpoints/*" \
    "$(iam "('yes' if '$NAME2' != '$NAME' else 'no') + ' ' + d['roles']['$NAME2']['policies']['gpuctl-store-us-east-1']['Statement'][1]['Condition']['StringLike']['s3:prefix']")"
python3 - "$T/iam.json" "$NAME2" > "$T/principal.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({"access_key": "ASIAROLEEXAMPLE2", "secret_key": "roleSecretExample2",
                  "session_token": "roleSessionToken2",
                  "policy": d["roles"][sys.argv[2]]["policies"]["gpuctl-store-us-east-1"]}))
PY
fake -X POST --data-binary @"$T/principal.json" "$S3URL/_fake/principals" > /dev/null
world '[i for i in d["instances"] if i["state"] != "terminated"][0]["user_data"]' > "$T/ud2.txt"
python3 - "$T/ud2.txt" > "$N/bootstrap2.sh" <<'PY'
import sys
t = open(sys.argv[1]).read()
body = t.split("  content: |1\n", 1)[1].split("\nruncmd:", 1)[0]
print("\n".join(l[3:] for l in body.split("\n")))
PY
rm -rf "$N/ckpt" "$N/home"          # a new node: nothing on its disk
run_rc rc env -i PATH="$N/bin:/usr/bin:/bin:/usr/sbin:/sbin" HOME="$N" GPUCTL_HOME="$N/home" \
    GPUCTL_POWEROFF=0 GPUCTL_CONSOLE="$N/console" GPUCTL_CKPT_SAVE_S=4 \
    AWS_ACCESS_KEY_ID=ASIAROLEEXAMPLE2 AWS_SECRET_ACCESS_KEY=roleSecretExample2 \
    AWS_SESSION_TOKEN=roleSessionToken2 AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
    bash "$N/bootstrap2.sh"
[ "$rc" = 0 ] || cat "$N/home/node.log"
expect_eq "d: the new cluster's node exits 0" 0 "$rc"
expect_eq "d: it resumed from what the destroyed cluster saved" "step-1.pt step-2.pt step-3.pt" \
    "$(tr '\n' ' ' < "$N/restored.txt" | sed 's/ $//')"
g -y destroy ck > /dev/null 2>&1

finish
