#!/bin/bash
# aws against the booting fake EC2 (tests/fake/ec2.py --boot, ec2_boot.py):
# the instances run gpuctl's user-data for real, each in network, mount,
# UTS and PID namespaces of its own, with an sshd, IMDSv2 at
# 169.254.169.254 and stand-ins for shutdown/poweroff.
#  1. `apply --wait` of a 2-node job (torchrun, gloo, one all_reduce across
#     the nodes, then each node waits for /tmp/release on its own /tmp);
#     while it runs, `gpuctl ssh` reaches each node with the host key from
#     its console (no pinning at first contact): node 1 prints its own
#     phase, its own host name and address (IMDS local-ipv4), and a file
#     written on node 0 is not on node 1;
#  2. both nodes exit 0, apply reports it; each node powered itself off
#     through the stand-in (recorded), the instances are terminated with
#     Client.InstanceInitiatedShutdown, this machine's shutdown untouched;
#  3. destroy; no node process, mount or veth left; the fake's end takes
#     its bridge's namespace and uplink with it.
# Needs root, util-linux (unshare, setpriv, nsenter), iproute2, sshd and
# /usr/bin/python3 with torch (else skipped, exit 77).
source "$(dirname "$0")/lib.sh"
why=""
[ "$(id -u)" = 0 ] || why="needs root"
for t in unshare setpriv nsenter ip ssh ssh-keygen curl; do
    command -v "$t" >/dev/null || why="${why:+$why, }needs $t"
done
[ -x /usr/sbin/sshd ] || why="${why:+$why, }needs /usr/sbin/sshd"
/usr/bin/python3 -c 'import torch, yaml' 2>/dev/null || why="${why:+$why, }needs /usr/bin/python3 with torch and yaml"
if [ -z "$why" ] && ! unshare --net --mount --pid --fork true 2>/dev/null; then
    why="cannot make namespaces (unshare --net --mount --pid)"
fi
if [ -n "$why" ]; then
    echo "skip: $why"
    exit 77
