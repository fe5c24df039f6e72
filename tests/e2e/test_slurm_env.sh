#!/bin/bash
# The real-Slurm harness itself (tests/e2e/slurm_cluster.sh): two nodes on
# distinct loopback addresses come up idle, a 2-node GPU batch job runs one
# task per node and reads the head's address from Slurm, a request for more
# nodes than a partition has pends with PartitionNodeLimit, and slurm_down
# leaves no process and no listener.  Skipped (77) without Slurm or root.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh" || exit 1
# shellcheck source=tests/e2e/slurm_cluster.sh
source "$(dirname "$0")/slurm_cluster.sh"
slurm_available || exit 77

SD="$T/slurm"
slurm_trap "$SD"
slurm_up "$SD"
ok "slurm_up: node1 and node2 idle"
expect_eq "node2's address comes from slurm.conf" "NodeAddr=127.0.0.3" \
    "$(scontrol show node node2 | grep -o 'NodeAddr=[^ ]*')"

# 1. One task per node; each prints its node id and the first host's NodeAddr.
cat > "$T/job.sh" <<'JOB'
#!/bin/bash
srun bash -c 'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -1)
addr=$(scontrol show node "$head" | grep -o "NodeAddr=[^ ]*")
echo "$SLURM_NODEID ${addr#NodeAddr=}"'
JOB
rc=""
run_rc rc sbatch --parsable --nodes=2 --ntasks-per-node=1 --gres=gpu:2 --no-requeue \
    --wait --output="$T/job.out" "$T/job.sh" > "$T/job.id"
expect_eq "2-node job exits 0" 0 "$rc"
expect_eq "rank and head address per node" "$(printf '0 127.0.0.2\n1 127.0.0.2')" \
    "$(sort "$T/job.out")"
expect_match "the finished job stays in scontrol" "JobState=COMPLETED" \
    "$(scontrol show job "$(cat "$T/job.id")")"

# 2. More nodes than partition "one" has: accepted, pends forever.
id=$(sbatch --parsable --nodes=2 -p one --no-requeue --output=/dev/null --wrap 'sleep 1')
reason=""
for _ in $(seq 1 50); do
    reason=$(squeue -h -j "$id" -o %r)
    [ "$reason" == "PartitionNodeLimit" ] && break
    sleep 0.1
done
expect_eq "2 nodes on partition one pend" "PartitionNodeLimit" "$reason"
scancel "$id"

# 3. Down: nothing of this Slurm left running or listening.
ports=$(sed -n 's/.*Port=\([0-9]*\).*/\1/p' "$SLURM_CONF" | sort -u | tr '\n' ' ')
slurm_down "$SD"
expect_eq "no process left" "" "$(pgrep -f -- "$SD/" || true)"
# listening TCP sockets (state 0A) on those ports, from /proc (no ss needed)
left=""
for p in $ports; do
    hex=$(printf '%04X' "$p")
    if awk -v h="$hex" '$4 == "0A" && $2 ~ (":" h "$") { f = 1 } END { exit !f }' \
           /proc/net/tcp /proc/net/tcp6; then
        left="$left $p"
    fi
done
expect_eq "no listener left on the ports ($ports)" "" "$left"
slurm_down "$SD"
ok "slurm_down twice"
finish
