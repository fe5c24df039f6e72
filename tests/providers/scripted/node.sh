## tests/providers/scripted/node.sh: the node script of the scripted test
## providers (the contract is in include/gpuctl/render.h).  No node ever
## runs it: the engine tests render it so that a payload is what a cloud
## node would get, and the scripted providers read the facts they record
## (the rank, the head's address, the launch index) from that payload.
gpuctl_md_machine=1

gpuctl_md_private_ip() {
  printf '%s\n' "${GPUCTL_SCRIPTED_IP:?}"
}

## lifecycle.idle_timeout: a machine of its own stops itself
gpuctl_md_stop() {
  poweroff
}

##if RANK_FROM=launch
gpuctl_md_launch_index() {
  printf '%s\n' "${GPUCTL_SCRIPTED_LAUNCH_INDEX:?}"
}
##endif

## scripted_group: the rank from the scheduler and the head found on the node
##if RANK_FROM=scheduler
gpuctl_md_node_rank() {
  printf '%s\n' "${GPUCTL_SCRIPTED_RANK:?}"
}
##endif
##if HEAD_FROM=node
gpuctl_md_head_addr() {
  printf '%s\n' "${GPUCTL_SCRIPTED_HEAD:?}"
}
##endif
