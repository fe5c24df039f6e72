#!/bin/bash
# `gpuctl data push/ls/rm` (docs/cli.md#data) over the provider seam's
# object storage:
#  1. local: a directory store under the state directory (mode 0700); a
#     push sends every file, a second one none, a changed file (also one of
#     the same size) exactly one; ls lists the data sets and a set's files
#     with their sizes; rm removes them; unknown names exit 7, bad ones 3;
#     -o json matches docs/schema/data.schema.json;
#  2. slurm (login = local): JOB_DIR/store; over ssh refused, naming why;
#  3. aws against the fake S3 (tests/fake/s3.py, signatures checked with
#     botocore): the bucket gpuctl-<account>-<region> is made private,
#     encrypted, tagged, with the abort-incomplete-multipart rule; a 9 MiB
#     file goes by multipart upload; a second push sends nothing; push
#     --delete deletes exactly the file gone from DIR; rm deletes every
#     object.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work"
cd "$T/work"
export GPUCTL_CONFIG_DIR="$T/config"
unset GPUCTL_AWS_BUCKET GPUCTL_AWS_REGION AWS_REGION AWS_DEFAULT_REGION

# The data set: 6 + 2 + 3000 bytes.
mkdir -p d/sub
printf 'hello\n' > d/a.txt
printf 'x\n' > d/c
head -c 3000 /dev/zero > d/sub/b.bin

# ---- 1. local --------------------------------------------------------------
run_rc rc g data push d --name ds1 > "$T/p1.txt"
expect_eq "local push: every file sent" "0|data ds1: 3 file(s) sent (2.9 KiB), 0 unchanged|  $STATE/store/data/ds1" \
    "$rc|$(sed -n 1p "$T/p1.txt")|$(sed -n 2p "$T/p1.txt")"
expect_eq "the store directory is private" "700" "$(stat -c %a "$STATE/store")"
expect_eq "the files are there as pushed" "hello" "$(cat "$STATE/store/data/ds1/a.txt")"
run_rc rc g data push d --name ds1 > "$T/p2.txt"
expect_eq "local push again: nothing sent" "0 data ds1: 0 file(s) sent (0 B), 3 unchanged" "$rc $(head -1 "$T/p2.txt")"
printf 'xy\n' > d/c
run_rc rc g data push d --name ds1 > "$T/p3.txt"
expect_eq "a changed file: exactly it sent" "0 data ds1: 1 file(s) sent (3 B), 2 unchanged" "$rc $(head -1 "$T/p3.txt")"
printf 'HELLO\n' > d/a.txt   # same size, other bytes: the checksum tells
run_rc rc g data push d --name ds1 > "$T/p4.txt"
expect_eq "a file changed to the same size: sent (SHA-256)" "0 data ds1: 1 file(s) sent (6 B), 2 unchanged" "$rc $(head -1 "$T/p4.txt")"
expect_eq "its new content is in the store" "HELLO" "$(cat "$STATE/store/data/ds1/a.txt")"
g -o json data push d --name ds1 > "$T/p5.json"
check_schema "$T/p5.json" data
expect_eq "push -o json: the counts" "push 0 3 0 $STATE/store/data/ds1" \
    "$(json_get "$T/p5.json" '" ".join(str(x) for x in (d["action"], d["files_sent"], d["files_unchanged"], d["bytes_sent"], d["url"]))')"
g data push d/sub --name other > /dev/null

expect_eq "ls: the data sets" "NAME   FILES  SIZE
ds1    3      2.9 KiB
other  1      2.9 KiB" "$(g data ls)"
expect_eq "ls NAME: its files, sizes in bytes" "KEY SIZE|a.txt 6|c 3|sub/b.bin 3000" \
    "$(g data ls ds1 | awk '{printf("%s%s %s", (NR > 1 ? "|" : ""), $1, $2)}')"
g -o json data ls ds1 > "$T/ls.json"
check_schema "$T/ls.json" data
expect_eq "ls NAME -o json: keys and sizes" "a.txt:6 c:3 sub/b.bin:3000" \
    "$(json_get "$T/ls.json" '" ".join("%s:%d" % (o["key"], o["size"]) for o in d["objects"])')"
