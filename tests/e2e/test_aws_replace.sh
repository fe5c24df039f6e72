#!/bin/bash
# A changed shape of an aws cluster, against the fake EC2 (tests/fake/ec2.py,
# nodes that do not boot): apply replaces its nodes.
#  a. another instance type: the old instances are terminated, two new ones
#     run with the new type, launched with new client tokens (a reused
#     token would give back the terminated instance: EC2's idempotency);
#     the security group and key pair stay; the cluster keeps its uid;
#  b. another provider (local): the instances are terminated and what aws
#     made for the cluster (security group, key pair) is deleted; the
#     cluster now runs on local; destroy leaves nothing.
source "$(dirname "$0")/lib.sh" || exit 1
source "$(dirname "$0")/ec2_parts.sh"
spec() {
    cat > "$1.yaml" <<EOF
name: rx
provider: aws
nodes: 2
resources:
  gpu: A10G:1
  instance_types: $2
region: us-east-1
run:
  command: python3 -c 'print(1)'
EOF
}
# running: the fake's instances not terminated, as "ID:TYPE", sorted
running() { world '" ".join(sorted(i["id"] + ":" + i["type"] for i in d["instances"] if i["state"] != "terminated"))'; }

part a
spec rx g5.xlarge
run_rc rc g -y apply -f rx.yaml "${P[@]}" > "$T/a1.txt" 2>&1
[ "$rc" = 0 ] || cat "$T/a1.txt"
expect_eq "a: the first apply: exit 0" 0 "$rc"
uid=$(st 'd["clusters"][0]["uid"]')
before=$(running)
expect_match "a: two g5.xlarge instances run" '^i-[0-9a-f]+:g5\.xlarge i-[0-9a-f]+:g5\.xlarge$' "$before"
tokens1=$(calls RunInstances '" ".join(sorted(c["ClientToken"] for c in r))')

spec rx g5.2xlarge
run_rc rc g -o json plan -f rx.yaml > "$T/p.json" 2>&1
expect_eq "a: plan: exit 0" 0 "$rc"
check_schema "$T/p.json" plan
expect_eq "a: plan: replace, the diff, 2 deletes, 2 creates of the new type" \
    'replace|resources.instance_types ["g5.xlarge"] -> ["g5.2xlarge"]|2|g5.2xlarge g5.2xlarge' \
    "$(json_get "$T/p.json" '"|".join([d["action"], d["replace"], str(sum(c["action"] == "delete" for c in d["changes"])), " ".join(c["instance_type"] for c in d["changes"] if c["action"] == "create")])')"
from=$(log_lines)
run_rc rc g -y apply -f rx.yaml "${P[@]}" > "$T/a2.txt" 2>&1
[ "$rc" = 0 ] || cat "$T/a2.txt"
expect_eq "a: apply -y: exit 0" 0 "$rc"
expect_match "a: it says so" "^cluster rx: replaced: deleted 2 node\(s\), created 2 \(changed: resources\.instance_types \[\"g5\.xlarge\"\] -> \[\"g5\.2xlarge\"\]\)$" "$(cat "$T/a2.txt")"
after=$(running)
expect_match "a: two g5.2xlarge instances run, none of the old" '^i-[0-9a-f]+:g5\.2xlarge i-[0-9a-f]+:g5\.2xlarge$' "$after"
old_ids=$(tr ' ' '\n' <<< "$before" | cut -d: -f1 | paste -sd' ')
expect_eq "a: the old instances are terminated" "terminated terminated" \
    "$(world "' '.join(i['state'] for i in d['instances'] if i['id'] in '$old_ids'.split())")"
tokens2=$(calls RunInstances '" ".join(sorted(c["ClientToken"] for c in r))' "$from")
expect_eq "a: the new launch used new client tokens" "" \
    "$(comm -12 <(tr ' ' '\n' <<< "$tokens1" | sort) <(tr ' ' '\n' <<< "$tokens2" | sort))"
expect_eq "a: a TerminateInstances per node, no security group or key pair deleted" "2 0 0" \
    "$(logq '" ".join(str(sum(l["action"] == a for l in L)) for a in ("TerminateInstances", "DeleteSecurityGroup", "DeleteKeyPair"))' "$from")"
expect_eq "a: the same cluster (uid), 2 live nodes of the new type" "$uid g5.2xlarge g5.2xlarge" \
    "$(st '" ".join([d["clusters"][0]["uid"]] + [n["instance_type"] for n in d["clusters"][0]["nodes"] if n["phase"] != "terminated"])')"

# b. to local: aws's resources for the cluster go too
cat > rx.yaml <<'EOF'
name: rx
provider: local
nodes: 1
run:
  command: echo moved
EOF
from=$(log_lines)
run_rc rc g -y apply -f rx.yaml --wait "${P[@]}" > "$T/b.txt" 2>&1
[ "$rc" = 0 ] || cat "$T/b.txt"
expect_eq "b: apply -y --wait to local: exit 0" 0 "$rc"
expect_eq "b: no instance is left" "" "$(running)"
expect_eq "b: the security group and the key pair are deleted" "1 1" \
    "$(logq '" ".join(str(sum(l["action"] == a and not l["error"] for l in L)) for a in ("DeleteSecurityGroup", "DeleteKeyPair"))' "$from")"
expect_eq "b: the cluster runs on local now, the same uid" "local $uid succeeded" \
    "$(st '" ".join([d["clusters"][0]["provider"], d["clusters"][0]["uid"], d["clusters"][0]["phase"]])')"
run_rc rc g -y destroy rx > /dev/null 2>&1
expect_eq "b: destroy: exit 0" 0 "$rc"
finish
