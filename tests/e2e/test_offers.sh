#!/bin/bash
# gpuctl offers: the built-in catalog's offers, filtered and ranked
# (docs/offers.md). Every number asserted here was checked by hand against
# providers/*/catalog.csv and catalog/gpus.csv; the arithmetic is in the
# comments. No network, no provider: offers only reads the catalog.
source "$(dirname "$0")/lib.sh" || exit 1
mkdir -p "$T/work" && cd "$T/work"
# Never the user's ~/.config/gpuctl/catalog.csv: an empty config dir, so the
# built-in catalog is in effect.
export GPUCTL_CONFIG_DIR="$T/config"
unset GPUCTL_CATALOG XDG_CONFIG_HOME

# rows FILE: one "provider instance_type region price_usd_hr" line per offer.
rows() {
    python3 -c 'import json, sys
for o in json.load(open(sys.argv[1]))["offers"]:
    print(o["provider"], o["instance_type"], o["region"], o["price_usd_hr"])' "$1"
}
# names FILE: "provider instance_type region" per offer.
names() { rows "$1" | cut -d' ' -f1-3; }

# ---- 1. A100-80GB x8, spot, cheapest first -------------------------------
# A100-80GB:8 rows (model A100-80GB exactly: A100-80GB-PCIe has another
# key), 9 in all; with --spot a row without a spot price is no offer:
#   ecs.ebmgn7e.32xlarge cn-shanghai, ecs.gn7e-c16g1.32xlarge cn-shanghai
#   (2023 list prices, no spot) and ecs.ebmgn7ex.32xlarge (no price at all).
# The 8 left, by spot USD/hour:
#   azure Standard_ND96amsr_A100_v4 eastus    3.6047
#   azure Standard_ND96amsr_A100_v4 eastus2   3.611254
#   aws   p4de.24xlarge eu-central-1          8.0274
#   aws   p4de.24xlarge us-east-1             8.6505
#   aws   p4de.24xlarge us-west-2            10.3338
#   aws   p4de.24xlarge ap-southeast-1       13.7534
#   aliyun ecs.sccgn7ex.32xlarge cn-beijing  15.468562
#   aws   p4de.24xlarge ap-northeast-1       15.9785
run_rc rc g -o json offers --gpu A100-80GB:8 --spot > "$T/spot.json"
expect_eq "offers --spot -o json exits 0" 0 "$rc"
check_schema "$T/spot.json" offers
expect_eq "spot: catalog, purchase, sort, matched" "built-in 368 spot price 8" \
    "$(json_get "$T/spot.json" '" ".join(str(x) for x in (d["catalog"]["origin"], d["catalog"]["rows"], d["purchase"], d["sort"], d["matched"]))')"
expect_eq "spot: exact order and spot prices" \
"azure Standard_ND96amsr_A100_v4 eastus 3.6047
azure Standard_ND96amsr_A100_v4 eastus2 3.611254
aws p4de.24xlarge eu-central-1 8.0274
aws p4de.24xlarge us-east-1 8.6505
aws p4de.24xlarge us-west-2 10.3338
aws p4de.24xlarge ap-southeast-1 13.7534
aliyun ecs.sccgn7ex.32xlarge cn-beijing 15.468562
aws p4de.24xlarge ap-northeast-1 15.9785" "$(rows "$T/spot.json")"
expect_eq "spot: price_usd_hr is the spot price of every row" "True" \
    "$(json_get "$T/spot.json" 'all(o["price_usd_hr"] == o["price"]["spot_usd_hr"] for o in d["offers"])')"
# Azure eastus: on-demand 32.77; saving 1 - 3.6047/32.77 = 1 - 0.110000 =
# 89.0 %; 8 x 312 dense BF16 TFLOPS = 2496, 32.77/2496 = 0.0131290 -> 0.013129.
expect_eq "azure eastus: on-demand, saving, USD per TFLOPS-hour, fabric" "32.77 89 0.013129 infiniband 1600 312" \
    "$(json_get "$T/spot.json" '" ".join(str(x) for x in (d["offers"][0]["price"]["on_demand_usd_hr"], d["offers"][0]["spot_saving_pct"], d["offers"][0]["on_demand_usd_per_tflops_hr"], d["offers"][0]["interconnect"]["fabric"], d["offers"][0]["interconnect"]["gbps"], d["offers"][0]["gpu"]["tflops_dense"]))')"
# AWS us-east-1: 1 - 8.6505/27.44705 = 1 - 0.315169 = 68.48 % -> 68.5;
# 27.44705/2496 = 0.0109964 -> 0.010996. (eu-central-1 before it: 1 -
# 8.0274/34.29122 = 76.59 % -> 76.6.)
expect_eq "aws us-east-1: saving 68.5 %, 0.010996 USD per TFLOPS-hour" "68.5 0.010996" \
    "$(json_get "$T/spot.json" '" ".join(str(x) for x in (d["offers"][3]["spot_saving_pct"], d["offers"][3]["on_demand_usd_per_tflops_hr"]))')"
