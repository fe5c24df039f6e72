# ec2_parts.sh - for end-to-end tests in parts against the fake EC2
# endpoint (tests/fake/ec2.py), sourced after lib.sh: a clean AWS
# environment (fake credentials, no ~/.aws, ~/.ssh or instance metadata),
# and helpers that read the fake's request log and world and gpuctl's state.
# Each part (part NAME) has its own fake, state directory and cache.
mkdir -p "$T/work" "$T/home"
cd "$T/work"
export GPUCTL_CONFIG_DIR="$T/config"
unset GPUCTL_CATALOG XDG_CONFIG_HOME AWS_PROFILE AWS_DEFAULT_PROFILE AWS_REGION \
      AWS_DEFAULT_REGION AWS_SESSION_TOKEN AWS_SECURITY_TOKEN AWS_ENDPOINT_URL \
      GPUCTL_SSH_PUBLIC_KEY GPUCTL_SSH_CIDR GPUCTL_CAPACITY_SKIP_S GPUCTL_TEST_FAULT
export HOME="$T/home"                      # no ~/.aws, no ~/.ssh
export AWS_CONFIG_FILE="$T/home/aws-config" AWS_SHARED_CREDENTIALS_FILE="$T/home/aws-creds"
export AWS_EC2_METADATA_DISABLED=true
SECRET=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=$SECRET
export GPUCTL_AWS_POLL_S=0.05
P=(--poll-interval 0.05)
fake() { curl -sS --noproxy '*' "$@"; }   # the fake's control API

# part NAME FAKE-ARGS...: a fresh fake (log $T/NAME.log, answers in one
# page, pending for one DescribeInstances), state and cache
part() {
    local name=$1; shift
    echo "# --- $name"
    start_fake "$name" ec2.py --page-size 0 --pending-polls 1 "$@"
    PORT=$FAKE_PORT
    URL="http://127.0.0.1:$PORT"
    LOG="$T/$name.log"
    STATE="$T/state-$name"
    export AWS_ENDPOINT_URL_EC2="$URL" AWS_ENDPOINT_URL_IAM="$URL"  # IAM: dispatched by the fake EC2 (iam.py)
    export GPUCTL_CHECKIP_URL="$URL/_fake/checkip"
    export GPUCTL_CACHE_DIR="$T/cache-$name"
}
log_lines() { if [ -f "$LOG" ]; then wc -l < "$LOG"; else echo 0; fi; }
# actions FROM: the EC2 actions logged after line FROM ("!code" on errors)
actions() { python3 - "$LOG" "$1" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])][int(sys.argv[2]):]
print(" ".join(l["action"] + ("!" + l["error"] if l["error"] else "") for l in lines
               if l["action"] and not l["action"].startswith("_fake/")))
PY
}
# calls ACTION EXPR [FROM]: EXPR on the list `r` of the logged params of
# ACTION (after line FROM), each with "_error" (the EC2 code or None)
calls() { python3 - "$LOG" "$1" "$2" "${3:-0}" <<'PY'
import base64, json, sys
r = [l["params"] | {"_error": l["error"]} for l in map(json.loads, list(open(sys.argv[1]))[int(sys.argv[4]):])
     if l["action"] == sys.argv[2]]
print(eval(sys.argv[3]))
PY
}
# logq EXPR [FROM]: EXPR on the list `L` of the log's lines (after FROM)
logq() { python3 - "$LOG" "$1" "${2:-0}" <<'PY'
import base64, json, sys
L = [json.loads(l) for l in list(open(sys.argv[1]))[int(sys.argv[3]):]]
print(eval(sys.argv[2]))
PY
}
# db SQL: the first column of SQL's rows on this part's state database
db() { python3 -c 'import sqlite3, sys; print("\n".join(str(r[0]) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))' "$STATE/gpuctl.db" "$1"; }
# world EXPR: EXPR on the fake's state `d`
world() { fake "$URL/_fake/state" > "$T/world.json"; json_get "$T/world.json" "$1"; }
# st EXPR: EXPR on `gpuctl -o json status --all` (d)
st() { g -o json status --all > "$T/st.json"; json_get "$T/st.json" "$1"; }