expect_eq "ls NAME -o json: modification times" "True" \
    "$(json_get "$T/ls.json" 'all(isinstance(o["mtime"], int) and o["mtime"] > 1500000000 for o in d["objects"])')"
g -o json data ls > "$T/lsall.json"
check_schema "$T/lsall.json" data
expect_eq "ls -o json: the data sets" "ds1:3:3009 other:1:3000" \
    "$(json_get "$T/lsall.json" '" ".join("%s:%d:%d" % (s["name"], s["files"], s["bytes"]) for s in d["data_sets"])')"

run_rc rc g data ls nosuch 2> "$T/e.txt"
expect_eq "ls of an unknown data set: exit 7" "7 gpuctl: error: no data set 'nosuch' in the store of local" "$rc $(cat "$T/e.txt")"
run_rc rc g data rm ds1 < /dev/null 2> "$T/e.txt"
expect_eq "rm without a terminal nor -y: exit 3, nothing removed" \
    "3 gpuctl: error: refusing to remove data without a terminal to confirm on; pass -y|3" \
    "$rc $(cat "$T/e.txt")|$(find "$STATE/store/data/ds1" -type f | wc -l)"
run_rc rc g data push nowhere --name x 2> "$T/e.txt"
expect_eq "push of a missing directory: exit 3" "3 gpuctl: error: nowhere: no such directory" "$rc $(cat "$T/e.txt")"
run_rc rc g data push d --name ../up 2> "$T/e.txt"
expect_match "a name with a '/': exit 3" "^gpuctl: error: invalid data set name '../up'" "$(cat "$T/e.txt")"
expect_eq "  (exit status)" 3 "$rc"
run_rc rc g data push d 2> "$T/e.txt"
expect_match "push without --name: exit 3" "data push needs --name NAME" "$(cat "$T/e.txt")"
run_rc rc g data ls --provider azure 2> "$T/e.txt"
expect_eq "a provider without object storage: exit 3" \
    "3 gpuctl: error: provider azure has no object storage (providers with one: local, aws, slurm)" \
    "$rc $(cat "$T/e.txt")"
run_rc rc g data ls --region us-east-1 2> "$T/e.txt"
expect_eq "local has one region" "3 gpuctl: error: local: this machine's region is 'local', not 'us-east-1'" \
    "$rc $(cat "$T/e.txt")"

run_rc rc g -y data rm ds1 > "$T/rm.txt"
expect_eq "rm -y: the files removed" "0 data ds1: 3 file(s) removed" "$rc $(cat "$T/rm.txt")"
expect_eq "rm: the directory is gone" "no" "$([ -e "$STATE/store/data/ds1" ] && echo yes || echo no)"
g -y -o json data rm other > "$T/rm.json"
check_schema "$T/rm.json" data
expect_eq "rm -o json: how many" "rm other 1" "$(json_get "$T/rm.json" '"%s %s %d" % (d["action"], d["name"], d["removed"])')"
expect_eq "ls: empty" "no data sets in the store of local" "$(g data ls)"
run_rc rc g -y data rm ds1 2> "$T/e.txt"
expect_eq "rm of a removed data set: exit 7" "7 gpuctl: error: no data set 'ds1' in the store of local" "$rc $(cat "$T/e.txt")"

# ---- 2. slurm: JOB_DIR/store on the shared filesystem ------------------------
mkdir -p "$T/jobs"
cat > "$T/slurm.conf" <<CONF
[slurm "lab"]
login = local
job_dir = $T/jobs
CONF
export GPUCTL_CONFIG="$T/slurm.conf"
run_rc rc g data push d --name ds1 --provider slurm > "$T/s1.txt"
expect_eq "slurm push: into JOB_DIR/store" "0|data ds1: 3 file(s) sent (2.9 KiB), 0 unchanged|  $T/jobs/store/data/ds1" \
    "$rc|$(sed -n 1p "$T/s1.txt")|$(sed -n 2p "$T/s1.txt")"
