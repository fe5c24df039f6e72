#!/bin/bash
# gpuctl plan and apply PLANFILE (docs/offers.md): every example plans
# offline, the chosen offer, cost and failover order of two examples pinned
# to hand-checked catalog values, budget and capacity failures, the CI
# contract of --detailed-exitcode, and a saved plan carried out on the
# quickstart, refused once stale (13), when edited (3) or not a plan (3).
source "$(dirname "$0")/lib.sh" || exit 1
copy_examples
cd "$T/work"
export GPUCTL_CONFIG_DIR="$T/config"   # never the user's catalog override
unset GPUCTL_CATALOG XDG_CONFIG_HOME
EX="$GPUCTL_SOURCE_DIR/examples"

n_clusters() { g -o json status --all | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["clusters"]))'; }
# offer LABEL: "provider type region purchase/head_purchase cluster_usd_hr"
offers3() {
    json_get "$1" '"\n".join(" ".join(str(x) for x in (o["provider"], o["instance_type"], o["region"], o["purchase"] + "/" + o["head_purchase"], o["price"]["cluster_usd_hr"])) for o in ([d["chosen"]] + d["fallbacks"])[:3])'
}

# ---- 1. every example plans (exit 2: changes pending) and matches the schema
# Three examples' cheapest offer is on Azure, which is plan-only: the plan
# is shown (exit 0), but --detailed-exitcode never approves it (exit 1),
# since apply would refuse it (exit 6).
for spec in "$EX/detection-3d-8x8-a100.yaml" "$EX/bert-base-4xt4-spot.yaml" \
            "$EX/multimodal-h100-ib.yaml" "$EX/train-and-serve/train-a100.yaml" \
            "$EX/train-and-serve/serve-t4.yaml" quickstart.yaml; do
    b=$(basename "$spec" .yaml)
    case $b in
    detection-3d-8x8-a100|bert-base-4xt4-spot|multimodal-h100-ib) want=1 ;;
    *) want=2 ;;
    esac
    run_rc rc g plan -f "$spec" --detailed-exitcode > /dev/null 2> "$T/$b.err"
    expect_eq "$b: plan --detailed-exitcode on an empty state exits $want" $want "$rc"
    if [ $want = 1 ]; then
        expect_eq "$b: why it is not approved" "gpuctl: error: apply cannot carry this plan out: the chosen offer is on azure, which is not built into this gpuctl (available: local, aws, slurm)" "$(cat "$T/$b.err")"
    fi
    run_rc rc g -o json plan -f "$spec" --detailed-exitcode > "$T/$b-d.json" 2> /dev/null
    expect_eq "$b: -o json exits $want too" $want "$rc"
    run_rc rc g -o json plan -f "$spec" > "$T/$b.json"
    expect_eq "$b: -o json without --detailed-exitcode exits 0" 0 "$rc"
    check_schema "$T/$b.json" plan
    expect_eq "$b: create, changes pending, nothing in the state" "plan create True False" \
        "$(json_get "$T/$b.json" '" ".join(str(x) for x in (d["kind"], d["action"], d["changes_pending"], d["state"]["cluster_exists"]))')"
    run_rc rc g plan -f "$spec" > "$T/$b.txt" 2>&1
    expect_eq "$b: without --detailed-exitcode exits 0" 0 "$rc"
done
expect_eq "planning created no cluster" 0 "$(n_clusters)"

# ---- 2. detection-3d: 8 x A100-80GB:8 over rdma, spot workers, on-demand head
# The 13 fitting candidates (11 A100-80GB:8 rows x 2 purchase options = 22;
# lost: 6 on interconnect (sccgn7ex unknown fabric, ebmgn7e and
# gn7e-c16g1.32xlarge none, x2 options), 2 on no_price (ebmgn7ex), 1 on
# budget_hourly (p4de ap-northeast-1 all on-demand: 8 x 37.6223 = 300.9784 >
# 300)); hardware: (368 - 11) x 2 = 714. (p4de eu-central-1 and
# ap-southeast-1 fit but rank after aws us-east-1: 34.29122 + 7 x 8.0274 =
# 90.48302 and 32.93646 + 7 x 13.7534 = 129.21026.)
# Chosen: azure Standard_ND96amsr_A100_v4 eastus, head on-demand 32.77, 7
# spot workers at 3.6047:
#   cluster   = 32.77 + 7 x 3.6047 = 32.77 + 25.2329 = 58.0029 USD/hour
#   on-demand = 8 x 32.77 = 262.16; saving = 262.16 - 58.0029 = 204.1571,
#               204.1571 / 262.16 = 77.875 % -> 77.9
#   projected = 58.0029 x 48 h = 2784.1392 USD
# Next: eastus2 32.77 + 7 x 3.611254 = 32.77 + 25.278778 = 58.048778;
#       aws p4de.24xlarge us-east-1 27.44705 + 7 x 8.6505 = 27.44705 +
#       60.5535 = 88.00055.
D="$T/detection-3d-8x8-a100.json"
expect_eq "det3d: chosen offer" "azure Standard_ND96amsr_A100_v4 eastus spot on-demand skypilot-v6-azure" \
    "$(json_get "$D" '" ".join((d["chosen"]["provider"], d["chosen"]["instance_type"], d["chosen"]["region"], d["chosen"]["purchase"], d["chosen"]["head_purchase"], d["chosen"]["source"]))')"
expect_eq "det3d: cost" "3.6047 32.77 58.0029 262.16 204.1571 77.9 172800 2784.1392" \
    "$(json_get "$D" '" ".join(str(d["cost"][k]) for k in ("node_usd_hr", "head_usd_hr", "cluster_usd_hr", "cluster_on_demand_usd_hr", "spot_saving_usd_hr", "spot_saving_pct", "max_duration_s", "projected_total_usd"))')"
expect_eq "det3d: chosen price object agrees with cost" "3.6047 32.77 58.0029 262.16 2784.1392 0.001444" \
    "$(json_get "$D" '" ".join(str(d["chosen"]["price"][k]) for k in ("node_usd_hr", "head_usd_hr", "cluster_usd_hr", "cluster_on_demand_usd_hr", "projected_total_usd", "usd_per_tflops_hr"))')"
expect_eq "det3d: failover order, first 3" \
"azure Standard_ND96amsr_A100_v4 eastus spot/on-demand 58.0029
azure Standard_ND96amsr_A100_v4 eastus2 spot/on-demand 58.048778
aws p4de.24xlarge us-east-1 spot/on-demand 88.00055" "$(offers3 "$D")"
expect_eq "det3d: 13 feasible, 12 fallbacks" "13 12" "$(json_get "$D" 'd["feasible"], len(d["fallbacks"])' | tr -d '(),')"
# ebmgn7ex (2 candidates) has no region in the catalog: nowhere to create a node
expect_eq "det3d: lost_by" "{'hardware': 714, 'interconnect': 6, 'region': 2, 'budget_hourly': 1}" "$(json_get "$D" 'd["lost_by"]')"
expect_eq "det3d: the budget loser and why" "aws p4de.24xlarge ap-northeast-1 budget_hourly cluster 300.98 USD/hour > budget.max_hourly 300.00" \
    "$(json_get "$D" '" ".join([(o["provider"], o["instance_type"], o["region"], o["verdict"], o["why"]) for o in d["lost"] if o["verdict"] == "budget_hourly"][0])')"
