#!/bin/bash
# The command line contract: exit codes (docs/exit-codes.md), error
# messages that name file:line:column, JSON documents that match
# docs/schema/, plain output without a TTY, render output that bash,
# shellcheck and cloud-init accept.  Help from the option tables,
# did-you-mean, durations, a declined prompt, and no escape sequences on a
# dumb terminal or with NO_COLOR.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" && cd "$T/work"

run_rc rc g version > "$T/v.txt"
expect_eq "version exits 0" 0 "$rc"
expect_match "version names the providers" "^gpuctl [0-9.]+ \(spec v1; providers: local, aws, slurm;" "$(cat "$T/v.txt")"
g -o json version > "$T/v.json"
check_schema "$T/v.json" version
expect_eq "help providers names the config sections a provider takes" \
    'slurm: [slurm "NAME"] sections of the config file, keys login, partitions, account, qos, gpu_hour_price, job_dir (docs/providers/slurm.md).' \
    "$(g help providers | tail -1)"

run_rc rc g help > "$T/help.txt"
expect_eq "help exits 0" 0 "$rc"
for c in validate apply status logs destroy render version; do
    expect_match "help lists $c" "^  $c " "$(cat "$T/help.txt")"
done
run_rc rc g apply -h > "$T/apply-help.txt"
expect_match "apply -h shows usage" "^usage: gpuctl apply -f FILE" "$(cat "$T/apply-help.txt")"

# --version is `gpuctl version`.
run_rc rc g --version > "$T/v2.txt"
expect_eq "--version: exit 0, same output as version" "0 $(cat "$T/v.txt")" "$rc $(cat "$T/v2.txt")"
g -o json --version > "$T/v2.json"
check_schema "$T/v2.json" version

# Each command's -h explains its options (from the table the parser uses),
# then the global ones, in 80 columns; the global help names no provider.
for c in validate offers plan apply status logs destroy render catalog data check version; do
    run_rc rc g "$c" -h > "$T/h-$c.txt"
    expect_eq "$c -h: exit 0" 0 "$rc"
    expect_eq "$c -h: help lines fit 80 columns" "" "$(tail -n +2 "$T/h-$c.txt" | awk 'length($0) > 80')"
    expect_match "$c -h: the global options follow" "^Global options:$" "$(cat "$T/h-$c.txt")"
done
g help plan > "$T/help-plan.txt"
expect_eq "help plan is plan -h" "$(cat "$T/h-plan.txt")" "$(cat "$T/help-plan.txt")"
expect_match "plan -h documents --detailed-exitcode" "^      --detailed-exitcode  exit 0 when apply would change nothing, 2 when it$" "$(cat "$T/h-plan.txt")"
expect_match "plan -h documents --out" "^      --out PLANFILE       also save the plan to PLANFILE" "$(cat "$T/h-plan.txt")"
expect_match "apply -h: --timeout takes a duration, with units" "^      --timeout DURATION   with --wait: give up waiting after DURATION \(90s, 5m,$" "$(cat "$T/h-apply.txt")"
expect_match "offers -h: --max-price in USD per node-hour" "^      --max-price USD      only offers of at most USD per node-hour \(> 0\)$" "$(cat "$T/h-offers.txt")"
expect_eq "the global options name no provider" "" \
    "$(sed -n '/^Global options:/,$p' "$T/h-plan.txt" | grep -Ei 'aws|ec2|azure|aliyun' || true)"
expect_match "--endpoint: every provider's, or one's with P=" "--endpoint \[P=\]URL   the API endpoint of every provider, or with P= of$" "$(cat "$T/h-plan.txt")"
expect_match "--endpoint points at the provider's page" "provider P only \(repeatable; docs/config.md,$" "$(cat "$T/h-plan.txt")"

# Did you mean: commands, options.
run_rc rc g aply 2> "$T/e.txt"
expect_eq "a mistyped command: exit 3, the closest one suggested" \
    "3 gpuctl: error: unknown command 'aply'; did you mean 'apply'? (see 'gpuctl help')" "$rc $(cat "$T/e.txt")"
run_rc rc g help aply 2> "$T/e.txt"
expect_eq "help of a mistyped command too" \
    "3 gpuctl: error: unknown command 'aply'; did you mean 'apply'? (see 'gpuctl help')" "$rc $(cat "$T/e.txt")"
