#!/usr/bin/python3
"""A loopback stand-in for the EC2 Query API, for bench/catalog.sh.

    bench/fake_ec2.py [--catalog FILE] [--port N] [--log FILE] [--exit-on-stdin-eof]

Listens on 127.0.0.1 (port N, default: one the OS chooses) and prints
"PORT <n>" as the first line on stdout.  It answers exactly one action,
DescribeInstanceTypes (POST form body or GET query, Version 2016-11-15), with
a DescribeInstanceTypesResponse in the namespace
http://ec2.amazonaws.com/doc/2016-11-15/ shaped as in
shared/reference/aws.md section 2.7.  The instance types are the request's
InstanceType.N values (default: p4de.24xlarge); the facts for each come from
the first aws row of that type in the catalog CSV (default:
providers/aws/catalog.csv next to this script): vCPUs, memory, GPU model,
count and memory, EFA and bandwidth.  A type not in the catalog answers
400 InvalidInstanceType in the EC2 error shape; any other action answers 400
InvalidAction.

It does NOT check the SigV4 signature (or the credentials, or the date):
it is a reference point for timing a client, not a test of signing.

Options: --log FILE appends "METHOD ACTION STATUS" per request;
--exit-on-stdin-eof exits when stdin closes, so a killed driver leaves
nothing behind.  Python 3 standard library only.
"""
import argparse
import csv
import os
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape

NS = "http://ec2.amazonaws.com/doc/2016-11-15/"
DEFAULT_TYPE = "p4de.24xlarge"
CATALOG = {}
LOG = None
LOCK = threading.Lock()


def load_catalog(path):
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["provider"] == "aws" and row["instance_type"] not in CATALOG:
                CATALOG[row["instance_type"]] = row


def num(text, default=0):
    try:
        return float(text)
    except (TypeError, ValueError):
        return default