fi
mkdir -p "$T/work" "$T/home" "$T/bin"
cd "$T/work"
export GPUCTL_CONFIG_DIR="$T/config" HOME="$T/home"
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE
export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export GPUCTL_AWS_POLL_S=0.1 GPUCTL_SSH_HOSTKEY_WAIT_S=20 GPUCTL_AWS_SSH_USER=root
start_fake ec2 ec2.py --boot "$T/boot"
EC2="http://127.0.0.1:$FAKE_PORT"
export AWS_ENDPOINT_URL_EC2="$EC2"
export GPUCTL_CHECKIP_URL="$EC2/_fake/checkip"
fake() { curl -sS --noproxy '*' "$@"; }
# ssh with no user config but this one (ssh reads the passwd entry's home)
printf 'Host *\n  BatchMode yes\n  ConnectTimeout 10\n' > "$T/ssh_config"
printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$T/ssh_config" > "$T/bin/ssh"
chmod +x "$T/bin/ssh"
export PATH="$T/bin:$PATH"
# shared connections (ControlPersist) end with the test
cleanup_extra() {
    for s in "$STATE"/ssh/cm/*; do
        [ -S "$s" ] && /usr/bin/ssh -o ControlPath="$s" -O exit x >/dev/null 2>&1 || true
    done
}

cat > boot.yaml <<'YAML'
name: boot
provider: aws
nodes: 2
resources:
  gpu: A10G:1
  instance_types: g5.xlarge
region: us-east-1
env:
  OMP_NUM_THREADS: "1"
setup: |
  cat > /var/lib/gpuctl/ddp.py <<'PY'
  import os, time
  import torch
  import torch.distributed as dist
  dist.init_process_group("gloo")
  t = torch.tensor([float(dist.get_rank() + 1)])
  dist.all_reduce(t)
  print("rank %s of %s: all_reduce %d" % (os.environ["RANK"], os.environ["WORLD_SIZE"], t.item()), flush=True)
  end = time.time() + 120
  while not os.path.exists("/tmp/release") and time.time() < end:
      time.sleep(0.1)
  PY
run:
  command: python3 /var/lib/gpuctl/ddp.py
  nproc_per_node: 1
YAML

# ---- 1. the job runs; ssh into each node ------------------------------------
g -y apply -f boot.yaml --wait > "$T/apply.out" 2> "$T/apply.err" &
APPLY=$!
phase=""
for _ in $(seq 1 300); do
    phase=$(g ssh boot --node 1 -- 'grep -q "all_reduce" /var/lib/gpuctl/node.log && cat /var/lib/gpuctl/phase' \
            2>> "$T/poll.err") && break
    kill -0 "$APPLY" 2>/dev/null || break
    sleep 0.2
done
expect_eq "ssh --node 1 -- cat /var/lib/gpuctl/phase: the node's own phase while its job runs" "running" "$phase"
[ "$phase" = running ] || { cat "$T/apply.err" "$T/poll.err"; cat "$T"/boot/i-*/console 2>/dev/null; }
g -o json status boot > "$T/st.json"
ID0=$(json_get "$T/st.json" '[n["provider_id"] for n in d["clusters"][0]["nodes"] if n["rank"] == 0][0]')
ID1=$(json_get "$T/st.json" '[n["provider_id"] for n in d["clusters"][0]["nodes"] if n["rank"] == 1][0]')
fake "$EC2/_fake/boot" > "$T/boot.json"
IP0=$(json_get "$T/boot.json" "[n['ip'] for n in d['nodes'] if n['instance_id'] == '$ID0'][0]")
IP1=$(json_get "$T/boot.json" "[n['ip'] for n in d['nodes'] if n['instance_id'] == '$ID1'][0]")
expect_eq "the nodes' addresses are on the fake's bridge (.2 and .3 of its /24)" \
    "$(json_get "$T/boot.json" 'd["subnet"][:-5]').2 $(json_get "$T/boot.json" 'd["subnet"][:-5]').3" "$IP0 $IP1"

run_rc rc g ssh boot --node 1 -- \
    'hostname; T=$(curl -fsS -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 60" http://169.254.169.254/latest/api/token) &&
     curl -fsS -H "X-aws-ec2-metadata-token: $T" http://169.254.169.254/latest/meta-data/local-ipv4; echo;
     curl -fsS -H "X-aws-ec2-metadata-token: $T" http://169.254.169.254/latest/meta-data/instance-id; echo;
     curl -s -o /dev/null -w "%{http_code}\n" http://169.254.169.254/latest/meta-data/instance-id' \
    > "$T/n1.out" 2> "$T/n1.err"
expect_eq "node 1: its own host name, IMDSv2 local-ipv4 and instance-id; 401 without a token" \
    "0|ip-${IP1//./-}|$IP1|$ID1|401" "$rc|$(paste -sd'|' "$T/n1.out")"
run_rc rc g ssh boot -- 'echo written on node 0 > /root/only-on-0; hostname' > "$T/n0.out" 2> "$T/n0.err"
expect_eq "node 0: a file written in its /root" "0 ip-${IP0//./-}" "$rc $(cat "$T/n0.out")"
run_rc rc g ssh boot --node 1 -- 'if [ -e /root/only-on-0 ]; then echo visible; else echo absent; fi' \
    > "$T/vis.out" 2>> "$T/n1.err"