run_rc rc g apply -f x.yaml --dry-rn 2> "$T/e.txt"
expect_eq "a mistyped option: exit 3" 3 "$rc"
expect_match "the closest option suggested" "^gpuctl: error: unknown option '--dry-rn'; did you mean '--dry-run'\? \(usage: gpuctl apply " "$(cat "$T/e.txt")"
run_rc rc g plan -f x.yaml --d 2> "$T/e.txt"
expect_match "an ambiguous prefix lists what it starts" "unknown option '--d'; it is the start of --detailed-exitcode, --debug " "$rc $(cat "$T/e.txt")"

run_rc rc g frobnicate 2> "$T/e.txt"
expect_eq "unknown command: exit 3" 3 "$rc"
expect_eq "unknown command message" "gpuctl: error: unknown command 'frobnicate' (see 'gpuctl help')" "$(cat "$T/e.txt")"
run_rc rc g apply --bogus 2> "$T/e.txt"
expect_eq "unknown option: exit 3" 3 "$rc"
expect_match "unknown option message" "unknown option '--bogus'" "$(cat "$T/e.txt")"
run_rc rc g apply 2> "$T/e.txt"
expect_eq "apply without -f: exit 3" 3 "$rc"
run_rc rc g -o yaml status 2> "$T/e.txt"
expect_eq "bad -o: exit 3" 3 "$rc"

# A spec error names file:line:column, in text and in JSON.
printf 'name: demo\nnodes: two\nrun: {command: "true"}\n' > bad.yaml
run_rc rc g validate -f bad.yaml 2> "$T/e.txt"
expect_eq "invalid spec: exit 4" 4 "$rc"
expect_match "message names file:line:col" "^gpuctl: error: bad.yaml:2:8: nodes: " "$(cat "$T/e.txt")"
run_rc rc g -o json validate -f bad.yaml > "$T/bad.json" 2>/dev/null
expect_eq "invalid spec in json: exit 4" 4 "$rc"
check_schema "$T/bad.json" validate
expect_eq "json error code" "spec 4" "$(json_get "$T/bad.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"
run_rc rc g apply -f missing.yaml 2> "$T/e.txt"
expect_eq "missing file: exit 5" 5 "$rc"
expect_match "missing file message" "missing.yaml: No such file or directory" "$(cat "$T/e.txt")"

cp "$GPUCTL_SOURCE_DIR/examples/quickstart.yaml" "$GPUCTL_SOURCE_DIR/examples/train_ddp.py" .
run_rc rc g validate -f quickstart.yaml > "$T/ok.txt"
expect_eq "quickstart validates" 0 "$rc"
expect_match "validate summary" "^quickstart.yaml: valid: cluster quickstart, 2 node\(s\) on local, spec [0-9a-f]{12}$" "$(cat "$T/ok.txt")"
g -o json validate -f quickstart.yaml > "$T/ok.json"
check_schema "$T/ok.json" validate

# A GPU model the catalog does not know is a spec error, with the field,
# where it is, and the models known.
printf 'name: gpus\nresources:\n  gpu: [H100:8, X100:8]\nrun: {command: "true"}\n' > gpus.yaml
run_rc rc g validate -f gpus.yaml 2> "$T/e.txt"
expect_eq "unknown GPU model: exit 4" 4 "$rc"
expect_match "names file:line:col, the field and the known models" \
    "^gpuctl: error: gpus.yaml:3:17: resources.gpu\[1\]: unknown GPU model 'X100' \(the catalog \(built-in\) knows T4, V100-16GB, .*, H100-80GB-SXM, .*; a family such as A100 matches every A100-\*\)$" \
    "$(cat "$T/e.txt")"