expect_eq "det3d: budget checks" "spot.max_price None 32.77 True|budget.max_hourly 300 58.0029 True|budget.max_total 15000 2784.1392 True" \
    "$(json_get "$D" '"|".join(" ".join(str(b[k]) for k in ("check", "limit", "value", "ok")) for b in d["budget"])')"
expect_eq "det3d: changes: the cluster, an on-demand head, 7 spot workers" \
    "cluster:azure node0:on-demand:32.77 node1:spot:3.6047 node2:spot:3.6047 node3:spot:3.6047 node4:spot:3.6047 node5:spot:3.6047 node6:spot:3.6047 node7:spot:3.6047" \
    "$(json_get "$D" '" ".join("cluster:" + c["provider"] if c["resource"] == "cluster" else "node%d:%s:%s" % (c["rank"], c["purchase"], c["price_usd_hr"]) for c in d["changes"])')"
expect_match "det3d: notes say the cloud providers are not built in" "providers azure, aliyun are not built into this gpuctl yet" \
    "$(json_get "$D" '" ".join(d["notes"])')"
expect_match "det3d table: chosen line" "Chosen offer: azure Standard_ND96amsr_A100_v4 in eastus, spot \(head on-demand\)" "$(cat "$T/detection-3d-8x8-a100.txt")"
expect_match "det3d table: price line" "price: 3\.6047 USD/hour per node, head 32\.7700; cluster 58\.00 USD/hour" "$(cat "$T/detection-3d-8x8-a100.txt")"
expect_match "det3d table: projected and saving" "projected: 2784\.14 USD for lifecycle\.max_duration \(48h\)" "$(cat "$T/detection-3d-8x8-a100.txt")"
expect_match "det3d table: spot saving" "spot saving: 204\.16 USD/hour \(77\.9%\) against 262\.16 on-demand" "$(cat "$T/detection-3d-8x8-a100.txt")"
expect_match "det3d table: plan summary" "Plan: 9 to create \(1 cluster, 8 nodes\)\." "$(cat "$T/detection-3d-8x8-a100.txt")"

# ---- 3. bert-t4: 4 x T4:1, spot only, 0.25 USD per node-hour cap ------------
# T4:1 rows with >= 4 vCPU and >= 16 GiB and a spot price <= 0.25, cheapest
# first: NC4as_T4_v3 westus2 0.061595, eastus 0.062699, NC8as_T4_v3 westus2
# 0.088059, ... (11 fit: the 9 of before and aws g4dn.xlarge and .2xlarge
# in us-east-2 at 0.1901 and 0.234; 4 aliyun gn6i-c4g1 rows lose on memory:
# 15 GiB; 43 on max_price; hardware 368 - 58 T4:1 rows = 310).
#   cluster   = 4 x 0.061595 = 0.24638;  on-demand = 4 x 0.526 = 2.104
#   saving    = 2.104 - 0.24638 = 1.85762; 1.85762 / 2.104 = 88.29 % -> 88.3
#   projected = 0.24638 x 6 h = 1.47828
# Next: 4 x 0.062699 = 0.250796; 4 x 0.088059 = 0.352236.
D="$T/bert-base-4xt4-spot.json"
expect_eq "bert: chosen offer" "azure Standard_NC4as_T4_v3 westus2 spot spot" \
    "$(json_get "$D" '" ".join((d["chosen"]["provider"], d["chosen"]["instance_type"], d["chosen"]["region"], d["chosen"]["purchase"], d["chosen"]["head_purchase"]))')"
expect_eq "bert: cost" "0.061595 0.061595 0.24638 2.104 1.85762 88.3 21600 1.47828" \
    "$(json_get "$D" '" ".join(str(d["cost"][k]) for k in ("node_usd_hr", "head_usd_hr", "cluster_usd_hr", "cluster_on_demand_usd_hr", "spot_saving_usd_hr", "spot_saving_pct", "max_duration_s", "projected_total_usd"))')"
expect_eq "bert: failover order, first 3" \
"azure Standard_NC4as_T4_v3 westus2 spot/spot 0.24638
azure Standard_NC4as_T4_v3 eastus spot/spot 0.250796
azure Standard_NC8as_T4_v3 westus2 spot/spot 0.352236" "$(offers3 "$D")"
expect_eq "bert: 11 feasible; lost_by" "11 {'hardware': 310, 'memory': 4, 'max_price': 43}" \
    "$(json_get "$D" 'str(d["feasible"]) + " " + str(d["lost_by"])')"
expect_eq "bert: budget checks" "spot.max_price 0.25 0.061595 True|budget.max_hourly 1.5 0.24638 True|budget.max_total 10 1.47828 True" \
    "$(json_get "$D" '"|".join(" ".join(str(b[k]) for k in ("check", "limit", "value", "ok")) for b in d["budget"])')"
expect_eq "bert: request as planned" "4 aws,azure,aliyun any spot spot" \
    "$(json_get "$D" '" ".join((str(d["request"]["nodes"]), ",".join(d["request"]["providers"]), d["request"]["interconnect"], d["request"]["spot_policy"], d["request"]["head_policy"]))')"
expect_match "bert table: the cheapest spot loser says why" "g4dn\.xlarge +eu-central-1 .*spot 0\.2670 USD/hour > spot\.max_price 0\.2500" "$(cat "$T/bert-base-4xt4-spot.txt")"

# ---- 3b. a plan on Aliyun carries the CNY figure beside the USD one ----------
# T4:1 on aliyun, on-demand, no max_duration: 17 aliyun T4:1 rows, cheapest
# ecs.gn6i-c4g1.xlarge ap-southeast-1 at 1.236877 USD = 8.9629 CNY (x 0.138
# = 1.236880, within 0.00005); then gn6i-c8g1.2xlarge ap-southeast-1
# 1.465129; then gn6i-c4g1.xlarge cn-beijing 1.616532 (cn-hangzhou and
# cn-shanghai have the same price and follow by name).
printf 'name: ali\nprovider: aliyun\nresources: {gpu: "T4:1"}\nrun: {command: "true"}\n' > ali.yaml
g -o json plan -f ali.yaml > "$T/ali.json"
check_schema "$T/ali.json" plan
expect_eq "aliyun: chosen, CNY and rate" "ecs.gn6i-c4g1.xlarge ap-southeast-1 1.236877 8.9629 0.138 17" \
    "$(json_get "$T/ali.json" '" ".join(str(x) for x in (d["chosen"]["instance_type"], d["chosen"]["region"], d["chosen"]["price"]["node_usd_hr"], d["chosen"]["price"]["node_cny_hr"], d["chosen"]["price"]["usd_per_cny"], d["feasible"]))')"