expect_eq "node 1 does not see node 0's file: the filesystem views differ" "0 absent" "$rc $(cat "$T/vis.out")"
KNOWN=$(ls "$STATE"/ssh/*/known_hosts)
expect_eq "both nodes' host keys came from their consoles, under their instance ids" \
    "$ID0 $(cut -d' ' -f1,2 "$T/boot/$ID0/ssh_host_ed25519_key.pub")|$ID1 $(cut -d' ' -f1,2 "$T/boot/$ID1/ssh_host_ed25519_key.pub")" \
    "$(cut -d' ' -f1-3 "$KNOWN" | sort | paste -sd'|')"
expect_eq "no key pinned at first contact" "" \
    "$(cat "$T"/poll.err "$T"/n[01].err | grep -i "pinned" || true)"

# ---- 2. the job ends; the nodes power themselves off -------------------------
for r in 0 1; do g ssh boot --node "$r" -- touch /tmp/release 2>> "$T/rel.err" || true; done
run_rc rc wait "$APPLY"
expect_eq "apply --wait exits 0" 0 "$rc"
[ "$rc" = 0 ] || cat "$T/apply.err"
expect_match "apply reports the job's end with exit status 0" "job succeeded: rank 0 exit status 0" "$(cat "$T/apply.out")"
g -o json status boot > "$T/st2.json"
expect_eq "status: both nodes succeeded with exit status 0" "0:succeeded:0 1:succeeded:0" \
    "$(json_get "$T/st2.json" '" ".join("%d:%s:%s" % (n["rank"], n["phase"], n.get("exit_code")) for n in sorted(d["clusters"][0]["nodes"], key=lambda n: n["rank"]))')"
for id in "$ID0" "$ID1"; do
    expect_match "$id: the all_reduce across both nodes gave 1 + 2" "rank [01] of 2: all_reduce 3" \
        "$(cat "$T/boot/$id/fs/var-lib-gpuctl/node.log")"
done
fake "$EC2/_fake/boot" > "$T/boot2.json"
expect_eq "each node powered itself off with the bootstrap's 'shutdown -h now'" "shutdown -h now|shutdown -h now" \
    "$(json_get "$T/boot2.json" '"|".join(" ".join(n["power_log"][0].split()[1:]) if n["power_log"] else "-" for n in d["nodes"])')"
expect_eq "... and the nodes ended by themselves" "ended:None ended:None" \
    "$(json_get "$T/boot2.json" '" ".join("%s:%s" % (n["state"], n["stopped_by"]) for n in d["nodes"])')"
fake "$EC2/_fake/state" > "$T/state.json"
expect_eq "the instances are terminated by an instance-initiated shutdown" "terminated:guest terminated:guest" \
    "$(json_get "$T/state.json" '" ".join("%s:%s" % (i["state"], i["state_reason"]) for i in d["instances"])')"
expect_eq "this machine's shutdown and systemctl are not the stand-in" "" \
    "$(grep -E " /usr/(s)?bin/(systemctl|shutdown|poweroff) " /proc/self/mountinfo || true)"

# ---- 3. destroy: nothing left -------------------------------------------------
cleanup_extra
run_rc rc g -y destroy boot > /dev/null 2> "$T/destroy.err"
expect_eq "destroy" 0 "$rc"
expect_eq "no process of a node is left" "" "$(pgrep -f "$T/boot/i-" || true)"
expect_eq "no mount of a node on this machine" "" "$(grep -F "$T/boot" /proc/self/mountinfo || true)"
expect_eq "this machine has one link of the fake: its bridge's uplink" "gpe$FAKE_PORT" \
    "$(ip -br link | awk '{print $1}' | grep -E "^(gpe|n[0-9])" | sed 's/@.*//' | paste -sd' ')"
FAKE_PID=$(json_get "$T/boot2.json" 'd["pid"]')
VPC_PID=$(json_get "$T/boot2.json" 'd["vpc_pid"]')
kill "$FAKE_PID"
for _ in $(seq 1 100); do
    if ! kill -0 "$FAKE_PID" 2>/dev/null && ! kill -0 "$VPC_PID" 2>/dev/null; then break; fi
    sleep 0.05
done
expect_eq "the fake's end takes its bridge's namespace and uplink with it" "gone gone" \
    "$(kill -0 "$VPC_PID" 2>/dev/null && echo alive || echo gone) $(ip link show "gpe$FAKE_PORT" >/dev/null 2>&1 && echo present || echo gone)"

finish