printf 'name: gpus\nresources: {gpu: "a100:4"}\nrun: {command: "true"}\n' > gpus1.yaml
run_rc rc g validate -f gpus1.yaml > /dev/null
expect_eq "a family, in any case, is known" 0 "$rc"
printf 'name: gpus\nresources: {gpu: "Z9"}\nrun: {command: "true"}\n' > gpus2.yaml
run_rc rc g -o json validate -f gpus2.yaml > "$T/gpus.json" 2> /dev/null
check_schema "$T/gpus.json" validate
expect_eq "json: spec error 4, one value named without an index" \
    "spec 4 gpus2.yaml:2:18: resources.gpu: unknown GPU model 'Z9'" \
    "$(json_get "$T/gpus.json" '" ".join((d["error"]["code"], str(d["error"]["exit_status"]), d["error"]["message"].split(" (")[0]))')"

# Durations take units, as in the spec; a bad one names the option.
run_rc rc g apply -f quickstart.yaml --dry-run --wait --timeout 5m --poll-interval 2s > /dev/null
expect_eq "--timeout 5m --poll-interval 2s: accepted" 0 "$rc"
run_rc rc g apply -f quickstart.yaml --dry-run --poll-interval 0.5 > /dev/null
expect_eq "--poll-interval: a bare number is seconds, fractions allowed" 0 "$rc"
run_rc rc g apply -f quickstart.yaml --wait --timeout 5x 2> "$T/e.txt"
expect_eq "--timeout 5x: exit 3" 3 "$rc"
expect_match "names the option and the forms" "^gpuctl: error: --timeout: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got '5x' " "$(cat "$T/e.txt")"
run_rc rc g apply -f quickstart.yaml --poll-interval 2h 2> "$T/e.txt"
expect_match "--poll-interval 2h: past the range, exit 3" "^3 gpuctl: error: --poll-interval: '2h' is not a number of seconds from 0.05 to 3600 " "$rc $(cat "$T/e.txt")"

# Unknown clusters.
run_rc rc g status nosuch 2> "$T/e.txt"
expect_eq "status of an unknown cluster: exit 7" 7 "$rc"
run_rc rc g logs nosuch 2> "$T/e.txt"
expect_eq "logs of an unknown cluster: exit 7" 7 "$rc"
run_rc rc g -o json status nosuch > "$T/nf.json" 2>/dev/null
check_schema "$T/nf.json" error
g -o json status > "$T/empty.json"
check_schema "$T/empty.json" status
expect_eq "no clusters yet" 0 "$(json_get "$T/empty.json" 'len(d["clusters"])')"

# Rendered user-data: valid cloud-config, valid shell, no colour codes.
for node in 0 1; do
    g render -f quickstart.yaml --node "$node" --head-ip 10.1.2.3 > "$T/ud$node.yaml" 2>/dev/null
    expect_eq "node $node user-data starts with #cloud-config" "#cloud-config" "$(head -1 "$T/ud$node.yaml")"
    run_rc rc cloud-init schema --config-file "$T/ud$node.yaml" > "$T/schema.txt" 2>&1
    expect_eq "node $node user-data passes cloud-init schema" 0 "$rc"
    python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); sys.stdout.write(d["write_files"][0]["content"])' \
        "$T/ud$node.yaml" > "$T/boot$node.sh"
    run_rc rc bash -n "$T/boot$node.sh"
    expect_eq "node $node bootstrap passes bash -n" 0 "$rc"
    run_rc rc shellcheck -s bash "$T/boot$node.sh"
    expect_eq "node $node bootstrap passes shellcheck" 0 "$rc"
done
expect_match "worker's rendezvous is the head's IP literal" "10\.1\.2\.3" "$(cat "$T/ud1.yaml")"
expect_eq "no ANSI escapes when piped" 0 "$(cat "$T/v.txt" "$T/help.txt" "$T/ud0.yaml" | tr -cd '\033' | wc -c)"
run_rc rc g render -f quickstart.yaml --node 2 2> "$T/e.txt"
expect_eq "render of a node the spec lacks: exit 3" 3 "$rc"
g render -f quickstart.yaml --provider aws --encoded > "$T/enc.txt" 2>/dev/null
expect_eq "aws payload is base64 (of gzip when large) of the plain user-data" \
    "$(g render -f quickstart.yaml --provider aws 2>/dev/null | sha256sum)" \
    "$(base64 -d "$T/enc.txt" | gzip -cdf | sha256sum)"
# (regression) a worker of 3 or more nodes on aws is made by one RunInstances
# with the others: render shows that bootstrap (rank 1 plus the launch
# index), not one with the node's own rank, which EC2 never gets.
sed 's/^nodes: 2$/nodes: 3/' quickstart.yaml > q3.yaml
g render -f q3.yaml --provider aws --node 2 > "$T/q3.txt" 2> "$T/q3.err"
expect_eq "aws worker of 3: rank 1 plus the launch index" \
    "   export GPUCTL_NODE_RANK=1|   gpuctl_launch_index=\$(gpuctl_md_launch_index) || exit 1" \
    "$(grep -E '^ +(export GPUCTL_NODE_RANK=|gpuctl_launch_index=)' "$T/q3.txt" | paste -sd'|')"
