## providers/slurm/node.sh: the node script of a Slurm node, one task of
## the allocation's `srun` step on each node (the contract is in
## include/gpuctl/render.h).  Included in the bootstrap; `##` lines do not
## reach the node.
##
## Processes in a Slurm allocation: the node is the site's, never powered
## off by the job; Slurm ends the tasks (scancel, the time limit) with
## SIGTERM, then SIGKILL after the site's KillWait (30 s by default).
gpuctl_md_machine=0

## The NodeAddr Slurm knows a node by (node names may not resolve in DNS).
gpuctl_md_slurm_addr() {
  local kv
  for kv in $(scontrol show node -o "$1" 2>/dev/null); do
    case $kv in
      NodeAddr=?*)
        printf '%s\n' "${kv#NodeAddr=}"
        return 0
        ;;
    esac
  done
  gpuctl_say "error: scontrol show node $1 gave no NodeAddr" >&2
  return 1
}

gpuctl_md_private_ip() {
  gpuctl_md_slurm_addr "${SLURMD_NODENAME:?not in a Slurm job step}"
}

## The rank is the node's index in the allocation (srun --ntasks-per-node=1).
gpuctl_md_node_rank() {
  if [ -z "${SLURM_NODEID:-}" ]; then
    gpuctl_say "error: SLURM_NODEID is not set: not a task of the job's srun step" >&2
    return 1
  fi
  printf '%s\n' "$SLURM_NODEID"
}

## The head is the allocation's first host: node 0 of the srun step.
gpuctl_md_head_addr() {
  local first
  first=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null | head -n 1)
  if [ -z "$first" ]; then
    gpuctl_say "error: no first host in SLURM_JOB_NODELIST '${SLURM_JOB_NODELIST:-}'" >&2
    return 1
  fi
  gpuctl_md_slurm_addr "$first"
}

##if IDLE=1
## lifecycle.idle_timeout: the bootstrap then exits, which ends this task of
## the job's srun step; the allocation ends with the step.
# shellcheck disable=SC2317 # called by gpuctl_idle, from the EXIT trap
gpuctl_md_stop() {
  :
}
##endif