expect_eq "aliyun: failover order, first 3" \
"aliyun ecs.gn6i-c4g1.xlarge ap-southeast-1 on-demand/on-demand 1.236877
aliyun ecs.gn6i-c8g1.2xlarge ap-southeast-1 on-demand/on-demand 1.465129
aliyun ecs.gn6i-c4g1.xlarge cn-beijing on-demand/on-demand 1.616532" "$(offers3 "$T/ali.json")"
expect_eq "no max_duration: projected total and max_duration null" "None None" \
    "$(json_get "$T/ali.json" 'd["cost"]["max_duration_s"], d["cost"]["projected_total_usd"]' | tr -d '(),')"
g plan -f ali.yaml > "$T/ali.txt" 2>&1
expect_match "price line shows CNY at the rate" "price: 1\.2369 USD/hour per node \(8\.9629 CNY at 0\.138 USD/CNY\); cluster 1\.24 USD/hour" "$(cat "$T/ali.txt")"
# no max_duration nor budget.max_total: the nodes' default end, 72 h
# (spec.h), bounds the run: 1.236877 x 72 = 89.055 USD
expect_match "and projects the default end" "projected: 89\.06 USD for the nodes' default end \(72h: no lifecycle\.max_duration\)" "$(cat "$T/ali.txt")"
expect_match "the nodes' end and why" "nodes end: max_duration 72h \(default: no lifecycle\.max_duration, no budget\.max_total; lifecycle\.max_duration: none keeps nodes up\)" "$(cat "$T/ali.txt")"
expect_eq "ends in JSON: the default" "259200 default 259200 None" \
    "$(json_get "$T/ali.json" '" ".join(str(d["ends"][k]) for k in ("end_s", "why", "max_duration_s", "budget_s"))')"
# max_duration: none: no end; the run is unbounded
printf 'lifecycle: {max_duration: none}\n' | cat ali.yaml - > ali-none.yaml
g -o json plan -f ali-none.yaml > "$T/ali-none.json"
check_schema "$T/ali-none.json" plan
expect_eq "ends in JSON: none" "None none None None" \
    "$(json_get "$T/ali-none.json" '" ".join(str(d["ends"][k]) for k in ("end_s", "why", "max_duration_s", "budget_s"))')"
g plan -f ali-none.yaml > "$T/ali-none.txt" 2>&1
expect_match "none: the run is unbounded" "projected: unbounded \(no lifecycle\.max_duration\)" "$(cat "$T/ali-none.txt")"
expect_match "none: the nodes have no end" "nodes end: none \(lifecycle\.max_duration: none\)" "$(cat "$T/ali-none.txt")"
# budget.max_total 10 USD: spent at 1.236877 USD/hour after
# floor(10 / 1.236877 x 3600) = 29105 s = 8h5m5s, the nodes' end
printf 'budget: {max_total: 10}\n' | cat ali.yaml - > ali-budget.yaml
g -o json plan -f ali-budget.yaml > "$T/ali-budget.json"
check_schema "$T/ali-budget.json" plan
expect_eq "ends in JSON: the budget" "29105 budget None 29105" \
    "$(json_get "$T/ali-budget.json" '" ".join(str(d["ends"][k]) for k in ("end_s", "why", "max_duration_s", "budget_s"))')"
g plan -f ali-budget.yaml > "$T/ali-budget.txt" 2>&1
expect_match "budget: the nodes' end" "nodes end: budget\.max_total 10\.00 USD spent at the cluster's 1\.2369 USD/hour, 8h5m5s after boot" "$(cat "$T/ali-budget.txt")"

# ---- 4. nothing fits: budget (23) and capacity (22); --detailed-exitcode: 1
# max_hourly 0.2: the cheapest fit was 0.24638 > 0.2, so all 11 lose on
# budget_hourly and the error is "budget".
sed 's/^  max_hourly: 1.50 .*/  max_hourly: 0.2/' "$EX/bert-base-4xt4-spot.yaml" > poor.yaml
expect_match "poor.yaml has the low cap" "^  max_hourly: 0\.2$" "$(grep max_hourly poor.yaml)"
run_rc rc g plan -f poor.yaml > /dev/null 2> "$T/e.txt"
expect_eq "budget nothing meets: exit 23" 23 "$rc"
expect_match "says which cap, and the cheapest" "11 on budget_hourly \(cheapest azure Standard_NC4as_T4_v3 westus2 spot: 0\.25 USD/hour > 0\.20\)" "$(cat "$T/e.txt")"
run_rc rc g -o json plan -f poor.yaml > "$T/poor.json" 2> /dev/null
expect_eq "budget -o json: exit 23" 23 "$rc"
check_schema "$T/poor.json" error
expect_eq "json: budget 23" "budget 23" "$(json_get "$T/poor.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"
run_rc rc g -o json plan -f poor.yaml --detailed-exitcode > "$T/poor-d.json" 2> /dev/null
expect_eq "budget with --detailed-exitcode: exit 1" 1 "$rc"
check_schema "$T/poor-d.json" error
expect_eq "json keeps the class, exit_status 1" "budget 1" "$(json_get "$T/poor-d.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"

printf 'name: huge\nprovider: [aws, azure, aliyun]\nresources: {gpu: "H100:64"}\nrun: {command: "true"}\n' > huge.yaml
run_rc rc g plan -f huge.yaml > /dev/null 2> "$T/e.txt"
expect_eq "a GPU count nothing has: exit 22" 22 "$rc"
expect_match "capacity message" "^gpuctl: error: no offer fits 'huge': no catalog row has H100:64 GPUs \(providers aws, azure, aliyun\)" "$(cat "$T/e.txt")"
run_rc rc g -o json plan -f huge.yaml --detailed-exitcode > "$T/huge.json" 2> /dev/null
expect_eq "capacity with --detailed-exitcode: exit 1" 1 "$rc"
check_schema "$T/huge.json" error
expect_eq "json: capacity 1" "capacity 1" "$(json_get "$T/huge.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"

# (regression) an unknown GPU model is the spec's error, with its place, in
# plan and apply as in validate: it was "no offer fits" (exit 22) with no
# line or column
printf 'name: typo\nprovider: aws\nresources:\n  gpu: A1000:1\nrun: {command: "true"}\n' > typo.yaml
for cmd in plan "-y apply --dry-run"; do
    # shellcheck disable=SC2086
    run_rc rc g $cmd -f typo.yaml > /dev/null 2> "$T/e.txt"
    expect_eq "$cmd of an unknown GPU model: exit 4" 4 "$rc"
    expect_match "$cmd names file:line:column and the field" \
        "^gpuctl: error: typo\.yaml:4:8: resources\.gpu: unknown GPU model 'A1000' \(the catalog \(built-in\) knows T4, " \
        "$(cat "$T/e.txt")"
