#!/bin/bash
# gpuctl status --refresh against the fake EC2 (no node boots): a cluster
# record the state lost is rebuilt from its instances' tags (issue 14).
#  1. apply cluster "train", three nodes (the head on-demand by itself,
#     two spot workers in one RunInstances): each instance carries its
#     rank (the batch's first rank: a worker's is it plus its launch
#     index), the node count, the spec hash and its price; no tag holds
#     the spec's env; labels beyond EC2's 50 tags are refused; an
#     untagged instance beside it;
#  2. the state is deleted: status --refresh rebuilds train's record with
#     exact fields (name, uid, ranks, ids, type, zone, spot, price, spec
#     hash; rebuilt, no spec), says the spec must be given again; JSON
#     has "rebuilt": true; a second --refresh makes no second record;
#  3. apply of another spec of that name is refused (nothing made);
#  4. destroy train removes everything it had; the untagged instance runs;
#  5. adoption: a new train, its state deleted and a worker terminated,
#     rebuilt with that rank pending; apply -f with the spec it was made
#     with takes the spec in and makes only the missing worker;
#  6. a name clash: train's state deleted, train applied again (another
#     uid); --refresh leaves the old uid's nodes alone and says why; gc
#     lists them, gc -y removes them; destroy removes the new one;
#  7. a region whose tags cannot be read: what the others hold is
#     rebuilt and shown, and the error (exit 8) names the region.
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/ec2_parts.sh" || exit 1

