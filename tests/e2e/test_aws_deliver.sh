#!/bin/bash
# workdir and secrets delivered to aws nodes over ssh (src/engine/deliver.c,
# docs/spec.md "workdir and secrets on clouds", docs/providers/aws.md):
#  1. a 2-node apply against the fake EC2, each node an sshd in a mount
#     namespace of its own whose /var/lib/gpuctl and /run/gpuctl are
#     directories of this test: the workdir arrives on both nodes less what
#     .gitignore and .gpuctlignore ignore, apply says exactly what moved,
#     the secrets file is mode 0600 with the values quoted for the shell,
#     the marker is there; the values are in no process's argv (ps, sampled
#     during apply), not in the state, the --debug output, nor a plan file;
#  2. applies again: one changed file moves (exactly 1 file), a removed one
#     is deleted on the nodes, a file the nodes made in an ignored
#     directory stays, the job runs again on both nodes with the new code
#     (a stand-in for the bootstrap's job runner, which these nodes do not
#     run), and a workdir above GPUCTL_WORKDIR_WARN_MB warns naming its
#     largest entries;
#  3. a node without rsync: the apply fails naming the node and why (exit
#     6), and the node it launched is removed;
#  4. the bootstrap's DELIVER section (rendered for aws, run here with its
#     home and run directory in this test's directory): without the marker
#     it fails after GPUCTL_DELIVER_WAIT_S with the message; with it, setup
#     runs in the delivered workdir with the secrets exported, and node.log
#     names them without their values.
# Needs root, /usr/sbin/sshd, unshare and rsync (else skipped, exit 77).
source "$(dirname "$0")/lib.sh" || exit 1
if [ "$(id -u)" != 0 ] || [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null ||
   ! command -v unshare >/dev/null || ! command -v rsync >/dev/null; then
    echo "skip: needs root, /usr/sbin/sshd, ssh, unshare and rsync"
    exit 77
fi
source "$(dirname "$0")/sshd_parts.sh"
ssh_fake_ec2 0.05 0.3

# The user's key (imported to EC2 for the cluster), which the sshds let in.
ssh-keygen -q -t ed25519 -N '' -C user -f "$T/userkey"
export GPUCTL_SSH_PUBLIC_KEY="$T/userkey.pub"
cp "$T/userkey.pub" "$T/authorized_keys"
# The fake EC2 gives instance n the public address 198.51.100.n; the user's
# ssh config sends each to its own sshd.
PORT_A=$(free_port); PORT_B=$(free_port); PORT_C=$(free_port)
ssh_user_config "Host 198.51.100.1
  HostName 127.0.0.1
  Port $PORT_A
Host 198.51.100.2
  HostName 127.0.0.1
  Port $PORT_B
Host 198.51.100.3
  HostName 127.0.0.1
  Port $PORT_C
Host *
  BatchMode yes"
host_key hostkey host

# start_node NAME PORT [norsync]: an sshd on 127.0.0.1:PORT in a mount
# namespace where /var/lib/gpuctl is $T/NAME/lib and /run/gpuctl is
# $T/NAME/run (each on a tmpfs over /var/lib and /run, so nothing of this
# machine's own is touched); norsync: rsync cannot be run there.
start_node() {
    local dir norsync=""
    dir=$(printf %q "$T/$1")
    mkdir -p "$T/$1/lib" "$T/$1/run"
    [ "${3:-}" != norsync ] || norsync='mount --bind /dev/null "$(command -v rsync)"'
    sshd_start "$1" 127.0.0.1 "$2" "$T/hostkey" "mount -t tmpfs tmpfs /var/lib && mkdir /var/lib/gpuctl
mount --bind $dir/lib /var/lib/gpuctl
mount -t tmpfs tmpfs /run && mkdir -p /run/sshd /run/gpuctl
mount --bind $dir/run /run/gpuctl
$norsync"
    stand_in_runner "$T/$1/lib"
}
# stand_in_runner DIR: no bootstrap runs on these nodes (sshds only), so
# DIR (the node's /var/lib/gpuctl) gets what a re-run by apply needs of
# one: its first record (`phase`) and a stand-in for its job runner,
# `job.sh [FILE|-]` as gpuctl calls it (bash, empty environment but
# GPUCTL_HOME): it takes the job file (removing the one handed over),
# sources it, waits for job.lock (which the delivery waits for too),
# saying "queued" in jobs/ID.taken meanwhile and "started" once it has
# the lock, then runs GPUCTL_RUN_COMMAND in the workdir, its output and
# exit status to node.log.
stand_in_runner() {
    echo running > "$1/phase"
    cat > "$1/job.sh" <<'RUNNER'
#!/bin/bash
set -eu
mkdir -p "$GPUCTL_HOME/jobs"
f="$GPUCTL_HOME/jobs/.new.$$"
if [ "${1:--}" = - ]; then cat > "$f"; else cat -- "$1" > "$f" && rm -f -- "$1"; fi
GPUCTL_JOB_ID='' GPUCTL_RUN_COMMAND=''
# shellcheck disable=SC1090
. "$f"
mv -f "$f" "$GPUCTL_HOME/jobs/$GPUCTL_JOB_ID.sh"
taken() {
    echo "$1" > "$GPUCTL_HOME/jobs/.$GPUCTL_JOB_ID.taken"
    mv -f "$GPUCTL_HOME/jobs/.$GPUCTL_JOB_ID.taken" "$GPUCTL_HOME/jobs/$GPUCTL_JOB_ID.taken"
}
exec 9>> "$GPUCTL_HOME/job.lock"
flock -n 9 || { taken queued; flock 9; }
taken started
cd "$GPUCTL_HOME/workdir"
rc=0
bash -c "$GPUCTL_RUN_COMMAND" >> "$GPUCTL_HOME/node.log" 2>&1 || rc=$?
echo "job $GPUCTL_JOB_ID: exit status $rc" >> "$GPUCTL_HOME/node.log"
exit "$rc"
RUNNER
}
cleanup_extra() {
    sshd_stop
    [ -z "${PS_PID:-}" ] || kill "$PS_PID" 2>/dev/null || true
}
start_node a "$PORT_A"
start_node b "$PORT_B"
start_node c "$PORT_C" norsync

# ---- 1. the first apply -----------------------------------------------------
mkdir -p code/lib code/data code/__pycache__ code/lib/__pycache__
printf "print('v1')\n" > code/train.py                  # 12 bytes
printf 'X = 1\n' > code/lib/util.py                      # 6
printf '__pycache__/\n' > code/.gitignore                # 13
printf '*.ckpt\ndata/\n' > code/.gpuctlignore            # 13
printf 'weights' > code/big.ckpt
printf 'raw' > code/data/x.bin
printf 'pyc' > code/__pycache__/a.pyc
printf 'pyc' > code/lib/__pycache__/b.pyc
SECRET_ENV='hf_Secret-Value-1'
SECRET_FILE="api key with 'quote' \$x"
export DELIVER_TEST_TOKEN="$SECRET_ENV"
printf '%s' "$SECRET_FILE" > "$T/api.key"
cat > dv.yaml <<YAML
name: dv
provider: aws
nodes: 2
resources:
  gpu: A10G:1
  instance_types: g5.xlarge
region: us-east-1
workdir: ./code
secrets:
  HF_TOKEN: env:DELIVER_TEST_TOKEN
  API_KEY: file:$T/api.key
run:
  command: python3 train.py
YAML
# every process's argv while apply runs
( while :; do ps -eo args >> "$T/ps.txt"; sleep 0.02; done ) &
PS_PID=$!
run_rc rc g --debug -y apply -f dv.yaml > "$T/apply1.out" 2> "$T/apply1.err"
kill "$PS_PID" 2>/dev/null || true
wait "$PS_PID" 2>/dev/null || true
PS_PID=""
expect_eq "apply of a 2-node aws cluster with workdir and secrets: exit 0" 0 "$rc"
[ "$rc" = 0 ] || tail -30 "$T/apply1.err"
fake "http://127.0.0.1:$FAKE_PORT/_fake/state" > "$T/fake.json"
g -o json status dv > "$T/st.json"
# node directory of each rank, by the public address the fake gave it
node_dir() {
    local id ip
    id=$(json_get "$T/st.json" "[n['provider_id'] for n in d['clusters'][0]['nodes'] if n['rank'] == $1][0]")
    ip=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
insts = d["instances"] if isinstance(d.get("instances"), list) else list(d["instances"].values())
print([i["public_ip"] for i in insts if i["id"] == sys.argv[2]][0])' "$T/fake.json" "$id")
    case $ip in
        198.51.100.1) echo "$T/a" ;;
        198.51.100.2) echo "$T/b" ;;
        *) echo "$T/unknown-$ip" ;;
    esac
}
N0=$(node_dir 0); N1=$(node_dir 1)
expect_eq "the two nodes are the two sshds" "$T/a $T/b" "$(printf '%s\n' "$N0" "$N1" | sort | paste -sd' ')"
expect_match "node 0: exactly what moved" '^workdir: 4 files, 44 B sent to node 0$' "$(cat "$T/apply1.err")"
expect_match "node 1: exactly what moved" '^workdir: 4 files, 44 B sent to node 1$' "$(cat "$T/apply1.err")"
expect_match "and the secrets" '^secrets: 2 sent to node 1$' "$(cat "$T/apply1.err")"
for n in "$N0" "$N1"; do
    r=$([ "$n" = "$N0" ] && echo 0 || echo 1)
    expect_eq "node $r: the workdir less the ignored files" \
        "./.gitignore ./.gpuctlignore ./lib ./lib/util.py ./train.py" \
        "$(cd "$n/lib/workdir" && find . -mindepth 1 | sort | paste -sd' ')"
    expect_eq "node $r: the files' contents" "print('v1')|X = 1" \
        "$(cat "$n/lib/workdir/train.py" "$n/lib/workdir/lib/util.py" | paste -sd'|')"
    expect_eq "node $r: the secrets file, mode 0600, values quoted for the shell" \
        "600|export HF_TOKEN='hf_Secret-Value-1'
