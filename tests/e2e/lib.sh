# lib.sh - helpers for the end-to-end tests (sourced, bash).
# Each test gets a fresh state directory and work directory under a temp
# dir that is removed (after destroying anything left running) on exit.
set -euo pipefail

: "${GPUCTL_BIN:?GPUCTL_BIN must point at the gpuctl binary}"
: "${GPUCTL_SOURCE_DIR:?GPUCTL_SOURCE_DIR must point at the source tree}"
export NO_COLOR=1
# The sanitizer build: leaks are errors, and no noise on stderr otherwise.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Debian's python3 (with jsonschema and yaml), not whatever is first on PATH.
if [ -x /usr/bin/python3 ]; then python3() { /usr/bin/python3 "$@"; }; fi

# Never beyond loopback: no AWS credentials, files or instance metadata from
# this machine, and EC2 and Price List endpoints that refuse at once; tests
# that talk to the fakes (test_aws.sh, test_catalog_cmd.sh) set their own.
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_SECURITY_TOKEN \
      AWS_PROFILE AWS_DEFAULT_PROFILE AWS_ENDPOINT_URL AWS_WEB_IDENTITY_TOKEN_FILE \
      AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI
export AWS_EC2_METADATA_DISABLED=true
export AWS_CONFIG_FILE=/nonexistent/aws-config AWS_SHARED_CREDENTIALS_FILE=/nonexistent/aws-credentials
export AWS_ENDPOINT_URL_EC2=http://127.0.0.1:9
export AWS_ENDPOINT_URL_PRICING=http://127.0.0.1:9
export GPUCTL_CHECKIP_URL=http://127.0.0.1:9/

T=$(mktemp -d "${TMPDIR:-/tmp}/gpuctl-e2e.XXXXXX")
STATE="$T/state"
export GPUCTL_CACHE_DIR="$T/cache"   # the aws image cache: never ~/.cache
PASS=0
FAIL=0

cleanup() {
    local rc=$?
    # Never leave nodes behind: destroy whatever this test's state knows.
    if [ -d "$STATE" ]; then
        for name in $("$GPUCTL_BIN" --state-dir "$STATE" -o json status 2>/dev/null |
                      python3 -c 'import json,sys; [print(c["name"]) for c in json.load(sys.stdin)["clusters"]]' 2>/dev/null); do
            "$GPUCTL_BIN" --state-dir "$STATE" -y destroy "$name" >/dev/null 2>&1 || true
        done
    fi
    # then what the test started besides (slurm_cluster.sh's slurm_trap)
    if declare -F cleanup_extra >/dev/null; then cleanup_extra || true; fi
    rm -rf "$T"
    exit $rc
}
trap cleanup EXIT

g() { "$GPUCTL_BIN" --state-dir "$STATE" "$@"; }

ok()   { PASS=$((PASS + 1)); echo "ok - $*"; }
fail() { FAIL=$((FAIL + 1)); echo "not ok - $*"; }

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
    if [ "$2" == "$3" ]; then ok "$1"; else fail "$1: expected [$2], got [$3]"; fi
}

# expect_match WHAT REGEX TEXT.  TEXT goes to grep as a here-string, not
# through a pipe: under pipefail, grep -q leaving at its first match made a
# long TEXT's printf die of SIGPIPE and the pipeline fail, a match reported
# as missing (test_quickstart's "target reached", once the log was long).
expect_match() {
    if grep -Eq -- "$2" <<< "$3"; then ok "$1"; else fail "$1: [$2] not found in: $3"; fi
}

# run_rc VAR CMD...: run CMD, store its exit status in VAR, never abort.
run_rc() {
    local __var=$1; shift
    set +e
    "$@"
    local __rc=$?
    set -e
    printf -v "$__var" '%s' "$__rc"
}

# json_get FILE EXPR: evaluate a Python expression on the JSON document `d`.
json_get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# check_schema FILE SCHEMA_NAME: validate against docs/schema/NAME.schema.json
check_schema() {
    if python3 - "$1" "$GPUCTL_SOURCE_DIR/docs/schema/$2.schema.json" <<'PY'
import json, sys, jsonschema
doc = json.load(open(sys.argv[1]))
schema = json.load(open(sys.argv[2]))
jsonschema.Draft7Validator.check_schema(schema)
jsonschema.validate(doc, schema, cls=jsonschema.Draft7Validator)
PY
    then ok "$(basename "$1") matches schema $2"; else fail "$(basename "$1") does not match schema $2"; fi
}

# copy_examples: the examples in a private directory (checkpoints land there).
copy_examples() {
    mkdir -p "$T/work"
    cp "$GPUCTL_SOURCE_DIR/examples/train_ddp.py" "$GPUCTL_SOURCE_DIR/examples/quickstart.yaml" "$T/work/"
}

finish() {
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" -eq 0 ]
}

# start_fake NAME SCRIPT ARGS...: start tests/fake/SCRIPT on a free loopback
# port with its request log at $T/NAME.log; sets FAKE_PORT.  The server
# exits when this shell does (its stdin is a pipe this shell holds open).
start_fake() {
    local name=$1 script=$2; shift 2
    mkfifo "$T/$name.in"
    python3 "$GPUCTL_SOURCE_DIR/tests/fake/$script" --exit-on-stdin-eof \
        --log "$T/$name.log" "$@" < "$T/$name.in" > "$T/$name.out" 2> "$T/$name.err" &
    local pid=$!
    # hold the write end open on a spare descriptor
    local fd
    exec {fd}> "$T/$name.in"
    FAKE_PORT=""
    for _ in $(seq 1 200); do
        FAKE_PORT=$(sed -n 's/^PORT \([0-9]*\)$/\1/p' "$T/$name.out" 2>/dev/null | head -1)
        [ -n "$FAKE_PORT" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if [ -z "$FAKE_PORT" ]; then
        echo "fake $script did not start:" >&2
        cat "$T/$name.err" >&2
        exit 1
    fi
}
