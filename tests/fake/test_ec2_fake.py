#!/usr/bin/python3
"""Self-test of tests/fake/ec2.py, driven by botocore (Debian's python3-botocore).

Run with /usr/bin/python3 (the interpreter that has botocore).  Every call
goes through a real botocore EC2 client, so this proves two things at once:
the fake accepts requests signed by botocore's SigV4 and botocore's EC2 model
parses the fake's XML.  Raw requests (signed by hand with botocore's
SigV4Auth, or not signed at all) cover what a client library cannot send:
tampered bodies, GET, a wrong Version, unknown parameters, bad base64.
"""
import base64
import calendar
import hashlib
import http.client
import json
import os
import struct
import subprocess
import tempfile
import threading
import time
import unittest
import xml.etree.ElementTree as ET
from urllib.parse import quote, urlencode

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, HTTPClientError

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "ec2.py")
AKID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
PYTORCH = "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.* (Ubuntu 22.04) *"
AMI = {"us-east-1": "ami-01000000000000002", "us-west-2": "ami-02000000000000002",
       "ap-northeast-1": "ami-03000000000000002"}
SESSION = botocore.session.get_session()
NS = "{http://ec2.amazonaws.com/doc/2016-11-15/}"


class Fake:
    """One running tests/fake/ec2.py."""

    def __init__(self, *args):
        fd, self.log_path = tempfile.mkstemp(prefix="ec2-fake-log-")
        os.close(fd)
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", FAKE, "--exit-on-stdin-eof", "--log", self.log_path] + list(args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("PORT "):
            raise RuntimeError("the fake did not print its port: %r" % line)
        self.port = int(line.split()[1])
        self.url = "http://127.0.0.1:%d" % self.port
        self.clients = []

    def stop(self):
        for c in self.clients:
            c.close()
        self.proc.stdin.close()
        self.proc.terminate()
        self.proc.wait()
        self.proc.stdout.close()
        os.unlink(self.log_path)

    def client(self, region="us-east-1", retries=0, key=AKID, secret=SECRET, token=None, timeout=10):
        config = Config(retries={"max_attempts": retries, "mode": "legacy"}, read_timeout=timeout,
                        connect_timeout=5)
        client = SESSION.create_client("ec2", region_name=region, endpoint_url=self.url, aws_access_key_id=key,
                                       aws_secret_access_key=secret, aws_session_token=token, config=config)
        self.clients.append(client)
        return client

    def control(self, method, name, doc=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        body = json.dumps(doc).encode() if doc is not None else None
        conn.request(method, "/_fake/" + name, body=body, headers={"Content-Type": "application/json"} if body else {})
        r = conn.getresponse()
        data = r.read().decode()
        conn.close()
        if r.getheader("Content-Type", "").startswith("application/json"):
            return r.status, json.loads(data)
        return r.status, data

    def log(self):
        with open(self.log_path, encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def raw(self, params, region="us-east-1", method="POST", sign=True, key=AKID, secret=SECRET,
            tamper=None, extra_headers=None, service="ec2", token=None):
        """Send an EC2 request by hand: (status, headers dict, body text)."""
        form = urlencode(params, safe="-_.~", quote_via=quote)
        url = self.url + "/" + ("?" + form if method == "GET" else "")
        headers = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"} if method == "POST" else {}
        headers.update(extra_headers or {})
        req = AWSRequest(method=method, url=url, data=form.encode() if method == "POST" else b"", headers=headers)
        if sign:
            SigV4Auth(Credentials(key, secret, token), service, region).add_auth(req)
        body = req.body if method == "POST" else b""
        if tamper:
            body = tamper(body)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        path = "/" + ("?" + form if method == "GET" else "")
        conn.request(method, path, body=body or None, headers=dict(req.headers.items()))
        r = conn.getresponse()
        data = r.read().decode()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        conn.close()
        return r.status, hdrs, data


def error_of(call, *args, **kwargs):
    """(code, HTTP status) of a call that must fail."""
    try:
        call(*args, **kwargs)
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("the call succeeded")


def ssh_string(b):
    return struct.pack(">I", len(b)) + b


def ed25519_line(seed=1):
    blob = ssh_string(b"ssh-ed25519") + ssh_string(bytes([seed]) * 32)
    return blob, b"ssh-ed25519 " + base64.b64encode(blob) + b" test@fake"


def rsa_line():
    blob = ssh_string(b"ssh-rsa") + ssh_string(b"\x01\x00\x01") + ssh_string(b"\x00" + bytes(range(256)))
    return blob, b"ssh-rsa " + base64.b64encode(blob) + b" rsa@fake"


def instances(resp):
    return [i for r in resp["Reservations"] for i in r["Instances"]]


def all_instances(client, **kwargs):
    out = []
    for page in client.get_paginator("describe_instances").paginate(**kwargs):
        out.extend(instances(page))
    return out


class FakeTest(unittest.TestCase):
    """One fake for the class, reset to the seed before every test."""
    args = ()

    @classmethod
    def setUpClass(cls):
        cls.fake = Fake(*cls.args)
        cls.ec2 = cls.fake.client()

    @classmethod
    def tearDownClass(cls):
        cls.fake.stop()

    def setUp(self):
        self.assertEqual(self.fake.control("DELETE", "faults")[0], 200)
        self.assertEqual(self.fake.control("POST", "reset")[0], 200)

    def state(self):
        return self.fake.control("GET", "state")[1]

    def launch(self, client=None, **kw):
        params = dict(ImageId=AMI[(client or self.ec2).meta.region_name], InstanceType="g5.xlarge",
                      MinCount=1, MaxCount=1)
        params.update(kw)
        return (client or self.ec2).run_instances(**params)

    def assertError(self, code, status, call, *args, **kwargs):
        self.assertEqual((code, status), error_of(call, *args, **kwargs))


class TestWorld(FakeTest):
    def test_regions_and_zones(self):
        names = [r["RegionName"] for r in self.ec2.describe_regions()["Regions"]]
        self.assertEqual(["us-east-1", "us-west-2", "ap-northeast-1"], names)
        r = self.ec2.describe_regions(RegionNames=["us-west-2"])["Regions"]
        self.assertEqual([("us-west-2", "ec2.us-west-2.amazonaws.com", "opt-in-not-required")],
                         [(x["RegionName"], x["Endpoint"], x["OptInStatus"]) for x in r])
        zones = self.fake.client("ap-northeast-1").describe_availability_zones()["AvailabilityZones"]
        self.assertEqual(["ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"], [z["ZoneName"] for z in zones])

    def test_default_vpc_and_subnets(self):
        vpcs = self.ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]
        self.assertEqual([("vpc-01000000000000001", True, "123456789012")],
                         [(v["VpcId"], v["IsDefault"], v["OwnerId"]) for v in vpcs])
        self.assertError("InvalidParameterValue", 400, self.ec2.describe_vpcs,
                         Filters=[{"Name": "isDefault", "Values": ["true"]}])
        west = self.fake.client("us-west-2").describe_vpcs()["Vpcs"]
        self.assertEqual(["vpc-02000000000000001"], [v["VpcId"] for v in west])
        subnets = []
        pages = self.ec2.get_paginator("describe_subnets").paginate(
            Filters=[{"Name": "vpc-id", "Values": ["vpc-01000000000000001"]},
                     {"Name": "default-for-az", "Values": ["true"]}])
        n_pages = 0
        for page in pages:
            n_pages += 1
            subnets.extend(page["Subnets"])
        self.assertEqual(2, n_pages, "4 subnets at --page-size 2")
        self.assertEqual([("subnet-0100000000000000%d" % i, "us-east-1" + z, "10.0.%d.0/24" % (i - 1))
                          for i, z in enumerate("abcd", 1)],
                         [(s["SubnetId"], s["AvailabilityZone"], s["CidrBlock"]) for s in subnets])
        one = self.ec2.describe_subnets(Filters=[{"Name": "availability-zone", "Values": ["us-east-1c"]}])["Subnets"]
        self.assertEqual(["subnet-01000000000000003"], [s["SubnetId"] for s in one])
        self.assertError("InvalidSubnetID.NotFound", 400, self.ec2.describe_subnets, SubnetIds=["subnet-0deadbeef"])

    def test_instance_types(self):
        t = {x["InstanceType"]: x for x in self.ec2.describe_instance_types(
            InstanceTypes=["p5.48xlarge", "p4d.24xlarge", "g5.xlarge", "g4dn.12xlarge"], MaxResults=5)["InstanceTypes"]}
        p5 = t["p5.48xlarge"]
        self.assertEqual(192, p5["VCpuInfo"]["DefaultVCpus"])
        self.assertEqual(2048 * 1024, p5["MemoryInfo"]["SizeInMiB"])
        self.assertEqual([{"Name": "H100", "Manufacturer": "NVIDIA", "Count": 8, "MemoryInfo": {"SizeInMiB": 81920}}],
                         p5["GpuInfo"]["Gpus"])
        self.assertEqual(8 * 81920, p5["GpuInfo"]["TotalGpuMemoryInMiB"])
        self.assertEqual((True, 32, 32), (p5["NetworkInfo"]["EfaSupported"], p5["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"],
                                          p5["NetworkInfo"]["MaximumNetworkCards"]))
        self.assertEqual(list(range(32)), [c["NetworkCardIndex"] for c in p5["NetworkInfo"]["NetworkCards"]])
        self.assertEqual((4, 4), (t["p4d.24xlarge"]["NetworkInfo"]["MaximumNetworkCards"],
                                  t["p4d.24xlarge"]["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"]))
        self.assertEqual((1, 1), (t["g4dn.12xlarge"]["NetworkInfo"]["MaximumNetworkCards"],
                                  t["g4dn.12xlarge"]["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"]))
        g5 = t["g5.xlarge"]["NetworkInfo"]
        self.assertEqual((False, 1, None), (g5["EfaSupported"], g5["MaximumNetworkCards"], g5.get("EfaInfo")))
        self.assertEqual(["on-demand", "spot"], p5["SupportedUsageClasses"])
        self.assertEqual(["cluster", "partition", "spread"], p5["PlacementGroupInfo"]["SupportedStrategies"])
        self.assertEqual(["x86_64"], p5["ProcessorInfo"]["SupportedArchitectures"])
        # wildcard filter + paginator (page size 2)
        names, pages = [], 0
        for page in self.ec2.get_paginator("describe_instance_types").paginate(
                Filters=[{"Name": "instance-type", "Values": ["p5*", "p4d?.24xlarge"]}]):
            pages += 1
            names.extend(x["InstanceType"] for x in page["InstanceTypes"])
        self.assertEqual(["p4de.24xlarge", "p5.48xlarge", "p5.4xlarge", "p5en.48xlarge"], sorted(names))
        self.assertEqual(2, pages)
        self.assertError("InvalidInstanceType", 400, self.ec2.describe_instance_types, InstanceTypes=["p9.huge"])
        self.assertError("InvalidParameterValue", 400, self.ec2.describe_instance_types, MaxResults=101)
        tokyo = self.fake.client("ap-northeast-1")   # the catalog has no p5e row there
        self.assertError("InvalidInstanceType", 400, tokyo.describe_instance_types, InstanceTypes=["p5e.48xlarge"])

    def offered_zones(self, itype, client=None):
        out = []
        for page in (client or self.ec2).get_paginator("describe_instance_type_offerings").paginate(
                LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [itype]}]):
            out.extend(o["Location"] for o in page["InstanceTypeOfferings"])
        return out

    def test_offerings(self):
        self.assertEqual(["us-east-1a", "us-east-1b", "us-east-1c"], self.offered_zones("p5.48xlarge"))
        self.assertEqual(["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"], self.offered_zones("g5.xlarge"))
        self.assertNotIn("us-east-1d", self.offered_zones("p*"))
        self.assertEqual(["ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"],
                         self.offered_zones("p5.48xlarge", self.fake.client("ap-northeast-1")))
        r = self.ec2.describe_instance_type_offerings(Filters=[{"Name": "instance-type", "Values": ["p5en.48xlarge"]}])
        self.assertEqual([("p5en.48xlarge", "region", "us-east-1")],
                         [(o["InstanceType"], o["LocationType"], o["Location"]) for o in r["InstanceTypeOfferings"]])
        r = self.ec2.describe_instance_type_offerings(
            LocationType="availability-zone",
            Filters=[{"Name": "location", "Values": ["us-east-1d"]}, {"Name": "instance-type", "Values": ["p*"]}])
        self.assertEqual([], r["InstanceTypeOfferings"])

    def images(self, region="us-east-1", owners=(), filters=(), include_deprecated=False):
        """Every page of DescribeImages, walked by hand: botocore 1.29's model
        has no MaxResults/NextToken for DescribeImages (real EC2 added them
        later), and the fake paginates it like every Describe*."""
        params = {"Action": "DescribeImages", "Version": "2016-11-15"}
        for n, o in enumerate(owners, 1):
            params["Owner.%d" % n] = o
        for n, (name, values) in enumerate(filters, 1):
            params["Filter.%d.Name" % n] = name
            for m, v in enumerate(values, 1):
                params["Filter.%d.Value.%d" % (n, m)] = v
        if include_deprecated:
            params["IncludeDeprecated"] = "true"
        out, token, pages = [], None, 0
        while True:
            status, _, body = self.fake.raw(dict(params, **({"NextToken": token} if token else {})), region=region)
            self.assertEqual(200, status, body)
            pages += 1
            root = ET.fromstring(body)
            for item in root.find(NS + "imagesSet"):
                out.append({child.tag[len(NS):]: child.text for child in item})
            token = root.findtext(NS + "nextToken")
            if not token:
                self.assertEqual((len(out) + 1) // 2 if out else 1, pages, "pages of 2")
                return out

    def test_images_newest(self):
        filters = [("name", [PYTORCH]), ("state", ["available"]), ("architecture", ["x86_64"])]
        for region, ami in AMI.items():
            imgs = self.images(region, ["amazon"], filters)
            self.assertEqual(3, len(imgs), region)
            newest = max(imgs, key=lambda i: i["creationDate"])
            self.assertEqual(ami, newest["imageId"])
            self.assertNotEqual(ami, imgs[0]["imageId"], "the newest must not come first")
            self.assertEqual("Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.7 (Ubuntu 22.04) 20261118", newest["name"])
            self.assertEqual(("amazon", "898082745236", "/dev/sda1"),
                             (newest["imageOwnerAlias"], newest["imageOwnerId"], newest["rootDeviceName"]))
        # botocore's model parses the same XML (first page)
        page = self.ec2.describe_images(Owners=["amazon"], Filters=[{"Name": "name", "Values": [PYTORCH]}])["Images"]
        self.assertEqual(["ami-01000000000000001", "ami-01000000000000002"], [i["ImageId"] for i in page])
        self.assertEqual(("/dev/sda1", 75, "2026-11-19T07:32:41.000Z"),
                         (page[1]["RootDeviceName"], page[1]["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"],
                          page[1]["CreationDate"]))
        with_dep = self.images("us-east-1", ["amazon"], filters, include_deprecated=True)
        self.assertEqual(4, len(with_dep))
        self.assertIn("2026-06-11T00:00:00.000Z", [i.get("deprecationTime") for i in with_dep])
        anyone = self.images("us-east-1", (), filters)
        newest = max(anyone, key=lambda i: i["creationDate"])
        self.assertEqual(("ami-01000000000000006", "210987654321", None),
                         (newest["imageId"], newest["imageOwnerId"], newest.get("imageOwnerAlias")))
        arm = self.images("us-east-1", ["amazon"], [("architecture", ["arm64"])])
        self.assertEqual(["Deep Learning ARM64 OSS Nvidia Driver AMI GPU PyTorch 2.7 (Ubuntu 22.04) 20261125"],
                         [i["name"] for i in arm])
        base = self.images("us-east-1", ["amazon"], [("name", [
            "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 2026112?"])])
        self.assertEqual(["ami-01000000000000008"], [i["imageId"] for i in base])
        by_id = self.ec2.describe_images(ImageIds=["ami-01000000000000004"])["Images"]
        self.assertEqual(1, len(by_id), "a deprecated image asked by id is answered")
        status, _, body = self.fake.raw({"Action": "DescribeImages", "Version": "2016-11-15",
                                         "ImageId.1": AMI["us-east-1"], "MaxResults": "5"})
        self.assertEqual((400, "InvalidParameterCombination"), (status, ET.fromstring(body).findtext("Errors/Error/Code")))
        self.assertError("InvalidAMIID.NotFound", 400, self.ec2.describe_images, ImageIds=["ami-0123456789abcdef0"])

    def test_spot_price_history(self):
        prices = []
        for page in self.ec2.get_paginator("describe_spot_price_history").paginate(
                InstanceTypes=["p5.48xlarge"], ProductDescriptions=["Linux/UNIX"],
                StartTime="2026-11-29T00:00:00Z"):
            prices.extend(page["SpotPriceHistory"])
        self.assertEqual([("us-east-1a", "17.628900"), ("us-east-1b", "17.805189"), ("us-east-1c", "17.981478")],
                         [(p["AvailabilityZone"], p["SpotPrice"]) for p in prices])
        self.assertEqual({("Linux/UNIX", "2026-11-29T00:00:00+00:00")},
                         {(p["ProductDescription"], p["Timestamp"].isoformat()) for p in prices})
        d = self.ec2.describe_spot_price_history(InstanceTypes=["g5.xlarge"], AvailabilityZone="us-east-1d")
        self.assertEqual(["0.408910"], [p["SpotPrice"] for p in d["SpotPriceHistory"]])
        old = self.ec2.describe_spot_price_history(InstanceTypes=["g5.xlarge"], EndTime="2026-01-01T00:00:00Z")
        self.assertEqual([], old["SpotPriceHistory"])
        none = self.ec2.describe_spot_price_history(InstanceTypes=["p5.4xlarge"])
        self.assertEqual([], none["SpotPriceHistory"], "no catalog spot price in us-east-1")
        win = self.ec2.describe_spot_price_history(InstanceTypes=["g5.xlarge"], ProductDescriptions=["Windows"])
        self.assertEqual([], win["SpotPriceHistory"])


class TestResources(FakeTest):
    def test_key_pairs(self):
        blob, line = ed25519_line()
        r = self.ec2.import_key_pair(KeyName="gpuctl-a", PublicKeyMaterial=line,
                                     TagSpecifications=[{"ResourceType": "key-pair",
                                                         "Tags": [{"Key": "gpuctl:owner", "Value": "t"}]}])
        fp = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
        self.assertEqual(("gpuctl-a", fp), (r["KeyName"], r["KeyFingerprint"]))
        self.assertTrue(r["KeyPairId"].startswith("key-0"))
        rblob, rline = rsa_line()
        r2 = self.ec2.import_key_pair(KeyName="gpuctl-rsa", PublicKeyMaterial=rline)
        self.assertEqual(":".join("%02x" % b for b in hashlib.md5(rblob).digest()), r2["KeyFingerprint"])
        self.assertError("InvalidKeyPair.Duplicate", 400, self.ec2.import_key_pair, KeyName="gpuctl-a",
                         PublicKeyMaterial=line)
        self.assertError("InvalidKeyPair.Format", 400, self.ec2.import_key_pair, KeyName="bad",
                         PublicKeyMaterial=b"ssh-dss AAAAB3NzaC1kc3M= x")
        self.assertError("InvalidKeyPair.Format", 400, self.ec2.import_key_pair, KeyName="bad",
                         PublicKeyMaterial=b"not a key at all")
        status, _, body = self.fake.raw({"Action": "ImportKeyPair", "Version": "2016-11-15", "KeyName": "bad",
                                         "PublicKeyMaterial": "***not base64***"})
        self.assertEqual((400, "InvalidKeyPair.Format"), (status, ET.fromstring(body).find("Errors/Error/Code").text))
        keys = self.ec2.describe_key_pairs(KeyNames=["gpuctl-a"])["KeyPairs"]
        self.assertEqual([("gpuctl-a", fp, "ed25519", [{"Key": "gpuctl:owner", "Value": "t"}])],
                         [(k["KeyName"], k["KeyFingerprint"], k["KeyType"], k["Tags"]) for k in keys])
        tagged = self.ec2.describe_key_pairs(Filters=[{"Name": "tag:gpuctl:owner", "Values": ["t"]}])["KeyPairs"]
        self.assertEqual(["gpuctl-a"], [k["KeyName"] for k in tagged])
        self.assertError("InvalidKeyPair.NotFound", 400, self.ec2.describe_key_pairs, KeyNames=["nope"])
        self.assertEqual([], self.fake.client("us-west-2").describe_key_pairs()["KeyPairs"], "key pairs are regional")
        self.ec2.delete_key_pair(KeyName="gpuctl-a")
        self.ec2.delete_key_pair(KeyName="gpuctl-a")   # idempotent
        self.assertError("InvalidKeyPair.NotFound", 400, self.ec2.describe_key_pairs, KeyNames=["gpuctl-a"])

    def test_security_groups(self):
        tags = [{"ResourceType": "security-group", "Tags": [{"Key": "gpuctl:cluster", "Value": "demo"}]}]
        gid = self.ec2.create_security_group(GroupName="gpuctl-demo", Description="gpuctl EFA",
                                             VpcId="vpc-01000000000000001", TagSpecifications=tags)["GroupId"]
        self.assertTrue(gid.startswith("sg-0"))
        self.assertError("InvalidGroup.Duplicate", 400, self.ec2.create_security_group, GroupName="gpuctl-demo",
                         Description="again", VpcId="vpc-01000000000000001")
        self.assertError("MissingParameter", 400, self.fake.client().create_security_group, GroupName="x", Description="")
        self_rule = {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": gid}]}
        ssh = {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "203.0.113.7/32"}]}
        r = self.ec2.authorize_security_group_ingress(GroupId=gid, IpPermissions=[self_rule, ssh])
        self.assertTrue(r["Return"])
        self.assertEqual(2, len(r["SecurityGroupRules"]))
        self.ec2.authorize_security_group_egress(GroupId=gid, IpPermissions=[self_rule])
        self.assertError("InvalidPermission.Duplicate", 400, self.ec2.authorize_security_group_ingress,
                         GroupId=gid, IpPermissions=[ssh])
        self.assertError("InvalidPermission.Duplicate", 400, self.ec2.authorize_security_group_egress, GroupId=gid,
                         IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}])
        self.assertError("InvalidGroup.NotFound", 400, self.ec2.authorize_security_group_ingress,
                         GroupId="sg-0123456789abcdef0", IpPermissions=[ssh])
        self.assertError("InvalidParameterValue", 400, self.ec2.authorize_security_group_ingress, GroupId=gid,
                         IpPermissions=[{"IpProtocol": "tcp", "IpRanges": [{"CidrIp": "10.0.0.0/8"}]}])
        found = self.ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["gpuctl-*"]},
                                                           {"Name": "vpc-id", "Values": ["vpc-01000000000000001"]},
                                                           {"Name": "tag:gpuctl:cluster", "Values": ["demo"]}])
        (g,) = found["SecurityGroups"]
        self.assertEqual((gid, "gpuctl-demo", "gpuctl EFA"), (g["GroupId"], g["GroupName"], g["Description"]))
        ingress = {(p["IpProtocol"], p.get("FromPort"), p.get("ToPort")): p for p in g["IpPermissions"]}
        self.assertEqual([gid], [x["GroupId"] for x in ingress[("-1", None, None)]["UserIdGroupPairs"]])
        self.assertEqual(["203.0.113.7/32"], [x["CidrIp"] for x in ingress[("tcp", 22, 22)]["IpRanges"]])
        egress = g["IpPermissionsEgress"]
        self.assertEqual([("-1", ["0.0.0.0/0"], [gid])],
                         [(p["IpProtocol"], [x["CidrIp"] for x in p["IpRanges"]],
                           [x["GroupId"] for x in p["UserIdGroupPairs"]]) for p in egress])
        # used by an instance -> DependencyViolation until it is terminated
        iid = self.launch(SecurityGroupIds=[gid])["Instances"][0]["InstanceId"]
        self.assertError("DependencyViolation", 400, self.ec2.delete_security_group, GroupId=gid)
        self.ec2.terminate_instances(InstanceIds=[iid])
        self.assertError("DependencyViolation", 400, self.ec2.delete_security_group, GroupId=gid)  # shutting-down
        self.ec2.describe_instances(InstanceIds=[iid])
        self.ec2.delete_security_group(GroupId=gid)
        self.assertError("InvalidGroup.NotFound", 400, self.ec2.describe_security_groups, GroupIds=[gid])
        self.assertError("CannotDelete", 400, self.ec2.delete_security_group, GroupId="sg-01000000000000001")

    def test_legacy_authorize_form(self):
        gid = self.ec2.create_security_group(GroupName="old", Description="old")["GroupId"]
        self.ec2.authorize_security_group_ingress(GroupId=gid, IpProtocol="tcp", FromPort=22, ToPort=22,
                                                  CidrIp="198.51.100.0/24")
        (g,) = self.ec2.describe_security_groups(GroupIds=[gid])["SecurityGroups"]
        self.assertEqual([("tcp", 22, 22, ["198.51.100.0/24"])],
                         [(p["IpProtocol"], p["FromPort"], p["ToPort"], [r["CidrIp"] for r in p["IpRanges"]])
                          for p in g["IpPermissions"]])

    def test_security_group_referenced(self):
        a = self.ec2.create_security_group(GroupName="a", Description="a")["GroupId"]
        b = self.ec2.create_security_group(GroupName="b", Description="b")["GroupId"]
        self.ec2.authorize_security_group_ingress(GroupId=b, IpPermissions=[
            {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": a}]}])
        self.assertError("DependencyViolation", 400, self.ec2.delete_security_group, GroupId=a)
        self.ec2.delete_security_group(GroupId=b)
        self.ec2.delete_security_group(GroupId=a)

    def test_placement_groups(self):
        tags = [{"ResourceType": "placement-group", "Tags": [{"Key": "gpuctl:cluster", "Value": "demo"}]}]
        r = self.ec2.create_placement_group(GroupName="gpuctl-demo-pg", Strategy="cluster", TagSpecifications=tags)
        self.assertEqual(("gpuctl-demo-pg", "cluster", "available"),
                         (r["PlacementGroup"]["GroupName"], r["PlacementGroup"]["Strategy"], r["PlacementGroup"]["State"]))
        self.assertError("InvalidPlacementGroup.Duplicate", 400, self.ec2.create_placement_group,
                         GroupName="gpuctl-demo-pg", Strategy="cluster")
        self.ec2.create_placement_group(GroupName="spread-one", Strategy="spread")
        got = self.ec2.describe_placement_groups(GroupNames=["gpuctl-demo-pg"])["PlacementGroups"]
        self.assertEqual([("gpuctl-demo-pg", "cluster", [{"Key": "gpuctl:cluster", "Value": "demo"}])],
                         [(g["GroupName"], g["Strategy"], g["Tags"]) for g in got])
        got = self.ec2.describe_placement_groups(Filters=[{"Name": "strategy", "Values": ["spread"]}])["PlacementGroups"]
        self.assertEqual(["spread-one"], [g["GroupName"] for g in got])
        self.assertError("InvalidPlacementGroup.Unknown", 400, self.ec2.describe_placement_groups, GroupNames=["x"])
        placement = {"GroupName": "gpuctl-demo-pg", "AvailabilityZone": "us-east-1b"}
        iid = self.launch(InstanceType="p4d.24xlarge", Placement=placement)["Instances"][0]["InstanceId"]
        self.assertError("InvalidParameterCombination", 400, self.launch, InstanceType="p4d.24xlarge",
                         Placement={"GroupName": "gpuctl-demo-pg", "AvailabilityZone": "us-east-1a"})
        self.launch(InstanceType="p4d.24xlarge", Placement={"GroupName": "gpuctl-demo-pg"},
                    SubnetId="subnet-01000000000000002")
        self.assertError("InvalidPlacementGroup.Unknown", 400, self.launch, Placement={"GroupName": "nope"})
        self.assertError("InvalidPlacementGroup.InUse", 400, self.ec2.delete_placement_group, GroupName="gpuctl-demo-pg")
        ids = [i["InstanceId"] for i in all_instances(self.ec2, Filters=[
            {"Name": "placement-group-name", "Values": ["gpuctl-demo-pg"]}])]
        self.assertEqual(2, len(ids))
        self.assertIn(iid, ids)
        self.ec2.terminate_instances(InstanceIds=ids)
        self.assertError("InvalidPlacementGroup.InUse", 400, self.ec2.delete_placement_group, GroupName="gpuctl-demo-pg")
        states = {i["State"]["Name"] for i in all_instances(self.ec2, InstanceIds=ids)}
        self.assertEqual({"terminated"}, states)
        # empty again: the cluster group may move to another zone
        self.launch(InstanceType="p4d.24xlarge", Placement={"GroupName": "gpuctl-demo-pg", "AvailabilityZone": "us-east-1a"})
        self.fake.control("POST", "advance")
        for i in all_instances(self.ec2, Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]):
            self.ec2.terminate_instances(InstanceIds=[i["InstanceId"]])
        self.fake.control("POST", "advance")
        self.ec2.delete_placement_group(GroupName="gpuctl-demo-pg")
        self.assertError("InvalidPlacementGroup.Unknown", 400, self.ec2.delete_placement_group, GroupName="gpuctl-demo-pg")


class TestRunInstances(FakeTest):
    def setup_cluster(self):
        _, line = ed25519_line()
        self.ec2.import_key_pair(KeyName="gpuctl-demo", PublicKeyMaterial=line)
        sg = self.ec2.create_security_group(GroupName="gpuctl-demo-efa", Description="efa")["GroupId"]
        self.ec2.create_placement_group(GroupName="gpuctl-demo-pg", Strategy="cluster")
        return sg

    def efa_params(self, sg, token="gpuctl-demo-7f3c9a10", count=2):
        tags = [{"Key": "gpuctl:cluster", "Value": "demo"}, {"Key": "Name", "Value": "demo-node"}]
        nics = [{"DeviceIndex": 0, "NetworkCardIndex": 0, "InterfaceType": "efa", "SubnetId": "subnet-01000000000000002",
                 "Groups": [sg], "DeleteOnTermination": True}]
        nics += [{"DeviceIndex": 1, "NetworkCardIndex": c, "InterfaceType": "efa-only" if c == 3 else "efa",
                  "SubnetId": "subnet-01000000000000002", "Groups": [sg], "DeleteOnTermination": True}
                 for c in (1, 2, 3)]
        return dict(
            ImageId=AMI["us-east-1"], InstanceType="p4d.24xlarge", MinCount=count, MaxCount=count,
            KeyName="gpuctl-demo", ClientToken=token, UserData="#!/bin/bash\necho 'gpuctl node' + = /\n",
            Placement={"GroupName": "gpuctl-demo-pg"}, NetworkInterfaces=nics,
            BlockDeviceMappings=[{"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": 500, "VolumeType": "gp3", "Iops": 6000,
                                                                    "Throughput": 500, "DeleteOnTermination": True}}],
            InstanceMarketOptions={"MarketType": "spot", "SpotOptions": {"SpotInstanceType": "one-time",
                                                                         "InstanceInterruptionBehavior": "terminate"}},
            InstanceInitiatedShutdownBehavior="terminate",
            MetadataOptions={"HttpTokens": "required", "HttpEndpoint": "enabled", "HttpPutResponseHopLimit": 2},
            TagSpecifications=[{"ResourceType": rt, "Tags": tags}
                               for rt in ("instance", "volume", "network-interface", "spot-instances-request")])

    def test_efa_spot_launch(self):
        sg = self.setup_cluster()
        r = self.ec2.run_instances(**self.efa_params(sg))
        insts = r["Instances"]
        self.assertEqual(["i-00000000000000001", "i-00000000000000002"], [i["InstanceId"] for i in insts])
        self.assertEqual([0, 1], [i["AmiLaunchIndex"] for i in insts])
        a = insts[0]
        self.assertEqual(("pending", 0), (a["State"]["Name"], a["State"]["Code"]))
        self.assertEqual(("us-east-1b", "gpuctl-demo-pg"), (a["Placement"]["AvailabilityZone"], a["Placement"]["GroupName"]))
        self.assertEqual(("spot", True), (a["InstanceLifecycle"], a["SpotInstanceRequestId"].startswith("sir-")))
        self.assertEqual(("10.0.1.1", "10.0.1.2"), (a["PrivateIpAddress"], insts[1]["PrivateIpAddress"]))
        self.assertNotIn("PublicIpAddress", a)
        self.assertEqual({"gpuctl:cluster": "demo", "Name": "demo-node"}, {t["Key"]: t["Value"] for t in a["Tags"]})
        self.assertEqual([(0, 0, "efa"), (1, 1, "efa"), (2, 1, "efa"), (3, 1, "efa-only")],
                         [(n["Attachment"]["NetworkCardIndex"], n["Attachment"]["DeviceIndex"], n["InterfaceType"])
                          for n in a["NetworkInterfaces"]])
        self.assertEqual(("required", 2), (a["MetadataOptions"]["HttpTokens"], a["MetadataOptions"]["HttpPutResponseHopLimit"]))
        self.assertEqual(("gpuctl-demo", "gpuctl-demo-7f3c9a10", "subnet-01000000000000002", "vpc-01000000000000001"),
                         (a["KeyName"], a["ClientToken"], a["SubnetId"], a["VpcId"]))
        self.assertEqual([sg], [g["GroupId"] for g in a["SecurityGroups"]])
        st = self.state()
        s0 = st["instances"][0]
        self.assertEqual("#!/bin/bash\necho 'gpuctl node' + = /\n", s0["user_data"])
        self.assertEqual(("us-east-1", "us-east-1b", "pending", "p4d.24xlarge", "spot", 0, "gpuctl-demo-7f3c9a10"),
                         (s0["region"], s0["zone"], s0["state"], s0["type"], s0["lifecycle"], s0["launch_index"],
                          s0["client_token"]))
        self.assertEqual({"instance", "volume", "network-interface", "spot-instances-request"},
                         set(s0["tag_specifications"]))
        self.assertEqual("us-east-1b", [g for g in st["placement_groups"] if g["name"] == "gpuctl-demo-pg"][0]["zone"])
        log = [e for e in self.fake.log() if e["action"] == "RunInstances"][-1]
        self.assertEqual("#!/bin/bash\necho 'gpuctl node' + = /\n", log["params"]["UserData"])
        self.assertEqual(("efa-only", "3"), (log["params"]["NetworkInterface.4.InterfaceType"],
                                             log["params"]["NetworkInterface.4.NetworkCardIndex"]))

    def test_client_token(self):
        sg = self.setup_cluster()
        first = self.ec2.run_instances(**self.efa_params(sg))
        again = self.ec2.run_instances(**self.efa_params(sg))
        self.assertEqual(first["ReservationId"], again["ReservationId"])
        self.assertEqual([i["InstanceId"] for i in first["Instances"]], [i["InstanceId"] for i in again["Instances"]])
        self.assertEqual(2, len(self.state()["instances"]))
        changed = self.efa_params(sg, count=3)
        self.assertError("IdempotentParameterMismatch", 400, self.ec2.run_instances, **changed)
        self.assertEqual(2, len(self.state()["instances"]))
        self.ec2.run_instances(**self.efa_params(sg, token="another"))
        self.assertEqual(4, len(self.state()["instances"]))
        # tokens are per region
        west = self.fake.client("us-west-2")
        west.run_instances(ImageId=AMI["us-west-2"], InstanceType="g5.xlarge", MinCount=1, MaxCount=1,
                           ClientToken="gpuctl-demo-7f3c9a10")
        self.assertEqual(5, len(self.state()["instances"]))
        self.assertError("InvalidParameterValue", 400, self.launch, ClientToken="x" * 65)

    def test_zone_choice_and_public_ip(self):
        a = self.launch(InstanceType="p5.48xlarge")["Instances"][0]
        self.assertEqual("us-east-1a", a["Placement"]["AvailabilityZone"])
        d = self.launch(SubnetId="subnet-01000000000000004")["Instances"][0]
        self.assertEqual(("us-east-1d", "10.0.3.2"), (d["Placement"]["AvailabilityZone"], d["PrivateIpAddress"]))
        c = self.launch(Placement={"AvailabilityZone": "us-east-1c"})["Instances"][0]
        self.assertEqual(("us-east-1c", "subnet-01000000000000003"), (c["Placement"]["AvailabilityZone"], c["SubnetId"]))
        self.assertNotIn("PublicIpAddress", a, "no public IP while pending")
        self.fake.control("POST", "advance")
        running = {i["InstanceId"]: i for i in all_instances(self.ec2)}
        self.assertEqual("198.51.100.1", running[a["InstanceId"]]["PublicIpAddress"])
        private = self.launch(NetworkInterfaces=[{"DeviceIndex": 0, "AssociatePublicIpAddress": False}])
        self.fake.control("POST", "advance")
        (p,) = all_instances(self.ec2, InstanceIds=[private["Instances"][0]["InstanceId"]])
        self.assertNotIn("PublicIpAddress", p)
        west = self.fake.client("ap-northeast-1")
        w = self.launch(client=west, InstanceType="p5.48xlarge")["Instances"][0]
        self.assertEqual(("ap-northeast-1a", "10.2.0.5"), (w["Placement"]["AvailabilityZone"], w["PrivateIpAddress"]))

    def test_validation(self):
        sg = self.setup_cluster()
        L = self.launch
        E = self.assertError
        E("InvalidAMIID.NotFound", 400, L, ImageId="ami-0123456789abcdef0")
        E("InvalidAMIID.NotFound", 400, L, ImageId=AMI["us-west-2"])       # another region's AMI
        E("InvalidAMIID.Malformed", 400, L, ImageId="image-1")
        E("InvalidParameterValue", 400, L, ImageId="ami-01000000000000005")  # arm64 AMI, x86_64 type
        E("InvalidParameterValue", 400, L, InstanceType="p9.huge")
        E("Unsupported", 400, L, InstanceType="p5.48xlarge", Placement={"AvailabilityZone": "us-east-1d"})
        E("Unsupported", 400, L, InstanceType="p5.48xlarge", SubnetId="subnet-01000000000000004")
        E("Unsupported", 400, self.fake.client("ap-northeast-1").run_instances, ImageId=AMI["ap-northeast-1"],
          InstanceType="p5e.48xlarge", MinCount=1, MaxCount=1)
        E("InvalidParameterValue", 400, L, MinCount=3, MaxCount=2)
        E("InvalidKeyPair.NotFound", 400, L, KeyName="nope")
        E("InvalidGroup.NotFound", 400, L, SecurityGroupIds=["sg-0123456789abcdef0"])
        E("InvalidSubnetID.NotFound", 400, L, SubnetId="subnet-0123456789abcdef0")
        E("InvalidParameterValue", 400, L, SubnetId="subnet-01000000000000001", Placement={"AvailabilityZone": "us-east-1b"})
        E("InvalidParameterValue", 400, L, Placement={"AvailabilityZone": "us-east-1z"})
        nic = {"DeviceIndex": 0, "SubnetId": "subnet-01000000000000001", "Groups": [sg]}
        E("InvalidParameterCombination", 400, L, SecurityGroupIds=[sg], NetworkInterfaces=[nic])
        E("InvalidParameterCombination", 400, L, SubnetId="subnet-01000000000000001", NetworkInterfaces=[nic])
        two = [dict(nic, AssociatePublicIpAddress=True), dict(nic, DeviceIndex=1, NetworkCardIndex=1, InterfaceType="efa")]
        E("InvalidParameterCombination", 400, L, InstanceType="p4d.24xlarge", NetworkInterfaces=two)
        E("InvalidParameterValue", 400, L, InstanceType="g5.xlarge", NetworkInterfaces=[dict(nic, InterfaceType="efa")])
        five = [dict(nic, InterfaceType="efa")] + [dict(nic, DeviceIndex=1 + k // 4, NetworkCardIndex=1 + k % 3,
                                                        InterfaceType="efa") for k in range(4)]
        E("InvalidParameterValue", 400, L, InstanceType="p4d.24xlarge", NetworkInterfaces=five)
        E("InvalidParameterValue", 400, L, InstanceType="p4d.24xlarge",
          NetworkInterfaces=[dict(nic, InterfaceType="efa"), dict(nic, DeviceIndex=1, NetworkCardIndex=4, InterfaceType="efa")])
        E("InvalidParameterValue", 400, L, InstanceType="p4d.24xlarge",
          NetworkInterfaces=[dict(nic, DeviceIndex=1, InterfaceType="efa")])   # no primary NIC
        E("InvalidParameterValue", 400, L, UserData="x" * 16385)
        self.assertEqual(1, len(L(UserData="x" * 16384)["Instances"]))
        E("InvalidParameterCombination", 400, L, BlockDeviceMappings=[{"DeviceName": "/dev/sda1", "Ebs": {"VolumeType": "io2"}}])
        E("InvalidParameterCombination", 400, L, BlockDeviceMappings=[
            {"DeviceName": "/dev/sda1", "Ebs": {"VolumeType": "gp2", "Iops": 3000}}])
        E("InvalidParameterValue", 400, L, BlockDeviceMappings=[{"DeviceName": "/dev/sda1", "Ebs": {"VolumeType": "fast"}}])
        E("InvalidBlockDeviceMapping", 400, L, BlockDeviceMappings=[{"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": 10}}])
        self.assertEqual(1, len(L(BlockDeviceMappings=[{"DeviceName": "/dev/sda1",
                                                        "Ebs": {"VolumeType": "io2", "Iops": 5000}}])["Instances"]))
        E("InvalidParameterCombination", 400, L, InstanceMarketOptions={
            "MarketType": "spot", "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "stop"}})
        E("SpotMaxPriceTooLow", 400, L, InstanceMarketOptions={"MarketType": "spot", "SpotOptions": {"MaxPrice": "0.01"}})
        E("InvalidParameterValue", 400, L, MetadataOptions={"HttpTokens": "sometimes"})
        E("InvalidParameterValue", 400, L, TagSpecifications=[{"ResourceType": "placement-group",
                                                              "Tags": [{"Key": "a", "Value": "b"}]}])
        # EC2's tag limits: 50 a resource, key 128, value 256
        many = [{"Key": "k%d" % i, "Value": "v"} for i in range(51)]
        E("TagLimitExceeded", 400, L, TagSpecifications=[{"ResourceType": "instance", "Tags": many}])
        E("InvalidParameterValue", 400, L, TagSpecifications=[{"ResourceType": "instance",
                                                              "Tags": [{"Key": "k" * 129, "Value": "v"}]}])
        E("InvalidParameterValue", 400, L, TagSpecifications=[{"ResourceType": "instance",
                                                              "Tags": [{"Key": "k", "Value": "v" * 257}]}])
        E("DryRunOperation", 412, L, DryRun=True)
        status, _, body = self.fake.raw({"Action": "RunInstances", "Version": "2016-11-15", "ImageId": AMI["us-east-1"],
                                         "InstanceType": "g5.xlarge", "MinCount": "1", "MaxCount": "1",
                                         "UserData": "not base64!"})
        self.assertEqual((400, "Invalid BASE64 encoding of user data."),
                         (status, ET.fromstring(body).find("Errors/Error/Message").text))
        status, _, body = self.fake.raw({"Action": "RunInstances", "Version": "2016-11-15", "ImageId": AMI["us-east-1"],
                                         "InstanceType": "g5.xlarge", "MinCount": "1", "MaxCount": "1",
                                         "NetworkInterface.1.DeviceIndex": "0", "NetworkInterface.1.SubnetID": "x"})
        self.assertEqual((400, "UnknownParameter"), (status, ET.fromstring(body).find("Errors/Error/Code").text))
        self.assertEqual(2, len(self.state()["instances"]), "no failed call launched anything")
        # 50 tags are within EC2's limit
        self.assertEqual(50, len(L(TagSpecifications=[{"ResourceType": "instance", "Tags": many[:50]}])
                                 ["Instances"][0]["Tags"]))


class TestElasticIps(FakeTest):
    """Elastic IPs on multi-card EFA instances: what EC2 refuses while an
    instance is pending, on an efa-only interface, beyond the quota."""

    def efa_node(self, count=1):
        """p4d.24xlarge as the EC2 User Guide recommends for several network
        cards: ENA primary, efa-only on card 0 device 1 and on device 0 of
        the other cards."""
        nics = [{"DeviceIndex": 0, "NetworkCardIndex": 0, "InterfaceType": "interface"},
                {"DeviceIndex": 1, "NetworkCardIndex": 0, "InterfaceType": "efa-only"}]
        nics += [{"DeviceIndex": 0, "NetworkCardIndex": c, "InterfaceType": "efa-only"} for c in (1, 2, 3)]
        for n in nics:
            n.update(SubnetId="subnet-01000000000000001", DeleteOnTermination=True)
        return self.launch(InstanceType="p4d.24xlarge", MinCount=count, MaxCount=count,
                           NetworkInterfaces=nics)["Instances"]

    def allocate(self, client=None, uid="u1"):
        return (client or self.ec2).allocate_address(Domain="vpc", TagSpecifications=[
            {"ResourceType": "elastic-ip", "Tags": [{"Key": "gpuctl:cluster-uid", "Value": uid}]}])

    def message_of(self, call, **kw):
        try:
            call(**kw)
        except ClientError as e:
            return e.response["Error"]["Code"] + ": " + e.response["Error"]["Message"]
        raise AssertionError("the call succeeded")

    def test_efa_only_layout(self):
        (a,) = self.efa_node()
        self.assertEqual([(0, 0, "interface", "10.0.0.1"), (0, 1, "efa-only", None), (1, 0, "efa-only", None),
                          (2, 0, "efa-only", None), (3, 0, "efa-only", None)],
                         [(n["Attachment"]["NetworkCardIndex"], n["Attachment"]["DeviceIndex"], n["InterfaceType"],
                           n.get("PrivateIpAddress")) for n in a["NetworkInterfaces"]])
        self.assertEqual("10.0.0.1", a["PrivateIpAddress"])
        nic = {"SubnetId": "subnet-01000000000000001"}
        self.assertEqual("InvalidParameterValue: The primary network interface cannot be of type efa-only.",
                         self.message_of(self.launch, InstanceType="p4d.24xlarge", NetworkInterfaces=[
                             dict(nic, DeviceIndex=0, NetworkCardIndex=0, InterfaceType="efa-only"),
                             dict(nic, DeviceIndex=0, NetworkCardIndex=1, InterfaceType="efa-only")]))
        self.assertEqual("InvalidParameterCombination: The associatePublicIPAddress parameter cannot be specified "
                         "when launching with multiple network interfaces.",
                         self.message_of(self.launch, InstanceType="p4d.24xlarge", NetworkInterfaces=[
                             dict(nic, DeviceIndex=0, NetworkCardIndex=0, AssociatePublicIpAddress=True),
                             dict(nic, DeviceIndex=1, NetworkCardIndex=0, InterfaceType="efa-only")]))
        self.assertEqual(1, len(self.state()["instances"]))

    def test_account_attributes(self):
        attrs = self.ec2.describe_account_attributes(AttributeNames=["vpc-max-elastic-ips"])["AccountAttributes"]
        self.assertEqual([("vpc-max-elastic-ips", ["5"])],
                         [(a["AttributeName"], [v["AttributeValue"] for v in a["AttributeValues"]]) for a in attrs])
        every = self.ec2.describe_account_attributes()["AccountAttributes"]
        self.assertEqual(["supported-platforms", "default-vpc", "max-instances",
                          "vpc-max-security-groups-per-interface", "max-elastic-ips", "vpc-max-elastic-ips"],
                         [a["AttributeName"] for a in every])
        self.assertError("InvalidParameterValue", 400, self.ec2.describe_account_attributes,
                         AttributeNames=["max-unicorns"])
        log = [e for e in self.fake.log() if e["action"] == "DescribeAccountAttributes"][0]
        self.assertEqual({"AttributeName.1": "vpc-max-elastic-ips"}, log["params"])

    def test_quota(self):
        ids = [self.allocate()["AllocationId"] for _ in range(5)]
        self.assertEqual(["eipalloc-0%016x" % n for n in range(1, 6)], ids)
        self.assertEqual("AddressLimitExceeded: The maximum number of addresses has been reached.",
                         self.message_of(self.allocate))
        self.assertEqual(5, len(self.state()["addresses"]))
        # per region: us-west-2 has its own five
        self.allocate(self.fake.client("us-west-2"))
        self.ec2.release_address(AllocationId=ids[0])
        self.allocate()
        self.assertEqual(6, len(self.state()["addresses"]))

    def test_pending_refused_running_associated(self):
        (a,) = self.efa_node()
        iid = a["InstanceId"]
        primary = a["NetworkInterfaces"][0]["NetworkInterfaceId"]
        efa_only = a["NetworkInterfaces"][1]["NetworkInterfaceId"]
        alloc = self.allocate()
        self.assertEqual(("203.0.113.101", "vpc", {"gpuctl:cluster-uid": "u1"}),
                         (alloc["PublicIp"], alloc["Domain"], self.state()["addresses"][0]["tags"]))
        aid = alloc["AllocationId"]
        # pending: refused both ways
        self.assertEqual("InvalidInstanceID: The pending instance '%s' is not in a valid state for this operation."
                         % iid, self.message_of(self.ec2.associate_address, AllocationId=aid, InstanceId=iid))
        self.assertEqual("IncorrectInstanceState: The pending-instance-creation instance to which '%s' is attached "
                         "is not in a valid state for this operation" % primary,
                         self.message_of(self.ec2.associate_address, AllocationId=aid, NetworkInterfaceId=primary,
                                         AllowReassociation=False))
        self.assertEqual([None], [x["association_id"] for x in self.state()["addresses"]])
        # two polls: pending, then running
        all_instances(self.ec2)
        self.assertEqual(["running"], [i["State"]["Name"] for i in all_instances(self.ec2)])
        self.assertEqual("InvalidInstanceID: There are multiple interfaces attached to instance '%s'. Please "
                         "specify an interface ID for the operation instead." % iid,
                         self.message_of(self.ec2.associate_address, AllocationId=aid, InstanceId=iid))
        self.assertEqual("InvalidParameterValue: You can't assign an IP address to an EFA-only network interface "
                         "(%s)." % efa_only,
                         self.message_of(self.ec2.associate_address, AllocationId=aid, NetworkInterfaceId=efa_only))
        assoc = self.ec2.associate_address(AllocationId=aid, NetworkInterfaceId=primary,
                                           AllowReassociation=False)["AssociationId"]
        self.assertEqual("eipassoc-00000000000000001", assoc)
        (r,) = all_instances(self.ec2)
        self.assertEqual("203.0.113.101", r["PublicIpAddress"])
        self.assertEqual({"PublicIp": "203.0.113.101", "PublicDnsName": "ec2-203-0-113-101.compute-1.amazonaws.com",
                          "IpOwnerId": "123456789012"}, r["NetworkInterfaces"][0]["Association"])
        (d,) = self.ec2.describe_addresses(Filters=[{"Name": "tag:gpuctl:cluster-uid", "Values": ["u1"]}])["Addresses"]
        self.assertEqual((iid, primary, "10.0.0.1", assoc, "203.0.113.101"),
                         (d["InstanceId"], d["NetworkInterfaceId"], d["PrivateIpAddress"], d["AssociationId"],
                          d["PublicIp"]))
        # the same address elsewhere without reassociation: refused
        (b,) = self.efa_node()
        self.fake.control("POST", "advance")
        other = b["NetworkInterfaces"][0]["NetworkInterfaceId"]
        self.assertEqual("Resource.AlreadyAssociated", error_of(
            self.ec2.associate_address, AllocationId=aid, NetworkInterfaceId=other, AllowReassociation=False)[0])
        # a second address on the same interface: the first comes off, stays allocated
        aid2 = self.allocate()["AllocationId"]
        self.ec2.associate_address(AllocationId=aid2, NetworkInterfaceId=primary, AllowReassociation=False)
        st = {x["id"]: x for x in self.state()["addresses"]}
        self.assertEqual((None, primary), (st[aid]["network_interface_id"], st[aid2]["network_interface_id"]))
        self.assertEqual("203.0.113.102", [i for i in self.state()["instances"] if i["id"] == iid][0]["public_ip"])
        # release: not while associated; disassociate first
        self.assertEqual("InvalidIPAddress.InUse: Address 203.0.113.102 is in use.",
                         self.message_of(self.ec2.release_address, AllocationId=aid2))
        self.assertError("InvalidAssociationID.NotFound", 400, self.ec2.disassociate_address,
                         AssociationId="eipassoc-0ffffffffffffffff")
        self.ec2.disassociate_address(AssociationId=st[aid2]["association_id"])
        (r,) = all_instances(self.ec2, InstanceIds=[iid])
        self.assertNotIn("PublicIpAddress", r)
        self.ec2.release_address(AllocationId=aid2)
        self.assertError("InvalidAllocationID.NotFound", 400, self.ec2.release_address, AllocationId=aid2)
        # an instance that terminates loses its address, which stays allocated
        self.ec2.associate_address(AllocationId=aid, NetworkInterfaceId=other)
        self.ec2.terminate_instances(InstanceIds=[b["InstanceId"]])
        self.fake.control("POST", "advance")
        self.assertEqual([(aid, None, None)], [(x["id"], x["instance_id"], x["association_id"])
                                               for x in self.state()["addresses"]])


class TestElasticIpSeed(FakeTest):
    """The quota from the seed, per region."""

    @classmethod
    def setUpClass(cls):
        fd, cls.seed_path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"max_elastic_ips": {"us-east-1": 1}}, f)
        cls.args = ("--seed", cls.seed_path)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        os.unlink(cls.seed_path)

    def test_seeded_quota(self):
        attr = lambda c: c.describe_account_attributes(AttributeNames=["vpc-max-elastic-ips"])[
            "AccountAttributes"][0]["AttributeValues"][0]["AttributeValue"]
        west = self.fake.client("us-west-2")
        self.assertEqual(("1", "5"), (attr(self.ec2), attr(west)))
        self.ec2.allocate_address(Domain="vpc")
        self.assertError("AddressLimitExceeded", 400, self.ec2.allocate_address, Domain="vpc")
        west.allocate_address(Domain="vpc")


