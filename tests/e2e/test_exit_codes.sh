#!/bin/bash
# One case per exit status of docs/exit-codes.md, each triggered for real
# (local provider, tiny one-node specs), and the JSON error's code name
# where -o json applies.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" && cd "$T/work"
export GPUCTL_CONFIG_DIR="$T/config"   # never the user's catalog override
unset GPUCTL_CATALOG XDG_CONFIG_HOME

# code FILE: "code exit_status" of an error object (top level or "error").
code() { json_get "$1" '" ".join(str(x) for x in (d["error"]["code"], d["error"]["exit_status"]))'; }
# nodes_of NAME: the pids of every process of the cluster's node 0, found
# the way the local provider finds them (GPUCTL_HOME in the environment).
node_pids() {
    python3 - "$1" <<'PY'
import os, sys
want = b"GPUCTL_HOME=" + sys.argv[1].encode()
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == os.getpid():
        continue
    try:
        env = open("/proc/%s/environ" % p, "rb").read().split(b"\0")
    except OSError:
        continue
    if want in env:
        print(p)
PY
}
# wait_for_sleep DIR: until the node in DIR runs its `sleep` (at most 20 s).
wait_for_sleep() {
    local p
    for _ in $(seq 100); do
        for p in $(node_pids "$1"); do
            [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sleep ] && return 0
        done
        sleep 0.2
    done
    return 1
}
# catches_sigint PID: the process has installed its SIGINT handler.
catches_sigint() {
    local mask
    mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
    [ -n "$mask" ] && (( (16#$mask >> 1) & 1 ))
}

cat > sleeper.yaml <<'YAML'
name: sleeper
run: { command: "sleep 40", nproc_per_node: 1 }
YAML

# ---- 0: success ------------------------------------------------------------
run_rc rc g -o json version > "$T/v.json"
expect_eq "0: version" 0 "$rc"
check_schema "$T/v.json" version

# ---- 2: plan --detailed-exitcode with changes pending; the plan is saved for 13
run_rc rc g -o json plan -f sleeper.yaml --detailed-exitcode --out sleeper.plan > "$T/p2.json" 2> /dev/null
expect_eq "2: plan --detailed-exitcode, changes pending" 2 "$rc"
check_schema "$T/p2.json" plan

# ---- 1: plan --detailed-exitcode on an error ---------------------------------
printf 'name: huge\nresources: {gpu: "H100:64"}\nrun: {command: "true"}\n' > huge.yaml
run_rc rc g -o json plan -f huge.yaml --detailed-exitcode > "$T/e1.json" 2> /dev/null
expect_eq "1: plan --detailed-exitcode on an error" 1 "$rc"
check_schema "$T/e1.json" error
expect_eq "1: json names the class, exit_status 1" "capacity 1" "$(code "$T/e1.json")"

# ---- 3: usage ----------------------------------------------------------------
run_rc rc g -o json apply --bogus > "$T/e3.json" 2> /dev/null
expect_eq "3: unknown option" 3 "$rc"
check_schema "$T/e3.json" error
expect_eq "3: json usage" "usage 3" "$(code "$T/e3.json")"

# ---- 4: invalid spec -----------------------------------------------------------
printf 'name: demo\nnodes: two\nrun: {command: "true"}\n' > bad.yaml
run_rc rc g -o json apply -f bad.yaml > "$T/e4.json" 2> "$T/e4.txt"
expect_eq "4: invalid spec" 4 "$rc"
check_schema "$T/e4.json" error
expect_eq "4: json spec" "spec 4" "$(code "$T/e4.json")"
expect_match "4: file:line:column" "bad\.yaml:2:8: nodes: " "$(cat "$T/e4.txt")"

# ---- 5: a local file ------------------------------------------------------------
run_rc rc g -o json --catalog "$T/no-such-catalog.csv" offers > "$T/e5.json" 2> /dev/null
expect_eq "5: --catalog on a missing file" 5 "$rc"
check_schema "$T/e5.json" error
expect_eq "5: json io" "io 5" "$(code "$T/e5.json")"
mkdir -p adir.yaml
run_rc rc g apply -f adir.yaml > /dev/null 2> "$T/e5.txt"
expect_eq "5: a spec that cannot be read (a directory)" 5 "$rc"

# ---- 6: the provider failed ---------------------------------------------------------
run_rc rc env GPUCTL_TEST_FAULT=fail-create:0 "$GPUCTL_BIN" --state-dir "$STATE" -o json apply -f sleeper.yaml > "$T/e6.json" 2> /dev/null
expect_eq "6: fail-create (provider)" 6 "$rc"
check_schema "$T/e6.json" apply
expect_eq "6: json provider" "provider 6" "$(code "$T/e6.json")"
printf 'name: cloudy\nprovider: azure\nrun: {command: "true"}\n' > cloud.yaml
run_rc rc g -o json apply -f cloud.yaml > "$T/e6b.json" 2> /dev/null
expect_eq "6: a provider not built in" 6 "$rc"
check_schema "$T/e6b.json" apply
expect_eq "6: json provider (not built in)" "provider 6" "$(code "$T/e6b.json")"

# ---- 20, 21: auth and quota, as a cloud would answer ---------------------------------
run_rc rc env GPUCTL_TEST_FAULT=fail-create:0:auth "$GPUCTL_BIN" --state-dir "$STATE" -o json apply -f sleeper.yaml > "$T/e20.json" 2> "$T/e20.txt"
expect_eq "20: fail-create:0:auth" 20 "$rc"
check_schema "$T/e20.json" apply
expect_eq "20: json auth" "auth 20" "$(code "$T/e20.json")"
expect_match "20: the message names the node" "injected auth failure creating sleeper-0" "$(cat "$T/e20.txt")"
run_rc rc env GPUCTL_TEST_FAULT=fail-create:0:quota "$GPUCTL_BIN" --state-dir "$STATE" -o json apply -f sleeper.yaml > "$T/e21.json" 2> /dev/null
expect_eq "21: fail-create:0:quota" 21 "$rc"
check_schema "$T/e21.json" apply
expect_eq "21: json quota" "quota 21" "$(code "$T/e21.json")"
expect_eq "the failed applies left no live cluster" 0 "$(g -o json status | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["clusters"]))')"

# ---- 22, 23: nothing fits -------------------------------------------------------------
run_rc rc g -o json apply -f huge.yaml > "$T/e22.json" 2> /dev/null
expect_eq "22: a GPU count this machine lacks" 22 "$rc"
expect_eq "22: json capacity" "capacity 22" "$(code "$T/e22.json")"
# 4 x T4:1 spot under 0.25/node-hour: the cheapest fit costs 4 x 0.061595 =
# 0.24638 USD/hour, above a 0.2 cap.
printf 'name: poor\nprovider: [aws, azure]\nnodes: 4\nresources: {gpu: "T4:1"}\nspot: {policy: spot}\nbudget: {max_hourly: 0.2}\nrun: {command: "true"}\n' > poor.yaml
run_rc rc g -o json plan -f poor.yaml > "$T/e23.json" 2> /dev/null
expect_eq "23: a budget nothing meets (plan)" 23 "$rc"
check_schema "$T/e23.json" error
expect_eq "23: json budget" "budget 23" "$(code "$T/e23.json")"
run_rc rc g apply -f poor.yaml --dry-run > /dev/null 2>&1
expect_eq "23: apply refuses the same" 23 "$rc"

# ---- 7: not found ---------------------------------------------------------------------
run_rc rc g -o json status nosuch > "$T/e7.json" 2> /dev/null
expect_eq "7: status of an unknown cluster" 7 "$rc"
check_schema "$T/e7.json" error
expect_eq "7: json not_found" "not_found 7" "$(code "$T/e7.json")"

# ---- a sleeping cluster for 12, 130, 9, 13 and 8 ------------------------------------------
run_rc rc g apply -f sleeper.yaml > /dev/null 2>&1
expect_eq "0: apply of the sleeper" 0 "$rc"
NODE_DIR=$(echo "$STATE"/local/sleeper-0-*)
wait_for_sleep "$NODE_DIR" || true

# 12: --wait --timeout elapses; the node keeps running.
run_rc rc g -o json apply -f sleeper.yaml --wait --timeout 2 > "$T/e12.json" 2> /dev/null
expect_eq "12: --wait --timeout 2 on a sleeping job" 12 "$rc"
check_schema "$T/e12.json" apply
expect_eq "12: json timeout" "timeout 12" "$(code "$T/e12.json")"
expect_eq "12: the node keeps running" running "$(g -o json status sleeper | python3 -c 'import json,sys; print(json.load(sys.stdin)["clusters"][0]["phase"])')"

# 130: SIGINT while waiting; the node keeps running.
"$GPUCTL_BIN" --state-dir "$STATE" -o json apply -f sleeper.yaml --wait --timeout 60 > "$T/e130.json" 2> /dev/null &
wpid=$!
for _ in $(seq 100); do catches_sigint "$wpid" && break; sleep 0.1; done
sleep 0.3
kill -INT "$wpid"
run_rc rc wait "$wpid"
expect_eq "130: SIGINT to apply --wait" 130 "$rc"
check_schema "$T/e130.json" apply
expect_eq "130: json interrupted" "interrupted 130" "$(code "$T/e130.json")"
expect_eq "130: the node keeps running" running "$(g -o json status sleeper | python3 -c 'import json,sys; print(json.load(sys.stdin)["clusters"][0]["phase"])')"

# 9: another gpuctl holds the cluster's lock (src/cluster.c gpc_cluster_lock:
# STATE/locks/NAME.lock, flock). This shell holds it on fd 9.
mkdir -p "$STATE/locks"
exec 9> "$STATE/locks/sleeper.lock"
flock -n 9
run_rc rc g -o json apply -f sleeper.yaml > "$T/e9.json" 2> "$T/e9.txt"
expect_eq "9: apply while the lock is held" 9 "$rc"
check_schema "$T/e9.json" apply
expect_eq "9: json locked" "locked 9" "$(code "$T/e9.json")"
expect_match "9: says why" "cluster 'sleeper' is being changed by another gpuctl" "$(cat "$T/e9.txt")"
flock -u 9
exec 9>&-

# 13: the plan saved before the sleeper existed is stale now.
run_rc rc g -o json apply sleeper.plan > "$T/e13.json" 2> /dev/null
expect_eq "13: apply of a stale plan" 13 "$rc"
check_schema "$T/e13.json" apply
expect_eq "13: json stale" "stale 13" "$(code "$T/e13.json")"

# 8: destroy cannot delete the node; it stays recorded.
run_rc rc env GPUCTL_TEST_FAULT=fail-delete:0 "$GPUCTL_BIN" --state-dir "$STATE" -o json -y destroy sleeper > "$T/e8.json" 2> /dev/null
expect_eq "8: destroy with fail-delete" 8 "$rc"
check_schema "$T/e8.json" destroy
expect_eq "8: json partial" "partial 8" "$(code "$T/e8.json")"
expect_eq "8: the cluster is still recorded" 1 "$(g -o json status | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["clusters"]))')"
run_rc rc g -y destroy sleeper > /dev/null
expect_eq "0: destroy for real" 0 "$rc"
expect_eq "no process of the sleeper is left" "" "$(node_pids "$NODE_DIR")"

# ---- 10: the job failed ---------------------------------------------------------------
printf 'name: failing\nrun: {command: "false", nproc_per_node: 1}\n' > false.yaml
run_rc rc g -o json apply -f false.yaml --wait --timeout 120 > "$T/e10.json" 2> /dev/null
expect_eq "10: run: false, --wait" 10 "$rc"
check_schema "$T/e10.json" apply
expect_eq "10: json job_failed, rank 0's own status 1" "job_failed 10 1" "$(code "$T/e10.json") $(json_get "$T/e10.json" 'd["exit_code"]')"
g -y destroy failing > /dev/null

# ---- 11: the node's processes vanish while apply waits --------------------------------------
printf 'name: vanish\nrun: {command: "sleep 41", nproc_per_node: 1}\n' > vanish.yaml
"$GPUCTL_BIN" --state-dir "$STATE" -o json apply -f vanish.yaml --wait --timeout 120 > "$T/e11.json" 2> /dev/null &
wpid=$!
for _ in $(seq 100); do compgen -G "$STATE/local/vanish-0-*" > /dev/null && break; sleep 0.1; done
VDIR=$(echo "$STATE"/local/vanish-0-*)
wait_for_sleep "$VDIR" || true
pids=$(node_pids "$VDIR")
expect_match "11: the node's processes were found" "[0-9]" "$pids"
# shellcheck disable=SC2086
kill -KILL $pids 2> /dev/null || true
run_rc rc wait "$wpid"
expect_eq "11: node processes killed mid-run" 11 "$rc"
check_schema "$T/e11.json" apply
expect_eq "11: json node_lost, no exit status" "node_lost 11 None" "$(code "$T/e11.json") $(json_get "$T/e11.json" 'd["exit_code"]')"
g -y destroy vanish > /dev/null
finish