done
printf 'name: bad\nnodes: two\nrun: {command: "true"}\n' > bad.yaml
run_rc rc g -o json plan -f bad.yaml --detailed-exitcode > "$T/bad.json" 2> /dev/null
expect_eq "invalid spec with --detailed-exitcode: exit 1" 1 "$rc"
expect_eq "json: spec 1" "spec 1" "$(json_get "$T/bad.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"
run_rc rc g plan -f bad.yaml > /dev/null 2>&1
expect_eq "invalid spec without it: exit 4" 4 "$rc"
run_rc rc g -o json plan -f missing.yaml --detailed-exitcode > "$T/missing.json" 2> /dev/null
expect_eq "a missing spec file with --detailed-exitcode: exit 1" 1 "$rc"
expect_eq "json: io 1" "io 1" "$(json_get "$T/missing.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"
run_rc rc g plan -f missing.yaml > /dev/null 2>&1
expect_eq "a missing spec file without it: exit 5" 5 "$rc"
run_rc rc g plan -f quickstart.yaml --out "$T/no-such-dir/p.json" > /dev/null 2> "$T/e.txt"
expect_eq "plan --out into a missing directory: exit 5" 5 "$rc"
expect_match "names the file" "$T/no-such-dir/p\.json" "$(cat "$T/e.txt")"
run_rc rc g plan -f quickstart.yaml --out "$T/no-such-dir/p.json" --detailed-exitcode > /dev/null 2>&1
expect_eq "the same with --detailed-exitcode: exit 1" 1 "$rc"
run_rc rc g plan --detailed-exitcode > /dev/null 2>&1
expect_eq "missing -f stays exit 3 with --detailed-exitcode" 3 "$rc"
run_rc rc g plan -f quickstart.yaml --bogus > /dev/null 2>&1
expect_eq "unknown option: exit 3" 3 "$rc"

# ---- 5. quickstart: plan --out, apply PLANFILE, stale --------------------------
Q="$T/quickstart.json"
expect_eq "quickstart: the local machine, free, from the provider itself" "local local local on-demand live 0" \
    "$(json_get "$Q" '" ".join(str(x) for x in (d["chosen"]["provider"], d["chosen"]["instance_type"], d["chosen"]["region"], d["chosen"]["purchase"], d["chosen"]["source"], d["cost"]["cluster_usd_hr"]))')"
expect_eq "quickstart: every catalog row loses on provider; no notes" "{'provider': 368} []" \
    "$(json_get "$Q" 'str(d["lost_by"]) + " " + str(d["notes"])')"
expect_eq "quickstart: changes" "cluster:quickstart node:quickstart-0 node:quickstart-1" \
    "$(json_get "$Q" '" ".join(c["resource"] + ":" + c["name"] for c in d["changes"])')"
# lifecycle.max_duration is 30m: 0 USD/hour x 0.5 h = 0 USD, a bounded total
# (null means unbounded, docs/offers.md).
expect_eq "quickstart: max_duration 1800 s, projected total 0 USD (bounded, not null)" "1800 0" \
    "$(json_get "$Q" 'd["cost"]["max_duration_s"], d["cost"]["projected_total_usd"]' | tr -d '(),')"
expect_eq "quickstart table does not call the run unbounded" "" "$(grep 'no lifecycle.max_duration' "$T/quickstart.txt" || true)"
# local lists its offer with its own zone, "local": the plan keeps it, and
# the tables show it after the region
expect_eq "quickstart: the offer's own zone" "local local local" \
    "$(json_get "$Q" '" ".join([d["chosen"]["zone"]] + [c["zone"] for c in d["changes"] if c["resource"] == "node"])')"
expect_match "quickstart table: region/zone" "Chosen offer: local local in local/local, on-demand" "$(cat "$T/quickstart.txt")"
expect_match "quickstart table: the node changes" "\+ node quickstart-1 \(rank 1\): local local local/local, on-demand, 0\.0000 USD/hour" "$(cat "$T/quickstart.txt")"
# zone: local keeps the local offer (regression: the spec's zones were read
# only as a cloud's, named after the region, and it lost on region with
# "not in []")
sed 's/^name: quickstart$/name: quickstart\nzone: local/' quickstart.yaml > zoned.yaml
run_rc rc g -o json plan -f zoned.yaml > "$T/zoned.json" 2> "$T/e.txt"
expect_eq "zone: local plans: exit 0" 0 "$rc"
expect_eq "on the local offer, in zone local" "local local local" \
    "$(json_get "$T/zoned.json" '" ".join((d["chosen"]["provider"], d["chosen"]["region"], d["chosen"]["zone"]))')"

run_rc rc g -o json plan -f quickstart.yaml --out p.json > "$T/printed.json" 2> "$T/out.err"
expect_eq "plan --out: exit 0" 0 "$rc"
check_schema p.json plan
expect_eq "the plan file is mode 0600" 600 "$(stat -c %a p.json)"
# this machine's memory in whole hundredths of a GiB: a 17-digit value
# printed differently by cJSON and Python broke the resealed plan below on a
# 24 GiB machine
expect_eq "local memory_gib has at most 2 decimals" True \
    "$(json_get p.json 'round(d["chosen"]["memory_gib"], 2) == d["chosen"]["memory_gib"]')"
expect_eq "the JSON printed equals the plan file" True \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])) == json.load(open(sys.argv[2])))' "$T/printed.json" p.json)"
expect_match "says how to carry it out, with the same state dir" "plan saved to p\.json; carry it out with: gpuctl --state-dir $STATE apply p\.json" "$(cat "$T/out.err")"
# A plan whose chosen offer is on a plan-only provider is saved, but apply
# would refuse it (exit 6): the note does not suggest it (a trial found it
# did).
run_rc rc g plan -f "$EX/multimodal-h100-ib.yaml" --out mm.json > /dev/null 2> "$T/mm.err"
expect_eq "plan --out of an azure offer: exit 0" 0 "$rc"
expect_eq "says apply cannot carry it out" \
    "plan saved to mm.json; apply cannot carry it out: the chosen offer is on azure, which is plan-only here (gpuctl help providers)" \
    "$(grep 'plan saved' "$T/mm.err")"
expect_eq "the plan embeds the spec's YAML" True \
    "$(json_get p.json 'd["spec"]["yaml"] == open("quickstart.yaml").read()')"

# --out never replaces what is not a regular file, nor the spec (regressions:
# as root, --out /dev/null turned the device into a plain file)
echo keep > target.txt
ln -s target.txt link.json
run_rc rc g plan -f quickstart.yaml --out link.json > /dev/null 2> "$T/e.txt"
expect_eq "--out onto a symlink: exit 5" 5 "$rc"
expect_eq "says why" "gpuctl: error: link.json: exists and is not a regular file (a symbolic link); refusing to replace it" "$(cat "$T/e.txt")"
expect_eq "the link and its target are untouched" "link keep" "$([ -L link.json ] && echo link) $(cat target.txt)"
run_rc rc g plan -f quickstart.yaml --out quickstart.yaml > /dev/null 2> "$T/e.txt"
expect_eq "--out onto the spec: exit 3" 3 "$rc"
expect_match "says so" "--out quickstart.yaml is the spec itself" "$(cat "$T/e.txt")"
for bad in "" "-"; do
    run_rc rc g plan -f quickstart.yaml --out "$bad" > /dev/null 2> "$T/e.txt"
    expect_eq "--out '$bad': exit 3" 3 "$rc"