class TestDescribeInstances(FakeTest):
    def test_lifecycle_and_filters(self):
        tag = lambda k, v: {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v}]}
        a = self.launch(MinCount=3, MaxCount=3, TagSpecifications=[tag("gpuctl:cluster", "alpha")], ClientToken="ta")
        b = self.launch(InstanceType="p5.48xlarge", TagSpecifications=[tag("gpuctl:cluster", "beta")],
                        InstanceMarketOptions={"MarketType": "spot"}, Placement={"AvailabilityZone": "us-east-1c"})
        ids_a = [i["InstanceId"] for i in a["Instances"]]
        id_b = b["Instances"][0]["InstanceId"]
        # page size 2: the paginator follows nextToken; reservations group instances
        pages = list(self.ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "tag:gpuctl:cluster", "Values": ["alpha", "beta"]}]))
        self.assertEqual(2, len(pages))
        self.assertEqual([[a["ReservationId"]], [a["ReservationId"], b["ReservationId"]]],
                         [[r["ReservationId"] for r in p["Reservations"]] for p in pages])
        self.assertEqual(["pending"] * 4, [i["State"]["Name"] for p in pages for i in instances(p)])
        again = all_instances(self.ec2, Filters=[{"Name": "tag:gpuctl:cluster", "Values": ["alpha", "beta"]}])
        self.assertEqual(["running"] * 4, [i["State"]["Name"] for i in again])
        F = lambda name, *values: {"Name": name, "Values": list(values)}
        q = lambda *filters: sorted(i["InstanceId"] for i in all_instances(self.ec2, Filters=list(filters)))
        self.assertEqual(sorted(ids_a), q(F("tag:gpuctl:cluster", "al*")))
        self.assertEqual(sorted(ids_a + [id_b]), q(F("tag-key", "gpuctl:cluster")))
        self.assertEqual([id_b], q(F("instance-lifecycle", "spot")))
        self.assertEqual([id_b], q(F("availability-zone", "us-east-1c"), F("instance-state-name", "running")))
        self.assertEqual([id_b], q(F("instance-type", "p5.*")))
        self.assertEqual(sorted(ids_a), q(F("client-token", "ta")))
        self.assertEqual([], q(F("tag:gpuctl:cluster", "alpha"), F("instance-type", "p5.48xlarge")))
        self.assertEqual([id_b], q(F("tag:gpuctl:cluster", "?eta")))
        self.assertError("InvalidParameterValue", 400, self.ec2.describe_instances, Filters=[F("colour", "red")])
        self.assertError("InvalidParameterValue", 400, self.ec2.describe_instances, MaxResults=4)
        r = self.ec2.describe_instances(MaxResults=5)
        self.assertEqual(4, len(instances(r)))
        self.assertNotIn("NextToken", r)
        self.assertError("InvalidParameterCombination", 400, self.ec2.describe_instances, InstanceIds=[id_b], MaxResults=5)
        self.assertError("InvalidInstanceID.NotFound", 400, self.ec2.describe_instances,
                         InstanceIds=[id_b, "i-0fffffffffffffff0"])
        self.assertError("InvalidInstanceID.Malformed", 400, self.ec2.describe_instances, InstanceIds=["x-1"])
        self.assertError("InvalidPaginationToken", 400, self.ec2.describe_instances, NextToken="garbage")
        self.assertEqual([], all_instances(self.fake.client("us-west-2")), "instances are regional")
        # terminate: one unknown id fails the whole call
        self.assertError("InvalidInstanceID.NotFound", 400, self.ec2.terminate_instances,
                         InstanceIds=[id_b, "i-0fffffffffffffff0"])
        self.assertEqual("running", all_instances(self.ec2, InstanceIds=[id_b])[0]["State"]["Name"])
        t = self.ec2.terminate_instances(InstanceIds=ids_a[:2])["TerminatingInstances"]
        self.assertEqual([("running", "shutting-down")] * 2, [(x["PreviousState"]["Name"], x["CurrentState"]["Name"]) for x in t])
        done = all_instances(self.ec2, InstanceIds=ids_a)
        self.assertEqual(["terminated", "terminated", "running"], [i["State"]["Name"] for i in done])
        self.assertEqual("Client.UserInitiatedShutdown", done[0]["StateReason"]["Code"])
        self.assertNotIn("PrivateIpAddress", done[0])
        t = self.ec2.terminate_instances(InstanceIds=ids_a[:1])["TerminatingInstances"]
        self.assertEqual([("terminated", "terminated")], [(x["PreviousState"]["Name"], x["CurrentState"]["Name"]) for x in t])
        live = q(F("tag:gpuctl:cluster", "alpha"), F("instance-state-name", "pending", "running"))
        self.assertEqual([ids_a[2]], live)
        self.assertEqual(4, len(all_instances(self.ec2)), "terminated instances stay visible")

    def test_polling_for_running_alone_progresses(self):
        iid = self.launch()["Instances"][0]["InstanceId"]
        running = lambda: all_instances(self.ec2, Filters=[{"Name": "instance-state-name", "Values": ["running"]}])
        self.assertEqual([], running())
        self.assertEqual([iid], [i["InstanceId"] for i in running()])