# Aliyun's prices were CNY: 361.397 CNY x 0.138 = 49.872786 USD on-demand,
# 112.091 CNY x 0.138 = 15.468558 (the source's USD 15.468562 is within
# 0.00005). The CNY figures travel with the row; USD rows have none.
expect_eq "aliyun row carries CNY prices and the rate" "361.397 112.091 0.138 49.872786" \
    "$(json_get "$T/spot.json" '" ".join(str(x) for x in (d["offers"][6]["price"]["on_demand_cny_hr"], d["offers"][6]["price"]["spot_cny_hr"], d["offers"][6]["price"]["usd_per_cny"], d["offers"][6]["price"]["on_demand_usd_hr"]))')"
expect_eq "aliyun USD = CNY x 0.138 (within 0.00005)" "True True" \
    "$(json_get "$T/spot.json" '" ".join(str(abs(p["price"][a + "_cny_hr"] * 0.138 - p["price"][a + "_usd_hr"]) < 0.00005) for p in [d["offers"][6]] for a in ("on_demand", "spot"))')"
expect_eq "only the aliyun row has CNY fields" "aliyun" \
    "$(json_get "$T/spot.json" '" ".join(o["provider"] for o in d["offers"] if "usd_per_cny" in o["price"] or "on_demand_cny_hr" in o["price"])')"
expect_eq "sccgn7ex's unverified fabric is 'unknown', gbps null" "unknown None" \
    "$(json_get "$T/spot.json" 'd["offers"][6]["interconnect"]["fabric"], d["offers"][6]["interconnect"]["gbps"]' | tr -d "(),'")"

# ---- 2. filters ------------------------------------------------------------
# EFA: only AWS has it (p4de, 400 Gbit/s), in the spot order above.
g -o json offers --gpu A100-80GB:8 --spot --interconnect efa > "$T/efa.json"
check_schema "$T/efa.json" offers
expect_eq "--interconnect efa: only aws, in price order" \
"aws p4de.24xlarge eu-central-1
aws p4de.24xlarge us-east-1
aws p4de.24xlarge us-west-2
aws p4de.24xlarge ap-southeast-1
aws p4de.24xlarge ap-northeast-1" "$(names "$T/efa.json")"
g -o json offers --gpu A100-80GB:8 --spot --interconnect infiniband > "$T/ib.json"
expect_eq "--interconnect infiniband: only azure" "azure azure" \
    "$(json_get "$T/ib.json" '" ".join(o["provider"] for o in d["offers"])')"
# rdma = efa, infiniband or erdma; sccgn7ex's fabric is unverified: 8 - 1 = 7.
g -o json offers --gpu A100-80GB:8 --spot --interconnect rdma > "$T/rdma.json"
expect_eq "--interconnect rdma: every verified fabric, not 'unknown'" "7 ecs.sccgn7ex.32xlarge-absent" \
    "$(json_get "$T/rdma.json" 'str(d["matched"]) + " " + ("ecs.sccgn7ex.32xlarge-absent" if all(o["instance_type"] != "ecs.sccgn7ex.32xlarge" for o in d["offers"]) else "present")')"
g -o json offers --gpu A100-80GB:8 --spot --interconnect none > "$T/icnone.json"
expect_eq "--interconnect none filters nothing" 8 "$(json_get "$T/icnone.json" 'd["matched"]')"

# --max-price is inclusive: 10.3338 keeps us-west-2 (10.3338), not the rest.
g -o json offers --gpu A100-80GB:8 --spot --max-price 10.3338 > "$T/max.json"
check_schema "$T/max.json" offers
expect_eq "--max-price 10.3338: the five at or below it" \
"azure Standard_ND96amsr_A100_v4 eastus 3.6047
azure Standard_ND96amsr_A100_v4 eastus2 3.611254
aws p4de.24xlarge eu-central-1 8.0274
aws p4de.24xlarge us-east-1 8.6505
aws p4de.24xlarge us-west-2 10.3338" "$(rows "$T/max.json")"
g -o json offers --gpu A100-80GB:8 --spot --max-price 10.3337 > "$T/max2.json"
expect_eq "--max-price 10.3337: us-west-2 is cut" 4 "$(json_get "$T/max2.json" 'd["matched"]')"
# On-demand with a cap: 27.44705 (p4de us-east-1/us-west-2) <= 30; azure's
# 32.77, aliyun's 38.3543/49.872786 and p4de ap-southeast-1's 32.93646,
# eu-central-1's 34.29122 and ap-northeast-1's 37.6223 are not.
g -o json offers --gpu A100-80GB:8 --max-price 30 > "$T/maxod.json"
expect_eq "--max-price 30 on-demand" \
"aws p4de.24xlarge us-east-1 27.44705
aws p4de.24xlarge us-west-2 27.44705" "$(rows "$T/maxod.json")"

