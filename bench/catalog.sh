#!/bin/bash
# Wall time of `gpuctl offers` and `gpuctl plan` (process start to exit) on the
# built-in catalog and on catalogs scaled to 1,000 / 25,000 / 50,000 rows,
# against one `aws ec2 describe-instance-types` call to a loopback endpoint.
#
#   bench/catalog.sh BUILD/gpuctl [RUNS]
#
# RUNS (default 20) timed runs per gpuctl command after 3 warm-up runs;
# AWS_RUNS (default 10) for awscli.  SIZES (default "1000 25000 50000")
# picks the scaled catalogs; the built-in catalog is always measured.
# 25,000 rows is about AWS's instance types across all its regions, the
# largest catalog a user has; gpuctl keeps nothing between runs, so every
# run reads and parses the file as on its first use after a change.
# AWS (default /usr/bin/aws, Debian's awscli, else the first aws on PATH)
# picks the awscli binary.  Medians in ms; hyperfine if installed
# (apt-get install hyperfine), else (or with HYPERFINE= set empty) a
# date +%s%N loop, median of the same number of runs.  Peak RSS comes from
# GNU time (apt-get install time).  awscli: apt-get install awscli.
#
# Targets (bench/README.md): plan (and offers) < 50 ms at 25,000 rows,
# linear growth in rows, and >= 30x faster than the awscli call on the
# built-in catalog (the everyday case; the other sizes are shown too).
# Prints a table and one line per target; exits 0 whatever the figures (1
# on a setup error).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${1:?usage: bench/catalog.sh BUILD/gpuctl [RUNS]}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
RUNS=${2:-20}
AWS_RUNS=${AWS_RUNS:-10}
SIZES=${SIZES:-"1000 25000 50000"}
TARGET_ROWS=25000
PY=/usr/bin/python3
SPEC=$ROOT/examples/detection-3d-8x8-a100.yaml
[ -x "$BIN" ] || { echo "catalog.sh: $BIN: not an executable" >&2; exit 1; }
[ -x "$PY" ] || { echo "catalog.sh: needs $PY (apt-get install python3)" >&2; exit 1; }

TMP=$(mktemp -d)
SERVER=
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
mkdir "$TMP/config" "$TMP/state"
export GPUCTL_CONFIG_DIR=$TMP/config   # empty: no user catalog override
unset GPUCTL_CATALOG

HYPERFINE=${HYPERFINE-hyperfine}   # HYPERFINE= forces the date loop
if [ -n "$HYPERFINE" ] && command -v "$HYPERFINE" >/dev/null; then
    TIMER="hyperfine $("$HYPERFINE" --version | cut -d' ' -f2) (-N, 3 warm-up runs, median)"
else
    TIMER="date +%s%N loop (median; install hyperfine: apt-get install hyperfine)"
    echo "catalog.sh: hyperfine not found (apt-get install hyperfine); using a date +%s%N loop" >&2
fi

# median_ms N CMD...: "MEDIAN MIN", wall time of N runs of CMD (stdout and
# stderr to /dev/null) in ms with three decimals.
median_ms() {
    local n=$1; shift
    if [ -n "$HYPERFINE" ] && command -v "$HYPERFINE" >/dev/null; then
        local q="" a
        for a in "$@"; do q+="$(printf '%q' "$a") "; done
        "$HYPERFINE" -N --warmup 3 --runs "$n" --style none --output null \
            --export-json "$TMP/h.json" "$q" >/dev/null 2>&1 || {
            echo "catalog.sh: hyperfine failed on: $*" >&2; exit 1; }
        "$PY" -c 'import json,sys; r = json.load(open(sys.argv[1]))["results"][0]; print("%.3f %.3f" % (r["median"] * 1000, r["min"] * 1000))' "$TMP/h.json"
    else
        local t0 t1 i
        for i in 1 2 3; do
            "$@" >/dev/null 2>&1 || true
        done
        for ((i = 0; i < n; i++)); do
            t0=$(date +%s%N)
            "$@" >/dev/null 2>&1 || true
            t1=$(date +%s%N)
            echo $((t1 - t0))
        done | sort -n | "$PY" -c 'import sys
v = [int(x) for x in sys.stdin]
m = v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
print("%.3f %.3f" % (m / 1e6, v[0] / 1e6))'
    fi
}

