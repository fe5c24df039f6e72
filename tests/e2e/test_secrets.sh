#!/bin/bash
# The spec's `secrets` (docs/spec.md "secrets"): names whose values are read
# on this machine at apply time from the environment or a file, reach the
# job's environment on local, and never enter the state, plan files, the
# node's files, status or logs; what cannot be read, a provider that cannot
# deliver them, and a name in env too are refused before anything is made.
# Also: a relative --state-dir runs local nodes (their script was looked up
# relative to the node's own directory; regression).
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" && cd "$T/work"
unset MY_TOKEN SRC_VAR

V1="v1-$(printf %s "$T" | sha256sum | cut -c1-16)"   # values no file holds by chance
V2="v2-$(printf %s "$V1" | sha256sum | cut -c1-16)"
V3="v3-$(printf %s "$V2" | sha256sum | cut -c1-16)"
printf '%s\r\n' "$V3" > tok && chmod 600 tok
h() { printf %s "$1" | sha256sum | cut -c1-16; }   # the job compares hashes:
H1=$(h "$V1") H2=$(h "$V2") H3=$(h "$V3")           # no value in the spec
cat > s.yaml <<YAML
name: sec
secrets:
  MY_TOKEN:
  OTHER: env:SRC_VAR
  FROMFILE: file:./tok
env: {PLAIN: visible}
run:
  command: >-
    h() { printf %s "\$1" | sha256sum | cut -c1-16; };
    [ "\$(h "\$MY_TOKEN")" = $H1 ] && [ "\$(h "\$OTHER")" = $H2 ] &&
    [ "\$(h "\$FROMFILE")" = $H3 ] && echo "secrets arrived; PLAIN=\$PLAIN"
  nproc_per_node: 1
YAML
grep_values() { grep -rlF -e "$V1" -e "$V2" -e "$V3" "$@" 2>/dev/null || true; }

# ---- validate: names and sources, never a value; no value needed yet
run_rc rc g -o json validate -f s.yaml > "$T/v.json"
expect_eq "validate without the values set: exit 0" 0 "$rc"
expect_eq "the canonical spec lists names and sources, by name" \
    '{"FROMFILE": "file:./tok", "MY_TOKEN": "env:MY_TOKEN", "OTHER": "env:SRC_VAR"}' \
    "$(json_get "$T/v.json" 'json.dumps(d["spec"]["secrets"], sort_keys=True)')"
spec_hash=$(json_get "$T/v.json" 'd["spec_hash"]')

# ---- plan and apply refuse a value they cannot read, naming it (exit 4)
run_rc rc g plan -f s.yaml > /dev/null 2> "$T/e.txt"
expect_eq "plan with MY_TOKEN unset: exit 4" 4 "$rc"
expect_eq "names the field and the variable" "gpuctl: error: s.yaml:3:3: secrets.MY_TOKEN: environment variable MY_TOKEN is not set" "$(cat "$T/e.txt")"
export MY_TOKEN="$V1" SRC_VAR="$V2"
chmod 000 tok
if [ "$(id -u)" != 0 ]; then
    run_rc rc g apply -f s.yaml -y > /dev/null 2> "$T/e.txt"
    expect_eq "apply with an unreadable file: exit 4" 4 "$rc"
fi
chmod 600 tok
mv tok tok.away
run_rc rc g apply -f s.yaml -y > /dev/null 2> "$T/e.txt"
expect_eq "apply with a missing file: exit 4" 4 "$rc"
expect_eq "names the field and the file" "gpuctl: error: s.yaml:5:13: secrets.FROMFILE: file $T/work/tok: No such file or directory" "$(cat "$T/e.txt")"
expect_eq "nothing was made" "" "$(g status 2>/dev/null | grep sec)"
mv tok.away tok

# ---- the job gets them (a relative --state-dir, as a user may give)
run_rc rc "$GPUCTL_BIN" --state-dir ./rel-state apply -f s.yaml --wait -y > "$T/out.txt" 2>&1
expect_eq "apply --wait with a relative --state-dir: exit 0" 0 "$rc"
expect_match "the job saw the three values (file: one CRLF dropped)" "secrets arrived; PLAIN=visible" "$(cat "$T/out.txt")"
"$GPUCTL_BIN" --state-dir ./rel-state -o json status sec > "$T/st.json" 2>&1
"$GPUCTL_BIN" --state-dir ./rel-state logs sec > "$T/logs.txt" 2>&1
"$GPUCTL_BIN" --state-dir ./rel-state plan -f s.yaml --out "$T/again.plan" > /dev/null 2>&1
expect_eq "no value in the state, the node's files, status, logs or a plan file" "" \
    "$(grep_values ./rel-state "$T/st.json" "$T/logs.txt" "$T/again.plan" "$T/out.txt")"
expect_eq "the same spec applied again changes nothing (same hash)" "$spec_hash" \
    "$(json_get "$T/st.json" 'd["clusters"][0]["spec_hash"] if "clusters" in d else d["cluster"]["spec_hash"]')"
"$GPUCTL_BIN" --state-dir ./rel-state -y destroy sec > /dev/null 2>&1