g -o json offers --gpu A100-80GB:8 --spot --provider aws,aliyun --region us-west-2,cn-beijing > "$T/pr.json"
check_schema "$T/pr.json" offers
expect_eq "--provider aws,aliyun --region us-west-2,cn-beijing" \
"aws p4de.24xlarge us-west-2 10.3338
aliyun ecs.sccgn7ex.32xlarge cn-beijing 15.468562" "$(rows "$T/pr.json")"
# docs/offers.md: provider, instance type, region and GPU model names
# compare without regard to case.
run_rc rc g -o json offers --gpu A100-80GB:8 --spot --provider AWS > "$T/prcase.json" 2> "$T/prcase.err"
expect_eq "--provider AWS: exit 0" 0 "$rc"
expect_eq "provider names compare without case" "aws aws aws aws aws" \
    "$(json_get "$T/prcase.json" '" ".join(o.get("provider", "?") for o in d.get("offers", []))' 2>/dev/null || true)"
g -o json offers --gpu a100-80gb:8 --spot --region US-EAST-1 > "$T/regcase.json"
expect_eq "region and GPU model names compare without case" "aws p4de.24xlarge us-east-1" "$(names "$T/regcase.json")"
# A provider the catalog has no row for is a typo, refused (exit 3).
run_rc rc g offers --gpu A100-80GB:8 --provider gcp > /dev/null 2> "$T/e.txt"
expect_eq "--provider gcp: exit 3" 3 "$rc"
expect_match "says the catalog has no such provider" "no rows for provider 'gcp'" "$(cat "$T/e.txt")"
# regression: a repeated --region replaced the first instead of adding to it
g -o json offers --gpu A100-80GB:8 --spot --region us-west-2 --region ' cn-beijing' --interconnect RDMA > "$T/reg2.json"
expect_eq "--region given twice adds; blanks trimmed; RDMA without case" "aws p4de.24xlarge us-west-2 10.3338" "$(rows "$T/reg2.json")"
g -o json offers --gpu A100-80GB:8 --spot --region eastus2 > "$T/reg.json"
expect_eq "--region eastus2 alone" "azure Standard_ND96amsr_A100_v4 eastus2 3.611254" "$(rows "$T/reg.json")"
g -o json offers --gpu T4:3 > "$T/none.json"
check_schema "$T/none.json" offers
expect_eq "a GPU count no row has: no offers, exit 0" "0 0" \
    "$(json_get "$T/none.json" 'd["matched"], len(d["offers"])' | tr -d '(),')"
# regression: an unknown model (a typo) listed nothing and exited 0
run_rc rc g offers --gpu MI300X:8 > /dev/null 2> "$T/e.txt"
expect_eq "a GPU model the catalog does not know: exit 3" 3 "$rc"
expect_match "names it and the known models" "unknown GPU model 'MI300X' \(the catalog knows T4, V100-16GB" "$(cat "$T/e.txt")"

# ---- 3. --sort price-per-tflops on a mixed query ---------------------------
# H100:8 or A100:8 on aws and azure: model H100 matches H100-80GB-SXM (p5,
# ND96isr_H100_v5), A100 matches A100-40GB (p4d, ND96asr_v4) and A100-80GB
# (p4de, ND96amsr_A100_v4): 21 rows. Dense TFLOPS per node (gpus.csv,
# bf16_tflops_dense x 8): H100-80GB-SXM 989 x 8 = 7912; A100 312 x 8 = 2496.
# On-demand USD/hour and USD per TFLOPS-hour:
#   p5.48xlarge us-east-1, -2, us-west-2 55.04   / 7912 = 0.006957
#   p5.48xlarge ap-northeast-1         68.8      / 7912 = 0.008696
#   p4d.24xlarge us-east-2, us-west-2  21.95764  / 2496 = 0.00879713
#   p4d.24xlarge us-east-1             21.957642 / 2496 = 0.00879713 (+8e-10)
#   p4d.24xlarge eu-west-1             23.71569  / 2496 = 0.009501
#   ND96asr_v4 eastus, westus2         27.197    / 2496 = 0.010896
#   p4d.24xlarge eu-central-1          27.43298  / 2496 = 0.010991
#   p4de.24xlarge us-east-1, us-west-2 27.44705  / 2496 = 0.010996
#   p4d.24xlarge ap-northeast-1        30.09784  / 2496 = 0.012058
#   ND96isr_H100_v5 eastus, eastus2    98.32     / 7912 = 0.012427
#   ND96amsr_A100_v4 eastus, eastus2   32.77     / 2496 = 0.013129
#   p4de.24xlarge ap-southeast-1       32.93646  / 2496 = 0.013196
#   p4de.24xlarge eu-central-1         34.29122  / 2496 = 0.013738
#   p4de.24xlarge ap-northeast-1       37.6223   / 2496 = 0.015073
# Equal keys fall back to provider, type, region in byte order.
g -o json offers --gpu H100:8,A100:8 --provider aws,azure --sort price-per-tflops > "$T/ppt.json"
check_schema "$T/ppt.json" offers
expect_eq "price-per-tflops: sort named, 21 matched" "price-per-tflops 21" \
    "$(json_get "$T/ppt.json" 'd["sort"], d["matched"]' | tr -d "(),'")"
