#!/bin/bash
# plan --live against the fake EC2 (tests/fake/ec2.py) when its spot price is
# out of the catalog's range (catalog/README.md): the plan is refused with
# the provider's error (exit 6) naming the row and the price, and nothing is
# planned with it.  Regression: any finite price EC2 gave (2,000,000 USD/hour
# here; an infinite or NaN one from strtod of "inf" or "nan") replaced the
# catalog's, and the plan file written with it could not be read back.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" "$T/home"
cd "$T/work"
export GPUCTL_CONFIG_DIR="$T/config" HOME="$T/home"
unset GPUCTL_CATALOG AWS_PROFILE AWS_DEFAULT_PROFILE AWS_REGION AWS_DEFAULT_REGION
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE
export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
python3 "$GPUCTL_SOURCE_DIR/tests/fake/ec2.py" --print-seed |
    python3 -c 'import json,sys; d=json.load(sys.stdin); d["instance_types"]["p4d.24xlarge"]["spot"]["us-east-1"]=2000000; json.dump(d, sys.stdout)' > "$T/seed.json"
start_fake ec2 ec2.py --seed "$T/seed.json"
export AWS_ENDPOINT_URL_EC2="http://127.0.0.1:$FAKE_PORT"

cat > job.yaml <<'YAML'
name: live
provider: aws
resources:
  gpu: A100-40GB:8
  instance_types: p4d.24xlarge
region: us-east-1
spot: { policy: spot }
run:
  command: python train.py
YAML
run_rc rc g plan -f job.yaml > /dev/null 2>&1
expect_eq "plan from the catalog: exit 0" 0 "$rc"
run_rc rc g plan -f job.yaml --live --out live.json > /dev/null 2> "$T/e.txt"
expect_eq "plan --live with a spot price of 2000000 USD/hour: exit 6" 6 "$rc"
expect_eq "names the row and the price" "gpuctl: error: aws p4d.24xlarge us-east-1: spot price 2000000 USD/hour is out of range (at most 1000000)" "$(cat "$T/e.txt")"
expect_eq "no plan file written" "no" "$([ -e live.json ] && echo yes || echo no)"
finish
