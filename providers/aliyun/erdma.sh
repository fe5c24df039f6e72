## providers/aliyun/erdma.sh: the fabric script of Alibaba Cloud eRDMA (the
## contract is in include/gpuctl/render.h).  Included in the bootstrap of
## every node whose fabric is `erdma`, rendered with its placeholders; `##`
## lines do not reach the node.
##
## Alibaba Cloud eRDMA: reference aliyun.md section 6.2 (the PAI doc's set,
## NCCL >= 2.19).  Not to be mixed with the Lingjun RoCE values.
gpuctl_ic_erdma() {
  gpuctl_default NCCL_IB_DISABLE 0
  gpuctl_default NCCL_IB_HCA erdma
  gpuctl_default NCCL_IB_GID_INDEX 1
  gpuctl_default NCCL_IB_QPS_PER_CONNECTION 8
  gpuctl_default NCCL_MIN_NCHANNELS 16
  gpuctl_default NCCL_NET_PLUGIN none
  gpuctl_socket_ifname
}