expect_eq "price-per-tflops: exact order" \
"aws p5.48xlarge us-east-1
aws p5.48xlarge us-east-2
aws p5.48xlarge us-west-2
aws p5.48xlarge ap-northeast-1
aws p4d.24xlarge us-east-2
aws p4d.24xlarge us-west-2
aws p4d.24xlarge us-east-1
aws p4d.24xlarge eu-west-1
azure Standard_ND96asr_v4 eastus
azure Standard_ND96asr_v4 westus2
aws p4d.24xlarge eu-central-1
aws p4de.24xlarge us-east-1
aws p4de.24xlarge us-west-2
aws p4d.24xlarge ap-northeast-1
azure Standard_ND96isr_H100_v5 eastus
azure Standard_ND96isr_H100_v5 eastus2
azure Standard_ND96amsr_A100_v4 eastus
azure Standard_ND96amsr_A100_v4 eastus2
aws p4de.24xlarge ap-southeast-1
aws p4de.24xlarge eu-central-1
aws p4de.24xlarge ap-northeast-1" "$(names "$T/ppt.json")"
expect_eq "p5 and ND96isr: 0.006957 and 0.012427 USD per TFLOPS-hour" "0.006957 0.012427" \
    "$(json_get "$T/ppt.json" '" ".join(str(o["on_demand_usd_per_tflops_hr"]) for o in d["offers"] if o["region"] in ("us-east-1", "eastus") and o["instance_type"] in ("p5.48xlarge", "Standard_ND96isr_H100_v5"))')"
# The same query by on-demand price: 21.95764 < 21.957642 (2e-6 apart: more
# than the 1e-6 that counts as equal) < 23.71569 < 27.197 < 27.43298 <
# 27.44705 < 30.09784 < 32.77 < 32.93646 < 34.29122 < 37.6223 < 55.04 < 68.8
# < 98.32; equal prices go by region name.
g -o json offers --gpu H100:8,A100:8 --provider aws,azure > "$T/bp.json"
expect_eq "same query by price: exact order and prices" \
"aws p4d.24xlarge us-east-2 21.95764
aws p4d.24xlarge us-west-2 21.95764
aws p4d.24xlarge us-east-1 21.957642
aws p4d.24xlarge eu-west-1 23.71569
azure Standard_ND96asr_v4 eastus 27.197
azure Standard_ND96asr_v4 westus2 27.197
aws p4d.24xlarge eu-central-1 27.43298
aws p4de.24xlarge us-east-1 27.44705
aws p4de.24xlarge us-west-2 27.44705
aws p4d.24xlarge ap-northeast-1 30.09784
azure Standard_ND96amsr_A100_v4 eastus 32.77
azure Standard_ND96amsr_A100_v4 eastus2 32.77
aws p4de.24xlarge ap-southeast-1 32.93646
aws p4de.24xlarge eu-central-1 34.29122
aws p4de.24xlarge ap-northeast-1 37.6223
aws p5.48xlarge us-east-1 55.04
aws p5.48xlarge us-east-2 55.04
aws p5.48xlarge us-west-2 55.04
aws p5.48xlarge ap-northeast-1 68.8
azure Standard_ND96isr_H100_v5 eastus 98.32
azure Standard_ND96isr_H100_v5 eastus2 98.32" "$(rows "$T/bp.json")"
# T4:1 or A10G:1: 58 T4:1 rows + 30 g5 A10G:1 rows = 88. T4 is 65 dense
# FP16 TFLOPS (no BF16); A10G has no figure, so its rows rank last, by price.
# First: 0.526 / 65 = 0.0080923 for g4dn.xlarge us-east-1/us-east-2/us-west-2
# and NC4as_T4_v3 eastus/westus2 (aws before azure, then region); last: the
# dearest A10G, g5.16xlarge ap-northeast-1 at 5.94042.
g -o json offers --gpu T4:1,A10G:1 --sort price-per-tflops > "$T/t4.json"
check_schema "$T/t4.json" offers
expect_eq "T4 or A10G: 88 matched" 88 "$(json_get "$T/t4.json" 'd["matched"]')"
expect_eq "T4 or A10G by price-per-tflops: first five" \
"aws g4dn.xlarge us-east-1 0.526
aws g4dn.xlarge us-east-2 0.526
aws g4dn.xlarge us-west-2 0.526
azure Standard_NC4as_T4_v3 eastus 0.526
azure Standard_NC4as_T4_v3 westus2 0.526" "$(rows "$T/t4.json" | head -5)"
expect_eq "0.526 / 65 = 0.008092 USD per TFLOPS-hour" 0.008092 "$(json_get "$T/t4.json" 'd["offers"][0]["on_demand_usd_per_tflops_hr"]')"
expect_eq "unknown TFLOPS last: the 30 A10G rows close the list" "30 aws g5.16xlarge ap-northeast-1 5.94042" \
    "$(json_get "$T/t4.json" 'str(sum(1 for o in d["offers"][-30:] if o["gpu"]["model"] == "A10G" and o["on_demand_usd_per_tflops_hr"] is None and o["gpu"]["tflops_dense"] is None)) + " " + " ".join(str(x) for x in (d["offers"][-1]["provider"], d["offers"][-1]["instance_type"], d["offers"][-1]["region"], d["offers"][-1]["price_usd_hr"]))')"

