#!/bin/bash
# gpuctl catalog show | export | update | reset (docs/offers.md, "Refreshing,
# exporting, resetting"), against the fake Azure Retail Prices API in
# tests/fake/azure_prices.py and its fixture azure_prices.items.json, and
# (update --provider aws) the fake EC2 and Price List endpoints. The
# user override lives in $GPUCTL_CONFIG_DIR, a directory of this test's own.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" && cd "$T/work"
export GPUCTL_CONFIG_DIR="$T/config"   # not created: update must make it
unset GPUCTL_CATALOG XDG_CONFIG_HOME GPUCTL_AZURE_PRICES_ENDPOINT
umask 022                              # so that the documented 0644 is what we see
OVR="$GPUCTL_CONFIG_DIR/catalog.csv"
# The built-in instance table: every providers/NAME/catalog.csv, by folder
# name, the header once (catalog/README.md).
BUILTIN="$T/gpu_instances.csv"
/usr/bin/python3 - "$GPUCTL_SOURCE_DIR" "$BUILTIN" <<'PY'
import csv, glob, os, sys
src, out = sys.argv[1:3]
text, header = "", None
for path in sorted(glob.glob(os.path.join(src, "providers", "*", "catalog.csv"))):
    folder = os.path.basename(os.path.dirname(path))
    data = open(path, encoding="utf-8", newline="").read()
    head, rows = data.split("\n", 1)
    assert header in (None, head), "%s: another header" % path
    for r in csv.DictReader(data.splitlines()):
        assert r["provider"] == folder, "%s: a row of provider %s" % (path, r["provider"])
    text, header = text + (head + "\n" if header is None else "") + rows, head
open(out, "w", encoding="utf-8", newline="").write(text)
PY
BUILTIN_SHA=$(sha256sum < "$BUILTIN" | cut -d' ' -f1)

# The fake server: a coprocess that exits when this shell closes its stdin
# (or dies). start_server [SWITCHES...] sets ENDPOINT and SRV_LOG.
NSRV=0
start_server() {
    NSRV=$((NSRV + 1))
    SRV_LOG="$T/requests$NSRV.log"
    : > "$SRV_LOG"
    coproc SRV { exec /usr/bin/python3 "$GPUCTL_SOURCE_DIR/tests/fake/azure_prices.py" \
                      --exit-on-stdin-eof --log "$SRV_LOG" "$@"; }
    local word port
    read -r -t 20 word port <&"${SRV[0]}"
    [ "$word" = PORT ] || { echo "fake server did not start" >&2; exit 1; }
    ENDPOINT="http://127.0.0.1:$port/api/retail/prices"
}
stop_server() {
    local pid=$SRV_PID
    eval "exec ${SRV[1]}>&- ${SRV[0]}<&-"
    wait "$pid" 2> /dev/null || true
}
# row FILE PROVIDER TYPE REGION: "od spot source notes" of one CSV row.
row() {
    python3 - "$@" <<'PY'
import csv, sys
f, p, t, r = sys.argv[1:5]
for x in csv.DictReader(open(f, newline="")):
    if (x["provider"], x["instance_type"], x["region"]) == (p, t, r):
        print(x["price_ondemand_usd_hr"], x["price_spot_usd_hr"] or "-", x["source"], x["notes"] or "-")
PY
}
sha() { sha256sum < "$1" | cut -d' ' -f1; }

# ---- 1. show: the built-in catalog --------------------------------------------
run_rc rc g -o json catalog show > "$T/show.json"
expect_eq "catalog show -o json: exit 0" 0 "$rc"
check_schema "$T/show.json" catalog
expect_eq "built-in: 368 rows, sha256 of gpu_instances.csv, 22 GPU models" "built-in 368 $BUILTIN_SHA 22" \
    "$(json_get "$T/show.json" '" ".join(str(x) for x in (d["origin"], d["rows"], d["sha256"], d["gpu_models"]))')"
expect_eq "rows by provider: aws 227, azure 40, aliyun 101" "aliyun=101 aws=227 azure=40" \
    "$(json_get "$T/show.json" '" ".join("%s=%d" % kv for kv in sorted(d["rows_by_provider"].items()))')"
expect_eq "the override's path, absent" "$OVR False" \
    "$(json_get "$T/show.json" 'd["user_override"], d["user_override_exists"]' | tr -d "(),'")"
expect_eq "the CNY sources convert at 0.138" "arthurchiao-2023-06:CNY:0.138 sugarlxn-v8-alicloud:CNY:0.138" \
    "$(json_get "$T/show.json" '" ".join("%s:%s:%s" % (s["key"], s["currency"], s["usd_per_unit"]) for s in d["sources"] if s["currency"] == "CNY")')"
g catalog > "$T/show.txt"
expect_match "table: the catalog line" "^catalog: built-in \(368 rows, sha256 ${BUILTIN_SHA:0:12}\)" "$(head -1 "$T/show.txt")"
expect_match "table: per provider" "aws +227 rows" "$(cat "$T/show.txt")"
expect_match "table: override absent" "user override: $OVR \(absent\)" "$(cat "$T/show.txt")"