# peak_kib CMD...: peak RSS (KiB) of one run.
peak_kib() {
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f %M -o "$TMP/rss" "$@" >/dev/null 2>&1 || true
        tail -n1 "$TMP/rss"
    else
        echo "-"
    fi
}

# must_run CMD...: one run must exit 0, else show why and stop.
must_run() {
    if ! "$@" >"$TMP/out" 2>"$TMP/err"; then
        echo "catalog.sh: failed: $*" >&2
        cat "$TMP/err" >&2
        exit 1
    fi
}

# ---- awscli reference ---------------------------------------------------
AWS=${AWS:-}
if [ -z "$AWS" ]; then
    if [ -x /usr/bin/aws ]; then AWS=/usr/bin/aws; else AWS=$(command -v aws || true); fi
fi
AWS_MS=
AWS_VER="not installed (apt-get install awscli)"
if [ -n "$AWS" ]; then
    AWS_VER=$("$AWS" --version 2>&1 | cut -d' ' -f1-2)
    mkfifo "$TMP/hold"
    "$PY" "$HERE/fake_ec2.py" --exit-on-stdin-eof --log "$TMP/ec2.log" <"$TMP/hold" >"$TMP/port" &
    SERVER=$!
    exec 9>"$TMP/hold"     # the server exits when this script (fd 9) goes away
    for _ in $(seq 100); do grep -q '^PORT ' "$TMP/port" 2>/dev/null && break; sleep 0.05; done
    PORT=$(sed -n 's/^PORT //p' "$TMP/port")
    [ -n "$PORT" ] || { echo "catalog.sh: bench/fake_ec2.py did not start" >&2; exit 1; }
    AWSCMD=(env AWS_ACCESS_KEY_ID=AKIDEXAMPLE
            AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
            AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
            AWS_EC2_METADATA_DISABLED=true AWS_PAGER=
            "$AWS" ec2 describe-instance-types --instance-types p4de.24xlarge
            --endpoint-url "http://127.0.0.1:$PORT" --region us-east-1)
    must_run "${AWSCMD[@]}"
    grep -q '"InstanceType": "p4de.24xlarge"' "$TMP/out" || {
        echo "catalog.sh: unexpected awscli output:" >&2; cat "$TMP/out" >&2; exit 1; }
    AWS_MS=$(median_ms "$AWS_RUNS" "${AWSCMD[@]}" | cut -d' ' -f1)
fi