# ---- 4. --limit, and the piped table ---------------------------------------
g -o json offers --gpu A100-80GB:8 --spot --limit 2 > "$T/lim.json"
check_schema "$T/lim.json" offers
expect_eq "--limit 2: two shown, matched still 8" "2 8" \
    "$(json_get "$T/lim.json" 'len(d["offers"]), d["matched"]' | tr -d '(),')"
expect_eq "--limit 2: the two cheapest" "azure Standard_ND96amsr_A100_v4 eastus
azure Standard_ND96amsr_A100_v4 eastus2" "$(names "$T/lim.json")"
g offers --gpu A100-80GB:8 --spot > "$T/table.txt" 2> "$T/table.err"
expect_eq "piped table: a header and one line per offer" 9 "$(wc -l < "$T/table.txt")"
expect_match "header names the columns" "^PROVIDER +INSTANCE TYPE +REGION +GPU +GPUS +VCPU +RAM GIB +FABRIC GBIT/S +ON-DEMAND \\\$/H +SPOT \\\$/H +SAVING +\\\$/TFLOPS-H$" \
    "$(head -1 "$T/table.txt")"
expect_match "first line: azure eastus, 3.6047 spot, 89 %" "^azure +Standard_ND96amsr_A100_v4 +eastus +A100-80GB +8 +96 +1800 +infiniband 1600 +32\.7700 +3\.6047 +89% " \
    "$(sed -n 2p "$T/table.txt")"
expect_eq "table rows in the JSON order" "$(names "$T/spot.json")" "$(tail -n +2 "$T/table.txt" | awk '{print $1, $2, $3}')"
expect_match "summary on stderr" "^8 of 8 offer\(s\) shown, by spot price; catalog built-in \(368 rows\)" "$(cat "$T/table.err")"
expect_eq "the summary names the currency converted, from the rows' sources" "8 of 8 offer(s) shown, by spot price; catalog built-in (368 rows); prices USD/hour; CNY rows converted at the catalog's rate (see gpuctl catalog)" "$(cat "$T/table.err")"
g --catalog "$GPUCTL_SOURCE_DIR/providers/aws/catalog.csv" offers --gpu A100-80GB:8 --spot > /dev/null 2> "$T/table-aws.err"
expect_eq "no CNY rows: no conversion said" "5 of 5 offer(s) shown, by spot price; catalog $GPUCTL_SOURCE_DIR/providers/aws/catalog.csv (227 rows); prices USD/hour" "$(cat "$T/table-aws.err")"
expect_eq "no ANSI escapes when piped" 0 "$(cat "$T/table.txt" "$T/table.err" | tr -cd '\033' | wc -c)"
g offers --gpu A100-80GB:8 --spot --limit 2 > "$T/table2.txt" 2> "$T/table2.err"
expect_eq "--limit 2 table: header + 2" 3 "$(wc -l < "$T/table2.txt")"
expect_match "--limit summary" "^2 of 8 offer\(s\) shown" "$(cat "$T/table2.err")"
g offers --gpu T4:3 > "$T/table3.txt" 2> "$T/table3.err"
expect_eq "no match: nothing on stdout" "" "$(cat "$T/table3.txt")"
expect_eq "no match: says so" "no offer matches (catalog built-in, 368 rows)" "$(cat "$T/table3.err")"