# ---- 2. export round-trips ---------------------------------------------------------
g catalog export > exported.csv
expect_eq "export is the built-in gpu_instances.csv, byte for byte" "$BUILTIN_SHA" "$(sha exported.csv)"
g -o json catalog export > exported2.csv
expect_eq "export -o json is the same CSV" "$BUILTIN_SHA" "$(sha exported2.csv)"
g -o json offers > "$T/offers-builtin.json"
g --catalog exported.csv -o json offers > "$T/offers-file.json"
check_schema "$T/offers-file.json" offers
expect_eq "--catalog exported.csv: the same offers as the built-in catalog" "True exported.csv 365" \
    "$(python3 -c 'import json,sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
origin = b["catalog"].pop("origin"); a["catalog"].pop("origin")
print(a == b, origin, b["matched"])' "$T/offers-builtin.json" "$T/offers-file.json")"
g --catalog exported.csv -o json catalog show > "$T/show-file.json"
check_schema "$T/show-file.json" catalog
expect_eq "--catalog: origin is the file, same sha256" "exported.csv $BUILTIN_SHA" \
    "$(json_get "$T/show-file.json" 'd["origin"], d["sha256"]' | tr -d "(),'")"
run_rc rc g --catalog "$T/missing.csv" catalog show > /dev/null 2> "$T/e.txt"
expect_eq "--catalog on a missing file: exit 5, no fallback" 5 "$rc"
printf 'provider,instance_type\naws,x\n' > noregion.csv
run_rc rc g --catalog noregion.csv offers > /dev/null 2> "$T/e.txt"
expect_eq "--catalog with a missing column: exit 4" 4 "$rc"
expect_eq "names file, line and column" "gpuctl: error: noregion.csv:1: missing column 'region'" "$(cat "$T/e.txt")"
run_rc rc g --catalog noregion.csv plan -f "$GPUCTL_SOURCE_DIR/examples/bert-base-4xt4-spot.yaml" > /dev/null 2>&1
expect_eq "plan with that catalog: exit 4" 4 "$rc"

# ---- 3. update --dry-run writes nothing ------------------------------------------------
start_server
run_rc rc g -o json catalog update --provider azure --endpoint "$ENDPOINT" --dry-run > "$T/dry.json" 2> "$T/dry.err"
stop_server
expect_eq "update --dry-run: exit 0" 0 "$rc"
check_schema "$T/dry.json" catalog
expect_eq "dry run: nothing written, 4 of 40 azure rows priced" "True  4 40" \
    "$(json_get "$T/dry.json" '" ".join(str(x) for x in (d["dry_run"], d["written"], d["providers"][0]["updated"], d["providers"][0]["rows"]))')"
expect_eq "dry run: no override file, no config directory" "no" "$([ -e "$GPUCTL_CONFIG_DIR" ] && echo yes || echo no)"
expect_eq "dry run still asked the API (10 requests)" 10 "$(wc -l < "$SRV_LOG")"

# ---- 4. update --provider azure -------------------------------------------------------------
# The fixture's Linux Consumption items (Windows, Low Priority, DevTest,
# Reservation, "10 Hours" and Spot-in-skuName-only items are decoys):
#   eastus  NC4as_T4_v3  on-demand 0.526 (2023-04-01; beats the older 0.572
#                        of 2021-03-01), spot 0.0627 (catalog had 0.062699)
#   eastus  NC8as_T4_v3  on-demand 0.752, spot 0.0896 (had 0.089638)
#   eastus  ND96isr_H100_v5 on-demand 98.32 (2023-08-01), no Linux spot
#   westus2 NC4as_T4_v3  on-demand 0.526, spot 0.0616 (had 0.061595)
# so 4 of the 40 azure rows are updated, 36 are not listed, and no spot
# price is cleared (ND96isr_H100_v5 had none).
# Requests: one per page, 2 items a page, all 19 sizes in one filter per
# region: eastus has 17 items, 14 of type Consumption -> 7 pages; westus2
# 2 items -> 1 page; eastus2 and westus3 none -> 1 (empty) page each: 10.
start_server
run_rc rc g -o json catalog update --provider azure --endpoint "$ENDPOINT" > "$T/upd.json" 2> "$T/upd.err"
stop_server
expect_eq "update --provider azure: exit 0" 0 "$rc"
check_schema "$T/upd.json" catalog
expect_eq "azure: updated 4 of 40, 36 not listed, 0 spot cleared" "azure updated 40 4 36 0" \
    "$(json_get "$T/upd.json" '" ".join(str(d["providers"][0][k]) for k in ("provider", "status", "rows", "updated", "not_listed", "spot_cleared"))')"
expect_eq "written to the override, 368 rows" "$OVR False 368" \
    "$(json_get "$T/upd.json" '" ".join(str(x) for x in (d["written"], d["dry_run"], d["rows"]))')"