export API_KEY='api key with '\\''quote'\\'' \$x'" \
        "$(stat -c %a "$n/run/secrets.env")|$(cat "$n/run/secrets.env")"
    expect_eq "node $r: sourced by a shell, the values are byte-exact" \
        "$SECRET_ENV|$SECRET_FILE" \
        "$(bash -c '. "$1"; printf "%s|%s" "$HF_TOKEN" "$API_KEY"' sh "$n/run/secrets.env")"
    expect_match "node $r: the marker (Unix seconds)" '^[0-9]{10}$' "$(cat "$n/lib/delivered")"
done
grep_values() { grep -rlF -e "$SECRET_ENV" -e "$SECRET_FILE" -e "with 'quote'" "$@" 2>/dev/null || true; }
expect_eq "the values in no process's argv while apply ran" "" "$(grep_values "$T/ps.txt")"
expect_match "(ps saw the transfers run)" "^rsync -a " "$(grep -m1 '^rsync -a ' "$T/ps.txt" || true)"
expect_match "--debug shows the commands run" \
    "deliver: node 0: rsync of the workdir: running: 'rsync' '-a' '--no-owner' '--no-group' '--delete'" \
    "$(cat "$T/apply1.err")"
g plan -f dv.yaml --out "$T/dv.plan" > /dev/null 2>&1 || true
expect_eq "nor in the state, the --debug output or a plan file" "" \
    "$(grep_values "$STATE" "$T/apply1.out" "$T/apply1.err" "$T/dv.plan")"
