#!/usr/bin/env python3
"""Write the generated seeds of the fuzz corpora (tests/fuzz/corpus/*/seed-*)
from the examples, the test fixtures, the catalog and what a built gpuctl
and the fake EC2 produce:

    tests/fuzz/make_seeds.py BUILD/gpuctl

  spec           examples/**/*.yaml, tests/fixtures/spec/*.yaml
  plan           `gpuctl plan --out` of each example
  catalog_csv    the built-in instance table (providers/*/catalog.csv,
                 concatenated) and a small table
  ec2            the fake EC2's answers (tests/fake/ec2.py, recorded by
                 record_ec2.py) to check, plan --live, apply, status, a
                 node whose job ended (its console), destroy, and to a
                 throttled and a refused call, cut into fuzz_ec2's calls
  aws_config     ~/.aws files and credential_process output

Other files of the corpora (regress-*: the defects the fuzzers found, and
hand-written inputs) are kept.  Needs python3-botocore (the fake EC2)."""
import base64
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
CORPUS = os.path.join(HERE, "corpus")
HDR = ("provider,instance_type,region,gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib,"
       "interconnect,interconnect_gbps,price_ondemand_usd_hr,price_spot_usd_hr,"
       "price_ondemand_cny_hr,price_spot_cny_hr,source,notes\n")
SMALL = (HDR +
         "aws,p4d.24xlarge,us-east-1,A100-40GB,8,40,96,1152,efa,400,21.96,8.1,,,skypilot-v8-aws,\n"
         "aws,c5.large,us-east-1,,0,0,2,4,none,,0.085,0.035,,,,\"a note, quoted\"\n"
         "aliyun,ecs.gn7i-c8g1.2xlarge,cn-beijing,A10,1,24,8,30,erdma,16,2.2,0.9,16.1,6.5,"
         "aliyun-api-2025,\n"
         "azure,Standard_NC4as_T4_v3,,T4,1,16,4,28,,,0.526,,,,,\n")


def clean_seeds(name):
    d = os.path.join(CORPUS, name)
    os.makedirs(d, exist_ok=True)
    for f in glob.glob(os.path.join(d, "seed-*")):
        os.unlink(f)
    return d