expect_eq "  private" "700" "$(stat -c %a "$T/jobs/store")"
run_rc rc g data push d --name ds1 --provider slurm --region lab > "$T/s2.txt"
expect_eq "slurm push again (--region lab): nothing sent" "0 data ds1: 0 file(s) sent (0 B), 3 unchanged" "$rc $(head -1 "$T/s2.txt")"
expect_eq "slurm ls NAME" "a.txt:6 c:3 sub/b.bin:3000" \
    "$(g -o json data ls ds1 --provider slurm | python3 -c 'import json,sys; print(" ".join("%s:%d" % (o["key"], o["size"]) for o in json.load(sys.stdin)["objects"]))')"
run_rc rc g data ls --provider slurm --region nosuch 2> "$T/e.txt"
expect_eq "slurm: an unknown Slurm cluster, exit 3" \
    "3 gpuctl: error: slurm: no Slurm cluster 'nosuch' in gpuctl's config file (a [slurm \"nosuch\"] section; docs/providers/slurm.md)" \
    "$rc $(cat "$T/e.txt")"
cat >> "$T/slurm.conf" <<CONF
[slurm "far"]
login = alice@login.example
job_dir = $T/jobs
CONF
run_rc rc g data ls --provider slurm 2> "$T/e.txt"
expect_eq "slurm: two clusters, none named: exit 3" "3 gpuctl: error: slurm: 2 Slurm clusters are configured; name one with --region" "$rc $(cat "$T/e.txt")"
run_rc rc g data push d --name ds2 --provider slurm --region far 2> "$T/e.txt"
expect_eq "slurm over ssh: not supported yet, said so (exit 3), nothing made" \
    "3 gpuctl: error: slurm: the store of Slurm cluster 'far' is on its shared filesystem, which gpuctl reaches only when it runs on a login node (login = local); over ssh (login = alice@login.example) it is not supported yet|no" \
    "$rc $(cat "$T/e.txt")|$([ -e "$T/jobs/store/data/ds2" ] && echo yes || echo no)"
mkdir -p ds4/s && printf 'k' > ds4/keep && printf 'g' > ds4/s/gone
g data push ds4 --name ds4 --provider slurm --region lab > /dev/null
rm -r ds4/s
run_rc rc g data push ds4 --name ds4 --provider slurm --region lab --delete > "$T/s3.txt"
expect_eq "slurm push --delete: the file gone from DIR is deleted, its emptied directory too" \
    "0 data ds4: 0 file(s) sent (0 B), 1 unchanged, 1 deleted|keep" \
    "$rc $(head -1 "$T/s3.txt")|$(cd "$T/jobs/store/data/ds4" && find . -mindepth 1 | sed 's|^\./||' | sort | paste -sd' ')"
g -y data rm ds4 --provider slurm --region lab > /dev/null
run_rc rc g -y data rm ds1 --provider slurm --region lab > "$T/srm.txt"
expect_eq "slurm rm" "0 data ds1: 3 file(s) removed" "$rc $(cat "$T/srm.txt")"
unset GPUCTL_CONFIG

# ---- 3. aws against the fake S3 ---------------------------------------------
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE
export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export GPUCTL_AWS_REGION=eu-west-1
start_fake s3 s3.py
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:$FAKE_PORT" AWS_ENDPOINT_URL_STS="http://127.0.0.1:$FAKE_PORT"
fake_state() { curl -sS --noproxy '*' "http://127.0.0.1:$FAKE_PORT/_fake/state" > "$T/state.json"; }
BUCKET=gpuctl-123456789012-eu-west-1
head -c $((9 << 20)) /dev/urandom > d/big   # 9 MiB: two parts of 8 + 1 MiB

run_rc rc g data push d --name ds1 --provider aws > "$T/a1.txt"
expect_eq "aws push: every file sent" \
    "0|data ds1: 4 file(s) sent (9.0 MiB), 0 unchanged|  s3://$BUCKET/data/ds1" \
    "$rc|$(sed -n 1p "$T/a1.txt")|$(sed -n 2p "$T/a1.txt")"