# ---- 5. the AWS families added in issue 13 ---------------------------------
# Values checked by hand against skypilot-org/skypilot-catalog
# catalogs/v8/aws/vms.csv @00148f2a (Price; spot = lowest SpotPrice over the
# region's zones, Local Zones excluded) and the AWS accelerated-computing
# spec page (EFA, Gbit/s). L4 (one GPU: a count defaults to 1): the 1-GPU
# g6 sizes (xlarge, 2x, 4x, 8x, 16x) in 5 regions = 25, and gr6 (4x, 8x) = 10.
g -o json offers --gpu L4 > "$T/l4.json"
check_schema "$T/l4.json" offers
expect_eq "L4: 35 offers (g6 25, gr6 10)" "35 25 10" \
    "$(json_get "$T/l4.json" '" ".join(str(x) for x in (d["matched"], sum(o["instance_type"].startswith("g6.") for o in d["offers"]), sum(o["instance_type"].startswith("gr6.") for o in d["offers"])))')"
# Cheapest: g6.xlarge at 0.8048 in us-east-1, us-east-2 and us-west-2 (region
# order), then g6.2xlarge at 0.9776.
expect_eq "L4: the four cheapest on-demand" \
"aws g6.xlarge us-east-1 0.8048
aws g6.xlarge us-east-2 0.8048
aws g6.xlarge us-west-2 0.8048
aws g6.2xlarge us-east-1 0.9776" "$(rows "$T/l4.json" | head -4)"
expect_eq "L4: g6.xlarge is 1 x L4 24 GB, 4 vCPU, 16 GiB, no fabric; spot 0.349 (use1-az4)" \
    "L4 1 24 4 16 none 0.349 56.6" \
    "$(json_get "$T/l4.json" '" ".join(str(x) for x in (d["offers"][0]["gpu"]["model"], d["offers"][0]["gpu"]["count"], d["offers"][0]["gpu"]["memory_gib"], d["offers"][0]["vcpus"], d["offers"][0]["memory_gib"], d["offers"][0]["interconnect"]["fabric"], d["offers"][0]["price"]["spot_usd_hr"], d["offers"][0]["spot_saving_pct"]))')"
# 1 - 0.349/0.8048 = 1 - 0.433648 = 56.64 % -> 56.6.
# L40S x8, spot: g6e.48xlarge in five regions, EFA 400 Gbit/s.
g -o json offers --gpu L40S:8 --spot > "$T/l40s.json"
check_schema "$T/l40s.json" offers
expect_eq "L40S:8 spot: g6e.48xlarge, exact order and spot prices" \
"aws g6e.48xlarge us-east-1 8.0189
aws g6e.48xlarge us-east-2 8.2444
aws g6e.48xlarge us-west-2 10.1607
aws g6e.48xlarge ap-northeast-1 12.4345
aws g6e.48xlarge eu-central-1 14.399" "$(rows "$T/l40s.json")"
expect_eq "L40S:8: 48 GB each, 192 vCPU, 1536 GiB, efa 400, 30.13118 on-demand" "48 192 1536 efa 400 30.13118" \
    "$(json_get "$T/l40s.json" '" ".join(str(x) for x in (d["offers"][0]["gpu"]["memory_gib"], d["offers"][0]["vcpus"], d["offers"][0]["memory_gib"], d["offers"][0]["interconnect"]["fabric"], d["offers"][0]["interconnect"]["gbps"], d["offers"][0]["price"]["on_demand_usd_hr"]))')"
g -o json offers --gpu L40S:4 > "$T/l40s4.json"
expect_eq "L40S:4: g6e.12xlarge (efa 100) and g6e.24xlarge (efa 200), 10 offers" "10 aws g6e.12xlarge us-east-1 10.49264 100" \
    "$(json_get "$T/l40s4.json" '" ".join(str(x) for x in (d["matched"], d["offers"][0]["provider"], d["offers"][0]["instance_type"], d["offers"][0]["region"], d["offers"][0]["price_usd_hr"], d["offers"][0]["interconnect"]["gbps"]))')"
