## providers/aws/efa.sh: the fabric script of AWS EFA (the contract is in
## include/gpuctl/render.h).  Included in the bootstrap of every node whose
## fabric is `efa`, rendered with its placeholders; `##` lines do not reach
## the node.
##
## AWS EFA: reference aws.md section 5.2 (EFA + NCCL environment).  The EFA
## libfabric provider is forced so that a broken EFA setup fails instead of
## falling back to TCP; data moves over EFA through the aws-ofi-nccl plugin,
## NCCL_SOCKET_IFNAME only picks the bootstrap interface.
## GPUDirect RDMA (FI_EFA_USE_DEVICE_RDMA=1) only on the instance types
## that have it (aws.md section 5.3: p4d, p4de, p5, p5e, p5en, p6); forcing
## it breaks EFA types without it (g4dn, g5, p3dn), where it stays unset.
gpuctl_ic_efa() {
  local d
  gpuctl_default FI_PROVIDER efa
  case $GPUCTL_INSTANCE_TYPE in
    p4d.* | p4de.* | p5.* | p5e.* | p5en.* | p6-*.* | p6e-*.*)
      gpuctl_default FI_EFA_USE_DEVICE_RDMA 1 ;;
    *) ;;
  esac
  gpuctl_default FI_EFA_FORK_SAFE 1
  gpuctl_default RDMAV_FORK_SAFE 1
  gpuctl_default NCCL_SOCKET_IFNAME '^lo,docker'
  for d in /opt/aws-ofi-nccl/lib /opt/amazon/ofi-nccl/lib64 /opt/amazon/ofi-nccl/lib \
    /opt/amazon/efa/lib64 /opt/amazon/efa/lib; do
    gpuctl_ldpath "$d"
  done
}
