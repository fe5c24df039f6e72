#!/bin/bash
# The slurm provider against a real Slurm on loopback (slurm_cluster.sh:
# node1 at 127.0.0.2, node2 at 127.0.0.3, partitions gpu and one):
# check records the Slurm cluster; plan is offline; a request for more
# nodes than a partition has is refused before anything is submitted; the
# quickstart trains across the two nodes to its accuracy (rank from
# SLURM_NODEID, head from node1's NodeAddr); a failing rank's exit status;
# the pending reason while the partition is busy; destroy twice; a node
# whose slurmd is killed mid-job is reported lost (and, before, gpuctl ssh
# runs a step of the job on a node); a login over ssh.
# Skipped (77) without Slurm or root.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh" || exit 1
# shellcheck source=tests/e2e/slurm_cluster.sh
source "$(dirname "$0")/slurm_cluster.sh"
slurm_available || exit 77

SD="$T/slurm"
slurm_trap "$SD"
slurm_up "$SD"

# The job's software is the machine's (Debian's python3 with torch), as on a
# fresh compute node: not whatever Python environment runs the tests.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$T/jobs" "$T/ex/slurm"
cat > "$T/config" <<EOF
[slurm "lab"]
login = local
job_dir = $T/jobs
gpu_hour_price = 0.5
EOF
export GPUCTL_CONFIG="$T/config" GPUCTL_CONFIG_DIR="$T/cfgdir"
# the quickstart and its code, outside the source tree (checkpoints go there)
cp "$GPUCTL_SOURCE_DIR/examples/train_ddp.py" "$T/ex/"
cp "$GPUCTL_SOURCE_DIR/examples/slurm/quickstart.yaml" "$T/ex/slurm/"
# The two nodes share this machine's network: each job's rendezvous gets a
# port of its own, free now (another test may run a job on 29400).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}
printf '  rdzv_port: %s\n' "$(free_port)" >> "$T/ex/slurm/quickstart.yaml"
# jobs_in_slurm: how many jobs Slurm knows of (any state)
jobs_in_slurm() { squeue -h -t all -o %i | wc -l; }
# small JOB NODES COMMAND [EXTRA YAML]: a spec that trains nothing
small() {
    cat > "$T/$1.yaml" <<EOF
name: $1
provider: slurm
nodes: $2
lifecycle:
  max_duration: 10m
run:
  command: $3
  nproc_per_node: 1
  rdzv_port: $(free_port)
${4:-}
EOF
}

# 1. Offers before check: none, and how to get them.
run_rc rc g plan -f "$T/ex/slurm/quickstart.yaml" > "$T/p0.out" 2> "$T/p0.err"
expect_eq "plan before check exits 22" 22 "$rc"
expect_eq "and says to run check" "gpuctl: error: slurm: Slurm cluster 'lab' has not been checked yet: run gpuctl check slurm" "$(cat "$T/p0.err")"

# 2. check records what the Slurm cluster has.
run_rc rc g check slurm > "$T/check.out" 2>&1
expect_eq "check slurm exits 0" 0 "$rc"
expect_match "check names partitions, nodes and GPUs" "lab \(login here, slurm-wlm 22\.05\.[0-9]+\): controller up, 2 partition\(s\): gpu \(2 node\(s\), 4 GPU\(s\)\), one \(1 node\(s\), 2 GPU\(s\)\)" "$(cat "$T/check.out")"
expect_eq "the record is kept in the state directory" "1 2" \
    "$(json_get "$STATE/slurm/lab.json" 'd["schema_version"], len(d["partitions"])' | tr -d '(),')"

run_rc rc g -o json catalog update --provider slurm > "$T/cu.json" 2> "$T/cu.err"
expect_eq "catalog update --provider slurm asks again: exit 0" 0 "$rc"
check_schema "$T/cu.json" catalog
expect_eq "slurm updated, no catalog written" "slurm:updated written=" \
    "$(json_get "$T/cu.json" '" ".join(p["provider"] + ":" + p["status"] for p in d["providers"]) + " written=" + d["written"]')"