expect_eq "nor in the user-data (the fake's record of the instances)" "" "$(grep_values "$T/fake.json")"

# ---- 2. again: only what changed moves --------------------------------------
printf "print('v2 changed')\n" > code/train.py           # 20 bytes
mkdir -p "$N0/lib/workdir/data" && printf 'out' > "$N0/lib/workdir/data/made-on-node"
run_rc rc g -y apply -f dv.yaml > "$T/apply2.out" 2> "$T/apply2.err"
expect_eq "apply after changing one file: exit 0" 0 "$rc"
[ "$rc" = 0 ] || cat "$T/apply2.err"
expect_eq "exactly one file moved to each node" \
    "workdir: 1 file, 20 B sent to node 0|workdir: 1 file, 20 B sent to node 1" \
    "$(grep '^workdir:' "$T/apply2.err" | paste -sd'|')"
expect_eq "the nodes have the new text" "print('v2 changed')|print('v2 changed')" \
    "$(cat "$N0/lib/workdir/train.py" "$N1/lib/workdir/train.py" | paste -sd'|')"
expect_eq "a file the node made in an ignored directory stays" "out" \
    "$(cat "$N0/lib/workdir/data/made-on-node")"
expect_match "the job runs again, handed to the nodes' runners" \
    '^cluster dv: job r[0-9a-f]{12} handed to the same nodes, which run it after any job running there \(changed: workdir \(its files\)\); gpuctl logs -f dv follows it$' \
    "$(cat "$T/apply2.out")"
