#!/bin/bash
# The spec's `data` on aws, against the fake EC2 (tests/fake/ec2.py) and
# the fake S3 (tests/fake/s3.py), both checking signatures with botocore:
#  a. plan names what moves: the directory into aws's store in the chosen
#     offer's region, the s3:// URL read where it is, with the
#     inter-region note; a spec whose data lines make the user-data too
#     large is refused by plan (exit 4);
#  b. apply pushes the data set to the bucket of the chosen region before
#     any instance is asked for: with S3 refusing the upload, apply fails
#     (exit 20) and EC2 saw no RunInstances, nothing is recorded; then
#     apply pushes (every file) and the user-data of every node names the
#     URLs it fetches; a later apply sends nothing again; a data push to
#     the set while the cluster lives is refused; a file removed from the
#     directory is deleted from the bucket by the next apply (exact count);
#  c. data pull from the bucket: the round trip, exact counts.
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/ec2_parts.sh"

mkdir -p ds/sub
printf 'one\n' > ds/file
printf 'twotwo\n' > ds/sub/b
cat > job.yaml <<'EOF'
name: dq
provider: aws
nodes: 2
resources:
  gpu: A10G:1
  instance_types: g5.2xlarge
region: us-west-2
data:
  ds: ./ds
  imgs: s3://shared-data/imagenet
run:
  command: python train.py
EOF

part a
start_fake s3 s3.py
S3URL="http://127.0.0.1:$FAKE_PORT"
export AWS_ENDPOINT_URL_S3="$S3URL" AWS_ENDPOINT_URL_STS="$S3URL"
BUCKET=gpuctl-123456789012-us-west-2
s3state() { fake "$S3URL/_fake/state" > "$T/s3.json"; json_get "$T/s3.json" "$1"; }

# ---- a. plan ---------------------------------------------------------------
expect_eq "a: plan's Data section" \
    "Data:|  data ds: ./ds (2 file(s), 11 B) is uploaded to aws's store in us-west-2 at apply (only files changed since the last push move)|  data imgs: s3://shared-data/imagenet, read where it is; its bucket's region is known only online: outside us-west-2 (the chosen offer's) every node's fetch is an inter-region transfer, billed per GiB by aws" \
    "$(g plan -f job.yaml | grep -A2 '^Data:' | paste -sd'|')"
expect_eq "a: plan asked neither EC2 nor S3" "0 {}" "$(log_lines) $(s3state 'd["counts"]')"
# 400 data sets of long (random, incompressible) URLs: the user-data that
# lists them is too large for EC2, known at plan time
{ sed '/^run:/,$d' job.yaml; for i in $(seq 1 400); do
    echo "  d$i: s3://shared-data/$(head -c 60 /dev/urandom | base64 -w0 | tr -dc a-z0-9)"; done
  echo "run: python train.py"; } > many.yaml
run_rc rc g plan -f many.yaml 2> "$T/many.err" > /dev/null
expect_eq "a: plan of a user-data too large with its data lines: exit 4" 4 "$rc"
expect_match "  saying the sizes" "user-data is [0-9]+ bytes after gzip; aws allows 16384" "$(cat "$T/many.err")"

# ---- b. apply: the data first ---------------------------------------------
part b
fake -X POST -d '[{"op": "PutObject", "status": 403, "code": "AccessDenied", "times": 1}]' \
    "$S3URL/_fake/faults" > /dev/null
run_rc rc g -y apply -f job.yaml "${P[@]}" > "$T/b1.out" 2> "$T/b1.err"
expect_eq "b: S3 refusing the upload fails apply (exit 20)" 20 "$rc"
expect_match "  naming the data set and where it went" \
    "^gpuctl: error: data.ds: placing ./ds in the store of aws us-west-2: " "$(cat "$T/b1.err")"
expect_eq "  no instance was asked for" "0" "$(if [ -f "$LOG" ]; then logq "len([l for l in L if l['action'] == 'RunInstances'])"; else echo 0; fi)"
expect_eq "  and no cluster recorded" "0" "$(st 'len(d["clusters"])')"
run_rc rc g -y apply -f job.yaml "${P[@]}" > "$T/b2.out" 2> "$T/b2.err"
[ "$rc" = 0 ] || cat "$T/b2.err"
expect_eq "b: apply exits 0" 0 "$rc"
expect_eq "b: the data set pushed (the file S3 refused once, too)" \
    "gpuctl: data ds: 2 file(s) sent (11 B), 0 unchanged, 0 deleted -> s3://$BUCKET/data/ds|gpuctl: data imgs: s3://shared-data/imagenet (used where it is)" \
    "$(grep '^gpuctl: data ' "$T/b2.err" | paste -sd'|')"