expect_eq "no catalog override made" "absent" "$(test -e "$GPUCTL_CONFIG_DIR/catalog.csv" && echo present || echo absent)"

# 3. plan is offline: with the controller's address unreachable it still plans.
run_rc rc env SLURM_CONF=/nonexistent "$GPUCTL_BIN" --state-dir "$STATE" -o json \
    plan -f "$T/ex/slurm/quickstart.yaml" > "$T/plan.json" 2> "$T/plan.err"
expect_eq "plan exits 0 without the controller" 0 "$rc"
expect_eq "the chosen offer: site lab, partition gpu, the node shape" \
    "slurm 2xa100-2cpu-3gib lab gpu 1.00" \
    "$(json_get "$T/plan.json" '" ".join(str(x) for x in (d["chosen"]["provider"], d["chosen"]["instance_type"], d["chosen"]["region"], d["chosen"].get("zone"), "%.2f" % d["chosen"]["price"]["node_usd_hr"]))')"

# 4. More nodes than any partition has: refused before anything is submitted.
small toomany 3 "true"
before=$(jobs_in_slurm)
run_rc rc g apply -y -f "$T/toomany.yaml" > "$T/tm.out" 2> "$T/tm.err"
expect_eq "3 nodes on 2-node partitions exits 22" 22 "$rc"
expect_match "names the partitions and the numbers" "partition 'gpu' of Slurm cluster 'lab' has 2 usable nodes of shape 2xa100-2cpu-3gib; the spec asks for 3 nodes" "$(cat "$T/tm.err")"
expect_eq "nothing was submitted" "$before" "$(jobs_in_slurm)"
small onetoo 2 "true" "zone: one"
run_rc rc g apply -y -f "$T/onetoo.yaml" > /dev/null 2> "$T/one.err"
expect_eq "2 nodes on the 1-node partition 'one' exits 22" 22 "$rc"
expect_match "names partition one" "partition 'one' of Slurm cluster 'lab' has 1 usable node" "$(cat "$T/one.err")"

# 5. The quickstart across the two nodes, to its accuracy.
run_rc rc g apply -y -f "$T/ex/slurm/quickstart.yaml" --wait > "$T/qs.out" 2> "$T/qs.err"
expect_eq "quickstart on Slurm exits 0" 0 "$rc"
# (global rank 0 is where torchrun's c10d rendezvous puts it: it orders the
# agents by host name and pid, so on one machine's loopback nodes it may be
# on node 1)
expect_match "rank 0 reached the target accuracy" "^\[node [01]\] .*target accuracy reached" "$(cat "$T/qs.out")"
expect_match "node 1 joined the head at node1's NodeAddr" "^\[node 1\] .*node 1 of 2, head 127\.0\.0\.2:[0-9]+," "$(cat "$T/qs.out")"
g -o json status slurm-quickstart > "$T/qs.json"
expect_eq "both nodes succeeded, at their NodeAddr, ids SITE/JOB/RANK" \
    "succeeded 127.0.0.2 lab/J/0 succeeded 127.0.0.3 lab/J/1" \
    "$(json_get "$T/qs.json" '" ".join("%s %s %s" % (n["phase"], n["private_ip"], n["provider_id"].split("/")[0] + "/J/" + n["provider_id"].split("/")[2]) for n in d["clusters"][0]["nodes"])')"
job=$(json_get "$T/qs.json" 'd["clusters"][0]["nodes"][0]["provider_id"].split("/")[1]')
expect_eq "one Slurm job of both nodes, COMPLETED" "JobState=COMPLETED NumNodes=2" \
    "$(scontrol show job -o "$job" | grep -o 'JobState=[A-Z_]*\|NumNodes=[0-9]*' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "named after the cluster's token" "JobName=gpuctl-slurm-quickstart-" \
    "$(scontrol show job -o "$job" | grep -o 'JobName=gpuctl-slurm-quickstart-')"