def put(name, file, data):
    path = os.path.join(CORPUS, name, "seed-" + file)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def main():
    gpuctl = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="gpuctl-seeds-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GPUCTL_", "XDG_"))}
    for d in ("home", "cache", "config", "state"):
        os.makedirs(os.path.join(tmp, d))
    env.update(HOME=os.path.join(tmp, "home"), GPUCTL_CACHE_DIR=os.path.join(tmp, "cache"),
               GPUCTL_CONFIG_DIR=os.path.join(tmp, "config"), NO_COLOR="1",
               AWS_EC2_METADATA_DISABLED="true",
               AWS_CONFIG_FILE=os.path.join(tmp, "home", "aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "home", "aws-creds"))

    def g(*args, check=False):
        return subprocess.run([gpuctl, "--state-dir", os.path.join(tmp, "state"), *args],
                              env=env, cwd=tmp, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, check=check)

    try:
        specs = sorted(glob.glob(os.path.join(SRC, "examples", "**", "*.yaml"), recursive=True) +
                       glob.glob(os.path.join(SRC, "tests", "fixtures", "spec", "*.yaml")))
        clean_seeds("spec")
        for s in specs:
            put("spec", os.path.basename(s), open(s, "rb").read())

        clean_seeds("plan")
        for s in specs:
            out = os.path.join(tmp, "p.json")
            if g("plan", "-f", s, "--out", out).returncode == 0:
                put("plan", os.path.basename(s)[:-5] + ".json", open(out, "rb").read())
                os.unlink(out)

        clean_seeds("catalog_csv")
        builtin = b""
        for path in sorted(glob.glob(os.path.join(SRC, "providers", "*", "catalog.csv"))):
            data = open(path, "rb").read()
            builtin += data if not builtin else data[data.index(b"\n") + 1:]
        put("catalog_csv", "gpu_instances.csv", builtin)
        put("catalog_csv", "small.csv", SMALL)

        ec2_seeds(tmp, env, g)
        aws_config_seeds()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- ec2 ---------------------------------------------------------------------

JOB = """name: fz
provider: aws
nodes: 3
resources:
  gpu: A100-40GB:8
  interconnect: efa
  instance_types: p4d.24xlarge
region: us-east-1
spot: { policy: spot, max_price: 9.5 }
labels: { team: vision }
run:
  command: python train.py
"""


def action_of(rec):
    if rec["path"].startswith("/_fake/checkip"):
        return "checkip"
    body = rec["body"]
    i = body.find("<", body.find("?>") + 2 if body.startswith("<?xml") else 0)
    name = body[i + 1:body.find(">", i)].split()[0]
    return name[:-len("Response")] if name.endswith("Response") else name


def seed_text(call, recs):
    out = [call]
    for r in recs:
        hdr = "%d x-amzn-RequestId: %s" % (r["status"], r["rid"]) if r.get("rid") else str(r["status"])
        out.append("@@@@ " + hdr)
        out.append(r["body"].rstrip("\n"))
    return "\n".join(out) + "\n"


def ec2_seeds(tmp, env, g):
    clean_seeds("ec2")
    rec = os.path.join(tmp, "ec2.jsonl")
    fenv = dict(env, GPUCTL_FUZZ_RECORD=rec)
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "record_ec2.py"),
                             "--exit-on-stdin-eof", "--page-size", "2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=fenv)
    port = int(proc.stdout.readline().split()[1])
    base = "http://127.0.0.1:%d" % port
    env.update(AWS_ACCESS_KEY_ID="AKIDEXAMPLE",
               AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
               AWS_ENDPOINT_URL_EC2=base, GPUCTL_CHECKIP_URL=base + "/_fake/checkip",
               GPUCTL_AWS_POLL_S="0.05", GPUCTL_BOOT_TIMEOUT_S="60")
    with open(os.path.join(tmp, "job.yaml"), "w") as f:
        f.write(JOB)

    def scenario(*args):
        if os.path.exists(rec):
            os.unlink(rec)
        g(*args)
        if not os.path.exists(rec):
            return []
        return [json.loads(line) for line in open(rec, encoding="utf-8")]

    def control(path, doc=None):
        import urllib.request
        req = urllib.request.Request(base + path, method="POST",
                                     data=json.dumps(doc or {}).encode())
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        return json.load(opener.open(req))

    def state():
        import urllib.request
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        return json.load(opener.open(base + "/_fake/state"))

    try:
        put("ec2", "check", seed_text("check", scenario("check", "aws")))
        put("ec2", "prices", seed_text("prices", scenario("plan", "-f", "job.yaml", "--live")))
        apply = scenario("-y", "apply", "-f", "job.yaml")
        acts = [action_of(r) for r in apply]
        run = [i for i, a in enumerate(acts) if a == "RunInstances"]
        assert len(run) >= 2, acts
        # create: everything up to the head's RunInstances and its Elastic IPs
        end = run[0] + 1
        while end < len(acts) and acts[end] in ("AllocateAddress", "AssociateAddress"):
            end += 1
        put("ec2", "create", seed_text("create", apply[:end]))
        # create-many: the same set-up, then the workers' RunInstances
        wend = run[1] + 1
        while wend < len(acts) and acts[wend] in ("AllocateAddress", "AssociateAddress"):
            wend += 1
        put("ec2", "create-many", seed_text("create-many", apply[:run[0]] + apply[run[1]:wend]))
        zones = [r for r in apply if action_of(r) == "DescribeInstanceTypeOfferings"]
        put("ec2", "zones", seed_text("zones", zones))
        described = [r for r in apply if action_of(r) == "DescribeInstances"]
        put("ec2", "describe", seed_text("describe", described[-1:]))
        put("ec2", "find", seed_text("find", described[-1:]))
        status = scenario("status", "fz")
        put("ec2", "describe-many",
            seed_text("describe-many", [r for r in status if action_of(r) == "DescribeInstances"]))
        # the head's job ends: it writes its exit status to the console and
        # powers off; describe reads it back (GetConsoleOutput)
        iid = [i["id"] for i in state()["instances"] if i["state"] != "terminated"][0]
        control("/_fake/finish", {"instance_id": iid,
                                  "console": "gpuctl-node-exit: cluster=fz rank=0 status=3\n"})
        ended = scenario("status", "fz")
        put("ec2", "describe-ended",
            seed_text("describe", [r for r in ended if action_of(r) in
                                   ("DescribeInstances", "GetConsoleOutput")]))
        destroy = scenario("-y", "destroy", "fz")
        dacts = [action_of(r) for r in destroy]
        term = [i for i, a in enumerate(dacts) if a == "TerminateInstances"]
        if term:
            put("ec2", "delete", seed_text("delete", destroy[term[0]:term[0] + 1]))
            put("ec2", "cleanup", seed_text("cleanup", destroy[term[-1] + 1:]))
        # error documents: a throttled call answered on the retry, a refusal
        control("/_fake/faults", [{"action": "DescribeRegions", "code": "RequestLimitExceeded",
                                   "times": 1}])
        put("ec2", "check-throttled", seed_text("check", scenario("check", "aws")))
        control("/_fake/faults", [{"action": "DescribeRegions", "code": "AuthFailure"}])
        put("ec2", "check-refused", seed_text("check", scenario("check", "aws")))
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


# ---- aws_config --------------------------------------------------------------

AKID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


def aws_config_seeds():
    clean_seeds("aws_config")
    exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1767225600 + 3600))
    seeds = {
        "default": "\n@@@@ credentials\n[default]\naws_access_key_id = %s\n"
                   "aws_secret_access_key = %s\n@@@@ config\n[default]\nregion = us-west-2\n"
                   % (AKID, SECRET),
        "profile": "dev\n@@@@ credentials\n[dev]\naws_access_key_id = %s\n"
                   "aws_secret_access_key = %s\naws_session_token = tok\n"
                   "@@@@ config\n[profile dev]\nregion = eu-west-1\nendpoint_url = "
                   "http://127.0.0.1:9\n" % (AKID, SECRET),
        "services": "ci\n@@@@ config\n[profile ci]\nregion = ap-south-1\nservices = local\n"
                    "aws_access_key_id = %s\naws_secret_access_key = %s\n"
                    "[services local]\nec2 =\n  endpoint_url = http://localhost:4566\n"
                    % (AKID, SECRET),
        "process": "\n@@@@ config\n[default]\ncredential_process = /usr/bin/get-creds --x\n"
                   "@@@@ process\n" + json.dumps({"Version": 1, "AccessKeyId": AKID,
                                                 "SecretAccessKey": SECRET,
                                                 "SessionToken": "token", "Expiration": exp}),
        "unsupported": "sso\n@@@@ config\n[profile sso]\nsso_session = corp\n"
                       "sso_account_id = 123456789012\n[sso-session corp]\n"
                       "sso_start_url = https://example.awsapps.com/start\n"
                       "[profile assume]\nrole_arn = arn:aws:iam::123456789012:role/x\n"
                       "source_profile = sso\n",
    }
    for name, text in seeds.items():
        put("aws_config", name, text)


if __name__ == "__main__":
    main()