expect_eq "b: into the bucket of the chosen region" "us-west-2|data/ds/file:4 data/ds/sub/b:7" \
    "$(s3state "d['buckets']['$BUCKET']['region'] + '|' + ' '.join('%s:%d' % (k, o['size']) for k, o in sorted(d['buckets']['$BUCKET']['objects'].items()))")"
expect_eq "b: two RunInstances in us-west-2" "us-west-2 us-west-2" \
    "$(logq "' '.join(l['region'] for l in L if l['action'] == 'RunInstances')")"
# (the script sits indented in the cloud-config: compared line by line)
expect_eq "b: every node's user-data fetches both data sets into \$GPUCTL_HOME/data" "True True" \
    "$(calls RunInstances "' '.join(str(\"gpuctl_data_fetch 'ds' 's3://$BUCKET/data/ds'\ngpuctl_data_fetch 'imgs' 's3://shared-data/imagenet'\n\" in u and \"GPUCTL_DATA_DIR=''\" in u) for u in ('\\n'.join(y.strip() for y in x['UserData'].splitlines()) for x in r))")"
g -y destroy dq > /dev/null 2>&1
puts=$(s3state 'd["counts"].get("PutObject", 0)')
run_rc rc g -y apply -f job.yaml "${P[@]}" > "$T/b3.out" 2> "$T/b3.err"
expect_eq "b: apply after destroy: the data set is still there, nothing sent" \
    "0 gpuctl: data ds: 0 file(s) sent (0 B), 2 unchanged, 0 deleted -> s3://$BUCKET/data/ds $puts" \
    "$rc $(grep '^gpuctl: data ds' "$T/b3.err") $(s3state 'd["counts"].get("PutObject", 0)')"
cp -r ds ds-other && printf 'x' > ds-other/file
# another cluster's spec with other files in the set: plan refuses it as
# apply would, offline (neither EC2 nor S3 asked: no account id, no bucket)
sed -e 's/^name: dq$/name: dq2/' -e 's|  ds: ./ds$|  ds: ./ds-other|' job.yaml > job2.yaml
calls=$(log_lines); s3calls=$(s3state 'sum(d["counts"].values())')
run_rc rc g plan --detailed-exitcode -f job2.yaml > /dev/null 2> "$T/b4p.err"
expect_eq "b: plan of another cluster changing the set dq uses: exit 1, apply's message, offline" \
    "1 gpuctl: error: job2.yaml:9:7: data.ds: live cluster 'dq' uses data set 'ds' in the store of aws region us-west-2, and ./ds-other holds other files than it does; applying would change the files under its job. Destroy it first (gpuctl destroy dq), or give this data set a name of its own|$calls $s3calls" \
    "$rc $(cat "$T/b4p.err")|$(log_lines) $(s3state 'sum(d["counts"].values())')"
run_rc rc g data push ds-other --name ds --provider aws --region us-west-2 2> "$T/b4.err"
expect_eq "b: data push of other files to the set the live cluster uses: refused (exit 3)" \
    "3 gpuctl: error: refusing to push to data set 'ds' in the store of aws region us-west-2: live cluster 'dq' uses it, and its job reads it; ds-other holds other files than it placed there. Destroy it first (gpuctl destroy dq), or push under another --name" \
    "$rc $(cat "$T/b4.err")"
g -y destroy dq > /dev/null 2>&1
# apply mirrors the directory: a file removed from it is deleted from the bucket
rm ds/sub/b
run_rc rc g -y apply -f job.yaml "${P[@]}" > "$T/b5.out" 2> "$T/b5.err"
expect_eq "b: apply after a file was removed: it is deleted from the bucket" \
    "0 gpuctl: data ds: 0 file(s) sent (0 B), 1 unchanged, 1 deleted -> s3://$BUCKET/data/ds|data/ds/file" \
    "$rc $(grep '^gpuctl: data ds' "$T/b5.err")|$(s3state "' '.join(k for k in sorted(d['buckets']['$BUCKET']['objects']) if k.startswith('data/'))")"
g -y destroy dq > /dev/null 2>&1
printf 'twotwo\n' > ds/sub/b
g data push ds --name ds --provider aws --region us-west-2 > /dev/null

# ---- c. data pull ------------------------------------------------------------
run_rc rc g data pull ds "$T/out" --provider aws --region us-west-2 > "$T/c1.txt"
expect_eq "c: data pull from the bucket: every file" "0|data ds: 2 file(s) received (11 B), 0 unchanged" \
    "$rc|$(sed -n 1p "$T/c1.txt")"
expect_eq "  the files" "one|twotwo" "$(cat "$T/out/file")|$(cat "$T/out/sub/b")"
g -o json data pull ds "$T/out" --provider aws --region us-west-2 > "$T/c2.json"
check_schema "$T/c2.json" data
expect_eq "c: again: nothing received" "0 2 0" \
    "$(json_get "$T/c2.json" '" ".join(str(x) for x in (d["files_received"], d["files_unchanged"], d["bytes_received"]))')"

finish