class TestPendingPolls(FakeTest):
    args = ("--pending-polls", "3", "--page-size", "0")

    def test_three_polls(self):
        r = self.launch(MinCount=5, MaxCount=5)
        ids = [i["InstanceId"] for i in r["Instances"]]
        seen = []
        for _ in range(4):
            resp = self.ec2.describe_instances(InstanceIds=ids)
            self.assertNotIn("NextToken", resp, "--page-size 0 answers everything")
            seen.append({i["State"]["Name"] for i in instances(resp)})
        self.assertEqual([{"pending"}] * 3 + [{"running"}], seen)
        self.launch()
        self.fake.control("POST", "advance")
        self.assertEqual({"running"}, {i["State"]["Name"] for i in instances(self.ec2.describe_instances())})


class TestFaults(FakeTest):
    def add(self, *rules):
        status, out = self.fake.control("POST", "faults", list(rules))
        self.assertEqual(200, status, out)

    def test_capacity_in_one_zone(self):
        self.add({"action": "RunInstances", "region": "us-east-1", "zone": "us-east-1a",
                  "code": "InsufficientInstanceCapacity"})
        try:
            self.launch(Placement={"AvailabilityZone": "us-east-1a"})
            self.fail("launched into a zone without capacity")
        except ClientError as e:
            self.assertEqual(("InsufficientInstanceCapacity", 500), (e.response["Error"]["Code"],
                                                                     e.response["ResponseMetadata"]["HTTPStatusCode"]))
            self.assertIn("sufficient g5.xlarge capacity in the Availability Zone you requested (us-east-1a)",
                          e.response["Error"]["Message"])
        self.assertError("InsufficientInstanceCapacity", 500, self.launch)   # first zone offering g5.xlarge is 1a
        self.launch(SubnetId="subnet-01000000000000002")
        self.launch(client=self.fake.client("us-west-2"))
        self.assertEqual(2, len(self.state()["instances"]))
        faults = self.fake.control("GET", "faults")[1]
        self.assertEqual((2, None), (faults[0]["hits"], faults[0]["left"]))

    def test_quota_codes(self):
        self.add({"action": "RunInstances", "region": "us-west-2", "code": "VcpuLimitExceeded"},
                 {"action": "RunInstances", "market": "spot", "code": "MaxSpotInstanceCountExceeded"})
        west = self.fake.client("us-west-2")
        self.assertError("VcpuLimitExceeded", 400, self.launch, client=west)
        self.assertError("MaxSpotInstanceCountExceeded", 400, self.launch, InstanceMarketOptions={"MarketType": "spot"})
        self.launch()
        self.assertEqual(1, len(self.state()["instances"]))

    def test_throttle_once_then_success(self):
        self.add({"action": "*", "code": "RequestLimitExceeded", "times": 1},
                 {"action": "DescribeRegions", "code": "InternalError", "times": 1})
        self.assertError("RequestLimitExceeded", 503, self.ec2.describe_vpcs)
        self.assertError("InternalError", 500, self.ec2.describe_regions)
        self.ec2.describe_regions()
        self.add({"action": "RunInstances", "code": "RequestLimitExceeded", "times": 1})
        retrying = self.fake.client(retries=2)
        start = len(self.fake.log())
        retrying.run_instances(ImageId=AMI["us-east-1"], InstanceType="g5.xlarge", MinCount=1, MaxCount=1, ClientToken="r1")
        tail = [(e["action"], e["status"], e["error"], e["fault"], e["client_token"]) for e in self.fake.log()[start:]]
        self.assertEqual([("RunInstances", 503, "RequestLimitExceeded", "code", "r1"), ("RunInstances", 200, None, None, "r1")], tail)

    def test_delay(self):
        self.add({"action": "DescribeRegions", "delay_ms": 2000, "times": 1})
        t0 = time.monotonic()
        self.ec2.describe_regions()
        self.assertGreaterEqual(time.monotonic() - t0, 2.0)
        t0 = time.monotonic()
        self.ec2.describe_regions()
        self.assertLess(time.monotonic() - t0, 1.5)
        self.assertEqual("delay", self.fake.log()[-2]["fault"])

    def test_drop_and_lose_reply(self):
        self.add({"action": "RunInstances", "drop": True, "times": 1})
        with self.assertRaises(HTTPClientError):
            self.launch(ClientToken="d1")
        self.assertEqual(0, len(self.state()["instances"]), "a dropped request is not carried out")
        self.add({"action": "RunInstances", "lose_reply": True, "times": 1})
        with self.assertRaises(HTTPClientError):
            self.launch(ClientToken="d1", MinCount=2, MaxCount=2)
        self.assertEqual(2, len(self.state()["instances"]), "a lost reply's launch happened")
        again = self.launch(ClientToken="d1", MinCount=2, MaxCount=2)
        self.assertEqual(["i-00000000000000001", "i-00000000000000002"], [i["InstanceId"] for i in again["Instances"]])
        self.assertEqual(2, len(self.state()["instances"]))
        log = [(e["action"], e["status"], e["fault"]) for e in self.fake.log() if e["action"] == "RunInstances"][-3:]
        self.assertEqual([("RunInstances", 0, "drop"), ("RunInstances", 0, "lose_reply"), ("RunInstances", 200, None)], log)

    def test_partial(self):
        self.add({"action": "RunInstances", "instance_type": "p4d.*", "partial": 1, "times": 1})
        r = self.launch(InstanceType="p4d.24xlarge", MinCount=3, MaxCount=3)
        self.assertEqual(["pending"] * 3, [i["State"]["Name"] for i in r["Instances"]])
        got = all_instances(self.ec2)
        self.assertEqual(["pending", "terminated", "terminated"], [i["State"]["Name"] for i in got])
        self.assertEqual([None, "Server.InsufficientInstanceCapacity", "Server.InsufficientInstanceCapacity"],
                         [i.get("StateReason", {}).get("Code") if i["State"]["Name"] == "terminated" else None for i in got])
        self.assertEqual(["running", "terminated", "terminated"], [i["State"]["Name"] for i in all_instances(self.ec2)])

    def test_capacity_limits_count(self):
        self.add({"action": "RunInstances", "capacity": 1})
        self.assertError("InsufficientInstanceCapacity", 500, self.launch, MinCount=2, MaxCount=3)
        self.assertEqual(0, len(self.state()["instances"]))
        r = self.launch(MinCount=1, MaxCount=3)
        self.assertEqual(1, len(r["Instances"]))

    def test_empty_after_body_and_token_in_flight(self):
        self.launch(ClientToken="e1")
        # an eventually consistent DescribeInstances, once, after one that passes
        self.add({"action": "DescribeInstances", "empty": True, "after": 1, "times": 1})
        self.assertEqual(1, len(all_instances(self.ec2)))
        self.assertEqual(0, len(all_instances(self.ec2)))
        self.assertEqual(1, len(all_instances(self.ec2)))
        # an answer that is no EC2 document
        self.add({"action": "DescribeRegions", "body": "<html>no</html>", "status": 500, "times": 1})
        status, hdrs, body = self.fake.raw({"Action": "DescribeRegions", "Version": "2016-11-15"})
        self.assertEqual((500, "text/html", "<html>no</html>"), (status, hdrs["content-type"], body))
        # a second RunInstances with a token in flight waits for the first and
        # answers its reservation: one launch
        self.add({"action": "RunInstances", "delay_ms": 1000, "times": 1})
        out = []
        t = threading.Thread(target=lambda: out.append(self.launch(ClientToken="f1", MinCount=2, MaxCount=2)))
        t.start()
        time.sleep(0.3)
        second = self.launch(ClientToken="f1", MinCount=2, MaxCount=2)
        t.join()
        self.assertEqual(out[0]["ReservationId"], second["ReservationId"])
        self.assertEqual(3, len(self.state()["instances"]))

    def test_bad_rules(self):
        for rule in ({"code": "X"}, {"action": "*"}, {"action": "*", "code": "X", "drop": True},
                     {"action": "DescribeRegions", "partial": 1}, {"action": "*", "code": "X", "colour": 1},
                     {"action": "RunInstances", "empty": True}, {"action": "*", "code": "X", "after": -1}):
            self.assertEqual(400, self.fake.control("POST", "faults", [rule])[0], rule)
        self.assertEqual([], self.fake.control("GET", "faults")[1])