part rebuild
# back ARGS: an untagged instance behind gpuctl's back (botocore)
untagged() { python3 - "$URL" <<'PY'
import sys, botocore.session
s = botocore.session.get_session()
ec2 = s.create_client("ec2", region_name="us-east-1", endpoint_url=sys.argv[1], aws_access_key_id="AKIDEXAMPLE",
                      aws_secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
print(ec2.run_instances(ImageId="ami-01000000000000002", InstanceType="g4dn.xlarge", MinCount=1,
                        MaxCount=1)["Instances"][0]["InstanceId"])
PY
}
# live: "id:state" of the instances (sorted) whose ids are given
live() { world "' '.join(sorted(i['id'] + ':' + i['state'] for i in d['instances'] if i['id'] in '$*'.split()))"; }
# nodes: "rank:id:type:zone:spot:price:phase" of the live cluster's nodes (status -o json)
nodes_of() { st "' '.join('%d:%s:%s:%s:%s:%.4f:%s' % (n['rank'], n['provider_id'], n['instance_type'], n['zone'], n['spot'], n['price_hourly'], n['phase']) for c in d['clusters'] if c['name'] == '$1' and not c['destroyed_at'] for n in c['nodes'])"; }

cat > train.yaml <<'EOF'
name: train
provider: aws
nodes: 3
resources:
  gpu: T4:1
  instance_types: g4dn.xlarge
region: us-east-1
spot: { policy: spot, head: on-demand }
labels: { team: vision }
env:
  WANDB_PROJECT: zebra-secret-value-77
run:
  command: python train.py
EOF
sed 's/python train.py/python train2.py/' train.yaml > other.yaml

# ---- 1. tags at launch -------------------------------------------------------
run_rc rc g -y apply -f train.yaml "${P[@]}" > /dev/null 2> "$T/a1.err"
[ "$rc" = 0 ] || cat "$T/a1.err"
expect_eq "1: train applied" 0 "$rc"
UID1=$(db "select uid from clusters where name = 'train'")
HASH=$(db "select spec_hash from clusters where name = 'train'")
WANT=$(nodes_of train)
IDS=$(db "select provider_id from nodes order by rank" | paste -sd' ')
read -r I0 I1 I2 <<< "$IDS"
expect_match "1: three nodes: an on-demand head, two spot workers" \
    "^0:i-[0-9a-f]+:g4dn.xlarge:us-east-1[a-f]:False:[0-9.]+:[a-z]+ 1:i-[0-9a-f]+:g4dn.xlarge:us-east-1[a-f]:True:[0-9.]+:[a-z]+ 2:i-[0-9a-f]+:g4dn.xlarge:us-east-1[a-f]:True:[0-9.]+:[a-z]+$" "$WANT"
expect_eq "1: the workers in one RunInstances" "1 2" \
    "$(calls RunInstances "' '.join(x['MinCount'] for x in r if not x['_error'])")"
PRICE0=$(db "select printf('%.6f', price_hourly) from nodes where rank = 0")
PRICE1=$(db "select printf('%.6f', price_hourly) from nodes where rank = 1")
expect_eq "1: the node tags (rank of launch index 0, nodes, spec hash, price)" \
    "$I0:0:3:$HASH:$PRICE0 $I1:1:3:$HASH:$PRICE1 $I2:1:3:$HASH:$PRICE1" \
    "$(world "' '.join(i['id'] + ':' + ':'.join(i['tags'].get(k, '-') for k in ('gpuctl:rank', 'gpuctl:nodes', 'gpuctl:spec-hash', 'gpuctl:price-usd-hour')) for i in sorted(d['instances'], key=lambda i: (i['tags'].get('gpuctl:rank'), i['launch_index'])) if i['tags'].get('gpuctl:cluster-uid') == '$UID1')")"
expect_eq "1: the workers' ranks are their launch index plus the tag" "$I1:0 $I2:1" \
    "$(world "' '.join(i['id'] + ':' + str(i['launch_index']) for i in d['instances'] if i['id'] in ('$I1', '$I2'))")"
expect_eq "1: the node tags are on the instances only" "[]" \
    "$(world "[g['id'] for g in d['security_groups'] + d['key_pairs'] if 'gpuctl:rank' in g['tags']]")"
# no tag anywhere (instances, their volumes and interfaces, spot requests,
# groups, keys: every "tags" and "tag_specifications" of the fake's state)
# holds the spec's env, name or value (the user-data does: the control;
# gpuctl:rank six times: each of 3 instances' tags and tag specification)
expect_eq "1: no tag holds the spec's env (the user-data does)" "True 6 False" \
    "$(fake "$URL/_fake/state" | python3 -c '
import json, sys
d = json.load(sys.stdin)
tags = []
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            (tags.append(json.dumps(x)) if k in ("tags", "tag_specifications") else walk(x))
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk(d)
t = "".join(tags)
print("zebra-secret" in json.dumps(d), sum(json.dumps(x).count("gpuctl:rank") for x in tags), "zebra-secret" in t or "WANDB" in t)')"
expect_eq "1: an instance's tags: gpuctl's nine (expires-at: the default 72h end) and the label" \
    "Name gpuctl:cluster gpuctl:cluster-uid gpuctl:expires-at gpuctl:nodes gpuctl:price-usd-hour gpuctl:rank gpuctl:role gpuctl:spec-hash team" \
    "$(world "' '.join(sorted([i for i in d['instances'] if i['id'] == '$I0'][0]['tags']))")"
# EC2 keeps 50 tags a resource, gpuctl's own take 9: 41 labels at most,
# values of 256 characters at most, refused before anything is made
labels() { sed '/^labels:/d' train.yaml; echo "labels:"; for i in $(seq 1 "$1"); do echo "  l$i: ${2:-v}"; done; }
labels 41 > l41.yaml; labels 42 > l42.yaml; labels 1 "$(printf 'x%.0s' $(seq 1 257))" > long.yaml
run_rc rc g plan -f l41.yaml > /dev/null 2>&1
expect_eq "1: 41 labels: planned" 0 "$rc"
run_rc rc g plan -f l42.yaml > /dev/null 2> "$T/l42.err"
expect_eq "1: 42 labels: exit 4, why" "4 gpuctl: error: l42.yaml: labels: 42 labels, at most 41 on aws (EC2 keeps 50 tags a resource; gpuctl's own take 9)" "$rc $(cat "$T/l42.err")"
run_rc rc g plan -f long.yaml > /dev/null 2> "$T/long.err"
expect_eq "1: a label of 257 characters: exit 4, why" "4 gpuctl: error: long.yaml: labels.l1: a value of 257 characters, at most 256 on aws (an EC2 tag's value)" "$rc $(cat "$T/long.err")"
U_I=$(untagged)
fake -X POST "$URL/_fake/advance" > /dev/null

# ---- 2. the state lost; status --refresh rebuilds the record ---------------------
rm -rf "$STATE"
run_rc rc g status > "$T/s0.out" 2>&1
expect_eq "2: without the state: no clusters" "0 no clusters (gpuctl status --all shows destroyed ones)" "$rc $(cat "$T/s0.out")"
run_rc rc g status --refresh > "$T/s1.out" 2> "$T/s1.err"
[ "$rc" = 0 ] || cat "$T/s1.err"
expect_eq "2: status --refresh exits 0" 0 "$rc"
expect_match "2: it says what it rebuilt" "aws: cluster train \\($UID1\\) rebuilt from tags: 3 of 3 node\\(s\\) in us-east-1" "$(cat "$T/s1.err")"
expect_match "2: local cannot" "local: cannot rebuild from tags" "$(cat "$T/s1.err")"
expect_match "2: the table shows train" "^train +aws +3 +" "$(sed -n 2p "$T/s1.out")"
expect_eq "2: and says the spec must be given again" \
    "train was rebuilt from cloud tags: its spec must be given again (gpuctl apply -f SPEC with the spec it was made with, ${HASH:0:12}, takes it in; gpuctl destroy train removes it)" \
    "$(tail -1 "$T/s1.out")"
expect_eq "2: the nodes: rank, id, type, zone, market, price (as applied)" "$WANT" "$(nodes_of train)"
g -o json status train > "$T/s1.json"
check_schema "$T/s1.json" status
expect_eq "2: json: name uid rebuilt hash path nodes" "train $UID1 True $HASH  3" \
    "$(json_get "$T/s1.json" "' '.join(str(d['clusters'][0][k]) for k in ('name', 'uid', 'rebuilt', 'spec_hash', 'spec_path', 'nodes_desired'))")"
expect_eq "2: the record: no spec, the event" "0|rebuilt from tags: 3 of 3 node(s) in us-east-1, spec ${HASH:0:12}; the spec itself must be given again (gpuctl apply -f SPEC)" \
    "$(db "select length(spec_json) || '|' || (select message from events where kind = 'rebuild') from clusters")"
run_rc rc g status --refresh > /dev/null 2> "$T/s2.err"
expect_eq "2: a second --refresh: exit 0, no second record" "0 1" "$rc $(db "select count(*) from clusters")"

run_rc rc g exec train -f train.yaml > /dev/null 2> "$T/x1.err"
expect_eq "2: exec -f on it: exit 3, why" "3 gpuctl: error: the cluster's spec is not known: its record was rebuilt from its nodes' tags; apply the spec it was made with first (gpuctl apply -f SPEC)" "$rc $(cat "$T/x1.err")"

# ---- 3. another spec of that name is refused ------------------------------------
n0=$(log_lines)
run_rc rc g -y apply -f other.yaml "${P[@]}" > /dev/null 2> "$T/a2.err"
expect_eq "3: apply of another spec: exit 3" 3 "$rc"
expect_match "3: it says why" "cluster 'train' was rebuilt from its nodes' tags and its spec is not known: this spec \\(hash [0-9a-f]{12}\\) is not the one it was made with \\(${HASH:0:12}\\); apply that spec to take the cluster in, or remove it: gpuctl destroy train" "$(cat "$T/a2.err")"
expect_eq "3: nothing launched" "" "$(actions "$n0" | tr ' ' '\n' | grep -x RunInstances)"

# ---- 4. destroy removes everything it had -------------------------------------------
run_rc rc g -y destroy train > /dev/null 2> "$T/d1.err"
[ "$rc" = 0 ] || cat "$T/d1.err"
expect_eq "4: destroy train exits 0" 0 "$rc"
expect_eq "4: train's instances terminated, the untagged one runs" \
    "$(printf '%s\n' "$I0:terminated" "$I1:terminated" "$I2:terminated" "$U_I:running" | sort | paste -sd' ')" \
    "$(live "$I0 $I1 $I2 $U_I")"
expect_eq "4: its group and key pair are gone" "0" \
    "$(world "len([g for g in d['security_groups'] + d['key_pairs'] if g['tags'].get('gpuctl:cluster-uid') == '$UID1'])")"
run_rc rc g gc > "$T/gc1.out" 2>&1
expect_eq "4: gc: nothing left" "0 nothing to collect (aws): everything tagged by gpuctl belongs to a live cluster" "$rc $(cat "$T/gc1.out")"

# ---- 5. adoption: the spec it was made with, given again ----------------------------
run_rc rc g -y apply -f train.yaml "${P[@]}" > /dev/null 2> "$T/a3.err"
expect_eq "5: train applied again" 0 "$rc"
UID2=$(db "select uid from clusters where name = 'train' and destroyed_at = 0")
WANT2=$(nodes_of train)
J2=$(db "select provider_id from nodes n join clusters c on c.id = n.cluster_id where c.uid = '$UID2' and n.rank = 2")
rm -rf "$STATE"
# worker rank 2 is gone too (terminated behind gpuctl's back)
python3 - "$URL" "$J2" <<'PY'
import sys, botocore.session
ec2 = botocore.session.get_session().create_client("ec2", region_name="us-east-1", endpoint_url=sys.argv[1],
    aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
ec2.terminate_instances(InstanceIds=[sys.argv[2]])
PY
fake -X POST "$URL/_fake/advance" > /dev/null
run_rc rc g status --refresh train > /dev/null 2> "$T/s3.err"
expect_eq "5: rebuilt by name" "0 $UID2 1" "$rc $(db "select uid || ' ' || (spec_json = '') from clusters")"
expect_match "5: two of three nodes found" "aws: cluster train \\($UID2\\) rebuilt from tags: 2 of 3 node\\(s\\) in us-east-1" "$(cat "$T/s3.err")"
expect_eq "5: the event says rank 2 is to be made" "rebuilt from tags: 2 of 3 node(s) in us-east-1 (rank 2 not found: recorded as pending, made by apply of the spec), spec ${HASH:0:12}; the spec itself must be given again (gpuctl apply -f SPEC)" \
    "$(db "select message from events where kind = 'rebuild'")"
expect_eq "5: ranks 0 and 1 as applied, rank 2 pending" "$(echo "$WANT2" | cut -d' ' -f1,2) 2::::False:0.0000:pending" "$(nodes_of train)"
n0=$(log_lines)
run_rc rc g -y apply -f train.yaml "${P[@]}" > "$T/a4.out" 2> "$T/a4.err"
[ "$rc" = 0 ] || cat "$T/a4.err"
expect_eq "5: apply of the spec it was made with: exit 0" 0 "$rc"
expect_eq "5: one node launched: rank 2, spot, tagged rank 2" "RunInstances 1 spot 2" \
    "$(actions "$n0" | tr ' ' '\n' | grep -x RunInstances) $(calls RunInstances "' '.join([str(x.get(k)) for x in r[-1:] for k in ('MinCount', 'InstanceMarketOptions.MarketType')] + [x['TagSpecification.1.Tag.%d.Value' % k] for x in r[-1:] for k in range(1, 51) if x.get('TagSpecification.1.Tag.%d.Key' % k) == 'gpuctl:rank'])" "$n0")"
expect_eq "5: the spec taken in" "False $T/work/train.yaml" \
    "$(st "' '.join(str(c[k]) for c in d['clusters'] if c['name'] == 'train' and not c['destroyed_at'] for k in ('rebuilt', 'spec_path'))")"
expect_match "5: the same nodes 0 and 1, a new rank 2" "^$(echo "$WANT2" | cut -d' ' -f1,2) 2:i-[0-9a-f]+:g4dn.xlarge:us-east-1[a-f]:True:" "$(nodes_of train)"
expect_eq "5: the events" "rebuild adopt" "$(db "select group_concat(kind, ' ') from (select kind from events where kind in ('rebuild', 'adopt') order by id)")"

# ---- 6. a name clash: another live train keeps the name --------------------------------
rm -rf "$STATE"
run_rc rc g -y apply -f train.yaml "${P[@]}" > /dev/null 2> "$T/a5.err"
expect_eq "6: a third train applied" 0 "$rc"
UID3=$(db "select uid from clusters where name = 'train'")
run_rc rc g status --refresh > /dev/null 2> "$T/s4.err"
expect_eq "6: status --refresh exits 0" 0 "$rc"
expect_eq "6: it says why the old one is not rebuilt" \
    "gpuctl: warning: aws: cluster train ($UID2) not rebuilt from tags: a live cluster of that name is recorded (uid $UID3); its nodes are left as they are (gpuctl gc lists them)" \
    "$(grep warning "$T/s4.err")"
expect_eq "6: one record, the new uid" "$UID3" "$(db "select uid from clusters")"
expect_eq "6: the old nodes run" "3" \
    "$(world "len([i for i in d['instances'] if i['tags'].get('gpuctl:cluster-uid') == '$UID2' and i['state'] == 'running'])")"
run_rc rc g -y gc > /dev/null 2> "$T/gc2.err"
expect_eq "6: gc -y removes the old uid's resources" "0 0" \
    "$rc $(world "len([i for i in d['instances'] if i['tags'].get('gpuctl:cluster-uid') == '$UID2' and i['state'] != 'terminated'])")"
run_rc rc g -y destroy train > /dev/null 2> "$T/d2.err"
expect_eq "6: destroy train" 0 "$rc"
expect_eq "6: only the untagged instance runs" "$U_I" \
    "$(world "' '.join(i['id'] for i in d['instances'] if i['state'] != 'terminated')")"

# ---- 7. a region not read: what the others hold is rebuilt, exit 8 -------------------
run_rc rc g -y apply -f train.yaml "${P[@]}" > /dev/null 2> "$T/a6.err"
expect_eq "7: train applied" 0 "$rc"
UID4=$(db "select uid from clusters where name = 'train' and destroyed_at = 0")
rm -rf "$STATE"
fake -X POST "$URL/_fake/faults" -d '[{"action": "DescribeKeyPairs", "region": "ap-northeast-1", "code": "UnauthorizedOperation"}]' > /dev/null
run_rc rc g status --refresh > "$T/s5.out" 2> "$T/s5.err"
expect_eq "7: exit 8" 8 "$rc"
expect_match "7: the error names the region, last" "^gpuctl: error: aws: not listed, so not known to be clean: ap-northeast-1 \\(aws: DescribeKeyPairs \\(ap-northeast-1\\): UnauthorizedOperation" "$(tail -1 "$T/s5.err")"
expect_eq "7: us-east-1's train is rebuilt and shown" "$UID4 train" "$(db "select uid from clusters") $(sed -n 2p "$T/s5.out" | cut -d' ' -f1)"
fake -X DELETE "$URL/_fake/faults" > /dev/null
run_rc rc g -y destroy train > /dev/null 2>&1
expect_eq "7: destroy train; only the untagged instance runs" "0 $U_I" \
    "$rc $(world "' '.join(i['id'] for i in d['instances'] if i['state'] != 'terminated')")"

finish