job2=$(sed -n 's/^cluster dv: job \(r[0-9a-f]*\) handed .*/\1/p' "$T/apply2.out")
for _ in $(seq 100); do
    [ "$(cat "$N0/lib/node.log" "$N1/lib/node.log" 2>/dev/null | grep -c "^job $job2: ")" = 2 ] && break
    sleep 0.1
done
expect_eq "both nodes ran it with the new code" "v2 changed|job $job2: exit status 0|v2 changed|job $job2: exit status 0" \
    "$(tail -qn2 "$N0/lib/node.log" "$N1/lib/node.log" | paste -sd'|')"

rm code/lib/util.py
head -c 1572864 /dev/zero > code/model.bin
run_rc rc env GPUCTL_WORKDIR_WARN_MB=1 "$GPUCTL_BIN" --state-dir "$STATE" -y apply -f dv.yaml \
    > "$T/apply3.out" 2> "$T/apply3.err"
expect_eq "apply with a removed file and a large one: exit 0" 0 "$rc"
expect_eq "the large one moved, the removed one was deleted" \
    "workdir: 1 file, 1.5 MiB sent to node 0, 1 deleted|workdir: 1 file, 1.5 MiB sent to node 1, 1 deleted" \
    "$(grep '^workdir:' "$T/apply3.err" | paste -sd'|')"
expect_match "a workdir above GPUCTL_WORKDIR_WARN_MB warns, naming its largest entries" \
    "workdir $PWD/code holds 1.5 MiB after .gpuctlignore and .gitignore \(more than 1 MiB, GPUCTL_WORKDIR_WARN_MB\); largest: model.bin \(1.5 MiB\), train.py \(20 B\), .gitignore \(13 B\)" \
    "$(cat "$T/apply3.err")"
expect_eq "util.py is gone from the nodes" "absent absent" \
    "$([ -e "$N0/lib/workdir/lib/util.py" ] && echo present || echo absent) $([ -e "$N1/lib/workdir/lib/util.py" ] && echo present || echo absent)"
expect_eq "no warning below the threshold (default 100 MiB)" "" \
    "$(grep 'GPUCTL_WORKDIR_WARN_MB' "$T/apply2.err" || true)"
g -y destroy dv > /dev/null 2>&1

# ---- 3. a node without rsync ------------------------------------------------
sed 's/^name: dv$/name: nors/; s/^nodes: 2$/nodes: 1/' dv.yaml > nors.yaml
run_rc rc g -y apply -f nors.yaml > "$T/nors.out" 2> "$T/nors.err"
expect_eq "a node without rsync fails the apply: exit 6 (provider)" 6 "$rc"
expect_match "naming the node and why" \
    "deliver: node 0: nors-0 \(i-[0-9a-f]+\): prepare failed \(exit status 3\): rsync is not installed on the node \(rsync --version failed there\)" \
    "$(cat "$T/nors.err")"
fake "http://127.0.0.1:$FAKE_PORT/_fake/state" > "$T/fake2.json"
expect_eq "the node it launched was removed, as one that did not boot" "terminated" \
    "$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