expect_match "checkpoints on the shared filesystem" "ckpt-epoch-0020\.pt" \
    "$(cat "$T/ex/checkpoints/slurm-quickstart/latest")"
run_rc rc g logs slurm-quickstart > "$T/logs.out" 2>&1
expect_match "logs reads node 1's log from the job directory" "^\[node 1\] .*phase succeeded" "$(cat "$T/logs.out")"
run_rc rc g apply -y -f "$T/ex/slurm/quickstart.yaml" > "$T/again.out" 2>&1
expect_eq "apply again: unchanged" "cluster slurm-quickstart: unchanged (succeeded)" "$(grep '^cluster ' "$T/again.out")"
g -y destroy slurm-quickstart > /dev/null

# 6. A failing rank: rank 1 exits 7, which breaks rank 0's collective.
cat > "$T/failing.yaml" <<'EOF'
name: failing
provider: slurm
nodes: 2
lifecycle:
  max_duration: 10m
run:
  command: |
    python3 -c 'import sys, torch.distributed as d; d.init_process_group("gloo"); sys.exit(7) if d.get_rank() == 1 else d.barrier()'
  nproc_per_node: 1
EOF
printf '  rdzv_port: %s\n' "$(free_port)" >> "$T/failing.yaml"
run_rc rc g apply -y -f "$T/failing.yaml" --wait > "$T/f.out" 2> "$T/f.err"
expect_eq "apply --wait exits as a failed job" 10 "$rc"
g -o json status failing > "$T/f.json"
expect_eq "rank 1's own exit status 7 is recorded, rank 0 failed too" "failed failed 7" \
    "$(json_get "$T/f.json" '"%s %s %s" % (d["clusters"][0]["nodes"][0]["phase"], d["clusters"][0]["nodes"][1]["phase"], d["clusters"][0]["nodes"][1]["exit_code"])')"
job=$(json_get "$T/f.json" 'd["clusters"][0]["nodes"][0]["provider_id"].split("/")[1]')
# Slurm may still be COMPLETING it (its steps' clean-up) when gpuctl has
# read the nodes' statuses: wait for that to end (CI saw it once)
for _ in $(seq 60); do
    scontrol show job -o "$job" | grep -q 'JobState=COMPLETING' || break
    sleep 0.5
done
expect_match "the Slurm job failed" "JobState=FAILED" "$(scontrol show job -o "$job")"
run_rc rc g logs failing -f --node 1 > "$T/f1.out" 2>&1
expect_eq "logs -f --node 1 ends with rank 1's exit status 7" 7 "$rc"
g -y destroy failing > /dev/null

# 7. The pending reason while the partition is busy; destroy twice.
blocker=$(sbatch --parsable --nodes=2 --exclusive --output=/dev/null --wrap 'sleep 300')
small waiting 2 "true"
run_rc rc g apply -y -f "$T/waiting.yaml" > /dev/null 2> "$T/w.err"
expect_eq "apply behind a busy partition exits 0" 0 "$rc"
reason=""
for _ in $(seq 1 30); do
    run_rc rc g status waiting > "$T/ws.out" 2> "$T/ws.err"
    reason=$(cat "$T/w.err" "$T/ws.err")
    case $reason in *"pending (Resources)"*) break ;; esac
    sleep 1
done
expect_match "the scheduler's reason is said" "waiting: node [01]: Slurm job [0-9]+ pending \(Resources\)" "$reason"
expect_eq "the nodes are booting meanwhile" "booting booting" \
    "$(g -o json status waiting | python3 -c 'import json,sys; print(" ".join(n["phase"] for n in json.load(sys.stdin)["clusters"][0]["nodes"]))')"