done
run_rc rc g plan -f quickstart.yaml --out nodir/p.json > /dev/null 2> "$T/e.txt"
expect_eq "--out into a missing directory: exit 5" 5 "$rc"
expect_eq "names the file asked for, not a temp file" "gpuctl: error: nodir/p.json: cannot write: No such file or directory" "$(cat "$T/e.txt")"

run_rc rc g -o json apply p.json --wait > "$T/apply.json" 2> "$T/apply.err"
expect_eq "apply p.json --wait: exit 0" 0 "$rc"
check_schema "$T/apply.json" apply
expect_eq "created 2, waited, succeeded, rank 0 exit 0" "2 True succeeded 0 succeeded" \
    "$(json_get "$T/apply.json" '" ".join(str(x) for x in (d["created"], d["waited"], d["phase"], d["exit_code"], d["cluster_status"]["phase"]))')"
expect_eq "the nodes are on the plan's offer" "local local local" \
    "$(json_get "$T/apply.json" '" ".join(sorted(set(n["instance_type"] + " " + n["region"] for n in d["cluster_status"]["nodes"])) + [d["cluster_status"]["provider"]])')"
expect_eq "and in the plan's zone" "local" \
    "$(json_get "$T/apply.json" '" ".join(sorted(set(n["zone"] for n in d["cluster_status"]["nodes"])))')"
expect_eq "checkpoints landed in the private work dir" yes "$([ -d "$T/work/checkpoints/quickstart" ] && echo yes || echo no)"

run_rc rc g plan -f quickstart.yaml --detailed-exitcode > "$T/again.txt" 2>&1
expect_eq "plan after apply: exit 0, no changes" 0 "$rc"
expect_match "says none" "none: cluster 'quickstart' exists with this spec and all its nodes" "$(cat "$T/again.txt")"
g -o json plan -f quickstart.yaml > "$T/again.json"
check_schema "$T/again.json" plan
expect_eq "json: action none, nothing pending, cluster exists" "none False 0 True" \
    "$(json_get "$T/again.json" '" ".join(str(x) for x in (d["action"], d["changes_pending"], len(d["changes"]), d["state"]["cluster_exists"]))')"
expect_eq "the fingerprint moved" True "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"]["fingerprint"] != json.load(open(sys.argv[2]))["state"]["fingerprint"])' p.json "$T/again.json")"

run_rc rc g apply p.json > /dev/null 2> "$T/stale.err"
expect_eq "apply p.json again: exit 13 (stale)" 13 "$rc"
expect_eq "stale message" "gpuctl: error: the saved plan is stale: cluster 'quickstart' changed in the state since the plan was made (created, destroyed or nodes added); run gpuctl plan again" "$(cat "$T/stale.err")"
run_rc rc g -o json apply p.json > "$T/stale.json" 2> /dev/null
expect_eq "stale -o json: exit 13" 13 "$rc"
check_schema "$T/stale.json" apply
expect_eq "json: stale 13, nothing created" "stale 13 0" \
    "$(json_get "$T/stale.json" '" ".join(str(x) for x in (d["error"]["code"], d["error"]["exit_status"], d["created"]))')"
g -o json status quickstart > "$T/st.json"
expect_eq "the stale apply changed nothing: one cluster, 2 nodes, succeeded" "1 2 succeeded" \
    "$(json_get "$T/st.json" '" ".join(str(x) for x in (len(d["clusters"]), len(d["clusters"][0]["nodes"]), d["clusters"][0]["phase"]))')"

# The cluster exists and its nodes ended with their job (no
# lifecycle.idle_timeout): a changed shape replaces them, and so does a
# changed job (the nodes that ended cannot run it); apply asks first.
sed 's/^nodes: 2/nodes: 3/' quickstart.yaml > shape.yaml
run_rc rc g plan -f shape.yaml > "$T/o.txt" 2> "$T/e.txt"
expect_eq "plan of a changed shape for an existing cluster: exit 0" 0 "$rc"
expect_match "says the nodes are replaced" "^Plan: 3 to create \(0 cluster, 3 nodes\), 2 nodes to delete; apply asks first \(-y in scripts\)\.$" "$(cat "$T/o.txt")"
sed 's/--epochs 20/--epochs 21/' quickstart.yaml > changed.yaml
run_rc rc g plan -f changed.yaml > "$T/o.txt" 2> "$T/e.txt"
expect_eq "plan of a changed job on ended nodes: exit 0" 0 "$rc"
# (this test writes its files into the workdir, examples/: they count)
expect_match "says why the nodes are replaced" "^  -/\+ cluster quickstart: its nodes are replaced by new ones on local \(changed: run\.command, workdir \(its files\); 2 of its nodes ended with the last job\); its name and store \(checkpoints, data\) stay$" "$(cat "$T/o.txt")"
run_rc rc g -o json plan -f changed.yaml --detailed-exitcode > "$T/changed.json" 2> /dev/null
expect_eq "the same with --detailed-exitcode: exit 2" 2 "$rc"
check_schema "$T/changed.json" plan
run_rc rc g apply -f changed.yaml < /dev/null > /dev/null 2>&1
expect_eq "apply -f of the changed spec without -y or a terminal: exit 3" 3 "$rc"

# A plan made while the cluster was absent matches again once it is destroyed.
g -y destroy quickstart > /dev/null
run_rc rc g apply p.json --dry-run > "$T/dry.txt"
expect_eq "after destroy the absent-state plan applies again (dry run): exit 0" 0 "$rc"
expect_eq "dry run of the plan" "cluster quickstart: would create 2 node(s) (dry run, nothing changed)" "$(cat "$T/dry.txt")"

