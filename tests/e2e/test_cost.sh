#!/bin/bash
# gpuctl cost (docs/spot.md, "Cost ledger"): the ledger of real local
# clusters, one destroyed and one still running, with their entries' prices
# and times set by hand (a local node costs nothing, and real times are not
# round), read under GPUCTL_FAKE_NOW; every amount is worked out next to it.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" && cd "$T/work"

cat > one.yaml <<'YAML'
name: one
nodes: 2
run: 'true'
YAML
cat > two.yaml <<'YAML'
name: two
nodes: 1
run: sleep 600
YAML
run_rc rc g apply -f one.yaml --wait --timeout 300 > "$T/one.out" 2>&1
expect_eq "apply one: exit 0" 0 "$rc"
run_rc rc g -y destroy one > "$T/destroy.out" 2>&1
expect_eq "destroy one: exit 0" 0 "$rc"
run_rc rc g apply -f two.yaml > "$T/two.out" 2>&1
expect_eq "apply two (keeps running): exit 0" 0 "$rc"
for _ in $(seq 1 100); do
    g status two 2>/dev/null | grep -Eq '^0 +two-0 +running ' && break
    sleep 0.2
done

# now = 1700000000 = 2023-11-14T22:13:20Z; H = 3600 s
NOW=1700000000
python3 - "$STATE/gpuctl.db" <<'PY'
import sqlite3, sys
NOW, H = 1700000000, 3600
db = sqlite3.connect(sys.argv[1])
def entry(node, price, spot, start, stop):
    n = db.execute("SELECT id FROM nodes WHERE name = ?", (node,)).fetchone()[0]
    db.execute("UPDATE ledger SET price_hourly = ?, spot = ?, start_at = ?, stop_at = ? "
               "WHERE node_id = ?", (price, spot, start, stop, n))
# one-0: on-demand 2.50 USD/h, now-10h .. now-4h
entry("one-0", 2.5, 0, NOW - 10 * H, NOW - 4 * H)
# one-1: spot 0.75 USD/h, now-30h .. now-20h
entry("one-1", 0.75, 1, NOW - 30 * H, NOW - 20 * H)
# two-0: on-demand 1.20 USD/h from now-2h, still billing
entry("two-0", 1.2, 0, NOW - 2 * H, None)
db.execute("UPDATE clusters SET destroyed_at = ? WHERE name = 'one'", (NOW - H,))
db.commit()
PY
expect_eq "one ledger entry per node" "3" \
    "$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM ledger').fetchone()[0])" "$STATE/gpuctl.db")"
c() { GPUCTL_FAKE_NOW=$NOW g "$@"; }

# Every entry.  one-0: 6h x 2.50 = 15.00; one-1: 10h x 0.75 = 7.50;
# one: 22.50 over 16 node-hours; two-0: 2h x 1.20 = 2.40, open;
# local: 22.50 + 2.40 = 24.90 over 18 node-hours
run_rc rc c cost > "$T/all.txt" 2> "$T/all.err"
expect_eq "cost: exit 0, nothing on stderr" "0 " "$rc $(cat "$T/all.err")"
expect_eq "cost: every cluster, provider and the total" \
"cluster one (destroyed 2023-11-14T21:13:20Z)
RANK  INSTANCE TYPE  PROVIDER  REGION  PURCHASE   USD/H   START                 STOP                  HOURS  USD
0     local          local     local   on-demand  2.5000  2023-11-14T12:13:20Z  2023-11-14T18:13:20Z  6.00   15.00
1     local          local     local   spot       0.7500  2023-11-13T16:13:20Z  2023-11-14T02:13:20Z  10.00  7.50
cluster one: 22.50 USD over 16.00 node-hours

cluster two
RANK  INSTANCE TYPE  PROVIDER  REGION  PURCHASE   USD/H   START                 STOP     HOURS  USD
0     local          local     local   on-demand  1.2000  2023-11-14T20:13:20Z  running  2.00   2.40
cluster two: 2.40 USD over 2.00 node-hours; 1 node(s) still billing, 1.2000 USD/hour

PROVIDER  ENTRIES  NODE-HOURS  USD    RUNNING USD/H
local     3        18.00       24.90  1.2000