# H200 x8 on-demand: p5en (p5e has no on-demand price, so no on-demand offer).
g -o json offers --gpu H200:8 > "$T/h200.json"
check_schema "$T/h200.json" offers
expect_eq "H200:8 on-demand: p5en, exact order" \
"aws p5en.48xlarge us-east-1 63.296
aws p5en.48xlarge us-east-2 63.296
aws p5en.48xlarge us-west-2 63.296
aws p5en.48xlarge ap-northeast-1 79.12" "$(rows "$T/h200.json")"
# With --spot the two spot-only p5e rows join: 15.482 < 16.24 < 16.5551 <
# 18.7359 < 19.5387 < 31.6303.
g -o json offers --gpu H200:8 --spot > "$T/h200s.json"
expect_eq "H200:8 spot: p5en and p5e, exact order" \
"aws p5en.48xlarge us-west-2 15.482
aws p5en.48xlarge us-east-2 16.24
aws p5en.48xlarge us-east-1 16.5551
aws p5e.48xlarge us-east-2 18.7359
aws p5e.48xlarge us-west-2 19.5387
aws p5en.48xlarge ap-northeast-1 31.6303" "$(rows "$T/h200s.json")"
expect_eq "p5e: no on-demand price, so no saving; 141 GB, efa 3200" "None None 141 3200" \
    "$(json_get "$T/h200s.json" '" ".join(str(x) for x in (d["offers"][3]["price"]["on_demand_usd_hr"], d["offers"][3]["spot_saving_pct"], d["offers"][3]["gpu"]["memory_gib"], d["offers"][3]["interconnect"]["gbps"]))')"
# B200 x8: p6-b200.48xlarge, 113.9328 USD/hour in us-east-1, us-east-2,
# us-west-2; 8 x 2250 dense TFLOPS = 18000, 113.9328 / 18000 = 0.00632960
# -> 0.00633; the GPUs as AWS states them, 179 GiB.
g -o json offers --gpu B200:8 > "$T/b200.json"
check_schema "$T/b200.json" offers
expect_eq "B200:8: p6-b200, exact order" \
"aws p6-b200.48xlarge us-east-1 113.9328
aws p6-b200.48xlarge us-east-2 113.9328
aws p6-b200.48xlarge us-west-2 113.9328" "$(rows "$T/b200.json")"
expect_eq "B200:8: model, 179 GiB, 2250 TFLOPS, 0.00633 per TFLOPS-hour, efa 3200, spot 21.0148 (not the Local Zone's 13.0338)" \
    "B200-SXM 179 2250 0.00633 efa 3200 21.0148" \
    "$(json_get "$T/b200.json" '" ".join(str(x) for x in (d["offers"][0]["gpu"]["model"], d["offers"][0]["gpu"]["memory_gib"], d["offers"][0]["gpu"]["tflops_dense"], d["offers"][0]["on_demand_usd_per_tflops_hr"], d["offers"][0]["interconnect"]["fabric"], d["offers"][0]["interconnect"]["gbps"], d["offers"][0]["price"]["spot_usd_hr"]))')"
# The seven major regions are all in the built-in AWS rows now (ap-southeast-1:
# p4de only; eu-west-1: p4d only).
expect_eq "AWS regions of the built-in rows" \
    "ap-northeast-1 ap-southeast-1 eu-central-1 eu-west-1 us-east-1 us-east-2 us-west-2" \
    "$(g -o json offers --provider aws --gpu T4,A10G,L4,L40S,A100:8,H100:8,H200:8,B200:8 | python3 -c 'import json,sys; print(" ".join(sorted({o["region"] for o in json.load(sys.stdin)["offers"]})))')"

# ---- 6. a tiny spot price: enough digits, a saving under 100 % -------------
# regression: a live spot price of 0.0031 USD/hour printed as "0.00" in the
# plan and its saving against 32.77 on-demand as "100%" (1 - 0.0031/32.77 =
# 99.9905 %). Prices show at least 3 significant digits (up to 6 decimals);
# a saving between 0 and 100 shows as many decimals as keep it off 0 and
# 100; one above on-demand keeps its sign.
cat > "$T/tiny.csv" <<'CSV'
provider,instance_type,region,gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib,interconnect,interconnect_gbps,price_ondemand_usd_hr,price_spot_usd_hr,price_ondemand_cny_hr,price_spot_cny_hr,source,notes
aws,t.tiny,us-east-1,T4,1,16,4,16,none,,32.77,0.0031,,,x,
aws,t.tinier,us-east-1,T4,1,16,4,16,none,,0.5,0.000031,,,x,
aws,t.dearer,us-east-1,T4,1,16,4,16,none,,0.5,0.500001,,,x,
aws,t.half,us-east-1,T4,1,16,4,16,none,,0.5,0.25,,,x,
CSV
g --catalog "$T/tiny.csv" -o json offers --gpu T4 --spot > "$T/tiny.json"
check_schema "$T/tiny.json" offers
# 1 - 0.000031/0.5 = 99.9938 % -> 99.99 (1 decimal would be 100.0);
# 0.500001 is above 0.5: no saving (null), as before.
expect_eq "tiny spot -o json: prices and savings" \
"t.tinier 3.1e-05 99.99
t.tiny 0.0031 99.99
t.half 0.25 50
t.dearer 0.500001 None" \
    "$(json_get "$T/tiny.json" '"\n".join(" ".join(str(x) for x in (o["instance_type"], o["price"]["spot_usd_hr"], o["spot_saving_pct"])) for o in d["offers"])')"
