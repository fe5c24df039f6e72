#!/bin/bash
# The node's bootstrap on the local provider:
# - a spec saved on Windows (UTF-8 BOM, CR LF line ends, "\r\n\ufeff" in a
#   quoted run command) runs as meant: bash never sees a CR or a U+FEFF, the
#   spec hash is that of the same spec saved with LF, and `validate` says
#   what was removed, naming the field and file:line;
# - every node advertises its own IP literal: GPUCTL_NODE_IP in the job's
#   environment, and torchrun's --local_addr where its torch has it (torch
#   2.0 and later; the node log says so where it has not).
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work"
cd "$T/work"

# The same job twice: with LF, and as a Windows editor saves it (a BOM, CR
# LF line ends, and "\r\n\ufeff" where the LF spec has "\n").
cat > lf.yaml <<'SPEC'
name: crlf
provider: local
nodes: 2
resources:
  cpus: 1+
setup: |
  echo "setup-line [$(printf %s "one" | od -An -c | tr -s ' ')]" > setup.out
run:
  command: "printf 'rank=%s node_ip=%s cr=%s\\n' \"$RANK\" \"$GPUCTL_NODE_IP\" \"$(printf %s \"$GPUCTL_RUN_COMMAND\" | tr -cd '\\r\\357' | wc -c)\"\n"
  nproc_per_node: 1
SPEC
python3 - <<'PY'
t = open("lf.yaml", encoding="utf-8").read()
old = 'wc -c)\\"\\n"'
assert t.count(old) == 1
t = t.replace(old, 'wc -c)\\"\\r\\n\\ufeff"')
open("crlf.yaml", "wb").write(("\ufeff" + t.replace("\n", "\r\n")).encode("utf-8"))
PY
expect_eq "crlf.yaml starts with a BOM" "efbbbf" "$(head -c 3 crlf.yaml | od -An -tx1 | tr -d ' \n')"
expect_eq "crlf.yaml has CR LF line ends" "$(wc -l < lf.yaml)" "$(grep -c $'\r$' crlf.yaml)"

h_lf=$(g -o json validate -f lf.yaml | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec_hash"])')
g -o json validate -f crlf.yaml > "$T/v.json"
check_schema "$T/v.json" validate
expect_eq "same spec hash with CR LF and a BOM" "$h_lf" "$(json_get "$T/v.json" 'd["spec_hash"]')"
expect_eq "the run command arrives without CR and BOM" "no" \
    "$(json_get "$T/v.json" '"yes" if ("\r" in d["spec"]["run"]["command"] or "\ufeff" in d["spec"]["run"]["command"]) else "no"')"
expect_eq "validate -o json: two notes" 2 "$(json_get "$T/v.json" 'len(d["notes"])')"
out=$(g validate -f crlf.yaml)
expect_match "validate names the setup" \
    '^note: crlf\.yaml:6: setup: read CR LF line ends as LF \(saved on Windows\?\); bash runs the text without them$' "$out"
expect_match "validate says what it removed from the run command" \
    '^note: crlf\.yaml:9: run\.command: removed 1 CR of CR LF line ends and removed 1 U\+FEFF \(byte order mark\) \(saved on Windows\?\)' "$out"
expect_eq "validate of the LF spec has no note" 0 "$(g validate -f lf.yaml | grep -c '^note:' || true)"

run_rc rc g apply -f crlf.yaml --wait --timeout 300 > "$T/apply.txt"
expect_eq "the CR LF spec runs: apply --wait exits 0" 0 "$rc"
logs=$(g logs crlf)
# Each node's job saw its own IP literal, and its command held no CR or BOM.
expect_match "rank 0 ran with its IP literal and a clean command" 'rank=0 node_ip=127\.0\.0\.1 cr=0$' "$logs"
expect_match "rank 1 ran with its IP literal and a clean command" 'rank=1 node_ip=127\.0\.0\.1 cr=0$' "$logs"
expect_eq "setup ran without a CR, on both nodes" "setup-line [ o n e]
setup-line [ o n e]" "$(cat "$STATE"/local/*/setup.out)"
# torchrun's --local_addr where the torch installed here has it
torch_la=$(/usr/bin/python3 -c 'import importlib.util as u,os
d=os.path.dirname(u.find_spec("torch").origin)
print(int("local_addr" in open(d+"/distributed/run.py").read()))' 2>/dev/null || echo 0)
if [ "$torch_la" = 1 ]; then
    expect_eq "torch has --local_addr: no fallback line" 0 \
        "$(printf '%s\n' "$logs" | grep -c 'no --local_addr in torch' || true)"
else
    expect_match "the node says its torch has no --local_addr" \
        'gpuctl: no --local_addr in torch < 2\.0: peers must resolve host name' "$logs"
fi
g -y destroy crlf > /dev/null
finish