expect_match "stderr: what was asked and done" "azure: asking the Retail Prices API for 19 size\(s\) in 4 region\(s\)" "$(cat "$T/upd.err")"
expect_match "stderr: summary" "azure: 4 of 40 row\(s\) updated; 36 not listed by the API \(kept as they were\); 0 spot price\(s\) removed" "$(cat "$T/upd.err")"
expect_eq "override mode 0644" 644 "$(stat -c %a "$OVR")"
expect_eq "new config directory mode 0700" 700 "$(stat -c %a "$GPUCTL_CONFIG_DIR")"
expect_eq "the JSON's sha256 is the file's" "$(sha "$OVR")" "$(json_get "$T/upd.json" 'd["sha256"]')"
expect_eq "exactly 10 requests" 10 "$(wc -l < "$SRV_LOG")"
expect_eq "regions and pages in order" "eastus:- eastus:2 eastus:4 eastus:6 eastus:8 eastus:10 eastus:12 westus2:- eastus2:- westus3:-" \
    "$(python3 -c 'import re, sys
out = []
for line in open(sys.argv[1]):
    m, path, flt, skip, status, _ = line.rstrip("\n").split("\t")
    assert (m, path, status) == ("GET", "/api/retail/prices", "200"), line
    assert flt.startswith("serviceName eq '"'"'Virtual Machines'"'"' and priceType eq '"'"'Consumption'"'"' and armRegionName eq "), flt
    assert flt.count("armSkuName eq ") == 19, flt
    out.append(re.search(r"armRegionName eq .([a-z0-9]+).", flt).group(1) + ":" + skip)
print(" ".join(out))' "$SRV_LOG")"
for r in "Standard_NC4as_T4_v3 eastus|0.526 0.0627 azure-retail-api fetched DATE; price effective 2023-04-01" \
         "Standard_NC4as_T4_v3 westus2|0.526 0.0616 azure-retail-api fetched DATE; price effective 2023-04-01" \
         "Standard_NC8as_T4_v3 eastus|0.752 0.0896 azure-retail-api fetched DATE; price effective 2023-04-01" \
         "Standard_ND96isr_H100_v5 eastus|98.32 - azure-retail-api fetched DATE; price effective 2023-08-01"; do
    key=${r%%|*}
    # shellcheck disable=SC2086
    got=$(row "$OVR" azure $key | sed -E 's/fetched [0-9]{4}-[0-9]{2}-[0-9]{2};/fetched DATE;/')
    expect_eq "new price: azure $key" "${r#*|}" "$got"
done
expect_eq "a row the API does not list is kept: NC8as_T4_v3 westus2" "0.752 0.088059 skypilot-v6-azure -" \
    "$(row "$OVR" azure Standard_NC8as_T4_v3 westus2)"
expect_eq "every other row is unchanged (364 of 368)" 364 \
    "$(python3 -c 'import csv, sys
a = list(csv.reader(open(sys.argv[1], newline="")))
b = list(csv.reader(open(sys.argv[2], newline="")))
assert len(a) == len(b) == 369 and a[0] == b[0]
print(sum(1 for x, y in zip(a[1:], b[1:]) if x == y))' "$BUILTIN" "$OVR")"

# The override is in effect now: show, offers and plan use it.
g -o json catalog show > "$T/show2.json"
check_schema "$T/show2.json" catalog
expect_eq "show: origin is the override, it exists" "$OVR True $(sha "$OVR")" \
    "$(json_get "$T/show2.json" 'd["origin"], d["user_override_exists"], d["sha256"]' | tr -d "(),'")"
g -o json offers --gpu T4:1 --spot --provider azure --region eastus --limit 1 > "$T/o1.json"
check_schema "$T/o1.json" offers
expect_eq "offers use the new spot price" "$OVR Standard_NC4as_T4_v3 0.0627 azure-retail-api" \
    "$(json_get "$T/o1.json" '" ".join(str(x) for x in (d["catalog"]["origin"], d["offers"][0]["instance_type"], d["offers"][0]["price_usd_hr"], d["offers"][0]["source"]))')"
# bert-t4 now: 4 x 0.0616 = 0.2464 USD/hour (was 4 x 0.061595 = 0.24638).
g -o json plan -f "$GPUCTL_SOURCE_DIR/examples/bert-base-4xt4-spot.yaml" > "$T/bert.json"
check_schema "$T/bert.json" plan
expect_eq "plan uses the override: bert-t4 at 4 x 0.0616" "$OVR 0.0616 0.2464" \
    "$(json_get "$T/bert.json" '" ".join(str(x) for x in (d["catalog"]["origin"], d["cost"]["node_usd_hr"], d["cost"]["cluster_usd_hr"]))')"
g --catalog exported.csv -o json offers --gpu T4:1 --spot --provider azure --region eastus --limit 1 > "$T/o2.json"
expect_eq "--catalog FILE wins over the override" "0.062699" "$(json_get "$T/o2.json" 'd["offers"][0]["price_usd_hr"]')"