# ---- gpuctl -------------------------------------------------------------
# One line per catalog: label rows, median and min ms of offers, offers all
# and plan, peak RSS KiB of the three.
BUILTIN_ROWS=$(cat "$ROOT"/providers/*/catalog.csv | grep -vc '^provider,')
: >"$TMP/results"
for label in built-in $SIZES; do
    if [ "$label" = built-in ]; then
        CAT=(); rows=$BUILTIN_ROWS
    else
        "$PY" "$HERE/scale_catalog.py" "$label" "$TMP/cat$label.csv"
        CAT=(--catalog "$TMP/cat$label.csv"); rows=$label
    fi
    offers=("$BIN" "${CAT[@]}" offers --gpu A100-80GB:8 --spot)
    all=("$BIN" "${CAT[@]}" offers)
    plan=("$BIN" "${CAT[@]}" --state-dir "$TMP/state" plan -f "$SPEC")
    must_run "${offers[@]}"; must_run "${all[@]}"; must_run "${plan[@]}"
    line="$label $rows $(median_ms "$RUNS" "${offers[@]}") $(median_ms "$RUNS" "${all[@]}")"
    line+=" $(median_ms "$RUNS" "${plan[@]}") $(peak_kib "${offers[@]}") $(peak_kib "${all[@]}")"
    line+=" $(peak_kib "${plan[@]}")"
    echo "$line" >>"$TMP/results"
    rm -f "$TMP/cat$label.csv"
done

# ---- report -------------------------------------------------------------
echo "machine: $(nproc) CPU, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1), $(uname -sr)"
echo "gpuctl:  $BIN"
echo "timer:   $TIMER; gpuctl $RUNS runs, awscli $AWS_RUNS runs"
echo "awscli:  $AWS_VER -> bench/fake_ec2.py on 127.0.0.1 (no signature check)"
echo
echo "offers     = offers --gpu A100-80GB:8 --spot"
echo "offers all = offers (every row, stdout to /dev/null)"
echo "plan       = plan -f examples/detection-3d-8x8-a100.yaml"
echo "ratio      = awscli / slower of (offers, plan)"
echo "every run reads and parses the catalog file: gpuctl keeps nothing between runs"
echo
"$PY" - "$TMP/results" "${AWS_MS:--}" "$TARGET_ROWS" <<'EOF'
import sys
aws = None if sys.argv[2] == "-" else float(sys.argv[2])
target_rows = int(sys.argv[3])
res = []
for line in open(sys.argv[1]):
    f = line.split()
    res.append(dict(label=f[0], rows=int(f[1]), off=float(f[2]), off_min=float(f[3]),
                    all=float(f[4]), all_min=float(f[5]), plan=float(f[6]), plan_min=float(f[7]),
                    rss=f[8:11]))

def mib(k):
    return "%.1f" % (int(k) / 1024) if k.isdigit() else "-"

print("| rows | offers ms | offers all ms | plan ms | awscli ms | ratio | peak RSS MiB (offers / all / plan) |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
for r in res:
    print("| %s%s | %.1f | %.1f | %.1f | %s | %s | %s |" % (
        "{:,}".format(r["rows"]), " (built-in)" if r["label"] == "built-in" else "",
        r["off"], r["all"], r["plan"], "%.0f" % aws if aws else "-",
        "%.0fx" % (aws / max(r["off"], r["plan"])) if aws else "-",
        " / ".join(mib(k) for k in r["rss"])))
print()
# Linear growth shows as a roughly constant cost per row on each step once
# the fixed start-up cost is small; a quadratic term would make the cost per
# row grow with the row count.
print("cost per 10,000 rows on each step, ms (offers / offers all / plan):")
def step(a, b, k):
    return (b[k] - a[k]) * 1e4 / (b["rows"] - a["rows"])
for a, b in zip(res, res[1:]):
    print("  %7s -> %7s rows: %6.2f / %6.2f / %6.2f" % ("{:,}".format(a["rows"]), "{:,}".format(b["rows"]),
          step(a, b, "off"), step(a, b, "all"), step(a, b, "plan")))
print()
# The target size, else the largest catalog measured below it.
big = ([r for r in res if r["rows"] == target_rows] or
       sorted((r for r in res if r["rows"] <= target_rows), key=lambda r: r["rows"]))[-1]
print("targets at %s rows:" % "{:,}".format(big["rows"]))
print("  plan < 50 ms:        %s (%.1f ms)" % ("met" if big["plan"] < 50 else "MISSED", big["plan"]))
print("  offers < 50 ms:      %s (%.1f ms)" % ("met" if big["off"] < 50 else "MISSED", big["off"]))
print("  (offers all:         %.1f ms, no stated target: formats every row)" % big["all"])
print("  fastest single runs: offers %.1f, offers all %.1f, plan %.1f ms" % (
    big["off_min"], big["all_min"], big["plan_min"]))
if aws:
    base = res[0]   # the built-in catalog: the everyday case, which the target means
    ratio = aws / max(base["off"], base["plan"])
    print("  >= 30x awscli:       %s on the built-in catalog (%.0fx; awscli %.0f ms, so 30x needs <= %.1f ms)" % (
        "met" if ratio >= 30 else "MISSED", ratio, aws, aws / 30))
    ok = [r for r in res if aws / max(r["off"], r["plan"]) >= 30]
    print("                       met on %s of %s catalogs (%s)" % (len(ok), len(res), ", ".join(
        "{:,}".format(r["rows"]) for r in ok) or "none"))
else:
    print("  >= 30x awscli:       not measured (apt-get install awscli)")
if len(res) >= 3:
    a, b, c = res[-3:]
    out = []
    for name, k in (("offers", "off"), ("plan", "plan"), ("offers all", "all")):
        s1, s2 = step(a, b, k), step(b, c, k)
        if b[k] - a[k] < 3:   # the step before is within timing noise
            out.append("%s n/a (steps too small to judge)" % name)
            continue
        q = s2 / s1
        out.append("%s %s (x%.2f)" % (name, "NOT linear" if q > 2 else "linear" if q >= 0.5 else
                                       "sub-linear", q))
    print("  linear growth:       " + ", ".join(out))
    print("                       (cost per row of the last step / the step before; linear if within 0.5-2,")
    print("                       sub-linear below: the fixed start-up cost still dominates the step)")
EOF
