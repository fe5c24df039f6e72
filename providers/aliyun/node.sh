## providers/aliyun/node.sh: the node script of an Alibaba Cloud ECS
## instance (the contract is in include/gpuctl/render.h).  Included in the
## bootstrap, rendered with its placeholders; `##` lines do not reach the
## node.
##
## An ECS instance is a machine of its own.  A pay-as-you-go instance shut
## down from inside is billed unless it stops in no-charge mode: the control
## plane must delete it or set AutoReleaseTime (render.h).
gpuctl_md_machine=1

## ECS metadata (aliyun.md section 4): the token is needed only where the
## instance enforces it, so the GET goes without one when the PUT fails.
gpuctl_md_private_ip() {
  local token url=http://100.100.100.200/latest/meta-data/private-ipv4
  if token=$(gpuctl_md_curl -X PUT -H 'X-aliyun-ecs-metadata-token-ttl-seconds: 300' \
    http://100.100.100.200/latest/api/token); then
    gpuctl_md_curl -H "X-aliyun-ecs-metadata-token: $token" "$url"
  else
    gpuctl_md_curl "$url"
  fi
}

##if IDLE=1
## lifecycle.idle_timeout: power off.  The instance is billed until it is
## released or stops in no-charge mode (render.h).
# shellcheck disable=SC2317 # called by gpuctl_idle, from the EXIT trap
gpuctl_md_stop() {
  sync
  shutdown -h now || poweroff
}
##endif
