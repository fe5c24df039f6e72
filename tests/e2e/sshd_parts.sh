# sshd_parts.sh - for end-to-end tests that reach aws nodes over ssh
# (test_ssh, test_aws_logs, test_aws_deliver; test_aws_boot and test_aws_job
# through boot_parts.sh), sourced after lib.sh and after the test's own
# skip check: the fake EC2 with the test's environment, the user's ssh
# config, and real sshds on loopback, each in a mount namespace of its own
# where the test needs one.  cleanup_extra stays the test's: it calls
# sshd_stop (or ssh_close_shared where no sshd runs here).

SECRET=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
fake() { curl -sS --noproxy '*' "$@"; }   # the fake's control API

# ssh_fake_ec2 POLL_S HOSTKEY_WAIT_S [EC2-ARGS...]: a work directory
# ($T/work, the current one), a home without ~/.ssh (gpuctl makes a key),
# fake credentials, gpuctl polling EC2 every POLL_S seconds and waiting
# HOSTKEY_WAIT_S seconds for a node's host keys in its console, ssh as
# root; the fake EC2 (tests/fake/ec2.py EC2-ARGS) as gpuctl's EC2 endpoint
# and check-ip service.  Sets EC2 (its URL) and FAKE_PORT (its port).
ssh_fake_ec2() {
    local poll=$1 wait=$2; shift 2
    mkdir -p "$T/work" "$T/home" "$T/bin"
    cd "$T/work" || exit 1
    export GPUCTL_CONFIG_DIR="$T/config" HOME="$T/home"
    export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=$SECRET
    export GPUCTL_AWS_POLL_S=$poll GPUCTL_SSH_HOSTKEY_WAIT_S=$wait GPUCTL_AWS_SSH_USER=root
    start_fake ec2 ec2.py "$@"
    EC2="http://127.0.0.1:$FAKE_PORT"
    export AWS_ENDPOINT_URL_EC2="$EC2"
    export GPUCTL_CHECKIP_URL="$EC2/_fake/checkip"
}

# ssh_user_config TEXT: TEXT as the user's ssh config.  ssh reads
# ~/.ssh/config from the passwd entry's home, not $HOME, so a wrapper first
# on PATH hands it over with -F, as the user's own file would be read:
# gpuctl sets neither Port nor -F.
ssh_user_config() {
    printf '%s\n' "$1" > "$T/ssh_config"
    mkdir -p "$T/bin"
    printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$T/ssh_config" > "$T/bin/ssh"
    chmod +x "$T/bin/ssh"
    export PATH="$T/bin:$PATH"
}

# free_port: a TCP port free on 127.0.0.1 now
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# host_key NAME [COMMENT]: a new ed25519 host key $T/NAME (and NAME.pub)
host_key() { ssh-keygen -q -t ed25519 -N '' -C "${2:-$1}" -f "$T/$1"; }

SSHD_PIDS=()
# sshd_start NAME ADDR PORT HOSTKEY [SETUP]: an sshd on ADDR:PORT with the
# host key HOSTKEY (a path) that lets in $T/authorized_keys, logging to
# $T/sshd-NAME.log; with SETUP (sh commands, e.g. mounts), in a private
# mount namespace where SETUP ran first (under set -e).  Returns once the
# port answers; exits the test when it does not within 5 s.
sshd_start() {
    local name=$1 addr=$2 port=$3 key=$4 setup=${5:-}
    local sshd=(/usr/sbin/sshd -D -e -f /dev/null -o ListenAddress="$addr" -o Port="$port"
                -o HostKey="$key" -o AuthorizedKeysFile="$T/authorized_keys" -o PidFile=none
                -o UsePAM=no -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no
                -o PermitRootLogin=prohibit-password -o StrictModes=no)
    mkdir -p /run/sshd
    if [ -n "$setup" ]; then
        unshare -m --propagation private /bin/sh -c "set -e
$setup
exec \"\$@\"" sh "${sshd[@]}" 2>> "$T/sshd-$name.log" &
    else
        "${sshd[@]}" 2>> "$T/sshd-$name.log" &
    fi
    SSHD_PIDS+=($!)
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/$addr/$port") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "sshd $name did not start:" >&2
    cat "$T/sshd-$name.log" >&2
    exit 1
}

# ssh_close_shared: end the connections gpuctl's ssh shares (ControlMaster,
# ControlPersist) under the state directory
ssh_close_shared() {
    for s in "$STATE"/ssh/cm/*; do
        [ -S "$s" ] && /usr/bin/ssh -o ControlPath="$s" -O exit x >/dev/null 2>&1 || true
    done
}

# sshd_stop: the shared connections, then every sshd sshd_start started
sshd_stop() {
    ssh_close_shared
    local p
    for p in "${SSHD_PIDS[@]}"; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    SSHD_PIDS=()
}

# cluster_ids NAME: from `gpuctl -o json status NAME` (kept in $T/st.json),
# ID0 and ID1 (the instance ids of nodes 0 and 1), UID_FULL (the cluster's
# uid) and UID8 (its first 8 characters, as in the names gpuctl gives)
# shellcheck disable=SC2034  # the test that sources this reads them
cluster_ids() {
    g -o json status "$1" > "$T/st.json"
    ID0=$(json_get "$T/st.json" '[n["provider_id"] for n in d["clusters"][0]["nodes"] if n["rank"] == 0][0]')
    ID1=$(json_get "$T/st.json" '[n["provider_id"] for n in d["clusters"][0]["nodes"] if n["rank"] == 1][0]')
    UID_FULL=$(json_get "$T/st.json" 'd["clusters"][0]["uid"]')
    UID8=${UID_FULL:0:8}
}

# console_host_keys PUBFILE: cloud-init's block of host keys, as a node's
# console output shows it, with the key in PUBFILE (type and key only)
console_host_keys() {
    printf -- '-----BEGIN SSH HOST KEY KEYS-----\n%s\n-----END SSH HOST KEY KEYS-----\n' \
        "$(cut -d' ' -f1,2 "$1")"
}

# fake_node ID IP [CONSOLE]: the fake EC2 gives instance ID the public
# address IP (and the console output CONSOLE)
fake_node() {
    fake -X POST -d "$(python3 -c 'import json, sys
d = {"instance_id": sys.argv[1], "public_ip": sys.argv[2]}
if len(sys.argv) > 3:
    d["console"] = sys.argv[3]
print(json.dumps(d))' "$@")" "$EC2/_fake/node" > /dev/null
}