# ---- 6. plan files gpuctl refuses: exit 3 ---------------------------------------
python3 - p.json edited.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["spec"]["yaml"] = d["spec"]["yaml"].replace("--epochs 20", "--epochs 2")
json.dump(d, open(sys.argv[2], "w"))
PY
run_rc rc g apply edited.json > /dev/null 2> "$T/e.txt"
expect_eq "a plan whose spec was edited by hand: exit 3" 3 "$rc"
expect_eq "says so" "gpuctl: error: edited.json: the plan file was changed after gpuctl wrote it (its checksum does not match); make the plan again" "$(cat "$T/e.txt")"
# regression: a changed price or offer was carried out as edited
python3 - p.json priced.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["chosen"]["price"]["node_usd_hr"] = 99
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
run_rc rc g apply priced.json > /dev/null 2> "$T/e.txt"
expect_eq "a plan with an edited price: exit 3" 3 "$rc"
expect_match "refused for its checksum" "priced\.json: the plan file was changed after gpuctl wrote it" "$(cat "$T/e.txt")"
python3 - p.json reformatted.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
json.dump(d, open(sys.argv[2], "w"), indent=7)
PY
run_rc rc g apply reformatted.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "re-indented but unchanged plan still applies (dry run): exit 0" 0 "$rc"
run_rc rc g -o json apply edited.json > "$T/edited.json" 2> /dev/null
check_schema "$T/edited.json" error
expect_eq "json: usage 3" "usage 3" "$(json_get "$T/edited.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"
# regression: text after the plan's JSON was ignored
{ cat p.json; echo garbage; } > tail.json
run_rc rc g apply tail.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a plan with text after its JSON: exit 3" 3 "$rc"
expect_match "says it is not a plan" "tail\.json: not a gpuctl plan file" "$(cat "$T/e.txt")"
g -o json version > version.json
run_rc rc g apply version.json > /dev/null 2> "$T/e.txt"
expect_eq "a JSON file that is not a plan: exit 3" 3 "$rc"
expect_match "says it is not a plan" "version\.json: not a gpuctl plan file" "$(cat "$T/e.txt")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["plan_format"] = 2; json.dump(d, open(sys.argv[2], "w"))' p.json future.json
run_rc rc g apply future.json > /dev/null 2> "$T/e.txt"
expect_eq "another plan_format: exit 3" 3 "$rc"
expect_match "names the format" "plan format 2 is not 1" "$(cat "$T/e.txt")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["state"]; json.dump(d, open(sys.argv[2], "w"))' p.json partial.json
run_rc rc g apply partial.json > /dev/null 2> "$T/e.txt"
expect_eq "a plan without its state fingerprint: exit 3" 3 "$rc"
# Plans whose checksum was recomputed after an edit (anyone can: it is not a
# signature) are checked field by field: a missing field or a number out of
# range is refused at load, naming its JSON path.  forge.py IN OUT CODE runs
# CODE on the document d and seals it as src/plan.c's doc_checksum does.
cat > "$T/forge.py" <<'PY'
import hashlib, json, sys
d = json.load(open(sys.argv[1]))
def seal(d):
    c = {k: v for k, v in d.items() if k not in ("schema_version", "checksum")}
    text = json.dumps(c, separators=(",", ":"), ensure_ascii=False)
    d["checksum"] = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
exec(sys.argv[3])
seal(d)
out = json.dumps(d, indent=1, ensure_ascii=False)
if len(sys.argv) > 4:  # raw text no JSON encoder writes (1e999)
    out = out.replace(sys.argv[4], sys.argv[5], 1)