fake_state
expect_eq "the bucket: made in eu-west-1" "eu-west-1" "$(json_get "$T/state.json" "d['buckets']['$BUCKET']['region']")"
expect_eq "the bucket: private (every public access blocked)" \
    "{'BlockPublicAcls': 'true', 'BlockPublicPolicy': 'true', 'IgnorePublicAcls': 'true', 'RestrictPublicBuckets': 'true'}" \
    "$(json_get "$T/state.json" "d['buckets']['$BUCKET']['settings']['PublicAccessBlock']")"
expect_eq "the bucket: encrypted (SSE-S3)" "['AES256']" \
    "$(json_get "$T/state.json" "d['buckets']['$BUCKET']['settings']['BucketEncryption']")"
expect_eq "the bucket: tagged" "{'gpuctl:managed': 'true', 'gpuctl:purpose': 'data and checkpoints'}" \
    "$(json_get "$T/state.json" "d['buckets']['$BUCKET']['settings']['BucketTagging']")"
expect_eq "the bucket: incomplete uploads aborted after 7 days" "gpuctl-abort-incomplete-multipart 7" \
    "$(json_get "$T/state.json" "' '.join(str(r[k]) for r in d['buckets']['$BUCKET']['settings']['BucketLifecycleConfiguration'] for k in ('ID', 'DaysAfterInitiation'))")"
expect_eq "the objects under data/ds1/, with their sizes" \
    "data/ds1/a.txt:6 data/ds1/big:9437184 data/ds1/c:3 data/ds1/sub/b.bin:3000" \
    "$(json_get "$T/state.json" "' '.join('%s:%d' % (k, o['size']) for k, o in sorted(d['buckets']['$BUCKET']['objects'].items()))")"
expect_eq "the big file by multipart upload (2 parts), the others by PutObject" "1 2 1 3" \
    "$(json_get "$T/state.json" "' '.join(str(d['counts'].get(k, 0)) for k in ('CreateMultipartUpload', 'UploadPart', 'CompleteMultipartUpload', 'PutObject'))")"
expect_eq "the uploaded big file is the local one" "$(sha256sum < d/big | cut -d' ' -f1)" \
    "$(json_get "$T/state.json" "d['buckets']['$BUCKET']['objects']['data/ds1/big']['meta'].get('sha256', '')")"

run_rc rc g -o json data push d --name ds1 --provider aws > "$T/a2.json"
check_schema "$T/a2.json" data
expect_eq "aws push again: nothing sent" "0 0 4 0" \
    "$rc $(json_get "$T/a2.json" '"%d %d %d" % (d["files_sent"], d["files_unchanged"], d["bytes_sent"])')"
fake_state
expect_eq "  no upload request was made" "1 2 1 3" \
    "$(json_get "$T/state.json" "' '.join(str(d['counts'].get(k, 0)) for k in ('CreateMultipartUpload', 'UploadPart', 'CompleteMultipartUpload', 'PutObject'))")"
expect_eq "  and the bucket was made once" "1" "$(json_get "$T/state.json" "d['counts']['CreateBucket']")"
printf 'xyz\n' > d/c
run_rc rc g data push d --name ds1 --provider aws > "$T/a3.txt"
expect_eq "aws: a changed file, exactly it sent" "0 data ds1: 1 file(s) sent (4 B), 3 unchanged" "$rc $(head -1 "$T/a3.txt")"

expect_eq "aws ls: the data sets" "NAME  FILES  SIZE
ds1   4      9.0 MiB" "$(g data ls --provider aws)"
g -o json data ls ds1 --provider aws > "$T/als.json"
check_schema "$T/als.json" data
expect_eq "aws ls NAME -o json: keys, sizes, no mtime" "a.txt:6:None big:9437184:None c:4:None sub/b.bin:3000:None" \
    "$(json_get "$T/als.json" '" ".join("%s:%d:%s" % (o["key"], o["size"], o["mtime"]) for o in d["objects"])')"
run_rc rc g data ls nosuch --provider aws 2> "$T/e.txt"
expect_eq "aws ls of an unknown data set: exit 7" "7 gpuctl: error: no data set 'nosuch' in the store of aws" "$rc $(cat "$T/e.txt")"