total: 24.90 USD over 18.00 node-hours, from the first entry to 2023-11-14T22:13:20Z; 1 node(s) still billing, 1.2000 USD/hour" \
    "$(cat "$T/all.txt")"

# One cluster, destroyed: 15.00 + 7.50 = 22.50
run_rc rc c cost one > "$T/one.txt" 2>&1
expect_eq "cost one: exit 0" 0 "$rc"
expect_eq "cost one: its total" \
    "total: 22.50 USD over 16.00 node-hours, from the first entry to 2023-11-14T22:13:20Z" \
    "$(tail -1 "$T/one.txt")"
expect_eq "cost one: only its cluster" "cluster one (destroyed 2023-11-14T21:13:20Z)" \
    "$(grep '^cluster one (' "$T/one.txt")$(grep -c '^cluster two' "$T/one.txt" | sed 's/^0$//')"

# --since 24h: now-24h = 2023-11-13T22:13:20Z.  one-1 ran now-30h..now-20h:
# 4h in the window x 0.75 = 3.00; one-0 15.00; two-0 2.40;
# 15.00 + 3.00 + 2.40 = 20.40 over 6 + 4 + 2 = 12 node-hours
run_rc rc c cost --since 24h > "$T/s24.txt" 2>&1
expect_eq "cost --since 24h: exit 0" 0 "$rc"
expect_eq "cost --since 24h: one-1 cut at the window's start" \
    "1     local          local     local   spot       0.7500  2023-11-13T16:13:20Z  2023-11-14T02:13:20Z  4.00   3.00" \
    "$(grep '^1 ' "$T/s24.txt")"
expect_eq "cost --since 24h: the total" \
    "total: 20.40 USD over 12.00 node-hours, from 2023-11-13T22:13:20Z to 2023-11-14T22:13:20Z; 1 node(s) still billing, 1.2000 USD/hour" \
    "$(tail -1 "$T/s24.txt")"

# --since an RFC 3339 time, now-3h: one's entries ended before it; two-0
# 2h x 1.20 = 2.40
run_rc rc c cost --since 2023-11-14T19:13:20Z > "$T/s3.txt" 2>&1
expect_eq "cost --since 2023-11-14T19:13:20Z: only two" "0 0 cluster two" \
    "$rc $(grep -c '^cluster one' "$T/s3.txt" || true) $(grep '^cluster two$' "$T/s3.txt")"
expect_eq "cost --since 2023-11-14T19:13:20Z: the total" \
    "total: 2.40 USD over 2.00 node-hours, from 2023-11-14T19:13:20Z to 2023-11-14T22:13:20Z; 1 node(s) still billing, 1.2000 USD/hour" \
    "$(tail -1 "$T/s3.txt")"
# a date before any entry could be (1900): the whole ledger, as with no
# --since (regression: it was refused as not a date)
run_rc rc c cost --since 1900-01-01 > "$T/s1900.txt" 2>&1
expect_eq "cost --since 1900-01-01: the whole ledger" \
    "0 total: 24.90 USD over 18.00 node-hours, from the first entry to 2023-11-14T22:13:20Z; 1 node(s) still billing, 1.2000 USD/hour" \
    "$rc $(tail -1 "$T/s1900.txt")"
# the same instant with an offset
run_rc rc c cost --since 2023-11-14T21:13:20+02:00 > "$T/s3b.txt" 2>&1
expect_eq "an offset is the same instant" "$(tail -1 "$T/s3.txt")" "$(tail -1 "$T/s3b.txt")"
# a date is its midnight UTC: 2023-11-14T00:00:00Z = 1699920000 = now - 80000 s;
# one-1 billed 1699920000 .. now-20h (1699928000) = 8000 s = 2.22 h x 0.75
# = 1.6667; 15.00 + 1.6667 + 2.40 = 19.0667 -> 19.07 over 6 + 2.22 + 2 = 10.22 h
run_rc rc c cost --since 2023-11-14 > "$T/sd.txt" 2>&1
expect_eq "cost --since 2023-11-14: the total" \
    "total: 19.07 USD over 10.22 node-hours, from 2023-11-14T00:00:00Z to 2023-11-14T22:13:20Z; 1 node(s) still billing, 1.2000 USD/hour" \
    "$(tail -1 "$T/sd.txt")"