def instance_type_xml(name, row):
    vcpus = int(num(row["vcpus"]))
    mem_mib = int(num(row["memory_gib"]) * 1024)
    gpus = int(num(row["gpu_count"]))
    gpu_mib = int(num(row["gpu_memory_gib"]) * 1024)
    model = row["gpu_model"]
    gpu_name = model.split("-")[0]          # A100-80GB -> A100 (AWS's name)
    efa = row["interconnect"] == "efa"
    gbps = num(row["interconnect_gbps"], 0.0)
    cards = 4 if efa and gbps >= 400 else 1
    per_card = (gbps / cards) if gbps else 25.0
    spot = bool(row["price_spot_usd_hr"])
    perf = ("%dx %d Gigabit" % (cards, per_card)) if cards > 1 else ("%d Gigabit" % per_card)

    x = ["<item>",
         "<instanceType>%s</instanceType>" % escape(name),
         "<currentGeneration>true</currentGeneration>",
         "<freeTierEligible>false</freeTierEligible>",
         "<supportedUsageClasses><item>on-demand</item>%s<item>capacity-block</item>"
         "</supportedUsageClasses>" % ("<item>spot</item>" if spot else ""),
         "<supportedRootDeviceTypes><item>ebs</item></supportedRootDeviceTypes>",
         "<supportedVirtualizationTypes><item>hvm</item></supportedVirtualizationTypes>",
         "<bareMetal>false</bareMetal>",
         "<hypervisor>nitro</hypervisor>",
         "<processorInfo><supportedArchitectures><item>x86_64</item></supportedArchitectures>"
         "<sustainedClockSpeedInGhz>3.0</sustainedClockSpeedInGhz></processorInfo>",
         "<vCpuInfo><defaultVCpus>%d</defaultVCpus><defaultCores>%d</defaultCores>"
         "<defaultThreadsPerCore>2</defaultThreadsPerCore></vCpuInfo>" % (vcpus, vcpus // 2),
         "<memoryInfo><sizeInMiB>%d</sizeInMiB></memoryInfo>" % mem_mib,
         "<instanceStorageSupported>true</instanceStorageSupported>",
         "<instanceStorageInfo><totalSizeInGB>8000</totalSizeInGB>"
         "<disks><item><sizeInGB>1000</sizeInGB><count>8</count><type>ssd</type></item></disks>"
         "<nvmeSupport>required</nvmeSupport></instanceStorageInfo>",
         "<ebsInfo><ebsOptimizedSupport>default</ebsOptimizedSupport>"
         "<encryptionSupport>supported</encryptionSupport><nvmeSupport>required</nvmeSupport></ebsInfo>",
         "<networkInfo>",
         "<networkPerformance>%s</networkPerformance>" % perf,
         "<maximumNetworkInterfaces>%d</maximumNetworkInterfaces>" % (15 * cards),
         "<maximumNetworkCards>%d</maximumNetworkCards>" % cards,
         "<defaultNetworkCardIndex>0</defaultNetworkCardIndex>",
         "<networkCards>"]
    for i in range(cards):
        x.append("<item><networkCardIndex>%d</networkCardIndex>"
                 "<networkPerformance>%d Gigabit</networkPerformance>"
                 "<maximumNetworkInterfaces>15</maximumNetworkInterfaces>"
                 "<baselineBandwidthInGbps>%.1f</baselineBandwidthInGbps>"
                 "<peakBandwidthInGbps>%.1f</peakBandwidthInGbps></item>" % (i, per_card, per_card, per_card))
    x += ["</networkCards>",
          "<ipv4AddressesPerInterface>50</ipv4AddressesPerInterface>",
          "<ipv6AddressesPerInterface>50</ipv6AddressesPerInterface>",
          "<ipv6Supported>true</ipv6Supported>",
          "<enaSupport>required</enaSupport>",
          "<efaSupported>%s</efaSupported>" % ("true" if efa else "false")]
    if efa:
        x.append("<efaInfo><maximumEfaInterfaces>%d</maximumEfaInterfaces></efaInfo>" % cards)
    x += ["<encryptionInTransitSupported>true</encryptionInTransitSupported>",
          "<enaSrdSupported>false</enaSrdSupported>",
          "</networkInfo>"]
    if gpus:
        x.append("<gpuInfo><gpus><item><name>%s</name><manufacturer>NVIDIA</manufacturer>"
                 "<count>%d</count><memoryInfo><sizeInMiB>%d</sizeInMiB></memoryInfo></item></gpus>"
                 "<totalGpuMemoryInMiB>%d</totalGpuMemoryInMiB></gpuInfo>"
                 % (escape(gpu_name), gpus, gpu_mib, gpus * gpu_mib))
    x += ["<placementGroupInfo><supportedStrategies><item>cluster</item><item>partition</item>"
          "<item>spread</item></supportedStrategies></placementGroupInfo>",
          "<hibernationSupported>false</hibernationSupported>",
          "<burstablePerformanceSupported>false</burstablePerformanceSupported>",
          "<dedicatedHostsSupported>true</dedicatedHostsSupported>",
          "<autoRecoverySupported>false</autoRecoverySupported>",
          "<supportedBootModes><item>legacy-bios</item><item>uefi</item></supportedBootModes>",
          "</item>"]
    return "".join(x)


def error_xml(code, message, rid):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code>'
            "<Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>"
            % (code, escape(message), rid))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, params):
        rid = str(uuid.uuid4())
        action = (params.get("Action") or [""])[0]
        if action != "DescribeInstanceTypes":
            return 400, action, error_xml("InvalidAction", "The action %s is not valid for this "
                                          "web service." % action, rid)
        names = [v[0] for k, v in sorted(params.items()) if k.startswith("InstanceType.")]
        names = names or [DEFAULT_TYPE]
        items = []
        for n in names:
            row = CATALOG.get(n)
            if row is None:
                return 400, action, error_xml("InvalidInstanceType", "The following supplied "
                                              "instance types do not exist: [%s]" % n, rid)
            items.append(instance_type_xml(n, row))
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<DescribeInstanceTypesResponse xmlns="%s"><requestId>%s</requestId>'
                "<instanceTypeSet>%s</instanceTypeSet></DescribeInstanceTypesResponse>"
                % (NS, rid, "".join(items)))
        return 200, action, body

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        params = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        params.update(parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True))
        status, action, body = self.answer(params)
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/xml;charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if LOG:
            with LOCK, open(LOG, "a", encoding="utf-8") as f:
                f.write("%s %s %d\n" % (self.command, action or "-", status))

    do_GET = handle_any
    do_POST = handle_any


def main():
    global LOG
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="loopback EC2 DescribeInstanceTypes (no signature check)")
    ap.add_argument("--catalog", default=os.path.join(here, "..", "providers", "aws", "catalog.csv"))
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log")
    ap.add_argument("--exit-on-stdin-eof", action="store_true")
    a = ap.parse_args()
    LOG = a.log
    load_catalog(a.catalog)
    if DEFAULT_TYPE not in CATALOG:
        sys.exit("fake_ec2.py: %s not in %s" % (DEFAULT_TYPE, a.catalog))
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    print("PORT %d" % srv.server_address[1], flush=True)
    if a.exit_on_stdin_eof:
        def watch():
            sys.stdin.read()
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