g --catalog "$T/tiny.csv" offers --gpu T4 --spot > "$T/tiny.txt" 2> /dev/null
# The table: 0.000031 -> "0.000031" (not "0.0000"), 0.0031 -> "0.0031";
# savings 99.99 %, 99.99 %, 50 % and 1 - 0.500001/0.5 = -0.0002 %.
expect_eq "tiny spot table: SPOT and SAVING cells" \
"t.tinier 0.000031 99.99%
t.tiny 0.0031 99.99%
t.half 0.2500 50%
t.dearer 0.5000 -0.0002%" \
    "$(tail -n +2 "$T/tiny.txt" | awk '{print $2, $(NF-2), $(NF-1)}')"
expect_eq "never 100% nor -0%" 0 "$(grep -cE ' (100|-0)% ' "$T/tiny.txt" || true)"
# The plan: 1 node, spot, on the tiny row alone: node 0.0031, cluster 0.0031
# (not "0.00"), saving 32.77 - 0.0031 = 32.7669 USD/hour, 99.9905 % -> 99.99.
head -2 "$T/tiny.csv" > "$T/tiny1.csv"
cat > "$T/tiny.yaml" <<'YAML'
name: tiny
provider: aws
nodes: 1
resources:
  gpu: T4:1
spot:
  policy: spot
run:
  command: python train.py
YAML
g --catalog "$T/tiny1.csv" -o json plan -f "$T/tiny.yaml" > "$T/tiny-plan.json" || true
check_schema "$T/tiny-plan.json" plan
expect_eq "tiny plan -o json: chosen, node, cluster, saving, saving %" "t.tiny 0.0031 0.0031 32.7669 99.99" \
    "$(json_get "$T/tiny-plan.json" '" ".join(str(x) for x in (d["chosen"]["instance_type"], d["cost"]["node_usd_hr"], d["cost"]["cluster_usd_hr"], d["cost"]["spot_saving_usd_hr"], d["cost"]["spot_saving_pct"]))')"
g --catalog "$T/tiny1.csv" plan -f "$T/tiny.yaml" > "$T/tiny-plan.txt" 2>&1 || true
expect_match "tiny plan: price with its digits" "price: 0\.0031 USD/hour per node; cluster 0\.0031 USD/hour" "$(cat "$T/tiny-plan.txt")"
expect_match "tiny plan: saving under 100 %" "spot saving: 32\.77 USD/hour \(99\.99%\) against 32\.77 on-demand" "$(cat "$T/tiny-plan.txt")"

# ---- 7. bad values: exit 3 ----------------------------------------------------
run_rc rc g offers --gpu H100:0 > /dev/null 2> "$T/e.txt"
expect_eq "--gpu H100:0: exit 3" 3 "$rc"
expect_match "--gpu H100:0: says why" "GPU count must be at least 1 in 'H100:0'" "$(cat "$T/e.txt")"
run_rc rc g -o json offers --gpu H100:0 > "$T/e.json" 2> /dev/null
expect_eq "--gpu H100:0 -o json: exit 3" 3 "$rc"
check_schema "$T/e.json" error
expect_eq "json error code usage, exit_status 3" "usage 3" "$(json_get "$T/e.json" 'd["error"]["code"], d["error"]["exit_status"]' | tr -d "(),'")"
run_rc rc g offers --gpu A100:8 --interconnect ib > /dev/null 2> "$T/e.txt"
expect_eq "--interconnect ib: exit 3" 3 "$rc"
expect_match "names the bad value and the choices" "--interconnect: expected any, none, efa, infiniband, erdma or rdma, got 'ib'" "$(cat "$T/e.txt")"
run_rc rc g -o json offers --interconnect ib > "$T/e2.json" 2> /dev/null
check_schema "$T/e2.json" error
for bad in "--max-price -1" "--max-price abc" "--sort cheapest" "--limit 0" "--limit x" "--provider aws,"; do
    # shellcheck disable=SC2086
    run_rc rc g offers $bad > /dev/null 2>&1
    expect_eq "offers $bad: exit 3" 3 "$rc"
done
# An empty --gpu is refused like an empty --provider item, not read as "no
# GPU filter" (which would list all 365 priced rows).
for bad in "" ","; do
    run_rc rc g offers --gpu "$bad" > /dev/null 2>&1
    expect_eq "offers --gpu '$bad': exit 3" 3 "$rc"
done
run_rc rc g offers extra > /dev/null 2> "$T/e.txt"
expect_eq "an operand: exit 3" 3 "$rc"
expect_match "says so" "unexpected argument 'extra'" "$(cat "$T/e.txt")"
finish