open(sys.argv[2], "w").write(out)
PY
forge() { python3 "$T/forge.py" "$@"; }
forge p.json resealed.json 'pass'
expect_eq "forge.py's checksum is gpuctl's" "$(json_get p.json 'd["checksum"]')" "$(json_get resealed.json 'd["checksum"]')"
run_rc rc g apply resealed.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a resealed, unchanged plan applies (dry run): exit 0" 0 "$rc"
# regression: a GPU count of 1e20 became an arbitrary uint32 (undefined behaviour)
forge p.json count.json 'd["chosen"]["gpu"]["count"] = 1e20'
run_rc rc g apply count.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a plan with gpu count 1e20: exit 3" 3 "$rc"
expect_eq "names the field and the range" "gpuctl: error: count.json: chosen.gpu.count: 1e+20 is out of range (a whole number 0..65535); make the plan again" "$(cat "$T/e.txt")"
run_rc rc g -o json apply count.json > "$T/count.json" 2> /dev/null
check_schema "$T/count.json" error
expect_eq "json: usage 3" "usage 3" "$(json_get "$T/count.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"
forge p.json inf.json 'd["chosen"]["vcpus"] = None' '"vcpus": null' '"vcpus": 1e999'
run_rc rc g apply inf.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a plan with vcpus 1e999 (infinite): exit 3" 3 "$rc"
expect_eq "says so" "gpuctl: error: inf.json: chosen.vcpus: inf is out of range (a number 0..1048576); make the plan again" "$(cat "$T/e.txt")"
forge p.json half.json 'd["changes"][1]["rank"] = 0.5'
run_rc rc g apply half.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a plan with rank 0.5: exit 3" 3 "$rc"
expect_eq "says so" "gpuctl: error: half.json: changes[1].rank: 0.5 is not a whole number; make the plan again" "$(cat "$T/e.txt")"
forge p.json price.json 'd["cost"]["cluster_usd_hr"] = -0.01'
run_rc rc g apply price.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a plan with a negative cluster price: exit 3" 3 "$rc"
expect_eq "says so" "gpuctl: error: price.json: cost.cluster_usd_hr: -0.01 is out of range (a number 0..1024000000); make the plan again" "$(cat "$T/e.txt")"
# regression: an offer without its purchase fields loaded, and printing it
# reached strcmp(NULL); the lost candidates were not read at all
g plan -f "$EX/detection-3d-8x8-a100.yaml" --out det.json > /dev/null 2>&1
expect_eq "the detection-3d plan lists lost candidates" 9 "$(json_get det.json 'len(d["lost"])')"
forge det.json nopurchase.json 'del d["lost"][3]["purchase"]; del d["lost"][3]["head_purchase"]'
run_rc rc g apply nopurchase.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a plan whose lost offer has no purchase fields: exit 3" 3 "$rc"
expect_eq "names the field" "gpuctl: error: nopurchase.json: lost[3].purchase: missing (expected one of on-demand, spot); make the plan again" "$(cat "$T/e.txt")"
forge det.json nohead.json 'del d["fallbacks"][7]["head_purchase"]'
run_rc rc g apply nohead.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a plan whose fallback has no head_purchase: exit 3" 3 "$rc"
expect_eq "names the field" "gpuctl: error: nohead.json: fallbacks[7].head_purchase: missing (expected one of on-demand, spot); make the plan again" "$(cat "$T/e.txt")"
forge det.json notes.json 'd["notes"].append(7)'
run_rc rc g apply notes.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a plan with a note that is not a string: exit 3" 3 "$rc"
expect_eq "names the field" "gpuctl: error: notes.json: notes[1]: not a string; make the plan again" "$(cat "$T/e.txt")"
# the nodes' end: a plan of an earlier release has no "ends" and still
# applies; a forged one is checked like the rest
forge p.json noends.json 'del d["ends"]'
run_rc rc g apply noends.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a plan without ends (an earlier release's): exit 0" 0 "$rc"
forge p.json badends.json 'd["ends"]["why"] = "forever"'
run_rc rc g apply badends.json --dry-run > /dev/null 2> "$T/e.txt"
expect_eq "a plan with ends.why forever: exit 3" 3 "$rc"
expect_eq "names the field" "gpuctl: error: badends.json: ends.why: 'forever' is not one of none, max_duration, default, budget; make the plan again" "$(cat "$T/e.txt")"
run_rc rc g apply quickstart.yaml > /dev/null 2> "$T/e.txt"
expect_eq "a YAML spec given as PLANFILE: exit 3" 3 "$rc"
run_rc rc g apply missing-plan.json > /dev/null 2>&1
expect_eq "a missing plan file: exit 5" 5 "$rc"
expect_eq "none of that created anything" 0 "$(g -o json status | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["clusters"]))')"

# ---- 7. a cloud plan: apply exits 6 and records nothing --------------------------
run_rc rc g plan -f "$EX/bert-base-4xt4-spot.yaml" --out bert.json > /dev/null 2>&1
expect_eq "plan --out for bert-t4: exit 0" 0 "$rc"
before=$(n_clusters)
run_rc rc g apply bert.json > /dev/null 2> "$T/e.txt"
expect_eq "apply of a cloud plan: exit 6" 6 "$rc"
expect_eq "names the provider" "gpuctl: error: provider 'azure' is not built into this gpuctl (available: local, aws, slurm)" "$(cat "$T/e.txt")"
run_rc rc g -o json apply bert.json > "$T/cloud.json" 2> /dev/null
check_schema "$T/cloud.json" apply
expect_eq "json: provider 6, no cluster" "provider 6 None" \
    "$(json_get "$T/cloud.json" '" ".join(str(x) for x in (d["error"]["code"], d["error"]["exit_status"], d["cluster_status"]))')"
expect_eq "nothing recorded in status, not even history" "$before" "$(n_clusters)"
g -o json status bert-t4 > /dev/null 2>&1 && rc=0 || rc=$?
expect_eq "status bert-t4: not found (7)" 7 "$rc"

# ---- 7b. what apply refuses offline, plan and validate refuse too ---------------
# A missing workdir: validate, plan (with or without --detailed-exitcode)
# and apply --dry-run give the same error, exit 4 (1 for the CI contract).
before=$(n_clusters)
printf 'name: nowd\nworkdir: ./missing-dir\nrun: echo hi\n' > nowd.yaml
for c in validate plan "apply --dry-run"; do
    run_rc rc g $c -f nowd.yaml > /dev/null 2> "$T/e.txt"
    expect_eq "$c of a missing workdir: exit 4" 4 "$rc"
    expect_eq "$c names file, field and path" "gpuctl: error: nowd.yaml:2:10: workdir: directory './missing-dir' does not exist (resolved: $PWD/missing-dir)" "$(cat "$T/e.txt")"
done
run_rc rc g plan -f nowd.yaml --detailed-exitcode > /dev/null 2>&1
expect_eq "plan --detailed-exitcode of a missing workdir: exit 1" 1 "$rc"
: > missing-dir   # a file where the directory should be
run_rc rc g validate -f nowd.yaml > /dev/null 2> "$T/e.txt"
expect_eq "a workdir that is a file: exit 4, said so" "4 gpuctl: error: nowd.yaml:2:10: workdir: './missing-dir' is not a directory (resolved: $PWD/missing-dir)" "$rc $(cat "$T/e.txt")"
rm missing-dir
# A workdir on nodes that cannot see this machine's files but that gpuctl
# reaches over ssh (aws): plan takes it, as apply does (it sends it,
# test_aws_deliver.sh); one that does not exist is refused there too.
mkdir -p code
printf 'name: awswd\nprovider: aws\nresources: {gpu: T4:1}\nworkdir: ./code\nrun: echo hi\n' > awswd.yaml
run_rc rc g plan -f awswd.yaml > /dev/null 2> "$T/e.txt"
expect_eq "plan of a workdir on aws: exit 0" 0 "$rc"
run_rc rc g plan -f awswd.yaml --detailed-exitcode > /dev/null 2>&1
expect_eq "approved by --detailed-exitcode: exit 2 (changes)" 2 "$rc"
sed 's|./code|./no-code|' awswd.yaml > awsnowd.yaml
run_rc rc g plan -f awsnowd.yaml > /dev/null 2> "$T/e.txt"
expect_eq "plan of a missing workdir on aws: exit 4" 4 "$rc"
expect_match "says why" "awsnowd.yaml:4:10: workdir: directory './no-code' does not exist" "$(cat "$T/e.txt")"
# A checkpoint_dir kept in the bucket must be a directory of its own: the
# root or a system directory would be restored onto and saved from every
# node (found by a user trial: `checkpoint_dir: /` was planned)
for d in / /etc/ /var/lib/gpuctl; do
    printf 'name: awsck\nprovider: aws\nresources: {gpu: T4:1}\ncheckpoint_dir: %s\nrun: echo hi\n' "$d" > awsck.yaml
    run_rc rc g plan -f awsck.yaml > /dev/null 2> "$T/e.txt"
    expect_eq "plan of checkpoint_dir $d on aws: exit 4, said why" \
        "4 gpuctl: error: awsck.yaml:4:17: checkpoint_dir: '$d' is a directory of the node's system: its whole contents would be restored onto and saved from every node; name a directory of its own (e.g. /var/lib/gpuctl/checkpoints)" \
        "$rc $(cat "$T/e.txt")"
done
# ... and so is a relative one or one under '~' (the node's home is not
# this machine's), by validate too: no provider of the spec has nodes that
# see this machine's files (a user trial: validate passed what plan refused)
printf 'name: awsck\nprovider: aws\nresources: {gpu: T4:1}\ncheckpoint_dir: ckpt\nrun: echo hi\n' > awsck.yaml
for c in validate plan; do
    run_rc rc g $c -f awsck.yaml > /dev/null 2> "$T/e.txt"
    expect_eq "$c of a relative checkpoint_dir on aws: exit 4, at its place" \
        "4 gpuctl: error: awsck.yaml:4:17: checkpoint_dir: 'ckpt' must be an absolute path on the aws nodes" \
        "$rc $(cat "$T/e.txt")"
done
# what aws itself refuses (check_spec: the image), validate too when aws
# is the spec's only provider
printf 'name: awsim\nprovider: aws\nresources: {gpu: T4:1}\nimage: ubuntu\nrun: echo hi\n' > awsim.yaml
for c in validate plan; do
    run_rc rc g $c -f awsim.yaml > /dev/null 2> "$T/e.txt"
    expect_eq "$c of an image aws cannot use: exit 4" \
        "4 gpuctl: error: awsim.yaml: image: 'ubuntu' is neither 'pytorch' (the AWS Deep Learning AMI with PyTorch) nor an AMI id (ami- and 8 or 17 hex digits)" \
        "$rc $(cat "$T/e.txt")"
done
printf 'name: awsck\nprovider: [aws, local]\nresources: {gpu: T4:1}\ncheckpoint_dir: ckpt\nrun: echo hi\n' > awsck2.yaml
run_rc rc g validate -f awsck2.yaml > /dev/null 2> "$T/e.txt"
expect_eq "validate with a provider whose nodes see this machine's files (local): exit 0" "0 " "$rc $(cat "$T/e.txt")"
printf 'name: awsck\nprovider: local\ncheckpoint_dir: ~/ckpt\nrun: echo hi\n' > tilde.yaml
run_rc rc g validate -f tilde.yaml > /dev/null 2> "$T/e.txt"
expect_eq "validate of checkpoint_dir under '~' on local: exit 4, said why, a hint for local" \
    "4 gpuctl: error: tilde.yaml:3:17: checkpoint_dir: '~/ckpt': '~' is not expanded in checkpoint_dir; write a path relative to the spec's directory (e.g. ./checkpoints) or an absolute one" \
    "$rc $(cat "$T/e.txt")"
# GPUCTL_STATE_DIR (a user trial: silently ignored); --state-dir wins
run_rc rc env GPUCTL_STATE_DIR="$T/envstate" "$GPUCTL_BIN" status > "$T/o.txt" 2>&1
expect_eq "GPUCTL_STATE_DIR: the state is made there" "0 yes" \
    "$rc $([ -f "$T/envstate/gpuctl.db" ] && echo yes || echo no)"
run_rc rc env GPUCTL_STATE_DIR="$T/envstate2" "$GPUCTL_BIN" --state-dir "$STATE" status > /dev/null 2>&1
expect_eq "  --state-dir comes before it" "0 no" \
    "$rc $([ -e "$T/envstate2" ] && echo yes || echo no)"
# a '~/' workdir without HOME (a user trial: no line:column, no field, and
# "not set" when empty)
printf 'name: tw\nprovider: local\nworkdir: ~/wd\nrun: echo hi\n' > tildew.yaml
run_rc rc env -u HOME "$GPUCTL_BIN" --state-dir "$STATE" plan tildew.yaml > /dev/null 2> "$T/e.txt"
expect_eq "plan of a '~/' workdir with HOME unset: exit 4, at its place, naming the field" \
    "4 gpuctl: error: tildew.yaml:3:10: workdir: '~/wd': HOME is not set, so '~/' cannot be expanded; set HOME, or write the path without '~'" \
    "$rc $(cat "$T/e.txt")"
run_rc rc env HOME= "$GPUCTL_BIN" --state-dir "$STATE" plan tildew.yaml > /dev/null 2> "$T/e.txt"
expect_eq "  HOME empty: said empty" \
    "4 gpuctl: error: tildew.yaml:3:10: workdir: '~/wd': HOME is empty, so '~/' cannot be expanded; set HOME, or write the path without '~'" \
    "$rc $(cat "$T/e.txt")"
# data on a provider without an object store (azure, plan-only): plan says
# so plainly (a user trial found "uploaded to azure's store")
mkdir -p ds
printf 'name: azd\nprovider: azure\nresources: {gpu: T4:1}\ndata: {mnist: ./ds}\nrun: echo hi\n' > azd.yaml
run_rc rc g plan -f azd.yaml > /dev/null 2> "$T/e.txt"
expect_eq "plan of data on azure: exit 4, said plainly with what to do" \
    "4 gpuctl: error: azd.yaml:4:15: data.mnist: the chosen offer is on azure, which has no object store in this release, so the data set cannot be placed where its nodes read it; name in \`provider\` only providers with one (local, aws, slurm), or drop \`data\` and fetch the data in \`setup\`" \
    "$rc $(cat "$T/e.txt")"
printf 'name: awsck\nprovider: aws\nresources: {gpu: T4:1}\ncheckpoint_dir: /var/lib/gpuctl/checkpoints\nrun: echo hi\n' > awsck.yaml
run_rc rc g plan -f awsck.yaml > /dev/null 2>&1
expect_eq "plan of a directory of its own: exit 0" 0 "$rc"
# A spec naming only plan-only providers: validate refuses it (exit 6),
# plan still shows the offers (exit 0) but does not approve them.
printf 'name: az\nprovider: [azure, aliyun]\nresources: {gpu: T4:1}\nrun: echo hi\n' > az.yaml
run_rc rc g validate -f az.yaml > /dev/null 2> "$T/e.txt"
expect_eq "validate of plan-only providers: exit 6" 6 "$rc"
expect_eq "names them" "gpuctl: error: az.yaml: provider: azure, aliyun are not built into this gpuctl yet (available: local, aws, slurm); gpuctl plan shows their offers, but apply cannot create their nodes" "$(cat "$T/e.txt")"
run_rc rc g plan -f az.yaml > /dev/null 2>&1
expect_eq "plan shows them: exit 0" 0 "$rc"
run_rc rc g plan -f az.yaml --detailed-exitcode > /dev/null 2>&1
expect_eq "plan --detailed-exitcode does not approve them: exit 1" 1 "$rc"
printf 'name: az2\nprovider: [azure, aws]\nresources: {gpu: T4:1}\nrun: echo hi\n' > az2.yaml
run_rc rc g validate -f az2.yaml > /dev/null 2>&1
expect_eq "validate with one provider that can create nodes: exit 0" 0 "$rc"
expect_eq "none of that created anything" "$before" "$(n_clusters)"

# ---- 8. resume: a cluster with a node still to create ------------------------------
printf 'name: resumer\nnodes: 2\nrun: {command: "sleep 30", nproc_per_node: 1}\n' > resumer.yaml
run_rc rc env GPUCTL_TEST_FAULT=kill-after-record:0 "$GPUCTL_BIN" --state-dir "$STATE" apply -f resumer.yaml > /dev/null 2>&1
expect_eq "apply killed after recording node 0" 137 "$rc"
run_rc rc g -o json plan -f resumer.yaml --detailed-exitcode > "$T/resume.json"
expect_eq "plan of a half-made cluster: exit 2" 2 "$rc"
check_schema "$T/resume.json" plan
expect_eq "action resume: only node 1 to create, no cluster entry" "resume True node:resumer-1:1" \
    "$(json_get "$T/resume.json" '" ".join([d["action"], str(d["state"]["cluster_exists"])] + [c["resource"] + ":" + c["name"] + ":" + str(c.get("rank")) for c in d["changes"]])')"
run_rc rc g plan -f resumer.yaml --out resume.plan > /dev/null 2>&1
expect_eq "plan --out of the resume" 0 "$rc"
run_rc rc g -o json apply resume.plan > "$T/resumed.json" 2> /dev/null
expect_eq "apply of the resume plan: exit 0" 0 "$rc"
check_schema "$T/resumed.json" apply
expect_eq "it created node 1 only; 2 nodes now" "1 2" \
    "$(json_get "$T/resumed.json" 'd["created"], len(d["cluster_status"]["nodes"])' | tr -d '(),')"
run_rc rc g plan -f resumer.yaml --detailed-exitcode > /dev/null 2>&1
expect_eq "then nothing is left to do: exit 0" 0 "$rc"
g -y destroy resumer > /dev/null
finish