# ---- 5. failures leave the override as it was ----------------------------------------------
OVR_SHA=$(sha "$OVR")
OVR_MTIME=$(stat -c %Y.%y "$OVR")
# Every request answered 503: the first request is tried 4 times (1 + 3
# retries, Retry-After 0), then the update fails.
start_server --fail-503 9
run_rc rc g -o json catalog update --provider azure --endpoint "$ENDPOINT" > "$T/e503.json" 2> "$T/e503.err"
stop_server
expect_eq "API failing: exit 6" 6 "$rc"
check_schema "$T/e503.json" error
expect_eq "json: provider 6" "provider 6" "$(json_get "$T/e503.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"
expect_match "says the status and the attempts" "azure retail prices: GET http://127\.0\.0\.1:[0-9]+/api/retail/prices: HTTP 503 after 4 attempts" "$(cat "$T/e503.err")"
expect_eq "4 requests, all 503" "4 4" "$(wc -l < "$SRV_LOG") $(cut -f5 "$SRV_LOG" | grep -c '^503$')"
expect_eq "override untouched" "$OVR_SHA $OVR_MTIME" "$(sha "$OVR") $(stat -c %Y.%y "$OVR")"

run_rc rc g catalog update --provider aws > /dev/null 2> "$T/e.txt"
expect_eq "update --provider aws without AWS credentials: exit 20 (auth)" 20 "$rc"
expect_match "says what it tried" "gpuctl: error: no AWS credentials found" "$(cat "$T/e.txt")"
run_rc rc g -o json catalog update --provider aliyun > "$T/ealiyun.json" 2> /dev/null
expect_eq "update --provider aliyun: exit 6" 6 "$rc"
check_schema "$T/ealiyun.json" error
run_rc rc g catalog update --provider gcp > /dev/null 2> "$T/e.txt"
expect_eq "update --provider gcp: exit 3" 3 "$rc"
expect_match "names the providers" "unknown provider 'gcp' \(aws, azure, aliyun\)" "$(cat "$T/e.txt")"
run_rc rc g catalog update --from exported.csv --provider azure > /dev/null 2>&1
expect_eq "--from with --provider: exit 3" 3 "$rc"
run_rc rc g catalog show --dry-run > /dev/null 2>&1
expect_eq "an update option on show: exit 3" 3 "$rc"
run_rc rc g catalog frob > /dev/null 2>&1
expect_eq "an unknown catalog command: exit 3" 3 "$rc"

# A bad number: the file, its line and the column are named; exit 4.
line=$(grep -n '^aws,p4de.24xlarge,us-east-1,' exported.csv | cut -d: -f1)
sed "${line}s/,27.44705,/,27.44x05,/" exported.csv > bad.csv
expect_eq "bad.csv differs from the export in one line" 1 "$(diff exported.csv bad.csv | grep -c '^>')"
run_rc rc g catalog update --from bad.csv > /dev/null 2> "$T/e.txt"
expect_eq "update --from bad.csv: exit 4" 4 "$rc"
expect_eq "FILE:LINE: column: why" "gpuctl: error: bad.csv:$line: price_ondemand_usd_hr: not a number (got '27.44x05')" "$(cat "$T/e.txt")"
run_rc rc g -o json catalog update --from bad.csv > "$T/ebad.json" 2> /dev/null
check_schema "$T/ebad.json" error
expect_eq "json: spec 4" "spec 4" "$(json_get "$T/ebad.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"
# Regression: a catalog row for the local provider was planned and applied
# over what the machine reports; and over-long names were cut when a node
# was recorded.
{ cat exported.csv; echo 'local,big,local,T4,4,16,64,256,none,,0,,,,,'; } > local.csv
n=$(wc -l < local.csv)
run_rc rc g catalog update --from local.csv > /dev/null 2> "$T/e.txt"
expect_eq "a row for provider local: exit 4" 4 "$rc"
expect_eq "says why" "gpuctl: error: local.csv:$n: provider: the local provider's offer is this machine, which it reports itself; the catalog cannot list it (got 'local')" "$(cat "$T/e.txt")"
long=$(printf 'x%.0s' $(seq 64))
{ cat exported.csv; echo "aws,$long,us-east-1,T4,1,16,4,16,none,,1,,,,,"; } > long.csv
run_rc rc g catalog update --from long.csv > /dev/null 2> "$T/e.txt"
expect_eq "a 64-byte instance type: exit 4" 4 "$rc"
expect_match "says why" "long\.csv:$((n)): instance_type: longer than 63 bytes" "$(cat "$T/e.txt")"
run_rc rc g catalog update --from "$T/nope.csv" > /dev/null 2>&1
expect_eq "update --from a missing file: exit 5" 5 "$rc"
expect_eq "override untouched by all of that" "$OVR_SHA $OVR_MTIME" "$(sha "$OVR") $(stat -c %Y.%y "$OVR")"

