#!/bin/bash
# The fake EC2 endpoint (tests/fake/ec2.py) checked against botocore: its
# SigV4 verification accepts botocore-signed requests and rejects tampered
# ones, botocore's EC2 model parses its XML, and the world, resource rules,
# faults, control endpoints and log behave as its docstring says.  The gpuctl
# AWS e2e tests build on this fake, so it is tested first and on its own.
# Needs only GPUCTL_SOURCE_DIR (not the gpuctl binary) and Debian's
# /usr/bin/python3 with python3-botocore.
set -euo pipefail
: "${GPUCTL_SOURCE_DIR:?GPUCTL_SOURCE_DIR must point at the source tree}"
exec /usr/bin/python3 "$GPUCTL_SOURCE_DIR/tests/fake/test_ec2_fake.py"
