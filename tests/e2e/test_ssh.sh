#!/bin/bash
# gpuctl ssh (docs/cli.md, docs/providers/aws.md "SSH and host keys"):
#  1. aws, against the fake EC2 and a real sshd on loopback: the fake gives
#     the nodes the public address 127.0.0.1 and prints the first sshd's
#     host key in node 0's console output; `gpuctl ssh NAME -- echo hi`
#     prints hi through the user's ssh config (its Port), a remote `exit 3`
#     exits 3, node 1 (no keys in its console) is pinned at first contact
#     and says so; the known_hosts holds exactly those keys;
#  2. a second sshd with another host key at the same address: refused for
#     the node whose key came from the console and for the node pinned at
#     first contact (exit 255, ssh names the changed key), and the command
#     never ran (no marker file); never StrictHostKeyChecking=no;
#  3. local: --node 1 runs in the node's job environment (RANK=1) and
#     working directory; a node that is not there or not running, an
#     unknown cluster.
# Needs root and /usr/sbin/sshd (else skipped, exit 77).
source "$(dirname "$0")/lib.sh" || exit 1
if [ "$(id -u)" != 0 ] || [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null; then
    echo "skip: needs root, /usr/sbin/sshd and ssh"
    exit 77
fi
source "$(dirname "$0")/sshd_parts.sh"
ssh_fake_ec2 0.05 0.3

SSH_PORT=$(free_port)
ssh_user_config "Host 127.0.0.1
  Port $SSH_PORT
  BatchMode yes"
host_key hostkey_a host-a
host_key hostkey_b host-b

# start_sshd KEY: an sshd on 127.0.0.1:$SSH_PORT with host key $T/KEY
start_sshd() { sshd_start "$1" 127.0.0.1 "$SSH_PORT" "$T/$1"; }
cleanup_extra() { sshd_stop; }

# ---- 1. aws: host keys from the console, or pinned at first contact --------
cat > sa.yaml <<'YAML'
name: sa
provider: aws
nodes: 2
resources:
  gpu: A10G:1
  instance_types: g5.xlarge
region: us-east-1
run:
  command: python train.py
YAML
run_rc rc g -y apply -f sa.yaml > "$T/apply.out" 2> "$T/apply.err"
expect_eq "apply of a 2-node aws cluster" 0 "$rc"
[ "$rc" = 0 ] || cat "$T/apply.err"
cluster_ids sa
# the sshd lets in the key gpuctl made for the cluster (and imported to EC2)
cp "$STATE/keys/gpuctl-sa-$UID8.pub" "$T/authorized_keys"
start_sshd hostkey_a
# cloud-init's block, as a console shows it (with its "ec2:" lines around)
KEY_A=$(cut -d' ' -f1,2 "$T/hostkey_a.pub")
CONSOLE=$(printf 'ec2: #############################################################\n-----BEGIN SSH HOST KEY KEYS-----\n%s root@ip-10-0-0-1\n-----END SSH HOST KEY KEYS-----\nec2: #############################################################\n' "$(cat "$T/hostkey_a.pub" | cut -d' ' -f1,2)")
fake_node "$ID0" 127.0.0.1 "$CONSOLE"
fake_node "$ID1" 127.0.0.1

KNOWN="$STATE/ssh/$UID_FULL/known_hosts"
run_rc rc g -v ssh sa -- echo hi > "$T/hi.out" 2> "$T/hi.err"
expect_eq "ssh NAME -- echo hi: prints hi, exit 0" "0 hi" "$rc $(cat "$T/hi.out")"
[ "$rc" = 0 ] || cat "$T/hi.err"
expect_eq "node 0's host key from its console, under its instance id, before the first contact" \
    "$ID0 $KEY_A" "$(cat "$KNOWN")"
expect_match "ssh runs with StrictHostKeyChecking=yes, the cluster's known_hosts, the node's alias" \
    "'StrictHostKeyChecking=yes' '-o' 'UserKnownHostsFile=$KNOWN' '-o' 'HostKeyAlias=$ID0'" \
    "$(cat "$T/hi.err")"
expect_match "with the cluster's key only, and a shared connection" \
    "'-i' '$STATE/keys/gpuctl-sa-$UID8' '-o' 'IdentitiesOnly=yes' .*'ControlMaster=auto' '-o' 'ControlPath=$STATE/ssh/cm/[0-9a-f]{16}' '-o' 'ControlPersist=300'" \
    "$(cat "$T/hi.err")"
expect_eq "no -F, no Port: the user's ssh config decides those" "" \
    "$(grep -E "running: .*('-F'|'-p'|Port=)" "$T/hi.err" || true)"

run_rc rc g ssh sa -- exit 3 2> "$T/x3.err"
expect_eq "a remote 'exit 3' exits 3" 3 "$rc"

run_rc rc g ssh sa --node 1 -- 'echo $((6 * 7))' > "$T/n1.out" 2> "$T/n1.err"
expect_eq "node 1 without keys in its console: pinned at first contact, the command runs" \
    "0 42" "$rc $(cat "$T/n1.out")"
expect_match "... and gpuctl says so on stderr" \
    "aws: the console output of $ID1 shows no SSH host keys: the key the node shows at this first contact is pinned in $KNOWN" \
    "$(cat "$T/n1.err")"
expect_eq "known_hosts: node 0's key from the console, node 1's pinned (host a's)" \
    "$ID0 $KEY_A|$ID1 $KEY_A" "$(cut -d' ' -f1-3 "$KNOWN" | sort | paste -sd'|')"

# ---- 2. another host key at the address: refused, nothing runs ------------
sshd_stop
start_sshd hostkey_b
for r in 0 1; do
    rm -f "$T/marker"
    run_rc rc g -v ssh sa --node "$r" -- touch "$T/marker" 2> "$T/mitm$r.err"
    expect_eq "node $r: a different host key at its address is refused (ssh's 255)" 255 "$rc"
    expect_match "node $r: ssh names the changed host key" \
        "REMOTE HOST IDENTIFICATION HAS CHANGED" "$(cat "$T/mitm$r.err")"
    expect_eq "node $r: the command did not run" "absent" \
        "$([ -e "$T/marker" ] && echo present || echo absent)"
done
expect_eq "known_hosts unchanged by the refused contacts" \
    "$ID0 $KEY_A|$ID1 $KEY_A" "$(cut -d' ' -f1-3 "$KNOWN" | sort | paste -sd'|')"
sshd_stop
expect_eq "the refused contacts ran with StrictHostKeyChecking=yes and the cluster's known_hosts" \
    "2" "$(cat "$T"/mitm[01].err | grep -c "running: .*'StrictHostKeyChecking=yes' '-o' 'UserKnownHostsFile=$KNOWN'")"
expect_eq "gpuctl never turned host key checking off" "" \
    "$(cat "$T"/*.err | grep -E "running: .*(StrictHostKeyChecking=no|KnownHostsFile=/dev/null)" || true)"

run_rc rc g ssh sa --node 2 -- true 2> "$T/n2.err"
expect_eq "a node the cluster does not have: exit 7" \
    "7 gpuctl: error: cluster sa has no node 2 (it has 2 nodes)" "$rc $(cat "$T/n2.err")"
run_rc rc g -y destroy sa > /dev/null 2>&1
expect_eq "destroy" 0 "$rc"
expect_eq "destroy removes the cluster's known_hosts with its key" "absent absent" \
    "$([ -e "$STATE/ssh/$UID_FULL" ] && echo present || echo absent) $([ -e "$STATE/keys/gpuctl-sa-$UID8" ] && echo present || echo absent)"
run_rc rc g ssh sa -- true 2> "$T/gone.err"
expect_eq "a destroyed cluster: exit 7" "7 gpuctl: error: no cluster named 'sa'" \
    "$rc $(cat "$T/gone.err")"

# ---- 3. local: the node's job environment ---------------------------------
cat > sl.yaml <<'YAML'
name: sl
nodes: 2
run:
  command: sleep 300
  nproc_per_node: 1
YAML
run_rc rc g -y apply -f sl.yaml > /dev/null 2> "$T/sl.err"
expect_eq "apply of a 2-node local cluster" 0 "$rc"
out=""
for _ in $(seq 1 300); do
    # until the node's first worker runs (before, the bootstrap's variables)
    out=$(g ssh sl --node 1 -- 'echo $RANK $WORLD_SIZE $GPUCTL_NODE_RANK; pwd' 2> "$T/sl1.err") &&
        case $out in "1 2 1"*) break ;; esac
    sleep 0.1
