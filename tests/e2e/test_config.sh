#!/bin/bash
# Settings per provider (docs/config.md): an endpoint given only in the
# config file reaches the fake EC2; GPUCTL_AWS_ENDPOINT beats the file and
# --endpoint beats both; the file's region is the one used; a config file
# in error stops a command with exit 3 naming FILE:LINE.
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/ec2_parts.sh"

part cfg
unset AWS_ENDPOINT_URL_EC2               # the config file is all that names it
mkdir -p "$GPUCTL_CONFIG_DIR"
cat > "$GPUCTL_CONFIG_DIR/config" <<EOF2
# gpuctl's settings per provider
[provider "aws"]
endpoint = $URL
region = us-west-2
EOF2

n0=$(log_lines)
run_rc rc g check aws > "$T/check.txt" 2>&1
expect_eq "check aws with the endpoint from the config file: exit 0" 0 "$rc"
expect_eq "the config file's endpoint got the call" "DescribeRegions" "$(actions "$n0")"
expect_match "the config file's region is used" "region us-west-2" "$(cat "$T/check.txt")"
expect_match "check names the endpoint" "endpoint $URL" "$(cat "$T/check.txt")"

# The environment beats the file: nothing reaches the fake.
n0=$(log_lines)
run_rc rc env GPUCTL_AWS_ENDPOINT=http://127.0.0.1:9 "$GPUCTL_BIN" --state-dir "$STATE" \
    check aws > "$T/check-env.txt" 2>&1
expect_eq "GPUCTL_AWS_ENDPOINT beats the config file: the call fails" 6 "$rc"
expect_eq "GPUCTL_AWS_ENDPOINT beats the config file: no call at the fake" "" "$(actions "$n0")"
# --endpoint beats both.
run_rc rc env GPUCTL_AWS_ENDPOINT=http://127.0.0.1:9 "$GPUCTL_BIN" --state-dir "$STATE" \
    --endpoint "$URL" check aws > "$T/check-flag.txt" 2>&1
expect_eq "--endpoint beats GPUCTL_AWS_ENDPOINT: exit 0" 0 "$rc"
expect_eq "--endpoint beats GPUCTL_AWS_ENDPOINT: the fake got the call" "DescribeRegions" \
    "$(actions "$n0")"

# --endpoint aws=URL is aws's alone, and beats --endpoint for every provider.
n0=$(log_lines)
run_rc rc "$GPUCTL_BIN" --state-dir "$STATE" -v --endpoint http://127.0.0.1:9 \
    --endpoint "aws=$URL" check aws > "$T/check-own.txt" 2>&1
expect_eq "--endpoint aws=URL beats --endpoint URL: exit 0" 0 "$rc"
expect_eq "--endpoint aws=URL: the fake got the call" "DescribeRegions" "$(actions "$n0")"
expect_match "-v says where the endpoint came from" \
    "gpuctl: debug: aws: endpoint $URL \(--endpoint aws=\.\.\.\)" "$(cat "$T/check-own.txt")"
# ... and a URL with '=' in its query is still one for every provider.
n0=$(log_lines)
run_rc rc "$GPUCTL_BIN" --state-dir "$STATE" -v --endpoint "$URL/?a=b" check aws \
    > "$T/check-q.txt" 2>&1
expect_match "an endpoint with '=' in its query is for every provider" \
    "gpuctl: debug: aws: endpoint $URL/\?a=b \(--endpoint\)" "$(cat "$T/check-q.txt")"
# A provider gpuctl does not have, or an empty value: exit 3, naming the flag.
run_rc rc "$GPUCTL_BIN" --state-dir "$STATE" --endpoint gcp=http://127.0.0.1:9 check aws \
    > "$T/check-gcp.txt" 2>&1
expect_eq "--endpoint gcp=URL: exit 3" 3 "$rc"
expect_match "--endpoint gcp=URL: the message" \
    "gpuctl: error: --endpoint gcp=http://127.0.0.1:9: unknown provider 'gcp' \(known: local, aliyun, aws, azure, slurm\)" \
    "$(cat "$T/check-gcp.txt")"
run_rc rc "$GPUCTL_BIN" --state-dir "$STATE" --profile aws= check aws > "$T/check-empty.txt" 2>&1
expect_eq "--profile aws=: exit 3" 3 "$rc"
expect_match "--profile aws=: the message" \
    "gpuctl: error: --profile aws=: the value for provider aws is empty" \
    "$(cat "$T/check-empty.txt")"

# A message names where gpuctl's settings took a value from, not a flag
# that was never given (a trial found "named by --profile" for a profile of
# the config file).
run_rc rc env GPUCTL_AWS_PROFILE=nosuch "$GPUCTL_BIN" --state-dir "$STATE" check aws \
    > "$T/check-prof.txt" 2>&1
expect_match "a profile from GPUCTL_AWS_PROFILE is named by it" \
    "AWS profile 'nosuch' not found in .* \(named by GPUCTL_AWS_PROFILE\)" \
    "$(cat "$T/check-prof.txt")"
printf '[provider "aws"]\nendpoint = %s\nprofile = nosuch2\n' "$URL" > "$T/prof-config"
run_rc rc env GPUCTL_CONFIG="$T/prof-config" "$GPUCTL_BIN" --state-dir "$STATE" check aws \
    > "$T/check-prof2.txt" 2>&1
expect_match "a profile from the config file is named by FILE:LINE" \
    "AWS profile 'nosuch2' not found in .* \(named by $T/prof-config:3\)" \
    "$(cat "$T/check-prof2.txt")"

# A config file in error: exit 3, FILE:LINE and what is wrong.
printf '[provider "aws"]\nendpoint = %s\nzone = eu-west-1a\n' "$URL" > "$T/bad-config"
run_rc rc env GPUCTL_CONFIG="$T/bad-config" "$GPUCTL_BIN" --state-dir "$STATE" \
    check aws > "$T/check-bad.txt" 2>&1
expect_eq "a config file in error: exit 3" 3 "$rc"
expect_match "the error names FILE:LINE" \
    "$T/bad-config:3: unknown key 'zone' in \[provider \"aws\"\] \(keys: endpoint, profile, region\)" \
    "$(cat "$T/check-bad.txt")"
finish