job=$(g -o json status waiting | python3 -c 'import json,sys; print(json.load(sys.stdin)["clusters"][0]["nodes"][0]["provider_id"].split("/")[1])')
expect_match "Slurm has it pending" "JobState=PENDING Reason=Resources" "$(scontrol show job -o "$job")"
run_rc rc g -y destroy waiting > "$T/d1.out" 2>&1
expect_eq "destroy exits 0" 0 "$rc"
expect_match "the job was cancelled" "JobState=CANCELLED" "$(scontrol show job -o "$job")"
run_rc rc g -y destroy waiting > "$T/d2.out" 2>&1
expect_eq "destroy again exits 0" 0 "$rc"
expect_eq "and says so" "cluster waiting: already destroyed, nothing to destroy" "$(cat "$T/d2.out")"
scancel "$blocker"

# 8. A node whose slurmd dies mid-job is reported lost.
small lossy 2 "sleep 300"
run_rc rc g apply -y -f "$T/lossy.yaml" > /dev/null 2>&1
expect_eq "apply of the long job exits 0" 0 "$rc"
for _ in $(seq 1 60); do
    [ "$(g -o json status lossy | python3 -c 'import json,sys; print(" ".join(n["phase"] for n in json.load(sys.stdin)["clusters"][0]["nodes"]))')" = "running running" ] && break
    sleep 1
done
# gpuctl ssh: a step of the job on the node of that rank (srun --relative)
g -o json status lossy > "$T/sh.json"
job=$(json_get "$T/sh.json" 'd["clusters"][0]["nodes"][0]["provider_id"].split("/")[1]')
for r in 0 1; do
    run_rc rc g ssh lossy --node "$r" -- 'echo $SLURM_JOB_ID $SLURMD_NODENAME' > "$T/sh.out" 2> "$T/sh.err"
    expect_eq "ssh --node $r: a step of the cluster's job on node$((r + 1)), rank $r" \
        "0 $job node$((r + 1))" "$rc $(cat "$T/sh.out")"
    [ "$rc" = 0 ] || cat "$T/sh.err"
done
run_rc rc g ssh lossy -- 'exit 4' 2> "$T/sh4.err"
expect_eq "ssh: the command's exit status" 4 "$rc"
kill "$(slurm_node_pid "$SD" node2)"
run_rc rc g apply -y -f "$T/lossy.yaml" --wait --timeout 120s > "$T/l.out" 2> "$T/l.err"
expect_eq "waiting on it ends as a lost node" 11 "$rc"
expect_match "saying which node" "lossy: node 1 failed: lost: Slurm node node2 is [A-Z_*+]*DOWN[A-Z_*+]*; Slurm job [0-9]+ ended \(NODE_FAIL\)" "$(cat "$T/l.err")"
g -o json status lossy > "$T/l.json"
expect_eq "node 0 was stopped, node 1 failed without an exit status" "terminated None failed None" \
    "$(json_get "$T/l.json" '" ".join("%s %s" % (n["phase"], n["exit_code"]) for n in d["clusters"][0]["nodes"])')"
job=$(json_get "$T/l.json" 'd["clusters"][0]["nodes"][0]["provider_id"].split("/")[1]')
expect_match "Slurm ended it for the lost node" "JobState=(NODE_FAIL|COMPLETING Reason=NodeDown)" "$(scontrol show job -o "$job")"
g -y destroy lossy > /dev/null
slurm_node_start "$SD" node2

# 9. A controller that does not answer for a while is no forgotten job:
# the nodes keep their phase, and destroy then cancels the job.
# Regression: gpuctl took the job for over and left it running.
small stall 2 "sleep 300"
run_rc rc g apply -y -f "$T/stall.yaml" > /dev/null 2>&1
for _ in $(seq 1 60); do
    [ "$(g -o json status stall | python3 -c 'import json,sys; print(" ".join(n["phase"] for n in json.load(sys.stdin)["clusters"][0]["nodes"]))')" = "running running" ] && break
    sleep 1