run_rc rc g -y data rm ds1 --provider aws > "$T/arm.txt"
expect_eq "aws rm: every object removed" "0 data ds1: 4 file(s) removed" "$rc $(cat "$T/arm.txt")"
fake_state
expect_eq "  the bucket holds nothing" "{} 1" \
    "$(json_get "$T/state.json" "'%s %d' % (d['buckets']['$BUCKET']['objects'], d['counts']['DeleteObjects'])")"
expect_eq "aws ls: empty" "no data sets in the store of aws" "$(g data ls --provider aws)"

mkdir -p d3 && printf 'k\n' > d3/keep && printf 'g\n' > d3/gone
g data push d3 --name ds3 --provider aws > /dev/null
rm d3/gone
run_rc rc g data push d3 --name ds3 --provider aws --delete > "$T/a4.txt"
expect_eq "aws push --delete: the file gone from DIR is deleted" \
    "0 data ds3: 0 file(s) sent (0 B), 1 unchanged, 1 deleted|data/ds3/keep" \
    "$rc $(head -1 "$T/a4.txt")|$(fake_state; json_get "$T/state.json" "' '.join(k for k in sorted(d['buckets']['$BUCKET']['objects']) if k.startswith('data/ds3/'))")"
g -y data rm ds3 --provider aws > /dev/null

# An interrupted push resumes: part 2 of a new 9 MiB file is refused once
# (AccessDenied is not retried), then the same push sends only that part.
mkdir -p d2
head -c $((9 << 20)) /dev/urandom > d2/big
counts() { fake_state; json_get "$T/state.json" "' '.join(str(d['counts'].get(k, 0)) for k in ('CreateMultipartUpload', 'UploadPart', 'CompleteMultipartUpload'))"; }
before=$(counts)
curl -sS --noproxy '*' -X POST --data '[{"op": "UploadPart", "part": 2, "status": 403, "code": "AccessDenied", "times": 1}]' \
    "http://127.0.0.1:$FAKE_PORT/_fake/faults" > /dev/null
run_rc rc g data push d2 --name ds2 --provider aws 2> "$T/e.txt"
expect_eq "aws push: a refused part fails the push (exit 20)" 20 "$rc"
expect_eq "  the upload's manifest is kept" 1 "$(find "$STATE/aws/s3-uploads" -name 's3-upload-*.json' | wc -l)"
run_rc rc g data push d2 --name ds2 --provider aws > "$T/r.txt"
expect_eq "aws push again: resumed, the file sent" "0 data ds2: 1 file(s) sent (1.0 MiB), 0 unchanged" "$rc $(head -1 "$T/r.txt")"
expect_eq "  one upload made, parts 1 and 2 sent once each and 2 again, completed once" \
    "$(echo "$before" | awk '{print $1 + 1, $2 + 3, $3 + 1}')" "$(counts)"
expect_eq "  the manifest is gone" 0 "$(find "$STATE/aws/s3-uploads" -name 's3-upload-*.json' | wc -l)"
expect_eq "  the object is the file" "$(sha256sum < d2/big | cut -d' ' -f1)" \
    "$(json_get "$T/state.json" "d['buckets']['$BUCKET']['objects']['data/ds2/big']['meta'].get('sha256', '')")"

# A bucket the user names (GPUCTL_AWS_BUCKET); a name S3 refuses is refused first.
GPUCTL_AWS_BUCKET=team-data g data push d/sub --name s --provider aws > "$T/n.txt"
expect_eq "GPUCTL_AWS_BUCKET: that bucket" "  s3://team-data/data/s" "$(sed -n 2p "$T/n.txt")"
fake_state
expect_eq "  made, with its object" "data/s/b.bin" "$(json_get "$T/state.json" "' '.join(d['buckets']['team-data']['objects'])")"
run_rc rc env GPUCTL_AWS_BUCKET=Bad_Name "$GPUCTL_BIN" --state-dir "$STATE" data ls --provider aws 2> "$T/e.txt"
expect_match "GPUCTL_AWS_BUCKET: a bad name, exit 3" "^gpuctl: error: GPUCTL_AWS_BUCKET: 'Bad_Name' is not an S3 bucket name" "$(cat "$T/e.txt")"
expect_eq "  (exit status)" 3 "$rc"

finish
