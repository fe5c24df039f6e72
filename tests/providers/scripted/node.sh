## tests/providers/scripted/node.sh: the node script of the scripted test
## providers (the contract is in include/gpuctl/render.h).  No node ever
## runs it: the engine tests render it so that a payload is what a cloud
## node would get, and the scripted providers read the facts they record
## (the rank, the head's address, the launch index) from that payload.
gpuctl_md_machine=1

gpuctl_md_private_ip() {
  printf '%s\n' "${GPUCTL_SCRIPTED_IP:?}"
}

##if RANK_FROM=launch
gpuctl_md_launch_index() {
  printf '%s\n' "${GPUCTL_SCRIPTED_LAUNCH_INDEX:?}"
}
##endif