# Without --provider: aws and aliyun are skipped (and said so), azure runs.
start_server
run_rc rc g -o json catalog update --endpoint "$ENDPOINT" --dry-run > "$T/all.json" 2> "$T/all.err"
stop_server
expect_eq "update (all providers) --dry-run: exit 0" 0 "$rc"
check_schema "$T/all.json" catalog
expect_eq "aws skipped, azure updated, aliyun skipped, slurm not asked on a dry run" "aws:skipped azure:updated aliyun:skipped slurm:skipped" \
    "$(json_get "$T/all.json" '" ".join(p["provider"] + ":" + p["status"] for p in d["providers"])')"
expect_match "the skip is said on stderr" "aliyun: refreshing prices needs DescribePrice and DescribeSpotPriceHistory with Alibaba Cloud credentials.*\(skipped\)" "$(cat "$T/all.err")"

# --region narrows the rows: eastus 19 + westus3 2 = 21 azure rows; 3 of
# them priced (the eastus ones above); 7 eastus pages + 1 westus3 page = 8.
start_server
run_rc rc g -o json catalog update --provider azure --region eastus,westus3 --endpoint "$ENDPOINT" --dry-run > "$T/reg.json" 2> /dev/null
stop_server
expect_eq "update --region eastus,westus3: exit 0" 0 "$rc"
check_schema "$T/reg.json" catalog
expect_eq "21 rows looked at, 3 updated, 18 not listed" "21 3 18" \
    "$(json_get "$T/reg.json" '" ".join(str(d["providers"][0][k]) for k in ("rows", "updated", "not_listed"))')"
expect_eq "8 requests, for those two regions only" "8 eastus,westus3" \
    "$(wc -l < "$SRV_LOG") $(grep -o "armRegionName eq '[a-z0-9]*'" "$SRV_LOG" | cut -d"'" -f2 | uniq | paste -sd,)"

# ---- 5b. update --provider aws: the aws rows rebuilt from the APIs -------------------------
# Against the fake EC2 (tests/fake/ec2.py) with a world of its own and the
# fake Price List (tests/fake/pricing.py, its products in
# tests/fixtures/aws_pricelist_products.json), both checking every
# signature.  In the world: p4d.24xlarge in the 3 regions, p5.48xlarge in
# us-east-1 and us-west-2, g5.xlarge in us-east-1 and ap-northeast-1,
# g6.xlarge (L4, 22888 MiB) in us-east-1 and us-west-2 (the Price List
# prices it in us-east-1 only), p6-b200.48xlarge (B200, 183359 MiB: the
# GPU table's B200-SXM; the Price List has no price for it) in us-east-1,
# and three types that make no row: a g7e type (its GPU, an RTX PRO 6000,
# is not in the GPU table), an AMD one and an m5 (no GPU, not asked for:
# only p* and g* are).
cat > "$T/aws-seed.json" <<'EOF'
{"instance_types": {
 "p5.48xlarge": {"vcpus": 192, "memory_mib": 2097152, "gpu_name": "H100", "gpu_count": 8, "gpu_memory_mib": 81920,
   "efa": true, "max_network_cards": 32, "max_efa_interfaces": 32, "network_performance": "3200 Gigabit",
   "architecture": "x86_64", "regions": ["us-east-1", "us-west-2"], "spot": {"us-east-1": 17.6289, "us-west-2": 12.6935}},
 "p4d.24xlarge": {"vcpus": 96, "memory_mib": 1179648, "gpu_name": "A100", "gpu_count": 8, "gpu_memory_mib": 40960,
   "efa": true, "max_network_cards": 4, "max_efa_interfaces": 4, "network_performance": "4x 100 Gigabit",
   "architecture": "x86_64", "regions": ["us-east-1", "us-west-2", "ap-northeast-1"], "spot": {"us-east-1": 2.4655}},
 "g5.xlarge": {"vcpus": 4, "memory_mib": 16384, "gpu_name": "A10G", "gpu_count": 1, "gpu_memory_mib": 24576,
   "efa": false, "max_network_cards": 1, "max_efa_interfaces": 0, "network_performance": "Up to 10 Gigabit",
   "architecture": "x86_64", "regions": ["us-east-1", "ap-northeast-1"], "spot": {"us-east-1": 0.397, "ap-northeast-1": 0.6913}},
 "g6.xlarge": {"vcpus": 4, "memory_mib": 16384, "gpu_name": "L4", "gpu_count": 1, "gpu_memory_mib": 22888,
   "efa": false, "max_network_cards": 1, "max_efa_interfaces": 0, "network_performance": "Up to 10 Gigabit",
   "architecture": "x86_64", "regions": ["us-east-1", "us-west-2"], "spot": {}},
 "p6-b200.48xlarge": {"vcpus": 192, "memory_mib": 2097152, "gpu_name": "B200", "gpu_count": 8, "gpu_memory_mib": 183359,
   "efa": true, "max_network_cards": 8, "max_efa_interfaces": 8, "network_performance": "3200 Gigabit",
   "architecture": "x86_64", "regions": ["us-east-1"], "spot": {}},
 "g7e.2xlarge": {"vcpus": 8, "memory_mib": 65536, "gpu_name": "RTX PRO 6000", "gpu_count": 1, "gpu_memory_mib": 98304,
   "efa": false, "max_network_cards": 1, "max_efa_interfaces": 0, "network_performance": "Up to 25 Gigabit",
   "architecture": "x86_64", "regions": ["us-east-1"], "spot": {}},
 "g4ad.xlarge": {"vcpus": 4, "memory_mib": 16384, "gpu_name": "Radeon Pro V520", "gpu_manufacturer": "AMD", "gpu_count": 1,
   "gpu_memory_mib": 8192, "efa": false, "max_network_cards": 1, "max_efa_interfaces": 0,
   "network_performance": "Up to 10 Gigabit", "architecture": "x86_64", "regions": ["us-east-1"], "spot": {}},
 "m5.large": {"vcpus": 2, "memory_mib": 8192, "gpu_name": "", "gpu_count": 0, "gpu_memory_mib": 0,
   "efa": false, "max_network_cards": 1, "max_efa_interfaces": 0, "network_performance": "Up to 10 Gigabit",
   "architecture": "x86_64", "regions": ["us-east-1"], "spot": {}}}}