done
expect_eq "local --node 1: the job's RANK, WORLD_SIZE, node rank and working directory" \
    "1 2 1|$(ls -d "$STATE"/local/sl-1-*)" "$(printf '%s' "$out" | paste -sd'|')"
run_rc rc g ssh sl -- 'exit 5'
expect_eq "local: the command's exit status" 5 "$rc"
for _ in $(seq 1 300); do
    out=$(printf 'echo $RANK\n' | g ssh sl 2> /dev/null) && [ -n "$out" ] && break
    sleep 0.1
done
expect_eq "local: without a command nor a terminal, the shell reads stdin" 0 "$out"
run_rc rc g ssh nosuch -- true 2> "$T/ns.err"
expect_eq "an unknown cluster: exit 7" "7 gpuctl: error: no cluster named 'nosuch'" \
    "$rc $(cat "$T/ns.err")"
run_rc rc g -o json ssh sl 2> /dev/null
expect_eq "-o json: a usage error" 3 "$rc"
g -y destroy sl > /dev/null 2>&1
# a node whose job is over has no shell
printf 'name: done\nrun: {command: "true", nproc_per_node: 1}\n' > done.yaml
run_rc rc g -y apply -f done.yaml --wait > /dev/null 2> "$T/done.err"
expect_eq "apply --wait of a job that ends at once" 0 "$rc"
run_rc rc g ssh done -- true 2> "$T/done-ssh.err"
expect_eq "a node that is not running: exit 7, naming its phase" \
    "7 gpuctl: error: node 0 of cluster done is in phase succeeded, not running: no shell to open there" \
    "$rc $(cat "$T/done-ssh.err")"
g -y destroy done > /dev/null 2>&1

finish
