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
#  3. destroy; no node process, mount or veth left;
#  4. straight through botocore: gzip user-data, an instance profile's
#     credentials from IMDS (as /_fake/instance_credentials lists them),
#     shutdown +N / -c / reboot, refused user-data, TerminateInstances and
#     /_fake/reset of running nodes; the fake's end takes its bridge's
#     namespace and uplink with it.
# Needs root, util-linux (unshare, setpriv, nsenter), iproute2, sshd and
# /usr/bin/python3 with torch (else skipped, exit 77).
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/boot_parts.sh"
boot_require "" "torch yaml"
boot_fake_ec2 0.1 20

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
VPC_PID=$(json_get "$T/boot.json" 'd["vpc_pid"]')
# this machine's links of this fake (another test's fake may run beside it,
# with an uplink of its own port), then those of its bridge's namespace
links() {
    echo "$(ip -br link | awk '{print $1}' | sed 's/@.*//' | grep -Ex "gpe${EC2##*:}" | paste -sd' ')" \
        "$(nsenter --net="/proc/$VPC_PID/ns/net" ip -br link | awk '{print $1}' | sed 's/@.*//' | sort | paste -sd' ')"
}
IP0=$(json_get "$T/boot.json" "[n['ip'] for n in d['nodes'] if n['instance_id'] == '$ID0'][0]")
IP1=$(json_get "$T/boot.json" "[n['ip'] for n in d['nodes'] if n['instance_id'] == '$ID1'][0]")
expect_eq "the nodes' addresses are on the fake's bridge (.2 and .3 of its /24)" \
    "$(json_get "$T/boot.json" 'd["subnet"][:-5]').2 $(json_get "$T/boot.json" 'd["subnet"][:-5]').3" "$IP0 $IP1"
expect_eq "each node is on the bridge by a veth of its own; this machine by gpe<port>" \
    "gpe$FAKE_PORT br0 lo n1 n2 uplink" "$(links)"

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
    "$ID0 $(cut -d' ' -f1,2 "$T/boot/$ID0/etc-ssh/ssh_host_ed25519_key.pub")|$ID1 $(cut -d' ' -f1,2 "$T/boot/$ID1/etc-ssh/ssh_host_ed25519_key.pub")" \
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
# (first, at boot, the OS's power-off backup of the node's default end: the
# spec sets no lifecycle.max_duration, so 72 h + 2 min = 4322 minutes)
expect_eq "each node powered itself off with the bootstrap's 'shutdown -h now'" \
    "shutdown -h +4322,shutdown -h now|shutdown -h +4322,shutdown -h now" \
    "$(json_get "$T/boot2.json" '"|".join(",".join(" ".join(l.split()[1:]) for l in n["power_log"]) if n["power_log"] else "-" for n in d["nodes"])')"
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
expect_eq "no veth of a node is left: the bridge's namespace holds lo, br0 and uplink, this machine gpe<port>" \
    "gpe$FAKE_PORT br0 lo uplink" "$(links)"

# ---- 4. the fake's cloud-init, IMDS credentials, stand-ins, terminate, reset --
# straight through botocore: an instance profile (made in the fake IAM),
# gzip-compressed user-data with base64 content, runcmd strings; user-data
# with a key the fake does not run; TerminateInstances and /_fake/reset of
# running nodes.
ssh-keygen -q -t ed25519 -N '' -f "$T/k4"
run_rc rc python3 - "$EC2" "$T" > "$T/p4.out" 2> "$T/p4.err" <<'PY'
import base64, gzip, json, sys, time, urllib.request
import botocore.session
ec2, t = sys.argv[1], sys.argv[2]
c = botocore.session.get_session().create_client(
    "ec2", region_name="us-east-1", endpoint_url=ec2, aws_access_key_id="AKIDEXAMPLE",
    aws_secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
c.import_key_pair(KeyName="k4", PublicKeyMaterial=open(t + "/k4.pub", "rb").read())
# the profile exists in the fake IAM first: RunInstances refuses an unknown one
iam = botocore.session.get_session().create_client(
    "iam", region_name="us-east-1", endpoint_url=ec2, aws_access_key_id="AKIDEXAMPLE",
    aws_secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
iam.create_role(RoleName="gpuctl-p4-profile", AssumeRolePolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
                                             "Action": "sts:AssumeRole"}]}))
iam.create_instance_profile(InstanceProfileName="gpuctl-p4-profile")
iam.add_role_to_instance_profile(InstanceProfileName="gpuctl-p4-profile", RoleName="gpuctl-p4-profile")
script = """T=$(curl -fsS -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' http://169.254.169.254/latest/api/token)
m() { curl -fsS -H "X-aws-ec2-metadata-token: $T" http://169.254.169.254/latest/meta-data/$1; }
role=$(m iam/security-credentials/)
{ echo "$role"; m iam/security-credentials/$role; } > /var/lib/gpuctl/creds
"""
ud = "#cloud-config\nwrite_files:\n- path: /var/lib/gpuctl/c.sh\n  permissions: '0755'\n  encoding: b64\n" \
     "  content: %s\nruncmd:\n- /var/lib/gpuctl/c.sh\n- shutdown -h +1; echo scheduled $? > /var/lib/gpuctl/sched\n" \
     "- shutdown -c\n- reboot; echo reboot $? > /var/lib/gpuctl/reboot\n- [touch, /var/lib/gpuctl/done]\n" \
     % base64.b64encode(script.encode()).decode()
