## providers/aws/node.sh: the node script of an EC2 instance (the contract
## is in include/gpuctl/render.h).  Included in the bootstrap, rendered with
## its placeholders; `##` lines do not reach the node.
##
## An EC2 instance is a machine of its own: launched with instance-initiated
## shutdown = terminate, so the bootstrap's power-off ends its billing.
gpuctl_md_machine=1

## IMDSv2 (aws.md section 4.4): a token first (PUT), then the GET with it.
gpuctl_md_ec2() {
  local token
  token=$(gpuctl_md_curl -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' \
    http://169.254.169.254/latest/api/token) || return 1
  gpuctl_md_curl -H "X-aws-ec2-metadata-token: $token" \
    "http://169.254.169.254/latest/meta-data/$1"
}

## Spot interruption notices (aws.md section 5.1): IMDSv2
## spot/instance-action is 404 until EC2 schedules an interruption, then
## 200 with {"action": "terminate"|"stop"|"hibernate", "time": "...Z"}.  The
## token is kept between asks (6 hours, the most IMDS gives) and asked for
## again on a 401; any other answer is an error, never "no notice".
##if NOTICE=1
gpuctl_md_token=''
gpuctl_md_notice() {
  local code body="$GPUCTL_HOME/.notice.json"
  for _ in 1 2; do
    if [ -z "$gpuctl_md_token" ]; then
      gpuctl_md_token=$(gpuctl_md_curl -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 21600' \
        http://169.254.169.254/latest/api/token) || {
        gpuctl_md_token=''
        echo "no IMDSv2 token" >&2
        return 1
      }
    fi
    code=$(curl -sS --noproxy '*' --connect-timeout 2 --max-time 5 -o "$body" -w '%{http_code}' \
      -H "X-aws-ec2-metadata-token: $gpuctl_md_token" \
      http://169.254.169.254/latest/meta-data/spot/instance-action) || {
      echo "spot/instance-action: no answer" >&2
      return 1
    }
    case $code in
      404) return 0 ;;
      401) gpuctl_md_token='' ;;
      200)
        gpuctl_md_notice_is=$(python3 -c 'import datetime as d, json, re, sys
j = json.load(sys.stdin)
a, t = j["action"], j.get("time")
assert isinstance(a, str) and re.fullmatch("[a-z-]{1,31}", a), "action %r" % a
e = d.datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=d.timezone.utc) if t else None
print(a, int(e.timestamp()) if e else 0)' <"$body" 2>&1) || {
          echo "spot/instance-action: unreadable notice: ${gpuctl_md_notice_is##*$'\n'}" >&2
          gpuctl_md_notice_is=''
          return 1
        }
        return 0
        ;;
      *)
        echo "spot/instance-action: HTTP $code" >&2
        return 1
        ;;
    esac
  done
  echo "spot/instance-action: HTTP 401 with a new token" >&2
  return 1
}
##endif

gpuctl_md_private_ip() {
  gpuctl_md_ec2 local-ipv4
}

##if RANK_FROM=launch
## The workers of one cluster start from one RunInstances call: EC2's
## ami-launch-index (0-based, IMDS /latest/meta-data/ami-launch-index) is
## each one's position in that call.
gpuctl_md_launch_index() {
  local i
  i=$(gpuctl_md_ec2 ami-launch-index) || i=''
  if ! [[ $i =~ ^[0-9]{1,6}$ ]]; then
    gpuctl_say "error: no ami-launch-index from the EC2 metadata service; node rank unknown" >&2
    return 1
  fi
  printf '%s\n' "$i"
}
##endif

##if IDLE=1
## lifecycle.idle_timeout: power off, which terminates the instance.
# shellcheck disable=SC2317 # called by gpuctl_idle, from the EXIT trap
gpuctl_md_stop() {
  sync
  shutdown -h now || poweroff
}
##endif

##if NODE_STORE=1
## Object storage (the checkpoints, the data sets): the AWS CLI, which the Deep Learning
## AMI has, with the instance profile's credentials, which the CLI takes
## from the metadata service by itself (never the user's keys); the
## endpoint only where gpuctl's own is not AWS's.
gpuctl_md_aws_s3() {
  if [ -n "${GPUCTL_STORE_ENDPOINT:-}" ]; then
    aws --endpoint-url "$GPUCTL_STORE_ENDPOINT" s3 "$@"
  else
    aws s3 "$@"
  fi
}

gpuctl_md_store_get() {
  gpuctl_md_aws_s3 sync --only-show-errors --no-progress "$1/" "$2/"
}

# shellcheck disable=SC2317 # called by gpuctl_ckpt_save
gpuctl_md_store_put() {
  gpuctl_md_aws_s3 sync --only-show-errors --no-progress "$1/" "$2/"
}
##endif
