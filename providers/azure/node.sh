## providers/azure/node.sh: the node script of an Azure VM (the contract is
## in include/gpuctl/render.h).  Included in the bootstrap, rendered with its
## placeholders; `##` lines do not reach the node.
##
## A VM is a machine of its own.  Shut down from inside it stays allocated
## and billed: the control plane must delete it (render.h).
gpuctl_md_machine=1

## Azure IMDS (azure.md section 7.2): header Metadata: true, format=text.
gpuctl_md_private_ip() {
  gpuctl_md_curl -H 'Metadata: true' \
    'http://169.254.169.254/metadata/instance/network/interface/0/ipv4/ipAddress/0/privateIpAddress?api-version=2021-02-01&format=text'
}

##if IDLE=1
## lifecycle.idle_timeout: power off.  The VM stays allocated (and billed)
## until the control plane deletes it (render.h).
# shellcheck disable=SC2317 # called by gpuctl_idle, from the EXIT trap
gpuctl_md_stop() {
  sync
  shutdown -h now || poweroff
}
##endif
