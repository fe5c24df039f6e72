#!/bin/bash
# The state database file in trouble (docs/cli.md, "The state database"):
#  - a missing gpuctl.db is made, as before;
#  - (regression) a zero-byte gpuctl.db was taken for an empty state, so
#    destroy said "not found" and exited 0 while the nodes ran on: it is
#    refused (exit 5), named, and left as it is;
#  - (regression) a database of a newer schema was switched to WAL before
#    it was refused: not a byte of it changes now;
#  - (regression) on a full disk every command failed with "disk I/O
#    error (PRAGMA journal_mode=WAL)": see state_full_disk.sh, run here on
#    a real full file system where this test may mount one.
source "$(dirname "$0")/lib.sh" || exit 1
body="$(cd "$(dirname "$0")" && pwd)/state_full_disk.sh"
mkdir -p "$T/work" && cd "$T/work"
cat > job.yaml <<'YAML'
name: recorded
run: { command: "true", nproc_per_node: 1 }
YAML
DB="$STATE/gpuctl.db"

# 1. a first run makes the database, whole
run_rc rc g status > "$T/s1.txt"
expect_eq "status on a new state directory: exit 0" "0 no clusters (gpuctl status --all shows destroyed ones)" "$rc $(cat "$T/s1.txt")"
expect_eq "gpuctl.db made, not empty" yes "$([ -s "$DB" ] && echo yes || echo no)"
expect_eq "no gpuctl.db.new left" no "$([ -e "$DB.new" ] && echo yes || echo no)"

# 2. a zero-byte gpuctl.db is refused, by every command
mv "$DB" "$T/good.db"
: > "$DB"
empty_msg="gpuctl: error: state $DB is empty (0 bytes): the clusters it recorded are unknown (lost to a full disk, a truncation or a bad copy?), and gpuctl will not start a new state over it. Restore the file from a backup if you have one. Otherwise its nodes may still be running and billing: find them at each provider by the tag gpuctl:cluster and delete them there (docs/cli.md, 'The state database', says how for each provider); then move the file aside to start a new state: mv $DB $DB.empty"
run_rc rc g -y destroy recorded > "$T/d2.txt" 2> "$T/d2.err"
expect_eq "destroy with an empty gpuctl.db: exit 5, not 'not found'" 5 "$rc"
expect_eq "destroy prints nothing on stdout" "" "$(cat "$T/d2.txt")"
expect_eq "the error names the file and what to do" "$empty_msg" "$(cat "$T/d2.err")"
run_rc rc g -o json status > "$T/s2.json" 2> /dev/null
expect_eq "status -o json: exit 5" 5 "$rc"
expect_eq "json error: state, 5" "state 5" "$(json_get "$T/s2.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"
check_schema "$T/s2.json" error
run_rc rc g apply -f job.yaml 2> "$T/a2.err"
expect_eq "apply with an empty gpuctl.db: exit 5" 5 "$rc"
expect_eq "apply created nothing" 0 "$(find "$STATE/local" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)"
expect_eq "the file is left empty, alone" "0 absent absent absent" \
    "$(stat -c %s "$DB") $(for s in -wal -shm .new; do [ -e "$DB$s" ] && echo present || echo absent; done | tr '\n' ' ' | sed 's/ $//')"
mv "$DB" "$DB.empty"
run_rc rc g status > /dev/null
expect_eq "moved aside as told: a new state starts" 0 "$rc"

# 3. a newer schema is refused untouched (a rollback-journal database, so
#    that a switch to WAL would show in its header)
cp "$T/good.db" "$DB"
python3 - "$DB" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA journal_mode = DELETE")
c.execute("PRAGMA user_version = 99")
c.close()
PY
touch -d '2001-09-09 01:46:40 UTC' "$DB"
before="$(sha256sum < "$DB") $(stat -c %Y "$DB")"
run_rc rc g status 2> "$T/s3.err"
expect_eq "newer schema: exit 5" 5 "$rc"
expect_eq "says so, and that the file was left alone" \
    "gpuctl: error: state $DB: schema version 99 is newer than this gpuctl supports (5); the file was left as it is: use the newer gpuctl that wrote it" \
    "$(cat "$T/s3.err")"
run_rc rc g -y destroy recorded 2> /dev/null
expect_eq "destroy refuses it too: exit 5" 5 "$rc"
expect_eq "not a byte changed, nor the mtime" "$before" "$(sha256sum < "$DB") $(stat -c %Y "$DB")"
expect_eq "no WAL made next to it" "absent absent" \
    "$(for s in -wal -shm; do [ -e "$DB$s" ] && echo present || echo absent; done | tr '\n' ' ' | sed 's/ $//')"

# 4. a full disk, for real: a tiny tmpfs in a mount namespace of this test's
#    own (root, or an unprivileged user namespace); skipped where neither works
if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
    ns=(unshare -m --propagation private)
elif unshare -rm true 2>/dev/null; then
    ns=(unshare -rm)
else
    ns=()
fi
if [ ${#ns[@]} -gt 0 ] && "${ns[@]}" sh -c 'd=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d"' 2>/dev/null; then
    run_rc rc "${ns[@]}" bash "$body"
    expect_eq "full disk (state_full_disk.sh, on a full tmpfs)" 0 "$rc"
else
    echo "# SKIPPED: full disk: cannot mount a tmpfs here (needs root or unprivileged user namespaces); the unit test test_state (test_open_disk_full) covers it through a SQLite VFS"
fi
finish