r = c.run_instances(ImageId="ami-01000000000000002", InstanceType="g5.xlarge", MinCount=1, MaxCount=1,
                    KeyName="k4", UserData=gzip.compress(ud.encode()),  # botocore base64-encodes it
                    IamInstanceProfile={"Name": "gpuctl-p4-profile"}, InstanceInitiatedShutdownBehavior="terminate")
a = r["Instances"][0]["InstanceId"]
r = c.run_instances(ImageId="ami-01000000000000002", InstanceType="g5.xlarge", MinCount=1, MaxCount=1,
                    UserData="#cloud-config\npackages: [cowsay]\nruncmd:\n- touch /var/lib/gpuctl/ran\n",
                    InstanceInitiatedShutdownBehavior="terminate")
b = r["Instances"][0]["InstanceId"]
c.describe_instances(InstanceIds=[a, b]); c.describe_instances(InstanceIds=[a, b])
fs = t + "/boot/%s/fs/var-lib-gpuctl/"
end = time.time() + 30
while time.time() < end:
    try:
        open(fs % a + "done").close()
        break
    except OSError:
        time.sleep(0.1)
lines = open(fs % a + "creds").read().split("\n", 1)
served = json.loads(lines[1])
minted = json.load(urllib.request.urlopen(ec2 + "/_fake/instance_credentials"))
print("role", lines[0])
print("creds", [(m["instance_id"], m["role"], m["profile"]) for m in minted],
      served["AccessKeyId"] == minted[0]["access_key_id"] and served["SecretAccessKey"] == minted[0]["secret_access_key"]
      and served["Token"] == minted[0]["token"] and served["Expiration"] == minted[0]["expiration"], served["Code"])
print("sched", open(fs % a + "sched").read().strip(), "|", open(fs % a + "reboot").read().strip())
boot = json.load(urllib.request.urlopen(ec2 + "/_fake/boot"))
node = {n["instance_id"]: n for n in boot["nodes"]}
print("power_log", "|".join(" ".join(l.split()[1:]) for l in node[a]["power_log"]))
print("refused", node[b]["error"], "|", "ran" if __import__("os").path.exists(fs % b + "ran") else "not run")
print("b console", [l for l in c.get_console_output(InstanceId=b)["Output"].splitlines() if "refused" in l])
c.terminate_instances(InstanceIds=[a])
end = time.time() + 20
while time.time() < end:
    node = {n["instance_id"]: n for n in json.load(urllib.request.urlopen(ec2 + "/_fake/boot"))["nodes"]}
    if node[a]["state"] == "ended":
        break
    time.sleep(0.1)
print("terminated", node[a]["state"], node[a]["stopped_by"], node[b]["state"])
urllib.request.urlopen(urllib.request.Request(ec2 + "/_fake/reset", method="POST", data=b""))
print("reset", json.load(urllib.request.urlopen(ec2 + "/_fake/boot"))["nodes"])
PY
expect_eq "direct launches through botocore" "0" "$rc$(cat "$T/p4.err")"
expect_eq "IMDS: the instance profile's role name" "role gpuctl-p4-profile" "$(grep '^role' "$T/p4.out")"
expect_eq "IMDS serves the credentials the fake minted for the instance (/_fake/instance_credentials)" \
    "creds [('i-00000000000000003', 'gpuctl-p4-profile', 'gpuctl-p4-profile')] True Success" \
    "$(grep '^creds' "$T/p4.out")"
expect_eq "gzip user-data, base64 content, runcmd strings ran; shutdown +1 scheduled, reboot refused" \
    "sched scheduled 0 | reboot 1" "$(grep '^sched' "$T/p4.out")"
expect_eq "the stand-in recorded shutdown +1, its cancel and the refused reboot; the node stayed up" \
    "power_log shutdown -h +1|shutdown -c|reboot|refused: reboot" "$(grep '^power_log' "$T/p4.out")"
expect_eq "user-data with a key the fake does not run is refused, nothing of it runs" \
    "refused #cloud-config keys the fake does not run: packages | not run" "$(grep "^refused" "$T/p4.out")"
expect_match "... said on the instance's console" \
    "fake EC2: user-data refused, not run: #cloud-config keys the fake does not run: packages" \
    "$(grep '^b console' "$T/p4.out")"
expect_match "... in the fake's log and on its stderr" "_boot/refused.*i-00000000000000004" "$(cat "$T/ec2.log")"
expect_match "... on the fake's stderr" "i-00000000000000004: boot refused: #cloud-config keys" "$(cat "$T/ec2.err")"
expect_eq "TerminateInstances stops a running node" "terminated ended api up" "$(grep '^terminated' "$T/p4.out")"
expect_eq "/_fake/reset kills the nodes left and forgets them" "reset []" "$(grep '^reset' "$T/p4.out")"
expect_eq "no process of a node is left" "" "$(pgrep -f "$T/boot/i-" || true)"
expect_eq "no veth of a node is left" "gpe$FAKE_PORT br0 lo uplink" "$(links)"

FAKE_PID=$(json_get "$T/boot2.json" 'd["pid"]')
kill "$FAKE_PID"
for _ in $(seq 1 100); do
    if ! kill -0 "$FAKE_PID" 2>/dev/null && ! kill -0 "$VPC_PID" 2>/dev/null; then break; fi
    sleep 0.05
done
expect_eq "the fake's end takes its bridge's namespace and uplink with it" "gone gone" \
    "$(kill -0 "$VPC_PID" 2>/dev/null && echo alive || echo gone) $(ip link show "gpe$FAKE_PORT" >/dev/null 2>&1 && echo present || echo gone)"

finish
