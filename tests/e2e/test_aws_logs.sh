#!/bin/bash
# gpuctl logs on aws: the log transport over ssh (docs/providers/aws.md
# "Logs"), against the fake EC2 and one real sshd per node on loopback, each
# in a mount namespace of its own where the node's /var/lib/gpuctl is a
# directory of this test ($T/node0, $T/node1):
#  1. before a node has an address: nothing, exit 0;
#  2. `logs NAME`: exactly the files' bytes, "[node N]"-prefixed;
#     `-o json`: each whole log, exit_code null while running;
#  3. a log bigger than one read's bound (1 MiB) comes through complete;
#  4. `logs -f --node 1` while the test appends lines and then writes
#     exit_status 3: prints the appended lines and exits 3;
#  5. a node that is gone (terminated): said, exit 7; `logs -f` of the
#     cluster ends with node 1's status 3 and warns about node 0;
#  6. `apply --wait` streams a node's log as it runs, then ends with the
#     job (exit 10 for its status 3).
# Needs root, /usr/sbin/sshd and unshare (else skipped, exit 77).
source "$(dirname "$0")/lib.sh" || exit 1
if [ "$(id -u)" != 0 ] || [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null ||
    ! unshare -m --propagation private true 2>/dev/null; then
    echo "skip: needs root, /usr/sbin/sshd, ssh and unshare -m"
    exit 77
fi
source "$(dirname "$0")/sshd_parts.sh"
ssh_fake_ec2 0.05 0.3
mkdir -p "$T/node0" "$T/node1"
[ -d /var/lib/gpuctl ] || mkdir -p /var/lib/gpuctl  # the mount point (stays empty here)

SSH_PORT=$(free_port)
ssh_user_config "Host 127.0.0.2 127.0.0.3
  Port $SSH_PORT
  BatchMode yes"
host_key hostkey0 node0
host_key hostkey1 node1

# start_sshd R: node R's sshd on 127.0.0.(R+2), seeing $T/nodeR as /var/lib/gpuctl
start_sshd() {
    sshd_start "$1" "127.0.0.$(($1 + 2))" "$SSH_PORT" "$T/hostkey$1" \
        "mount --bind $(printf %q "$T/node$1") /var/lib/gpuctl"
}
cleanup_extra() { sshd_stop; }

cat > la.yaml <<'YAML'
name: la
provider: aws
nodes: 2
resources:
  gpu: A10G:1
  instance_types: g5.xlarge
region: us-east-1
run:
  command: python train.py
YAML
run_rc rc g -y apply -f la.yaml > "$T/apply.out" 2> "$T/apply.err"
expect_eq "apply of a 2-node aws cluster" 0 "$rc"
[ "$rc" = 0 ] || cat "$T/apply.err"
cluster_ids la
cp "$STATE/keys/gpuctl-la-$UID8.pub" "$T/authorized_keys"

# ---- 1. no address yet: an empty log, no error ------------------------------
printf 'boot 0\nhello from node 0\n' > "$T/node0/node.log"
printf 'boot 1\n' > "$T/node1/node.log"
run_rc rc g logs la > "$T/none.out" 2> "$T/none.err"
expect_eq "nodes without an address: nothing read, exit 0" "0 0" "$rc $(wc -c < "$T/none.out")"

# ---- 2. logs NAME, -o json ------------------------------------------------------
start_sshd 0
start_sshd 1
for r in 0 1; do
    id=ID$r
    fake_node "${!id}" "127.0.0.$((r + 2))" "$(console_host_keys "$T/hostkey$r.pub")"
done
run_rc rc g logs la > "$T/l.out" 2> "$T/l.err"
expect_eq "logs NAME: exit 0" 0 "$rc"
[ "$rc" = 0 ] || cat "$T/l.err"
expect_eq "logs NAME: each node's bytes, whole lines prefixed by [node N]" \
    "$(printf '[node 0] boot 0\n[node 0] hello from node 0\n[node 1] boot 1')" "$(cat "$T/l.out")"
g -o json logs la > "$T/l.json"
expect_eq "-o json: each whole log, no exit status yet" \
    "0 True None|1 True None" \
    "$(json_get "$T/l.json" '"|".join("%d %s %s" % (n["rank"], n["log"] == open("'"$T"'/node%d/node.log" % n["rank"]).read(), n["exit_code"]) for n in d["nodes"])')"
expect_eq "the reads shared one connection per node (ControlMaster)" 2 \
    "$(find "$STATE/ssh/cm" -type s | wc -l)"

# ---- 3. a log bigger than one read ----------------------------------------------
python3 -c '
import sys
with open(sys.argv[1], "w") as f:
    for i in range(60000):
        f.write("line %06d %s\n" % (i, "x" * (i % 37)))' "$T/node0/node.log"
SIZE=$(wc -c < "$T/node0/node.log")
run_rc rc g logs la --node 0 > "$T/big.out" 2> "$T/big.err"
expect_eq "a log of $SIZE bytes (over 1 MiB): exit 0" 0 "$rc"
expect_eq "... comes through complete, byte for byte" "$SIZE same" \
    "$(wc -c < "$T/big.out") $(cmp -s "$T/big.out" "$T/node0/node.log" && echo same || echo differs)"
g -o json logs la --node 0 > "$T/big.json"
expect_eq "... and in -o json" "True" \
    "$(json_get "$T/big.json" 'd["nodes"][0]["log"] == open("'"$T"'/node0/node.log").read()')"

# ---- 4. logs -f --node 1: the appended lines, then the job's exit status ---------
g logs la -f --node 1 > "$T/f.out" 2> "$T/f.err" &
FPID=$!
sleep 1
printf 'step 1\n' >> "$T/node1/node.log"
sleep 0.5
printf 'step 2\nexit status 3\n' >> "$T/node1/node.log"
printf '3\n' > "$T/node1/.exit_status.tmp" && mv "$T/node1/.exit_status.tmp" "$T/node1/exit_status"
for _ in $(seq 1 200); do kill -0 "$FPID" 2>/dev/null || break; sleep 0.1; done
run_rc rc wait "$FPID"
expect_eq "logs -f --node 1 exits with the node's exit status" 3 "$rc"
expect_eq "... having printed the whole log, appended lines included, unprefixed" \
    "$(printf 'boot 1\nstep 1\nstep 2\nexit status 3')" "$(cat "$T/f.out")"

# ---- 5. a node that is gone ---------------------------------------------------
fake -X POST -d "{\"instance_id\": \"$ID0\", \"console\": \"gpuctl-node-exit: cluster=x rank=0 status=0\\n\"}" \
    "http://127.0.0.1:$FAKE_PORT/_fake/finish" > /dev/null
fake -X POST "http://127.0.0.1:$FAKE_PORT/_fake/advance" > /dev/null
run_rc rc g logs la --node 0 > "$T/gone.out" 2> "$T/gone.err"
expect_eq "logs of a terminated node: exit 7, saying its log went with it" \
    "7 gpuctl: error: aws: node 0 ($ID0) is terminated: its log went with it (its exit status, read from its console output, is in gpuctl status)" \
    "$rc $(cat "$T/gone.err")"
# regression (test_aws_job): a node that powered itself off before a read
# brought its exit status is not "lost" while its console has the status
run_rc rc g logs la -f --node 0 > "$T/f0.out" 2> "$T/f0.err"
expect_eq "logs -f of the gone node: its exit status from the console (0), not node lost (11)" \
    0 "$rc"
run_rc rc g logs la -f > "$T/f2.out" 2> "$T/f2.err"
expect_eq "logs -f of the cluster: node 1's exit status 3 (node 0 ended with 0)" 3 "$rc"
expect_match "... warning that node 0's log is gone" \
    "gpuctl: warning: aws: node 0 \($ID0\) is terminated: its log went with it" "$(cat "$T/f2.err")"
expect_eq "... and node 1's log, prefixed" \
    "$(printf '[node 1] boot 1\n[node 1] step 1\n[node 1] step 2\n[node 1] exit status 3')" \
    "$(cat "$T/f2.out")"

run_rc rc g -y destroy la > /dev/null 2>&1
expect_eq "destroy" 0 "$rc"

# ---- 6. apply --wait streams the log ------------------------------------------
sed 's/^name: la/name: lw/; s/^nodes: 2/nodes: 1/' la.yaml > lw.yaml
"$GPUCTL_BIN" --state-dir "$STATE" -y apply -f lw.yaml --wait --timeout 60 --poll-interval 0.05 \
    > "$T/w.out" 2> "$T/w.err" &
WPID=$!
IDW=""
for _ in $(seq 1 200); do
    IDW=$(fake "http://127.0.0.1:$FAKE_PORT/_fake/state" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("".join(i["id"] for i in d["instances"] if i["id"] not in sys.argv[1:] and i["state"] in ("pending", "running")))' "$ID0" "$ID1")
    [ -n "$IDW" ] && break
    sleep 0.05
done
# its sshd is node 1's (host key 1 in its console, /var/lib/gpuctl = $T/node1),
# which lets in this cluster's key too
cat "$STATE"/keys/gpuctl-lw-*.pub >> "$T/authorized_keys"
fake_node "$IDW" 127.0.0.3 "$(console_host_keys "$T/hostkey1.pub")"
for _ in $(seq 1 200); do grep -q '^exit status 3$' "$T/w.out" && break; sleep 0.05; done
expect_eq "apply --wait streams the node's log while it runs" \
    "$(printf 'boot 1\nstep 1\nstep 2\nexit status 3')" "$(grep -v '^\[' "$T/w.out" | grep -Ev '^(created|cluster|RANK|0 |job)' || true)"
fake -X POST -d "{\"instance_id\": \"$IDW\", \"console\": \"gpuctl-node-exit: cluster=x rank=0 status=3\\n\"}" \
    "http://127.0.0.1:$FAKE_PORT/_fake/finish" > /dev/null
run_rc rc wait "$WPID"
expect_eq "... and ends with the job: exit 10 (rank 0 exited 3)" 10 "$rc"
g -y destroy lw > /dev/null 2>&1
finish