expect_eq "aws worker of 3: render says so" \
    "gpuctl: note: aws's workers share one bootstrap: rank 1 plus each node's launch index" \
    "$(head -1 "$T/q3.err")"
g render -f quickstart.yaml --provider aws --node 1 > "$T/q2.txt" 2>/dev/null
expect_eq "aws worker of 2 (made alone): its own rank" "   export GPUCTL_NODE_RANK=1" \
    "$(grep -E '^ +export GPUCTL_NODE_RANK=' "$T/q2.txt")"
expect_eq "aws worker of 2: no launch index" 0 "$(grep -c gpuctl_md_launch_index "$T/q2.txt")"
# spot workers beside an on-demand head: the interruption-notice watcher on
# the workers only, torchrun restarting into a rendezvous the replacement
# joins; budget.max_total's node end needs the plan's prices, which render
# does not make (it says so)
sed 's/^nodes: 2$/nodes: 2\nspot: {policy: spot, head: on-demand}\nbudget: {max_total: 10}/' \
    quickstart.yaml > qs.yaml
g render -f qs.yaml --provider aws --node 1 > "$T/qs1.txt" 2> "$T/qs1.err"
g render -f qs.yaml --provider aws --node 0 > "$T/qs0.txt" 2>/dev/null
expect_eq "spot worker: the watcher runs; on-demand head: none" "1 0" \
    "$(grep -c '^ *gpuctl_notice_watch &$' "$T/qs1.txt") $(grep -c 'gpuctl_notice_watch' "$T/qs0.txt")"
expect_eq "spot: torchrun restarts, the rendezvous waits for a replacement" \
    "gpuctl_restarts=3|gpuctl_rdzv_conf+=\",join_timeout=1800\"" \
    "$(grep -E '^ *(gpuctl_restarts=|gpuctl_rdzv_conf\+=)' "$T/qs1.txt" | sed 's/^ *//' | paste -sd'|')"
expect_eq "render says the budget end is not in it" \
    "gpuctl: note: budget.max_total's end on the node needs the prices of the plan's offer: not rendered here (GPUCTL_BUDGET_S=0; docs/spot.md)" \
    "$(grep 'budget.max_total' "$T/qs1.err")"
# no lifecycle.max_duration nor budget.max_total: the node's default end,
# 72 h (spec.h), rendered and said; max_duration: none renders no end
grep -v 'max_duration' quickstart.yaml > qd.yaml
g render -f qd.yaml --provider aws > "$T/qd.txt" 2> "$T/qd.err"
expect_eq "render: the default end" "GPUCTL_MAX_DURATION_S=259200" \
    "$(grep -oE 'GPUCTL_MAX_DURATION_S=[0-9]+' "$T/qd.txt")"
expect_eq "render says the default end applies" \
    "gpuctl: note: the spec sets no lifecycle.max_duration nor budget.max_total: the node ends after the default 259200s (72h; lifecycle.max_duration: none keeps it up)" \
    "$(grep 'default' "$T/qd.err")"
sed 's/max_duration: .*/max_duration: none/' quickstart.yaml > qn.yaml
g render -f qn.yaml --provider aws > "$T/qn.txt" 2> "$T/qn.err"
expect_eq "render of max_duration: none: no end, no note" "GPUCTL_MAX_DURATION_S=0 0" \
    "$(grep -oE 'GPUCTL_MAX_DURATION_S=[0-9]+' "$T/qn.txt") $(grep -c 'default' "$T/qn.err")"

# Dry run changes nothing.
run_rc rc g apply -f quickstart.yaml --dry-run > "$T/dry.txt"
expect_eq "dry run exits 0" 0 "$rc"
expect_eq "dry run says what it would do" "cluster quickstart: would create 2 node(s) (dry run, nothing changed)" "$(cat "$T/dry.txt")"
expect_eq "dry run created nothing" 0 "$(g -o json status | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["clusters"]))')"

