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
