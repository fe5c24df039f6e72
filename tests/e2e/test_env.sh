#!/bin/bash
# Hostile env values travel byte for byte through a real (local) node: the
# spec's env reaches the training processes unchanged and nothing in them
# executes on the node.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" && cd "$T/work"
cat > dump_env.py <<'PY'
import json, os
names = [n for n in os.environ if n.startswith("T_")]
out = {n: os.environb[n.encode()].hex() for n in names}
path = os.path.join(os.environ["GPUCTL_CHECKPOINT_DIR"], "env-rank%s.json" % os.environ["RANK"])
with open(path, "w") as f:
    json.dump(out, f, sort_keys=True)
PY
cat > env.yaml <<YAML
name: hostile-env
nodes: 2
workdir: .
checkpoint_dir: ./out
env:
  T_SUBST: \$(touch $T/pwned)
  T_BACKTICK: "\`touch $T/pwned2\`"
  T_SQUOTE: "it's 'quoted'"
  T_DQUOTE: 'say "hi" \\ and \$HOME'
  T_NEWLINE: "line one\nline two\n"
  T_CR: "carriage\rreturn"
  T_TAB: "a\tb"
  T_NO: no
  T_OCTAL: 0755
  T_VERSION: 1.10
  T_ON: on
  T_TRUE: 'True'
  T_BIG: 12345678901234567890
  T_EMPTY: ""
  T_UNICODE: "Grüße, 日本"
  T_SEMI: "a; rm -rf / #"
  T_DOLLAR_BRACE: "\${PATH}"
run:
  command: python3 dump_env.py
  nproc_per_node: 1
YAML
run_rc rc g apply -f env.yaml --wait --timeout 300 > "$T/apply.txt"
expect_eq "job ran" 0 "$rc"
python3 - "$T" <<'PY' > "$T/expected.json"
import json, sys
t = sys.argv[1]
want = {
    "T_SUBST": "$(touch %s/pwned)" % t,
    "T_BACKTICK": "`touch %s/pwned2`" % t,
    "T_SQUOTE": "it's 'quoted'",
    "T_DQUOTE": 'say "hi" \\ and $HOME',
    "T_NEWLINE": "line one\nline two\n",
    "T_CR": "carriage\rreturn",
    "T_TAB": "a\tb",
    "T_NO": "no",
    "T_OCTAL": "0755",
    "T_VERSION": "1.10",
    "T_ON": "on",
    "T_TRUE": "True",
    "T_BIG": "12345678901234567890",
    "T_EMPTY": "",
    "T_UNICODE": "Grüße, 日本",
    "T_SEMI": "a; rm -rf / #",
    "T_DOLLAR_BRACE": "${PATH}",
}
print(json.dumps({k: v.encode().hex() for k, v in want.items()}, sort_keys=True))
PY
for r in 0 1; do
    got=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), sort_keys=True))' "out/env-rank$r.json")
    expect_eq "rank $r env byte for byte" "$(cat "$T/expected.json")" "$got"
done
expect_eq "nothing executed: \$(...)" no "$([ -e "$T/pwned" ] && echo yes || echo no)"
expect_eq "nothing executed: backquotes" no "$([ -e "$T/pwned2" ] && echo yes || echo no)"
# The user-data carries no CR even though a value holds one.
g render -f env.yaml --node 1 --head-ip 10.0.0.1 > "$T/ud1.txt" 2>/dev/null
expect_eq "user-data has no CR byte" 0 "$(tr -cd '\r' < "$T/ud1.txt" | wc -c)"
g -y destroy hostile-env > /dev/null
finish