# Options may follow operands (regression: they were refused after one).
run_rc rc g logs nosuch --node 1 2> "$T/e.txt"
expect_eq "logs NAME --node N: parsed, exit 7" 7 "$rc"
run_rc rc g status nosuch -o json > "$T/nf2.json" 2>/dev/null
expect_eq "status NAME -o json: exit 7" 7 "$rc"
check_schema "$T/nf2.json" error
run_rc rc g validate quickstart.yaml -o json > "$T/ok2.json"
expect_eq "validate FILE -o json: exit 0" 0 "$rc"
check_schema "$T/ok2.json" validate
run_rc rc g destroy 'bad;name' -y 2> "$T/e.txt"
expect_eq "destroy of an invalid name: exit 3" 3 "$rc"
run_rc rc g apply -f quickstart.yaml -f bad.yaml 2> "$T/e.txt"
expect_eq "-f given twice: exit 3" 3 "$rc"
expect_match "says so" "option '-f' given twice" "$(cat "$T/e.txt")"
run_rc rc g apply -f quickstart.yaml --timeout 5 2> "$T/e.txt"
expect_eq "--timeout without --wait: exit 3" 3 "$rc"
run_rc rc g apply -f quickstart.yaml --poll-interval 0.001 2> "$T/e.txt"
expect_eq "--poll-interval below 0.05 s (a hammered API): exit 3" 3 "$rc"
expect_match "says the range" "--poll-interval: '0.001' is not a number of seconds from 0.05 to 3600" "$(cat "$T/e.txt")"

# Provider candidates: the cheapest offer among them wins (local costs 0).
printf 'name: cand\nprovider: [aws, local]\nrun: {command: "true"}\n' > cand.yaml
run_rc rc g apply -f cand.yaml --dry-run > "$T/cand.txt" 2> "$T/cand.err"
expect_eq "provider [aws, local]: local is cheapest" 0 "$rc"
expect_eq "and the dry run says what it would do" "cluster cand: would create 1 node(s) (dry run, nothing changed)" "$(cat "$T/cand.txt")"
printf 'name: cand\nprovider: [azure, local]\nrun: {command: "true"}\n' > cand1.yaml
run_rc rc g plan -f cand1.yaml > "$T/cand-plan.txt"
expect_match "plan says azure is planned from the catalog only" "note: provider azure is not built into this gpuctl yet" "$(cat "$T/cand-plan.txt")"
printf 'name: cand\nprovider: [azure, aliyun]\nrun: {command: "true"}\n' > cand2.yaml
run_rc rc g apply -f cand2.yaml --dry-run 2> "$T/cand2.err"
expect_eq "chosen provider not built in: exit 6" 6 "$rc"
expect_match "and says so" "provider '(azure|aliyun)' is not built into this gpuctl \(available: local, aws, slurm\)" "$(cat "$T/cand2.err")"

# The local provider refuses what it cannot be (exit 22), it does not ignore it.
for y in 'resources: {instance_types: p4d.24xlarge}' 'region: us-east-1' \
         'resources: {interconnect: efa}' 'spot: true'; do
    printf 'name: cons\n%s\nrun: {command: "true"}\n' "$y" > cons.yaml
    run_rc rc g apply -f cons.yaml --dry-run 2> "$T/cons.err"
    expect_eq "local refuses '$y' (exit 22)" 22 "$rc"
done
expect_eq "spot message" "gpuctl: error: local: spot: this machine has no spot capacity (use policy auto or on-demand)" "$(cat "$T/cons.err")"
printf 'name: wd\nworkdir: ./nope\nrun: {command: "true"}\n' > wd.yaml
run_rc rc g apply -f wd.yaml --dry-run 2> "$T/wd.err"
expect_eq "missing workdir: exit 4" 4 "$rc"
expect_match "names the field" "^gpuctl: error: wd.yaml:2:10: workdir: directory './nope' does not exist" "$(cat "$T/wd.err")"