insts = d["instances"] if isinstance(d.get("instances"), list) else list(d["instances"].values())
print(" ".join(sorted({i["state"] for i in insts if i.get("public_ip") == "198.51.100.3" or i["id"].endswith("3")})))' "$T/fake2.json")"

# ---- 4. the bootstrap's DELIVER section, run here ---------------------------
# Rendered for aws (cloud-init: the script is its first file), run with its
# home and run directory here, curl failing at once (no metadata service),
# and no power-off: stand-ins for shutdown and poweroff record a call.
# Setup fails on purpose (5), so that no torchrun follows.
cat dv.yaml - > bt.yaml <<'YAML'
setup: |
  printf '%s|%s|%s|%s' "$PWD" "$(cat hello.txt)" "$HF_TOKEN" "$API_KEY" > "$GPUCTL_HOME/setup.out"; exit 5
YAML
g render -f bt.yaml > "$T/ud.yaml" 2> /dev/null
python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["write_files"][0]["content"], end="")' \
    "$T/ud.yaml" > "$T/bootstrap.sh"
expect_match "the rendered bootstrap names the secrets, not their values" \
    "^gpuctl_secret_names='HF_TOKEN API_KEY'$" "$(cat "$T/bootstrap.sh")"
expect_eq "and holds no value" "" "$(grep_values "$T/bootstrap.sh")"
mkdir -p "$T/nb"
for c in shutdown poweroff; do printf '#!/bin/sh\necho "%s $*" >> %s/poweroff.txt\n' "$c" "$T" > "$T/nb/$c"; done
printf '#!/bin/sh\nexit 7\n' > "$T/nb/curl"
chmod +x "$T/nb/"*
boot() { # HOME_DIR RUN_DIR WAIT_S
    env -u DELIVER_TEST_TOKEN PATH="$T/nb:$PATH" GPUCTL_HOME="$1" GPUCTL_RUN_DIR="$2" \
        GPUCTL_DELIVER_WAIT_S="$3" GPUCTL_POWEROFF=0 GPUCTL_CONSOLE="$T/console.txt" \
        bash "$T/bootstrap.sh"
}
run_rc rc boot "$T/h1" "$T/r1" 2
expect_eq "no delivery: the bootstrap fails (exit status 1, recorded)" "1 1 failed" \
    "$rc $(cat "$T/h1/exit_status") $(cat "$T/h1/phase")"
expect_match "... saying why, after the bounded wait" \
    "gpuctl: error: gpuctl delivered no workdir or secrets within 2s \(no $T/h1/delivered; GPUCTL_DELIVER_WAIT_S\): run gpuctl apply again where this node can be reached by ssh" \
    "$(cat "$T/h1/node.log")"
expect_match "... having said it waits" "gpuctl: waiting for gpuctl to deliver the workdir and secrets over ssh" \
    "$(cat "$T/h1/node.log")"

# With the delivery arriving while the node waits: setup sees the workdir
# and the secrets.
mkdir -p "$T/h2/workdir" "$T/r2"
boot "$T/h2" "$T/r2" 60 & BOOT_PID=$!
sleep 1.5
expect_eq "the node waits for the marker" "booting" "$(cat "$T/h2/phase")"
printf 'hello' > "$T/h2/workdir/hello.txt"
cp "$N0/run/secrets.env" "$T/r2/secrets.env"
date +%s > "$T/h2/delivered"
run_rc rc wait "$BOOT_PID"
expect_eq "setup ran (its exit status 5 is the node's)" 5 "$rc"
expect_eq "in the delivered workdir, with the secrets in its environment" \
    "$T/h2/workdir|hello|$SECRET_ENV|$SECRET_FILE" "$(cat "$T/h2/setup.out")"
expect_match "node.log names the secrets set" "gpuctl: secrets set: HF_TOKEN API_KEY" "$(cat "$T/h2/node.log")"
expect_eq "node.log holds no value" "" "$(grep_values "$T/h2/node.log" "$T/h1/node.log")"
expect_eq "nothing powered off" "absent" "$([ -e "$T/poweroff.txt" ] && echo present || echo absent)"
finish