done
ctld=$(cat "$SD/run/slurmctld.pid")
kill -STOP "$ctld"
run_rc rc g status stall > "$T/st.out" 2> "$T/st.err"
kill -CONT "$ctld"
expect_match "status says it cannot read the job" "slurm: cannot read Slurm job [0-9]+ on Slurm cluster 'lab': " "$(cat "$T/st.err")"
expect_eq "the nodes keep their phase" "running running" \
    "$(g -o json status stall | python3 -c 'import json,sys; print(" ".join(n["phase"] for n in json.load(sys.stdin)["clusters"][0]["nodes"]))')"
job=$(g -o json status stall | python3 -c 'import json,sys; print(json.load(sys.stdin)["clusters"][0]["nodes"][0]["provider_id"].split("/")[1])')
g -y destroy stall > /dev/null
for _ in $(seq 1 30); do
    scontrol show job -o "$job" | grep -q 'JobState=COMPLETING' || break
    sleep 1
done
expect_match "destroy cancelled the job" "JobState=CANCELLED" "$(scontrol show job -o "$job")"

# 10. check holds the config's partitions against the Slurm cluster's.
sed -i 's/^job_dir = /partitions = gpu, nosuch\njob_dir = /' "$T/config"
run_rc rc g check slurm > "$T/c3.out" 2>&1
expect_eq "a partition the Slurm cluster lacks: check exits 3" 3 "$rc"
expect_match "naming it and those there are" "partitions of \[slurm \"lab\"\]: Slurm cluster 'lab' has no partition 'nosuch' \(it has: gpu, one\)" "$(cat "$T/c3.out")"
sed -i '/^partitions = gpu, nosuch$/d' "$T/config"

# render shows the bootstrap itself, as the batch script carries it
g -o json render -f "$T/ex/slurm/quickstart.yaml" > "$T/render.json" 2>/dev/null
check_schema "$T/render.json" render
expect_eq "render: the bare bootstrap" "#!/bin/bash" "$(json_get "$T/render.json" 'd["userdata"].splitlines()[0]')"

# 11. A login node over ssh (a stand-in ssh that runs the command here, as
# the login node's shell would, and records how it was called).
mkdir -p "$T/bin"
cat > "$T/bin/ssh" <<'EOF'
#!/bin/bash
printf '%s\n' "$*" >> "$SSH_LOG"
for last; do :; done
exec /bin/sh -c "$last"
EOF
chmod +x "$T/bin/ssh"
cat >> "$T/config" <<EOF
[slurm "far"]
login = alice@login.example
job_dir = $T/jobs
EOF
export SSH_LOG="$T/ssh.log"
run_rc rc env PATH="$T/bin:$PATH" "$GPUCTL_BIN" --state-dir "$STATE" check slurm > "$T/c2.out" 2>&1
expect_eq "check over ssh exits 0" 0 "$rc"
expect_match "names the login" "far \(alice@login\.example, slurm-wlm" "$(cat "$T/c2.out")"
expect_eq "ssh in batch mode, to the login, the command as one argument" \
    "-o BatchMode=yes -o ConnectTimeout=15 -- alice@login.example scontrol ping" "$(head -1 "$SSH_LOG")"
small faraway 1 "true" "region: far
workdir: ."
run_rc rc env PATH="$T/bin:$PATH" "$GPUCTL_BIN" --state-dir "$STATE" apply -y -f "$T/faraway.yaml" > /dev/null 2> "$T/far.err"
expect_eq "workdir over ssh is refused" 4 "$rc"
expect_match "saying why" "workdir: the chosen offer is on slurm, whose nodes cannot see this machine's files there" "$(cat "$T/far.err")"

echo "passed $PASS, failed $FAIL"
[ "$FAIL" -eq 0 ]