# -o json, against docs/schema/cost.schema.json
c -o json cost > "$T/all.json"
check_schema "$T/all.json" cost
expect_eq "json: the total (24.90 USD, 18 node-hours = 64800 s, 1 open at 1.20)" \
    "24.9 64800 1 1.2 3" \
    "$(json_get "$T/all.json" '" ".join(str(x) for x in (round(d["total"]["cost_usd"], 6), d["total"]["billed_s"], d["total"]["open"], d["total"]["price_hourly_now"], d["total"]["entries"]))')"
expect_eq "json: one-1 (spot, 10 h = 36000 s, 7.50), two-0 open with stop_at null" \
    "spot 36000 7.5 1699892000 1699928000 | True None 7200 2.4" \
    "$(json_get "$T/all.json" '" ".join(str(x) for x in (d["clusters"][0]["ledger"][1]["purchase"], d["clusters"][0]["ledger"][1]["billed_s"], d["clusters"][0]["ledger"][1]["cost_usd"], d["clusters"][0]["ledger"][1]["start_at"], d["clusters"][0]["ledger"][1]["stop_at"], "|", d["clusters"][1]["ledger"][0]["open"], d["clusters"][1]["ledger"][0]["stop_at"], d["clusters"][1]["ledger"][0]["billed_s"], d["clusters"][1]["ledger"][0]["cost_usd"]))')"
expect_eq "json: since null, now, destroyed_at, compare_buy null" \
    "None 1700000000 1699996400 None None" \
    "$(json_get "$T/all.json" '" ".join(str(x) for x in (d["since"], d["now"], d["clusters"][0]["destroyed_at"], d["clusters"][1]["destroyed_at"], d["compare_buy"]))')"

# --compare-buy: a local node's GPUs are not in the catalog, so it counts
# as one server and its figures must be given
run_rc rc c cost --compare-buy > "$T/cb0.txt" 2> "$T/cb0.err"
expect_eq "--compare-buy without figures: exit 3, naming what to give" \
    "3 gpuctl: error: --compare-buy: the catalog does not know the GPUs of some nodes (each counts as one server): give --server-price, --power-kw" \
    "$rc $(cat "$T/cb0.err")"
# --since 24h: period 86400 s; entries one-0 (now-10h..now-4h), one-1
# (now-24h..now-20h), two-0 (now-2h..now) never overlap: peak 1 node, 1 server
# rented 15.00 + 3.00 + 2.40 = 20.40
# amortised = 20,000 x 86,400 / (4 x 365 x 86,400) = 20,000 / 1,460 = 13.70
# power = 1 x 2 kW x 1.5 x 24 h x 0.10 USD/kWh = 7.20; owned = 20.90
# utilisation = (6 + 4 + 2) h / 24 h = 50.0 %; renting at full use
# 20.40 / 0.5 = 40.80; break-even 20.8986 / 40.80 = 51.2 %
run_rc rc c cost --since 24h --compare-buy --server-price 20000 --power-kw 2 --pue 1.5 \
    --kwh-price 0.1 --years 4 > "$T/cb.txt" 2>&1
expect_eq "--compare-buy with every figure: exit 0" 0 "$rc"
expect_eq "--compare-buy: the comparison" \
"Owning instead of renting (--compare-buy):

GPUs not in the catalog: rented 20.40 USD over 24.00 hours; at most 1 node(s) billed at once (12.00 node-hours)
FIGURE           VALUE           FROM
server price     20000.00 USD    given (--server-price)
GPUs per server  1               default, source: one server per node (GPUs not in the catalog, so --server-gpus cannot apply)
server power     2.00 kW         given (--power-kw)
PUE              1.50            given (--pue)
electricity      0.1000 USD/kWh  given (--kwh-price)
amortisation     4 years         given (--years)
owned: 1 server(s): 13.70 amortised + 7.20 power = 20.90 USD
utilisation 50.0%: owning is cheaper above 51.2% (renting is cheaper at this utilisation)" \
    "$(sed -n '/^Owning instead/,$p' "$T/cb.txt")"
