#!/bin/bash
# The spec's `data` (docs/spec.md#data) on the local provider:
#  1. validate and plan refuse what apply would, with file:line:column (a
#     missing directory, an s3:// URL on a spec of local only);
#  2. plan says what moves: the Data section and the `data` array of
#     plan -o json (docs/schema/plan.schema.json), counted offline;
#  3. apply of a 2-node spec with data {ds: ./ds}: the data set is pushed
#     to the local store before the nodes start and both nodes read
#     $GPUCTL_DATA_DIR/ds/file; destroy, change one file, apply again:
#     exactly that file moves, and the job reads its new content;
#  4. data pull NAME DIR: the round trip, incremental, with exact counts.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work/ds/sub"
cd "$T/work"
export GPUCTL_CONFIG_DIR="$T/config"

printf 'one\n' > ds/file
printf 'twotwo\n' > ds/sub/b
printf 'x' > ds/c

# ---- 1. refused offline, with the place ------------------------------------
cat > bad.yaml <<'EOF'
name: dd
data:
  ds: ./ds
  gone: ./nope
run: echo
EOF
run_rc rc g validate -f bad.yaml 2> "$T/e.txt"
expect_eq "validate: a missing data directory, exit 4, at its place" \
    "4 gpuctl: error: bad.yaml:4:9: data.gone: directory './nope' does not exist (resolved: $T/work/nope)" \
    "$rc $(cat "$T/e.txt")"
run_rc rc g plan -f bad.yaml 2> "$T/e.txt" > /dev/null
expect_eq "plan: the same" \
    "4 gpuctl: error: bad.yaml:4:9: data.gone: directory './nope' does not exist (resolved: $T/work/nope)" \
    "$rc $(cat "$T/e.txt")"
cat > url.yaml <<'EOF'
name: dd
data: {ds: 's3://shared-data/imagenet'}
run: echo
EOF
run_rc rc g plan -f url.yaml 2> "$T/e.txt" > /dev/null
expect_eq "plan: an s3:// URL on a spec of local only, exit 4" \
    "4 gpuctl: error: url.yaml:2:12: data.ds: s3:// is the store of aws, which is not among the spec's providers (local)" \
    "$rc $(cat "$T/e.txt")"
expect_eq "nothing was recorded, nothing pushed" "no" "$([ -e "$STATE/store" ] && echo yes || echo no)"

# ---- 2. plan: what moves ---------------------------------------------------
cat > job.yaml <<'EOF'
name: dd
nodes: 2
data:
  ds: ./ds
run: echo "rank $GPUCTL_NODE_RANK read $(cat "$GPUCTL_DATA_DIR/ds/file") from $GPUCTL_DATA_DIR"
EOF
expect_eq "plan: the Data section" \
    "Data:|  data ds: ./ds (3 file(s), 12 B) is uploaded to local's store in local at apply (only files changed since the last push move)" \
    "$(g plan -f job.yaml | grep -A1 '^Data:' | paste -sd'|')"
g -o json plan -f job.yaml > "$T/plan.json"
check_schema "$T/plan.json" plan
expect_eq "plan -o json: the data array" \
    "ds ./ds directory 3 12 local" \
    "$(json_get "$T/plan.json" '" ".join(str(x) for e in d["data"] for x in (e["name"], e["source"], e["kind"], e["files"], e["bytes"], e["region"]))')"
cp "$T/work/job.yaml" "$T/nodata.yaml" && sed -i '/^data:/,/^  ds:/d' "$T/nodata.yaml"
expect_eq "a spec without data: no data member" "False" \
    "$(g -o json plan -f "$T/nodata.yaml" | python3 -c 'import json,sys; print("data" in json.load(sys.stdin))')"

# ---- 3. apply: pushed before the nodes start, read on both nodes ----------
run_rc rc g -y apply -f job.yaml --wait > "$T/a1.out" 2> "$T/a1.err"
[ "$rc" = 0 ] || cat "$T/a1.err" "$T/a1.out"
expect_eq "apply --wait: exit 0" 0 "$rc"
expect_eq "apply: the data set pushed, every file, before the first node" \
    "gpuctl: data ds: 3 file(s) sent (12 B), 0 unchanged, 0 deleted -> $STATE/store/data/ds|created node dd-0" \
    "$(grep -E '^gpuctl: data ds|^created node' "$T/a1.err" "$T/a1.out" -h | head -2 | sed 's/ (dd-.*//' | paste -sd'|')"
expect_eq "both nodes read the data set at \$GPUCTL_DATA_DIR/ds" \
    "rank 0 read one from $STATE/store/data|rank 1 read one from $STATE/store/data" \
    "$(g logs dd | grep -o 'rank [01] read .*' | sort | paste -sd'|')"
g -y destroy dd > /dev/null 2>&1
printf 'ONE!\n' > ds/file
run_rc rc g -y apply -f job.yaml --wait > "$T/a2.out" 2> "$T/a2.err"
[ "$rc" = 0 ] || cat "$T/a2.err" "$T/a2.out"
expect_eq "apply again after one file changed: exactly it moved" \
    "0 gpuctl: data ds: 1 file(s) sent (5 B), 2 unchanged, 0 deleted -> $STATE/store/data/ds" \
    "$rc $(grep '^gpuctl: data ds' "$T/a2.err")"
expect_eq "the job read its new content on both nodes" \
    "rank 0 read ONE! from $STATE/store/data|rank 1 read ONE! from $STATE/store/data" \
    "$(g logs dd | grep -o 'rank [01] read .*' | sort | paste -sd'|')"
g -y destroy dd > /dev/null 2>&1

# ---- 4. data pull ---------------------------------------------------------
run_rc rc g data pull ds "$T/out" > "$T/p1.txt"
expect_eq "data pull: every file" "0|data ds: 3 file(s) received (13 B), 0 unchanged|  $T/out" \
    "$rc|$(sed -n 1p "$T/p1.txt")|$(sed -n 2p "$T/p1.txt")"
expect_eq "  the files as pushed" "ONE!|twotwo|x" \
    "$(cat "$T/out/file")|$(cat "$T/out/sub/b")|$(cat "$T/out/c")"
printf 'local edit\n' > "$T/out/c"
g -o json data pull ds "$T/out" > "$T/p2.json"
check_schema "$T/p2.json" data
expect_eq "data pull again -o json: only the file that differs" "pull ds 1 2 1" \
    "$(json_get "$T/p2.json" '" ".join(str(x) for x in (d["action"], d["name"], d["files_received"], d["files_unchanged"], d["bytes_received"]))')"
expect_eq "  its store content is back" "x" "$(cat "$T/out/c")"
run_rc rc g data pull nosuch "$T/out2" 2> "$T/e.txt"
expect_eq "data pull of an unknown data set: exit 7, nothing made" \
    "7 gpuctl: error: no data set 'nosuch' in the store of local|no" \
    "$rc $(cat "$T/e.txt")|$([ -e "$T/out2" ] && echo yes || echo no)"
run_rc rc g data pull ds 2> "$T/e.txt"
expect_match "data pull without a directory: exit 3" "data pull needs a data set name and a directory" "$(cat "$T/e.txt")"
expect_eq "  (exit status)" 3 "$rc"

finish
