#!/bin/bash
# Run by test_state_file.sh inside a mount namespace of its own (unshare):
# the state lives on a tiny tmpfs that is then filled up.
#  - a command that must record (apply, destroy) fails, exit 5, saying the
#    disk is full;
#  - a command that only reads (status, logs, plan) still works, from the
#    state as last recorded, with a warning;
#  - once there is space again, destroy works.
source "$(dirname "$0")/lib.sh"
FULL="$T/full"
mkdir -p "$FULL"
mount -t tmpfs -o size=4m,mode=0700 tmpfs "$FULL"
trap 'rc=$?; umount -l "$FULL" 2>/dev/null; (exit $rc); cleanup' EXIT
STATE="$FULL/state"
mkdir -p "$T/work" && cd "$T/work"
cat > job.yaml <<'YAML'
name: filled
run: { command: "echo hello from the node", nproc_per_node: 1 }
YAML
run_rc rc g -q apply -f job.yaml --wait --timeout 200 > /dev/null
expect_eq "the job ran on the tmpfs state" 0 "$rc"

dd if=/dev/zero of="$FULL/fill" bs=4k 2>/dev/null || true
expect_eq "the disk is full" "no" "$(echo x 2>/dev/null >> "$FULL/probe" && echo yes || echo no)"
full_msg="the disk holding $STATE is full"

run_rc rc g -y destroy filled > /dev/null 2> "$T/d.err"
expect_eq "destroy on a full disk: exit 5" 5 "$rc"
expect_eq "destroy says the disk is full" "gpuctl: error: state $STATE/gpuctl.db: $full_msg (disk I/O error: PRAGMA user_version); free some space there and run the command again" "$(cat "$T/d.err")"
run_rc rc g apply -f job.yaml > /dev/null 2> "$T/a.err"
expect_eq "apply on a full disk: exit 5" 5 "$rc"
expect_match "apply says the disk is full" "$full_msg" "$(cat "$T/a.err")"

warn="gpuctl: warning: $full_msg: the state is open read-only, as last recorded; nothing is refreshed or recorded"
run_rc rc g status > "$T/s.txt" 2> "$T/s.err"
expect_eq "status on a full disk: exit 0" 0 "$rc"
expect_match "status shows the cluster as recorded" "^filled +local +1 +succeeded +0 " "$(cat "$T/s.txt")"
expect_eq "status warns, once" "$warn" "$(cat "$T/s.err")"
run_rc rc g -o json status filled > "$T/s.json" 2> /dev/null
expect_eq "status -o json: exit 0, the node succeeded" "0 succeeded" "$rc $(json_get "$T/s.json" 'd["clusters"][0]["nodes"][0]["phase"]')"
check_schema "$T/s.json" status
run_rc rc g logs filled > "$T/l.txt" 2> "$T/l.err"
expect_eq "logs on a full disk: exit 0" 0 "$rc"
expect_match "logs shows the node's log" "hello from the node" "$(cat "$T/l.txt")"
run_rc rc g -o json plan -f job.yaml > "$T/p.json" 2> /dev/null
expect_eq "plan on a full disk: exit 0, nothing to do" "0 none" "$rc $(json_get "$T/p.json" 'd["action"]')"

rm -f "$FULL/fill"
run_rc rc g -y destroy filled > "$T/d2.txt"
expect_eq "with space again, destroy works" "0 cluster filled: destroyed (1 node(s) deleted)" "$rc $(cat "$T/d2.txt")"
finish