# ---- gpuctl ssh into a local node: the job's secrets, and still no file
# holding them (regression: shell.env once kept `export NAME='value'`)
sed -e 's/^name: sec$/name: sec2/' -e 's/^  command: >-$/  command: >-\n    while [ ! -e release ]; do sleep 0.2; done;/' \
    s.yaml > s2.yaml
run_rc rc "$GPUCTL_BIN" --state-dir "$T/s2" apply -f s2.yaml -y > /dev/null 2> "$T/s2.err"
expect_eq "apply of a job that waits: exit 0" 0 "$rc"
got=""
for _ in $(seq 1 100); do
    got=$("$GPUCTL_BIN" --state-dir "$T/s2" ssh sec2 -- 'printf %s "$MY_TOKEN" | sha256sum | cut -c1-16' \
          2>> "$T/s2.err") && [ -n "$got" ] && break
    sleep 0.2
done
expect_eq "ssh into the node: the job's secret in its environment" "$H1" "$got"
expect_eq "... and no value in any file of the state (shell.env included)" "" "$(grep_values "$T/s2")"
touch release
"$GPUCTL_BIN" --state-dir "$T/s2" -y destroy sec2 > /dev/null 2>&1

# ---- a provider that sends them over ssh (aws, test_aws_deliver.sh): taken
# by plan; one that can neither is refused (test_engine_queue.c)
sed 's/^name: sec$/name: sec-aws\nprovider: aws\nresources: {gpu: T4:1}/' s.yaml > aws.yaml
run_rc rc g plan -f aws.yaml > "$T/aws-plan.txt" 2> "$T/e.txt"
expect_eq "plan of secrets on aws: exit 0" "0 " "$rc $(cat "$T/e.txt")"
expect_eq "no value in its output" "" "$(grep_values "$T/aws-plan.txt")"

# ---- spec errors: file:line:column and the field
printf 'name: bad\nenv: {TOKEN: x}\nsecrets:\n  TOKEN:\nrun: "true"\n' > dup.yaml
run_rc rc g validate -f dup.yaml > /dev/null 2> "$T/e.txt"
expect_eq "a name in env and secrets: exit 4" 4 "$rc"
expect_eq "said at the secret" "gpuctl: error: dup.yaml:4:3: secrets.TOKEN: TOKEN is in env too; a variable is either configuration (env) or a secret" "$(cat "$T/e.txt")"
printf 'name: bad\nsecrets:\n  TOKEN: vault:x\nrun: "true"\n' > src.yaml
run_rc rc g validate -f src.yaml > /dev/null 2> "$T/e.txt"
expect_eq "an unknown source: exit 4" 4 "$rc"
expect_eq "names the forms, never the value (it may be the secret)" "gpuctl: error: src.yaml:3:10: secrets.TOKEN: expected null (the environment variable TOKEN), env:VAR or file:PATH; the value is not shown, as it may be the secret itself, which belongs in the environment or a file" "$(cat "$T/e.txt")"
printf 'name: bad\nsecrets:\n  TOKEN: env:1BAD\nrun: "true"\n' > src2.yaml
run_rc rc g validate -f src2.yaml > /dev/null 2> "$T/e.txt"
expect_eq "env: with a name that is not a variable's: exit 4, said so" \
    "4 gpuctl: error: src2.yaml:3:10: secrets.TOKEN: env:VAR: '1BAD' is not a variable name (letters, digits and '_', not starting with a digit)" \
    "$rc $(cat "$T/e.txt")"
# file:~/PATH is this machine's home, as in workdir and data (spec.md)
mkdir -p "$T/home" && printf 'v\n' > "$T/home/tok2"
printf 'name: home\nsecrets:\n  A: file:~/tok2\n  B: file:~/none\nrun: "true"\n' > home.yaml
HOME="$T/home" run_rc rc g plan -f home.yaml > /dev/null 2> "$T/e.txt"
expect_eq "file:~/: read under HOME; a missing one named at its place: exit 4" \
    "4 gpuctl: error: home.yaml:4:6: secrets.B: file $T/home/none: No such file or directory" \
    "$rc $(cat "$T/e.txt")"
# secrets on slurm: taken (its srun step's environment, test_slurm_exec.sh);
# a provider that can neither is refused (test_engine_queue.c)
printf 'name: sl\nprovider: slurm\nsecrets:\n  TOKEN:\nrun: "true"\n' > sl.yaml
run_rc rc g validate -f sl.yaml > /dev/null 2> "$T/e.txt"
expect_eq "validate of secrets on slurm alone: exit 0" "0 " "$rc $(cat "$T/e.txt")"
printf 'name: sl\nprovider: [slurm, aws]\nsecrets:\n  TOKEN:\nrun: "true"\n' > sl2.yaml
run_rc rc g validate -f sl2.yaml > /dev/null 2> "$T/e.txt"
expect_eq "... and with aws too: exit 0" "0 " "$rc $(cat "$T/e.txt")"
printf 'name: bad\nsecrets:\n  GPUCTL_X:\nrun: "true"\n' > res.yaml
run_rc rc g validate -f res.yaml > /dev/null 2> "$T/e.txt"
expect_eq "a reserved name: exit 4" 4 "$rc"
finish
