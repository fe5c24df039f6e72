# boot_parts.sh - for end-to-end tests against the booting fake EC2
# (tests/fake/ec2.py --boot, ec2_boot.py: every instance runs gpuctl's
# user-data as a node in namespaces of its own, with sshd and IMDS):
# test_aws_boot and test_aws_job.  Sourced after lib.sh; uses sshd_parts.sh.
source "$(dirname "${BASH_SOURCE[0]}")/sshd_parts.sh"

# boot_require TOOLS MODULES: skip the test (exit 77, saying why) unless it
# runs as root with util-linux (unshare, setpriv, nsenter), iproute2, ssh,
# ssh-keygen, curl, the commands in TOOLS (space-separated), /usr/sbin/sshd,
# /usr/bin/python3 with the modules in MODULES (space-separated) and the
# right to make namespaces.
boot_require() {
    local why="" t mods
    read -ra mods <<< "$2"
    [ "$(id -u)" = 0 ] || why="needs root"
    for t in unshare setpriv nsenter ip ssh ssh-keygen curl $1; do
        command -v "$t" >/dev/null || why="${why:+$why, }needs $t"
    done
    [ -x /usr/sbin/sshd ] || why="${why:+$why, }needs /usr/sbin/sshd"
    local imports=${mods[*]}
    imports=${imports// /, }                          # "a, b, c"
    local said=$imports
    [ "${#mods[@]}" -lt 2 ] || said="${said%, *} and ${mods[-1]}"  # "a, b and c"
    /usr/bin/python3 -c "import $imports" 2>/dev/null ||
        why="${why:+$why, }needs /usr/bin/python3 with $said"
    if [ -z "$why" ] && ! unshare --net --mount --pid --fork true 2>/dev/null; then
        why="cannot make namespaces (unshare --net --mount --pid)"
    fi
    if [ -n "$why" ]; then
        echo "skip: $why"
        exit 77
    fi
}

# boot_fake_ec2 POLL_S HOSTKEY_WAIT_S: the booting fake EC2 (nodes under
# $T/boot) as gpuctl's EC2 endpoint (ssh_fake_ec2: sets EC2 and FAKE_PORT),
# ssh with no user config but BatchMode and a connect timeout of 10 s (the
# nodes' host keys come from their consoles), and the shared connections
# ended with the test (cleanup_extra).
boot_fake_ec2() {
    ssh_fake_ec2 "$1" "$2" --boot "$T/boot"
    ssh_user_config "Host *
  BatchMode yes
  ConnectTimeout 10"
}
cleanup_extra() { ssh_close_shared; }

# boot_fake_ec2_s3: the booting fake EC2 (boot_fake_ec2 0.2 30, IAM on its
# port) and the fake S3 where the nodes reach it (at the fake EC2's host
# address), knowing the credentials the fake EC2 mints for them and their
# role's policy.  Sets HOST_IP, S3URL, BUCKET (the account's bucket in
# us-east-1) and gpuctl's IAM, S3 and STS endpoints.
boot_fake_ec2_s3() {
    boot_fake_ec2 0.2 30
    export AWS_ENDPOINT_URL_IAM="$EC2"
    HOST_IP=$(fake "$EC2/_fake/boot" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["host_ip"])')
    start_fake s3 s3.py --listen "$HOST_IP" --ec2 "$EC2"
    S3URL="http://$HOST_IP:$FAKE_PORT"
    export AWS_ENDPOINT_URL_S3="$S3URL" AWS_ENDPOINT_URL_STS="$S3URL"
    BUCKET=gpuctl-123456789012-us-east-1
}

# db SQL: each row's first column of SQL on the test's state database
db() { /usr/bin/python3 -c 'import sqlite3, sys; print("\n".join(str(r[0]) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))' "$STATE/gpuctl.db" "$1"; }

# inst EXPR: EXPR on the fake EC2's world `d` (/_fake/state)
inst() { fake "$EC2/_fake/state" | /usr/bin/python3 -c "
import json, sys
d = json.load(sys.stdin)
print($1)"; }