c -o json cost --since 24h --compare-buy --server-price 20000 --power-kw 2 --pue 1.5 \
    --kwh-price 0.1 --years 4 > "$T/cb.json"
check_schema "$T/cb.json" cost
expect_eq "json compare_buy: unit, peak, servers, owned, utilisation, break-even" \
    "None node 1 1 20.898630 0.500000 0.512221 --pue False" \
    "$(json_get "$T/cb.json" '" ".join([str(d["compare_buy"][0]["gpu_model"]), d["compare_buy"][0]["unit"], str(d["compare_buy"][0]["peak_units"]), str(d["compare_buy"][0]["servers"]), "%.6f" % d["compare_buy"][0]["owned_usd"], "%.6f" % d["compare_buy"][0]["utilisation"], "%.6f" % d["compare_buy"][0]["break_even_utilisation"], d["compare_buy"][0]["pue"]["source"], str(d["compare_buy"][0]["pue"]["default"])])')"

# Bad input: exit 3 (7 for a name never recorded), with the reason
bad() { # WHAT EXPECTED_RC EXPECTED_STDERR ARGS...
    local what=$1 want=$2 msg=$3; shift 3
    run_rc rc c "$@" > /dev/null 2> "$T/bad.err"
    expect_eq "$what" "$want $msg" "$rc $(cat "$T/bad.err")"
}
USAGE="(usage: gpuctl cost [NAME] [--since WHEN] [--compare-buy [--server-price USD] [--server-gpus N] ...])"
bad "a name never recorded: 7 and the closest name" 7 \
    "gpuctl: error: no cluster named 'onr'; did you mean 'one' (destroyed)?" cost onr
bad "--since of no form" 3 \
    "gpuctl: error: --since: expected a duration back from now (7d, 24h, 1h30m) or an RFC 3339 UTC date or time (2025-01-31, 2025-01-31T08:00:00Z), got 'yesterday' $USAGE" \
    cost --since yesterday
bad "--since a date that does not exist" 3 \
    "gpuctl: error: --since: expected a duration back from now (7d, 24h, 1h30m) or an RFC 3339 UTC date or time (2025-01-31, 2025-01-31T08:00:00Z), got '2023-02-30' $USAGE" \
    cost --since 2023-02-30
bad "--since after now" 3 "gpuctl: error: --since: 2024-01-01 is after now $USAGE" \
    cost --since 2024-01-01
bad "--since a bad duration" 3 \
    "gpuctl: error: --since: expected a duration like 90s, 30m, 72h, 1d or 1h30m, got '5x' $USAGE" \
    cost --since 5x
bad "--pue below 1" 3 "gpuctl: error: --pue: expected a decimal number from 1 and at most 1e12, got '0.9' $USAGE" \
    cost --compare-buy --pue 0.9
bad "--server-price above 1e12 (the range said)" 3 \
    "gpuctl: error: --server-price: expected a decimal number above 0 and at most 1e12, got '1e15' $USAGE" \
    cost --compare-buy --server-price 1e15
bad "--server-price in hex" 3 \
    "gpuctl: error: --server-price: expected a decimal number above 0 and at most 1e12, got '0x10' $USAGE" \
    cost --compare-buy --server-price 0x10
bad "--server-gpus not whole" 3 \
    "gpuctl: error: --server-gpus: expected a whole number of GPUs from 1 to 65535, got '2.5' $USAGE" \
    cost --compare-buy --server-gpus 2.5
bad "a figure without --compare-buy" 3 \
    "gpuctl: error: --server-price, --server-gpus, --power-kw, --pue, --kwh-price and --years go with --compare-buy $USAGE" \
    cost --server-price 1000
bad "two names" 3 "gpuctl: error: unexpected argument 'two' $USAGE" cost one two
run_rc rc c -o json cost onr > "$T/nf.json" 2>/dev/null
expect_eq "-o json of a name never recorded: the error document" "7 not_found" \
    "$rc $(json_get "$T/nf.json" 'd["error"]["code"]')"

g -y destroy two > /dev/null 2>&1
finish
