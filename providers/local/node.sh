## providers/local/node.sh: the node script of a local node, processes on
## this machine (the contract is in include/gpuctl/render.h).  Included in
## the bootstrap; `##` lines do not reach the node.
##
## Processes of this machine: never powered off; the provider's delete
## sends SIGKILL 10 s after SIGTERM.
gpuctl_md_machine=0

## No metadata service: the provider passes the head address in
## GPUCTL_LOCAL_IP (loopback when unset).  No fallback: a wrong address
## fails the node.
gpuctl_md_private_ip() {
  printf '%s\n' "${GPUCTL_LOCAL_IP:-127.0.0.1}"
}

##if IDLE=1
## lifecycle.idle_timeout: the bootstrap then exits, and with it the node's
## process group: the provider sees the node stopped (its `stopped` file
## says why).
# shellcheck disable=SC2317 # called by gpuctl_idle, from the EXIT trap
gpuctl_md_stop() {
  :
}
##endif