# (regression) destroy of a name never recorded (a typo) exited 0 with
# "not found, nothing to destroy", so a script carried on while the real
# cluster ran: it exits 7 and suggests the closest recorded names.  A
# cluster recorded and destroyed still exits 0 (destroy is idempotent).
printf 'name: my-cluster\nrun: {command: "sleep 300", nproc_per_node: 1}\n' > mine.yaml
printf 'name: my-clusters\nrun: {command: "true", nproc_per_node: 1}\n' > gone.yaml
printf 'name: my-clustr\nrun: {command: "true", nproc_per_node: 1}\n' > typo.yaml
g -q apply -f mine.yaml > /dev/null
g -q apply -f gone.yaml > /dev/null
g -y destroy my-clusters > /dev/null
run_rc rc g -y destroy my-clustr > "$T/dt.txt" 2> "$T/dt.err"
expect_eq "destroy of a never-recorded name: exit 7" 7 "$rc"
expect_eq "nothing on stdout" "" "$(cat "$T/dt.txt")"
expect_eq "names the state, suggests the live name first, then the destroyed one" \
    "gpuctl: error: no cluster named 'my-clustr' was ever recorded in the state at $STATE; did you mean 'my-cluster' or 'my-clusters' (destroyed)?" \
    "$(cat "$T/dt.err")"
run_rc rc g -y -o json destroy my-clustr > "$T/dt.json" 2> /dev/null
expect_eq "-o json: exit 7" 7 "$rc"
check_schema "$T/dt.json" destroy
expect_eq "-o json: not found, nothing deleted, the suggestions, error not_found 7" \
    "False 0 ['my-cluster', 'my-clusters'] not_found 7" \
    "$(json_get "$T/dt.json" '" ".join(str(x) for x in (d["found"], d["deleted"], d["suggestions"], d["error"]["code"], d["error"]["exit_status"]))')"
run_rc rc g -y destroy -f typo.yaml 2> "$T/dtf.err"
expect_eq "destroy -f of a spec never applied: exit 7" 7 "$rc"
expect_match "and suggests too" "did you mean 'my-cluster' or 'my-clusters' \(destroyed\)\?$" "$(cat "$T/dtf.err")"
run_rc rc g -y destroy zzz 2> "$T/dtz.err"
expect_eq "nothing close: exit 7, says where to look" \
    "7 gpuctl: error: no cluster named 'zzz' was ever recorded in the state at $STATE (gpuctl status --all lists the recorded ones)" \
    "$rc $(cat "$T/dtz.err")"
run_rc rc g -y destroy my-clusters > "$T/dd.txt"
expect_eq "destroy of a destroyed cluster: exit 0" \
    "0 cluster my-clusters: already destroyed, nothing to destroy" "$rc $(cat "$T/dd.txt")"
run_rc rc g -y -o json destroy -f gone.yaml > "$T/dd.json"
check_schema "$T/dd.json" destroy
expect_eq "-o json, -f: exit 0, not found, no error, no suggestions" "0 False 0 [] None" \
    "$rc $(json_get "$T/dd.json" '" ".join(str(x) for x in (d["found"], d["deleted"], d["suggestions"], d["error"]))')"
g -o json status > "$T/dlive.json"
expect_eq "the real cluster was left alone" "my-cluster" \
    "$(json_get "$T/dlive.json" '" ".join(c["name"] for c in d["clusters"])')"
run_rc rc g -y destroy my-cluster > "$T/dm.txt"
expect_eq "and destroy of its right name works" "0 cluster my-cluster: destroyed (1 node(s) deleted)" "$rc $(cat "$T/dm.txt")"

# Did you mean, for status and logs too (destroyed names included).
run_rc rc g status my-clustr 2> "$T/e.txt"
expect_eq "status of a typo: exit 7, the closest recorded names" \
    "7 gpuctl: error: no cluster named 'my-clustr'; did you mean 'my-cluster' (destroyed) or 'my-clusters' (destroyed)?" \
    "$rc $(cat "$T/e.txt")"
run_rc rc g logs my-clustr 2> "$T/e.txt"
expect_eq "logs of a typo: exit 7, the same" \
    "7 gpuctl: error: no cluster named 'my-clustr'; did you mean 'my-cluster' (destroyed) or 'my-clusters' (destroyed)?" \
    "$rc $(cat "$T/e.txt")"
run_rc rc g status my-cluster 2> "$T/e.txt"
expect_eq "status of a destroyed name: as before" \
    "7 gpuctl: error: no cluster named 'my-cluster' (gpuctl status --all shows destroyed ones)" "$rc $(cat "$T/e.txt")"

# Escape sequences: none when piped, nor on a terminal with TERM=dumb or
# NO_COLOR (on_tty.py gives the command a terminal for stdin, stdout and
# stderr, types ANSWER, and keeps what the terminal showed).
cat > "$T/on_tty.py" <<'PY'
import os, pty, subprocess, sys
answer, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
m, s = pty.openpty()
p = subprocess.Popen(cmd, stdin=s, stdout=s, stderr=s, close_fds=True)
os.close(s)
if answer:
    os.write(m, answer.encode())