EOF
start_fake ec2 ec2.py --seed "$T/aws-seed.json" --page-size 0
EC2_PORT=$FAKE_PORT
start_fake pricing pricing.py
PRICING_PORT=$FAKE_PORT
touch "$T/ec2.log" "$T/pricing.log"   # the fakes log from their first request on
aws_g() {
    AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY \
    AWS_ENDPOINT_URL_EC2="http://127.0.0.1:$EC2_PORT" AWS_ENDPOINT_URL_PRICING="http://127.0.0.1:$PRICING_PORT" \
        AWS_REGION=us-east-1 g "$@"
}
# the requests logged since line $2 of log $1, as "ACTION:REGION" / "TARGET:PAGE"
ec2_calls() { python3 -c 'import json,sys; print(" ".join("%s:%s" % (x["action"], x["region"]) for x in map(json.loads, open(sys.argv[1]).readlines()[int(sys.argv[2]):])))' "$T/ec2.log" "$1"; }
pricing_calls() { python3 -c 'import json,sys
out = []
for x in map(json.loads, open(sys.argv[1]).readlines()[int(sys.argv[2]):]):
    f = {a["Field"]: a["Value"] for a in x["body"]["Filters"]}
    out.append("%s%s:%s" % (f["instanceType"], "@" + f["regionCode"] if "regionCode" in f else "", x["body"].get("NextToken", "-").split(":")[0]))
print(" ".join(out))' "$T/pricing.log" "$1"; }

# --region narrows: us-west-2 only (45 aws rows in the override, as built in,
# g6.xlarge among them)
e0=$(wc -l < "$T/ec2.log"); p0=$(wc -l < "$T/pricing.log")
run_rc rc aws_g -o json catalog update --provider aws --region us-west-2 --dry-run > "$T/aws-w2.json" 2> "$T/aws-w2.err"
expect_eq "update --provider aws --region us-west-2 --dry-run: exit 0" 0 "$rc"
check_schema "$T/aws-w2.json" catalog
expect_eq "us-west-2: 3 rows, 2 priced, 1 not, 0 new, 42 removed" "aws updated 3 2 1 0 42" \
    "$(json_get "$T/aws-w2.json" '" ".join(str(d["providers"][0][k]) for k in ("provider", "status", "rows", "updated", "not_listed", "added", "removed"))')"
expect_eq "368 - 42 = 326 rows, nothing written" "326 " \
    "$(json_get "$T/aws-w2.json" '"%d %s" % (d["rows"], d["written"])')"
expect_eq "EC2 calls: DescribeRegions, then us-west-2 only" \
    "DescribeRegions:us-east-1 DescribeInstanceTypes:us-west-2 DescribeInstanceTypeOfferings:us-west-2 DescribeSpotPriceHistory:us-west-2" \
    "$(ec2_calls "$e0")"
expect_eq "Price List: one query per type, for us-west-2" \
    "g6.xlarge@us-west-2:- p4d.24xlarge@us-west-2:- p5.48xlarge@us-west-2:-" "$(pricing_calls "$p0")"

run_rc rc aws_g catalog update --provider aws --region eu-west-9 > /dev/null 2> "$T/aws-bad.err"
expect_eq "a region DescribeRegions does not list: exit 3" 3 "$rc"
expect_eq "says which it lists" "gpuctl: error: aws: region 'eu-west-9' is not one that DescribeRegions lists for these credentials (us-east-1, us-west-2, ap-northeast-1)" \
    "$(cat "$T/aws-bad.err")"

# every region, written
e0=$(wc -l < "$T/ec2.log"); p0=$(wc -l < "$T/pricing.log")
run_rc rc aws_g -o json catalog update --provider aws > "$T/aws.json" 2> "$T/aws.err"
expect_eq "update --provider aws: exit 0" 0 "$rc"
check_schema "$T/aws.json" catalog
expect_eq "10 rows, 8 priced, 2 not, 0 new, 217 removed" "aws updated 10 8 2 0 217" \
    "$(json_get "$T/aws.json" '" ".join(str(d["providers"][0][k]) for k in ("provider", "status", "rows", "updated", "not_listed", "added", "removed"))')"
expect_eq "written: 368 - 227 + 10 = 151 rows" "151 $OVR" "$(json_get "$T/aws.json" '"%d %s" % (d["rows"], d["written"])')"
# (the calls of one batch may reach the fake in any order: sorted)
expect_eq "EC2 calls: DescribeRegions, then every region at once, one page each" \
    "DescribeRegions:us-east-1 | DescribeInstanceTypeOfferings:ap-northeast-1 DescribeInstanceTypeOfferings:us-east-1 DescribeInstanceTypeOfferings:us-west-2 DescribeInstanceTypes:ap-northeast-1 DescribeInstanceTypes:us-east-1 DescribeInstanceTypes:us-west-2 DescribeSpotPriceHistory:ap-northeast-1 DescribeSpotPriceHistory:us-east-1 DescribeSpotPriceHistory:us-west-2" \
    "$(ec2_calls "$e0" | cut -d' ' -f1) | $(ec2_calls "$e0" | cut -d' ' -f2- | tr ' ' '\n' | sort | paste -sd' ')"
expect_eq "Price List: one query per type, p4d in two pages of 2" \
    "g5.xlarge:- g6.xlarge:- p4d.24xlarge:- p4d.24xlarge:2 p5.48xlarge:- p6-b200.48xlarge:-" "$(pricing_calls "$p0")"
expect_match "stderr: the types left out, and why" \
    "aws: g7e.2xlarge: GPU RTX PRO 6000 with 98304 MiB is not in the catalog's GPU table; left out" "$(cat "$T/aws.err")"
expect_match "stderr: not NVIDIA" "aws: g4ad.xlarge: its GPU is AMD Radeon Pro V520, not NVIDIA; left out" "$(cat "$T/aws.err")"
expect_match "stderr: summary" "aws: 10 row\(s\) from the APIs in 3 region\(s\): 8 with an on-demand price, 2 without, 5 with a spot price; 0 new, 217 no longer listed \(removed\)" \
    "$(cat "$T/aws.err")"
expect_eq "the aws rows of the override, exactly" \
"aws,g5.xlarge,ap-northeast-1,A10G,1,24,4,16,none,,1.459,0.6913,,,aws-api,fetched DATE: hardware from DescribeInstanceTypes; on-demand from the Price List (published 2026-12-01); spot from DescribeSpotPriceHistory (lowest zone: ap-northeast-1a)
aws,g5.xlarge,us-east-1,A10G,1,24,4,16,none,,1.006,0.397,,,aws-api,fetched DATE: hardware from DescribeInstanceTypes; on-demand from the Price List (published 2026-12-01); spot from DescribeSpotPriceHistory (lowest zone: us-east-1a)
aws,g6.xlarge,us-east-1,L4,1,22.3515625,4,16,none,,0.8048,,,,aws-api,fetched DATE: hardware from DescribeInstanceTypes; on-demand from the Price List (published 2026-12-01); no spot price
aws,g6.xlarge,us-west-2,L4,1,22.3515625,4,16,none,,,,,,aws-api,fetched DATE: hardware from DescribeInstanceTypes; no on-demand price in the Price List; no spot price
aws,p4d.24xlarge,ap-northeast-1,A100-40GB,8,40,96,1152,efa,400,30.09784,,,,aws-api,fetched DATE: hardware from DescribeInstanceTypes; on-demand from the Price List (published 2026-12-01); no spot price
aws,p4d.24xlarge,us-east-1,A100-40GB,8,40,96,1152,efa,400,21.957642,2.4655,,,aws-api,fetched DATE: hardware from DescribeInstanceTypes; on-demand from the Price List (published 2026-12-01); spot from DescribeSpotPriceHistory (lowest zone: us-east-1a)
aws,p4d.24xlarge,us-west-2,A100-40GB,8,40,96,1152,efa,400,21.95764,,,,aws-api,fetched DATE: hardware from DescribeInstanceTypes; on-demand from the Price List (published 2026-12-01); no spot price
aws,p5.48xlarge,us-east-1,H100-80GB-SXM,8,80,192,2048,efa,3200,55.04,17.6289,,,aws-api,fetched DATE: hardware from DescribeInstanceTypes; on-demand from the Price List (published 2026-12-01); spot from DescribeSpotPriceHistory (lowest zone: us-east-1a)
aws,p5.48xlarge,us-west-2,H100-80GB-SXM,8,80,192,2048,efa,3200,55.04,12.6935,,,aws-api,fetched DATE: hardware from DescribeInstanceTypes; on-demand from the Price List (published 2026-12-01); spot from DescribeSpotPriceHistory (lowest zone: us-west-2a)
aws,p6-b200.48xlarge,us-east-1,B200-SXM,8,179.0615234375,192,2048,efa,3200,,,,,aws-api,fetched DATE: hardware from DescribeInstanceTypes; no on-demand price in the Price List; no spot price" \
    "$(grep '^aws,' "$OVR" | sed -E 's/fetched [0-9]{4}-[0-9]{2}-[0-9]{2}:/fetched DATE:/')"
expect_eq "the other providers' rows are as they were (azure 40, aliyun 101)" "aliyun=101 azure=40" \
    "$(cut -d, -f1 "$OVR" | sed 1d | grep -v '^aws$' | sort | uniq -c | awk '{print $2 "=" $1}' | paste -sd' ')"
g -o json offers --gpu L4:1 --provider aws --limit 1 > "$T/o-l4.json"
check_schema "$T/o-l4.json" offers
expect_eq "offers show a new row: g6.xlarge us-east-1 at 0.8048 (aws-api)" "g6.xlarge us-east-1 0.8048 aws-api" \
    "$(json_get "$T/o-l4.json" '" ".join(str(x) for x in (d["offers"][0]["instance_type"], d["offers"][0]["region"], d["offers"][0]["price_usd_hr"], d["offers"][0]["source"]))')"
g -o json offers --gpu H100:8 --provider aws --spot --limit 1 > "$T/o-h100.json"
expect_eq "and the spot price: p5.48xlarge us-west-2 at 12.6935" "p5.48xlarge us-west-2 12.6935" \
    "$(json_get "$T/o-h100.json" '" ".join(str(x) for x in (d["offers"][0]["instance_type"], d["offers"][0]["region"], d["offers"][0]["price_usd_hr"]))')"

# The Price List refusing: exit 20 (auth), the IAM action named, nothing written
OVR_SHA=$(sha "$OVR")
echo '[{"target": "GetProducts", "type": "AccessDeniedException", "message": "User: arn:aws:iam::123456789012:user/ci is not authorized to perform: pricing:GetProducts"}]' > "$T/pricing-faults.json"
start_fake pricing2 pricing.py --faults "$T/pricing-faults.json"
PRICING_PORT=$FAKE_PORT
run_rc rc aws_g catalog update --provider aws > /dev/null 2> "$T/aws-denied.err"
expect_eq "Price List AccessDenied: exit 20" 20 "$rc"
expect_match "names the permission" "AccessDeniedException: .*\(the credentials lack the IAM permission pricing:GetProducts;" "$(cat "$T/aws-denied.err")"
expect_eq "override untouched" "$OVR_SHA" "$(sha "$OVR")"

# ---- 6. update --from installs a file as it is ---------------------------------------------
# 7.1234: below every A100-80GB:8 EFA spot price of the built-in rows (the
# lowest is p4de eu-central-1's 8.0274), so the hand-made row comes first.
sed "${line}s/,27.44705,8.6505,/,27.44705,7.1234,/" exported.csv > mine.csv
run_rc rc g -o json catalog update --from mine.csv > "$T/from.json" 2> /dev/null
expect_eq "update --from mine.csv: exit 0" 0 "$rc"
check_schema "$T/from.json" catalog
expect_eq "installed byte for byte" "$(sha mine.csv) $(sha mine.csv) mine.csv" \
    "$(sha "$OVR") $(json_get "$T/from.json" 'd["sha256"] + " " + d["from"]')"
expect_eq "still mode 0644" 644 "$(stat -c %a "$OVR")"
g -o json offers --gpu A100-80GB:8 --spot --interconnect efa --limit 1 > "$T/o3.json"
expect_eq "offers see the hand-made price" "p4de.24xlarge us-east-1 7.1234" \
    "$(json_get "$T/o3.json" '" ".join(str(x) for x in (d["offers"][0]["instance_type"], d["offers"][0]["region"], d["offers"][0]["price_usd_hr"]))')"

# ---- 7. reset ----------------------------------------------------------------------------------
run_rc rc g -o json catalog reset > "$T/reset.json"
expect_eq "catalog reset: exit 0" 0 "$rc"
check_schema "$T/reset.json" catalog
expect_eq "json names what it removed" "catalog reset $OVR" "$(json_get "$T/reset.json" 'd["command"] + " " + d["removed"]')"
expect_eq "the override is gone" no "$([ -e "$OVR" ] && echo yes || echo no)"
g -o json catalog show > "$T/show3.json"
expect_eq "built-in again" "built-in False $BUILTIN_SHA" \
    "$(json_get "$T/show3.json" 'd["origin"], d["user_override_exists"], d["sha256"]' | tr -d "(),'")"
g -o json offers --gpu T4:1 --spot --provider azure --region eastus --limit 1 > "$T/o4.json"
expect_eq "offers back to the built-in price" 0.062699 "$(json_get "$T/o4.json" 'd["offers"][0]["price_usd_hr"]')"
run_rc rc g catalog reset > "$T/reset2.txt"
expect_eq "reset again (nothing there): exit 0" 0 "$rc"
expect_eq "and says there was nothing" "catalog: no user override at $OVR; nothing to remove" "$(cat "$T/reset2.txt")"
g -o json catalog reset > "$T/reset3.json"
check_schema "$T/reset3.json" catalog
expect_eq "json: removed is null" None "$(json_get "$T/reset3.json" 'd["removed"]')"
finish
