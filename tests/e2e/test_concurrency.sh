#!/bin/bash
# Concurrent gpuctl processes on one state directory: six applies of the
# same spec at once make one cluster with exactly its nodes (the others
# find it unchanged or are told it is locked, exit 9); twenty concurrent
# status readers and a destroy race leave a consistent state.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" && cd "$T/work"
cat > job.yaml <<'YAML'
name: racer
nodes: 2
run: { command: "sleep 30", nproc_per_node: 1 }
YAML

pids=()
for i in 1 2 3 4 5 6; do
    ( set +e; g -q apply -f job.yaml > "$T/out$i.txt" 2> "$T/err$i.txt"; echo $? > "$T/rc$i" ) &
    pids+=($!)
done
wait "${pids[@]}"
codes=$(cat "$T"/rc* | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
echo "# exit codes (code:count): $codes"
bad=$(cat "$T"/rc* | grep -vcE '^(0|9)$' || true)
expect_eq "every apply exited 0 or 9 (locked)" 0 "$bad"
created=$(cat "$T"/out*.txt | grep -c 'created 2 node' || true)
expect_eq "exactly one apply created the nodes" 1 "$created"
expect_eq "two node directories" 2 "$(find "$STATE/local" -mindepth 1 -maxdepth 1 -type d | wc -l)"
g -o json status > "$T/s.json"
expect_eq "one live cluster with two nodes" "1 2" "$(json_get "$T/s.json" 'len(d["clusters"]), len(d["clusters"][0]["nodes"])' | tr -d '(),')"
if grep -l . "$T"/err*.txt >/dev/null 2>&1; then
    expect_match "the locked ones say why" "cluster 'racer' is being changed by another gpuctl" "$(cat "$T"/err*.txt)"
fi

# Twenty readers at once while the nodes run: all succeed.
pids=()
for i in $(seq 20); do
    ( set +e; g -o json status racer > "$T/r$i.json" 2>&1; echo $? > "$T/rr$i" ) &
    pids+=($!)
done
wait "${pids[@]}"
expect_eq "twenty concurrent status calls exit 0" 0 "$(cat "$T"/rr* | grep -vc '^0$' || true)"

# Two destroys at once: one deletes, the other finds it already destroyed.
( set +e; g -y destroy racer > "$T/d1.txt" 2>&1; echo $? > "$T/dr1" ) &
p1=$!
( set +e; g -y destroy racer > "$T/d2.txt" 2>&1; echo $? > "$T/dr2" ) &
p2=$!
wait $p1 $p2
expect_eq "both destroys exit 0" "0 0" "$(cat "$T/dr1") $(cat "$T/dr2")"
expect_eq "one destroyed, one found nothing" "1 1" \
    "$(cat "$T/d1.txt" "$T/d2.txt" | grep -c 'destroyed (2 node') $(cat "$T/d1.txt" "$T/d2.txt" | grep -c 'already destroyed, nothing to destroy')"
expect_eq "no node directories left" 0 "$(find "$STATE/local" -mindepth 1 -maxdepth 1 -type d | wc -l)"
finish