data = b""
while True:
    try:
        chunk = os.read(m, 65536)
    except OSError:  # EIO: the command and its children closed the terminal
        break
    if not chunk:
        break
    data += chunk
open(out, "wb").write(data)
sys.exit(p.wait())
PY
on_tty() { local ans=$1 out=$2; shift 2; python3 "$T/on_tty.py" "$ans" "$out" "$@"; }
escapes() { tr -cd '\033' < "$1" | wc -c; }
printf 'name: esc\nresources: {gpu: "H100:64"}\nrun: {command: "true"}\n' > esc.yaml
g -q apply -f mine.yaml > /dev/null
for cmd in "status" "plan -f esc.yaml" "apply -f esc.yaml" "status nosuch" "validate -f bad.yaml"; do
    # shellcheck disable=SC2086
    env -u NO_COLOR TERM=xterm "$GPUCTL_BIN" --state-dir "$STATE" $cmd > "$T/p.out" 2> "$T/p.err" || true
    expect_eq "piped '$cmd': no escapes on stdout or stderr" "0 0" "$(escapes "$T/p.out") $(escapes "$T/p.err")"
    # shellcheck disable=SC2086
    run_rc rc on_tty "" "$T/t.out" env -u NO_COLOR TERM=dumb "$GPUCTL_BIN" --state-dir "$STATE" $cmd
    expect_eq "'$cmd' on a TERM=dumb terminal: no escapes" 0 "$(escapes "$T/t.out")"
    # shellcheck disable=SC2086
    run_rc rc on_tty "" "$T/t.out" env NO_COLOR=1 TERM=xterm "$GPUCTL_BIN" --state-dir "$STATE" $cmd
    expect_eq "'$cmd' on a terminal with NO_COLOR: no escapes" 0 "$(escapes "$T/t.out")"
done
run_rc rc on_tty "" "$T/t.out" env -u NO_COLOR TERM=xterm "$GPUCTL_BIN" --state-dir "$STATE" status nosuch
expect_match "(the harness sees them: a red error on a colour terminal)" $'\033\\[1;31mgpuctl: error:' "$(cat "$T/t.out")"

# Declining a prompt is not an error: it says what was not done (exit 3).
printf 'name: paid\nprovider: aws\nrun: {command: "true"}\n' > paid.yaml
run_rc rc on_tty $'n\n' "$T/t.out" "$GPUCTL_BIN" --state-dir "$STATE" apply -f paid.yaml
expect_eq "apply answered no: exit 3" 3 "$rc"
expect_match "asks first" "Create up to 1 paid node\(s\) on aws for cluster 'paid'\? \[y/N\]" "$(cat "$T/t.out")"
expect_match "says nothing was created" "apply cancelled; nothing was created" "$(cat "$T/t.out")"
expect_eq "and reports no error" "" "$(grep 'error' "$T/t.out" || true)"
run_rc rc on_tty $'n\n' "$T/t.out" "$GPUCTL_BIN" --state-dir "$STATE" destroy my-cluster
expect_eq "destroy answered no: exit 3" 3 "$rc"
expect_match "says what is left" "destroy cancelled; cluster 'my-cluster' and its 1 node\(s\) are left as they are" "$(cat "$T/t.out")"
expect_eq "and reports no error" "" "$(grep 'error' "$T/t.out" || true)"
expect_eq "the cluster is still there" "my-cluster" \
    "$(g -o json status | python3 -c 'import json,sys; print(" ".join(c["name"] for c in json.load(sys.stdin)["clusters"]))')"
g -y destroy my-cluster > /dev/null

# render -o json
g -o json render -f quickstart.yaml --provider aws > "$T/render.json" 2>/dev/null
check_schema "$T/render.json" render
# gzipped (over 16 KB plain since the node's job runner)
expect_eq "render json: encoded is base64 of the gzipped userdata" yes \
    "$(json_get "$T/render.json" '"yes" if __import__("gzip").decompress(__import__("base64").b64decode(d["encoded"])).decode() == d["userdata"] else "no"')"
run_rc rc g -o json logs nosuch -f > /dev/null 2>&1
expect_eq "logs -o json of an unknown cluster: exit 7" 7 "$rc"
finish