class TestFaultsFile(unittest.TestCase):
    def test_faults_file_and_custom_status(self):
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump([{"action": "DescribeRegions", "code": "Unavailable", "times": 2},
                       {"action": "DescribeVpcs", "code": "UnauthorizedOperation", "message": "no vpc for you"},
                       {"action": "DescribeSubnets", "code": "Custom.Thing", "status": 418}], f)
        fake = Fake("--faults", path)
        try:
            ec2 = fake.client()
            self.assertEqual(("Unavailable", 503), error_of(ec2.describe_regions))
            self.assertEqual(("Unavailable", 503), error_of(ec2.describe_regions))
            ec2.describe_regions()
            try:
                ec2.describe_vpcs()
            except ClientError as e:
                self.assertEqual(("UnauthorizedOperation", 403, "no vpc for you"),
                                 (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"],
                                  e.response["Error"]["Message"]))
            self.assertEqual(("Custom.Thing", 418), error_of(ec2.describe_subnets))
        finally:
            fake.stop()
            os.unlink(path)


class TestAuth(FakeTest):
    def error(self, body):
        root = ET.fromstring(body)
        return root.find("Errors/Error/Code").text, root.find("Errors/Error/Message").text

    def test_tampered_body(self):
        client = self.fake.client()

        def tamper(request, **kwargs):
            body = request.body.decode() if isinstance(request.body, bytes) else request.body
            request.body = body.replace("us-east-1", "us-west-2")   # same length, after signing
        client.meta.events.register("before-send.ec2.DescribeRegions", tamper)
        try:
            client.describe_regions(RegionNames=["us-east-1"])
            self.fail("a tampered request was accepted")
        except ClientError as e:
            self.assertEqual(("AuthFailure", 401, "AWS was not able to validate the provided access credentials"),
                             (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"],
                              e.response["Error"]["Message"]))
        entry = self.fake.log()[-1]
        self.assertEqual(("DescribeRegions", 401, "AuthFailure", "signature mismatch"),
                         (entry["action"], entry["status"], entry["error"], entry["auth"]["reason"]))
        self.assertEqual("us-west-2", entry["params"]["RegionName.1"], "the log shows what arrived")
        canonical = entry["auth"]["canonical_request"].split("\n")
        self.assertEqual(["POST", "/", ""], canonical[:3])
        self.assertIn("content-type;host;x-amz-date", canonical[-2])
        body = "Action=DescribeRegions&Version=2016-11-15&RegionName.1=us-west-2"
        self.assertEqual(hashlib.sha256(body.encode()).hexdigest(), canonical[-1], "botocore hashed the tampered body")
        self.assertTrue(entry["auth"]["string_to_sign"].startswith("AWS4-HMAC-SHA256\n"))
        self.assertNotIn(SECRET, json.dumps(entry))
        status, _, body = self.fake.raw({"Action": "DescribeRegions", "Version": "2016-11-15"},
                                        tamper=lambda b: b.replace(b"Regions", b"Regionz"))
        self.assertEqual((401, "AuthFailure"), (status, self.error(body)[0]))

    def test_wrong_credentials(self):
        start = len(self.fake.log())
        self.assertEqual(("AuthFailure", 401), error_of(self.fake.client(secret="wrong").describe_regions))
        self.assertEqual(("AuthFailure", 401), error_of(self.fake.client(key="AKIDOTHER").describe_regions))
        self.assertEqual(("AuthFailure", 401), error_of(self.fake.client("eu-west-1").describe_regions))
        self.assertEqual(("AuthFailure", 401), error_of(self.fake.client(token="unexpected").describe_regions))
        status, _, body = self.fake.raw({"Action": "DescribeRegions", "Version": "2016-11-15"}, service="s3")
        self.assertEqual((401, "AuthFailure"), (status, self.error(body)[0]))
        status, _, body = self.fake.raw({"Action": "DescribeRegions", "Version": "2016-11-15"}, sign=False)
        self.assertEqual((401, "AuthFailure", "Request is missing Authentication Token"), (status,) + self.error(body))
        self.assertEqual(6, len([e for e in self.fake.log()[start:] if e["error"] == "AuthFailure"]))

    def test_get_and_wire_format(self):
        status, hdrs, body = self.fake.raw({"Action": "DescribeRegions", "Version": "2016-11-15",
                                            "RegionName.1": "us-west-2"}, method="GET")
        self.assertEqual(200, status, body)
        root = ET.fromstring(body)
        ns = NS
        self.assertEqual(ns + "DescribeRegionsResponse", root.tag)
        self.assertEqual(ns + "requestId", root[0].tag)
        self.assertEqual(hdrs["x-amzn-requestid"], root[0].text)
        self.assertEqual("us-west-2", root.find(ns + "regionInfo/" + ns + "item/" + ns + "regionName").text)
        self.assertIn("date", hdrs)
        status, hdrs, body = self.fake.raw({"Action": "DescribeRegions", "Version": "2014-01-01"})
        self.assertTrue(body.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>'), body)
        root = ET.fromstring(body)
        self.assertEqual((400, "NoSuchVersion", hdrs["x-amzn-requestid"]),
                         (status, root.find("Errors/Error/Code").text, root.find("RequestID").text))
        status, _, body = self.fake.raw({"Action": "FlyToTheMoon", "Version": "2016-11-15"})
        self.assertEqual((400, "InvalidAction"), (status, self.error(body)[0]))
        status, _, body = self.fake.raw({"Action": "DescribeRegions", "Version": "2016-11-15", "Colour": "red"})
        self.assertEqual((400, "UnknownParameter"), (status, self.error(body)[0]))
        status, _, body = self.fake.raw({"Action": "DescribeRegions"})
        self.assertEqual((400, "MissingParameter"), (status, self.error(body)[0]))
        # a value with + / = must arrive intact (UriEncoded by the client)
        _, line = ed25519_line(7)
        status, _, body = self.fake.raw({"Action": "ImportKeyPair", "Version": "2016-11-15", "KeyName": "k+/=",
                                         "PublicKeyMaterial": base64.b64encode(line).decode()})
        self.assertEqual(200, status, body)
        self.assertEqual(["k+/="], [k["KeyName"] for k in self.ec2.describe_key_pairs()["KeyPairs"]])

    def test_request_ids_are_a_counter(self):
        r1 = self.ec2.describe_regions()["ResponseMetadata"]["RequestId"]
        r2 = self.ec2.describe_regions()["ResponseMetadata"]["RequestId"]
        n1, n2 = self.fake.log()[-2]["n"], self.fake.log()[-1]["n"]
        self.assertEqual(("00000000-0000-4000-8000-%012d" % n1, "00000000-0000-4000-8000-%012d" % n2), (r1, r2))
        self.assertEqual(n1 + 1, n2)
        e = None
        try:
            self.ec2.describe_instances(InstanceIds=["i-0fffffffffffffff0"])
        except ClientError as err:
            e = err
        self.assertEqual("00000000-0000-4000-8000-%012d" % (n2 + 1), e.response["ResponseMetadata"]["RequestId"])


class TestTagKeyFilters(FakeTest):
    """What gpuctl gc asks (providers/aws/orphans.c): every Describe* it
    uses filtered by tag-key, in two regions, and IAM's lists and tags."""

    def test_tag_key_everywhere(self):
        tag = lambda rtype, k: [{"ResourceType": rtype, "Tags": [{"Key": k, "Value": "u1"}]}]
        got = {}
        for region in ("us-east-1", "us-west-2"):
            ec2 = self.fake.client(region)
            mine = self.launch(ec2, TagSpecifications=tag("instance", "gpuctl:cluster-uid"))["Instances"][0]
            self.launch(ec2, TagSpecifications=tag("instance", "other"))
            self.launch(ec2)
            ec2.create_security_group(GroupName="g1", Description="d", TagSpecifications=tag("security-group", "gpuctl:cluster-uid"))
            ec2.create_security_group(GroupName="g2", Description="d")
            ec2.create_placement_group(GroupName="p1", Strategy="cluster", TagSpecifications=tag("placement-group", "gpuctl:cluster-uid"))
            ec2.create_placement_group(GroupName="p2", Strategy="cluster")
            ec2.import_key_pair(KeyName="k1", PublicKeyMaterial=ed25519_line()[1], TagSpecifications=tag("key-pair", "gpuctl:cluster-uid"))
            ec2.import_key_pair(KeyName="k2", PublicKeyMaterial=ed25519_line(2)[1])
            ec2.allocate_address(Domain="vpc", TagSpecifications=tag("elastic-ip", "gpuctl:cluster-uid"))
            ec2.allocate_address(Domain="vpc")
            f = [{"Name": "tag-key", "Values": ["gpuctl:cluster-uid"]}]
            got[region] = (
                [i["InstanceId"] for i in instances(ec2.describe_instances(Filters=f))] == [mine["InstanceId"]],
                [g["GroupName"] for g in ec2.describe_security_groups(Filters=f)["SecurityGroups"]],
                [g["GroupName"] for g in ec2.describe_placement_groups(Filters=f)["PlacementGroups"]],
                [k["KeyName"] for k in ec2.describe_key_pairs(Filters=f)["KeyPairs"]],
                len(ec2.describe_addresses(Filters=f)["Addresses"]))
        self.assertEqual({r: (True, ["g1"], ["p1"], ["k1"], 1) for r in ("us-east-1", "us-west-2")}, got)

    def test_iam_lists_and_tags(self):
        iam = SESSION.create_client("iam", region_name="us-east-1", endpoint_url=self.fake.url,
                                    aws_access_key_id=AKID, aws_secret_access_key=SECRET)
        self.fake.control("DELETE", "iam")
        t = [{"Key": "gpuctl:cluster-uid", "Value": "u1"}]
        doc = '{"Version":"2012-10-17","Statement":[]}'
        iam.create_role(RoleName="gpuctl-b", AssumeRolePolicyDocument=doc, Tags=t)
        iam.create_role(RoleName="gpuctl-a", AssumeRolePolicyDocument=doc)
        iam.create_instance_profile(InstanceProfileName="gpuctl-b", Tags=t)
        page = iam.list_roles(MaxItems=1)
        self.assertEqual((["gpuctl-a"], True), ([r["RoleName"] for r in page["Roles"]], page["IsTruncated"]))
        page = iam.list_roles(Marker=page["Marker"])
        self.assertEqual((["gpuctl-b"], False), ([r["RoleName"] for r in page["Roles"]], page["IsTruncated"]))
        self.assertEqual(t, iam.list_role_tags(RoleName="gpuctl-b")["Tags"])
        self.assertEqual([], iam.list_role_tags(RoleName="gpuctl-a")["Tags"])
        self.assertEqual(["gpuctl-b"], [p["InstanceProfileName"] for p in iam.list_instance_profiles()["InstanceProfiles"]])
        self.assertEqual(t, iam.list_instance_profile_tags(InstanceProfileName="gpuctl-b")["Tags"])
        self.assertError("NoSuchEntity", 404, iam.list_role_tags, RoleName="nope")
        iam.close()


class TestSeed(unittest.TestCase):
    def test_seed_replaces_the_world(self):
        out = subprocess.run(["/usr/bin/python3", FAKE, "--print-seed"], check=True, capture_output=True).stdout
        seed = json.loads(out)
        seed["regions"] = [r for r in seed["regions"] if r["name"] == "us-west-2"]
        seed["regions"][0]["unoffered"] = {"us-west-2b": ["g5.*"]}
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"regions": seed["regions"]}, f)
        fake = Fake("--seed", path)
        try:
            west = fake.client("us-west-2")
            self.assertEqual(["us-west-2"], [r["RegionName"] for r in west.describe_regions()["Regions"]])
            offers = west.describe_instance_type_offerings(
                LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": ["g5.xlarge"]}])
            self.assertEqual(["us-west-2a", "us-west-2c"], [o["Location"] for o in offers["InstanceTypeOfferings"]])
            self.assertEqual(("AuthFailure", 401), error_of(fake.client("us-east-1").describe_regions))
            self.assertEqual(45, len(json.loads(out)["instance_types"]), "every aws type of the catalog")
        finally:
            fake.stop()
            os.unlink(path)


class TestClockAndToken(unittest.TestCase):
    def test_request_expired(self):
        fake = Fake("--clock-offset", "3600")
        try:
            status, hdrs, body = fake.raw({"Action": "DescribeRegions", "Version": "2016-11-15"})
            self.assertEqual((400, "RequestExpired"), (status, ET.fromstring(body).find("Errors/Error/Code").text))
            skew = calendar.timegm(time.strptime(hdrs["date"], "%a, %d %b %Y %H:%M:%S GMT")) - time.time()
            self.assertAlmostEqual(3600, skew, delta=30)
        finally:
            fake.stop()
        fake = Fake("--clock-offset", "600")
        try:
            fake.client().describe_regions()   # 10 minutes of skew is within the 15 allowed
        finally:
            fake.stop()

    def test_session_token(self):
        fake = Fake("--session-token", "FQoG+/token==", "--access-key", "ASIAFAKE", "--secret-key", "s3cr3t")
        try:
            ok = fake.client(key="ASIAFAKE", secret="s3cr3t", token="FQoG+/token==")
            self.assertEqual(3, len(ok.describe_regions()["Regions"]))
            for token in (None, "FQoG+/other=="):
                c = fake.client(key="ASIAFAKE", secret="s3cr3t", token=token)
                self.assertEqual(("AuthFailure", 401), error_of(c.describe_regions))
            status, _, _ = fake.raw({"Action": "DescribeRegions", "Version": "2016-11-15"}, key="ASIAFAKE",
                                    secret="s3cr3t")
            self.assertEqual(401, status, "signed without the token")
        finally:
            fake.stop()


class TestControlAndLog(FakeTest):
    def test_control_endpoints(self):
        self.assertEqual((200, "203.0.113.7\n"), self.fake.control("GET", "checkip"))
        spot = self.launch(InstanceMarketOptions={"MarketType": "spot"})["Instances"][0]["InstanceId"]
        od = self.launch()["Instances"][0]["InstanceId"]
        self.assertEqual(404, self.fake.control("POST", "preempt", {"instance_id": "i-0fffffffffffffff0"})[0])
        self.assertEqual(400, self.fake.control("POST", "preempt", {"instance_id": od})[0])
        self.assertEqual(200, self.fake.control("POST", "preempt", {"instance_id": spot})[0])
        self.assertEqual(409, self.fake.control("POST", "preempt", {"instance_id": spot})[0])
        (i,) = all_instances(self.ec2, InstanceIds=[spot])
        self.assertEqual(("terminated", "Server.SpotInstanceTermination"), (i["State"]["Name"], i["StateReason"]["Code"]))
        st = self.state()
        self.assertEqual({"instances", "security_groups", "key_pairs", "placement_groups", "subnets", "vpcs"} - set(st), set())
        self.assertEqual(3 + 4 + 3, len(st["subnets"]))
        self.assertEqual(["terminated", "pending"], [x["state"] for x in st["instances"]])
        self.assertEqual(200, self.fake.control("POST", "advance")[0])
        self.assertEqual(["terminated", "running"], [x["state"] for x in self.state()["instances"]])
        self.fake.control("POST", "reset")
        self.assertEqual([], self.state()["instances"])
        self.assertEqual("i-00000000000000001", self.launch()["Instances"][0]["InstanceId"], "reset restarts the ids")
        self.assertEqual(404, self.fake.control("GET", "nothing")[0])

    def test_log_format(self):
        start = len(self.fake.log())
        self.launch(ClientToken="tok-log", UserData="#!/bin/sh\necho ok\n",
                    TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "k", "Value": "v"}]}])
        self.ec2.describe_instances(Filters=[{"Name": "tag:k", "Values": ["v"]}])
        try:
            self.fake.client("us-west-2").describe_key_pairs(KeyNames=["missing"])
        except ClientError:
            pass
        self.fake.control("GET", "state")
        entries = self.fake.log()[start:]
        keys = {"n", "request_id", "action", "region", "params", "status", "error", "client_token", "fault"}
        for e in entries:
            self.assertEqual(keys, set(e), e)
        self.assertEqual([("RunInstances", "us-east-1", 200, None, "tok-log"),
                          ("DescribeInstances", "us-east-1", 200, None, None),
                          ("DescribeKeyPairs", "us-west-2", 400, "InvalidKeyPair.NotFound", None),
                          ("_fake/state", None, 200, None, None)],
                         [(e["action"], e["region"], e["status"], e["error"], e["client_token"]) for e in entries])
        run = entries[0]["params"]
        self.assertEqual({"ImageId": AMI["us-east-1"], "InstanceType": "g5.xlarge", "MinCount": "1", "MaxCount": "1",
                          "ClientToken": "tok-log", "UserData": "#!/bin/sh\necho ok\n",
                          "TagSpecification.1.ResourceType": "instance", "TagSpecification.1.Tag.1.Key": "k",
                          "TagSpecification.1.Tag.1.Value": "v"}, run)
        self.assertEqual({"Filter.1.Name": "tag:k", "Filter.1.Value.1": "v"}, entries[1]["params"])
        self.assertEqual([entries[0]["n"] + k for k in range(4)], [e["n"] for e in entries])


if __name__ == "__main__":
    unittest.main(verbosity=2)
