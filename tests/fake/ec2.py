#!/usr/bin/python3
"""A fake EC2 endpoint for tests: EC2's Query API wire format, all in memory.

    tests/fake/ec2.py [--access-key AKID] [--secret-key SECRET]
                      [--session-token TOKEN] [--log FILE] [--exit-on-stdin-eof]
                      [--page-size N] [--pending-polls N] [--faults FILE]
                      [--seed FILE] [--catalog PATH] [--clock-offset S]
                      [--print-seed] [--boot DIR]

Listens on 127.0.0.1 at a port the OS chooses and prints "PORT <n>" as the
first line on stdout.  Python 3 standard library plus botocore (Debian's
python3-botocore): every request's SigV4 signature is recomputed with
botocore.auth.SigV4Auth, an implementation gpuctl's authors did not write.
Shapes follow shared/reference/aws.md sections 2 and 3.

Options
  --access-key AKID      the one known access key id (default AKIDEXAMPLE)
  --secret-key SECRET    its secret (default wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY)
  --session-token TOKEN  requests must carry X-Amz-Security-Token equal to
                         TOKEN and sign it; without this option a request
                         that carries a token is refused
  --log FILE             one JSON object per request (below)
  --exit-on-stdin-eof    exit when stdin closes
  --page-size N          Describe* answers hold at most N items when the
                         request has no MaxResults (default 2; 0 = all), so
                         clients must follow nextToken.  This applies with
                         explicit id lists too (real EC2 answers those in one
                         page; a client that follows nextToken handles both)
  --pending-polls N      an instance shows `pending` in N DescribeInstances
                         answers, then `running` (default 1)
  --faults FILE          JSON list of fault rules (below)
  --seed FILE            JSON object whose top-level keys replace those of the
                         default world (see --print-seed for the shape)
  --catalog PATH         instance catalog CSV (default
                         ../../providers/aws/catalog.csv from this script)
  --clock-offset S       the fake's clock runs S seconds ahead (negative:
                         behind) of the real one; used for X-Amz-Date checks,
                         the Date header and launch times
  --print-seed           print the default world as JSON and exit
  --boot DIR             boot mode (root only; tests/fake/ec2_boot.py's
                         docstring is its reference): each instance, once
                         `running`, runs its user-data as a node of its own
                         on this machine (network, mount, UTS and PID
                         namespaces, per-instance directories under DIR,
                         an sshd, IMDSv2 at 169.254.169.254, stand-ins for
                         shutdown/poweroff); its address on the fake's
                         bridge is its private IP and its public IP; its
                         console is what the node printed; a node that
                         powers itself off terminates its instance
                         (Client.InstanceInitiatedShutdown); termination,
                         /_fake/reset and the fake's end stop the nodes

Transport and authentication
  * POST / with Content-Type application/x-www-form-urlencoded (any charset
    parameter; the body is read as UTF-8, `+` is a space) and body
    Action=..&Version=2016-11-15&..; or GET / with the same in the query (a
    POST may also carry query parameters; the body wins on a repeated name;
    within one part a repeated name keeps its last value).  Any other path
    than / (and /_fake/...) answers 400 InvalidRequest; another content type
    400 InvalidRequest; other methods 405 UnsupportedHttpVerb.
  * Authorization: AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/ec2/
    aws4_request, SignedHeaders=.., Signature=..  Checked in this order, all
    401 AuthFailure unless said otherwise: header present and well formed
    (a request without one is AuthFailure "Request is missing Authentication
    Token"; real EC2 may say MissingAuthenticationToken, gpuctl treats both
    alike); known AKID; service `ec2`; REGION one of the world's regions;
    DATE equal to the date of X-Amz-Date (required; the Date header is not
    accepted in its place); `host` and `x-amz-date` among SignedHeaders and
    every signed header present; the session token (see --session-token);
    then the signature, recomputed by botocore's SigV4Auth over the request's
    own method, path, query, body and ONLY the headers named in
    SignedHeaders, with X-Amz-Date as the timestamp.  A mismatch answers
    "AWS was not able to validate the provided access credentials" and the
    log line carries botocore's canonical request and string to sign (never
    the secret).  The payload hash is always the SHA-256 of the body
    received; an X-Amz-Content-SHA256 header is not trusted (a wrong or
    UNSIGNED-PAYLOAD value makes the signature fail).  Last, X-Amz-Date more
    than 15 minutes away from the fake's clock answers 400 RequestExpired.
    Presigned (query-string) signatures are not supported.
  * The credential scope's REGION is the region the request acts on (all
    regions share this one endpoint).
  * Version must be 2016-11-15: missing -> 400 MissingParameter, another
    value -> 400 NoSuchVersion (what EC2 answers for a version it does not
    have; the fake has only this one).  No Action -> 400 MissingAction; an
    action the fake does not serve -> 400 InvalidAction.  A parameter the
    action does not take -> 400 UnknownParameter (members of
    NetworkInterface.N, BlockDeviceMapping.N, TagSpecification.N, Filter.N,
    IpPermissions.N, Placement, InstanceMarketOptions, MetadataOptions are
    checked too).  DryRun=true answers 412 DryRunOperation after validation.
  * Success: <?xml ..?><ActionResponse xmlns="http://ec2.amazonaws.com/doc/
    2016-11-15/"> with <requestId> first, lists as <xxxSet><item>, and
    <nextToken> while more pages remain (an unknown or foreign NextToken ->
    400 InvalidPaginationToken).  Errors: <Response><Errors><Error><Code>
    <Message></Error></Errors><RequestID></Response>, status 500 for
    InsufficientInstanceCapacity and friends and InternalError, 503 for
    RequestLimitExceeded/Unavailable, 401 AuthFailure, 403
    UnauthorizedOperation, 412 DryRunOperation, 400 for other client errors.
    Every response has x-amzn-RequestId and a Date header (fake clock).
    Request ids are deterministic: 00000000-0000-4000-8000-<n, 12 digits>
    where n is the request's sequence number in the log.

Actions: RunInstances, DescribeInstances, TerminateInstances,
DescribeInstanceTypes, DescribeInstanceTypeOfferings,
DescribeSpotPriceHistory, DescribeImages, DescribeRegions,
DescribeAvailabilityZones, DescribeVpcs, DescribeSubnets, ImportKeyPair,
DescribeKeyPairs, DeleteKeyPair, CreateSecurityGroup, DescribeSecurityGroups,
AuthorizeSecurityGroupIngress, AuthorizeSecurityGroupEgress,
DeleteSecurityGroup, CreatePlacementGroup, DescribePlacementGroups,
DeletePlacementGroup, GetConsoleOutput, AllocateAddress, AssociateAddress,
DisassociateAddress, DescribeAddresses, ReleaseAddress,
DescribeAccountAttributes.  Filter values are ORed, filters ANDed, `*` and `?`
are wildcards (`\\` escapes); an unsupported filter name -> 400
InvalidParameterValue "The filter 'X' is invalid".  Paginated: DescribeInstances,
-InstanceTypes (MaxResults 5..100), -InstanceTypeOfferings, -SpotPriceHistory
(1..1000), -Images (1..1000; botocore 1.29's model lacks MaxResults/NextToken
for it, later ones have them), -SecurityGroups, -Vpcs, -Subnets (5..1000
unless said).
DescribeKeyPairs, DescribePlacementGroups, DescribeRegions,
DescribeAvailabilityZones, DescribeAddresses and DescribeAccountAttributes
answer everything at once, as EC2 does.

The default world (deterministic; --print-seed shows all of it)
  account 123456789012.  Region number c: us-east-1 = 1, us-west-2 = 2,
  ap-northeast-1 = 3; seed ids are "<prefix>-0<c><n as 15 hex digits>".
    region          zones (zone index 0..)     VPC (CIDR 10.<c-1>.0.0/16)
    us-east-1       us-east-1a b c d           vpc-01000000000000001
    us-west-2       us-west-2a b c             vpc-02000000000000001
    ap-northeast-1  ap-northeast-1a c d        vpc-03000000000000001
  One default subnet per zone, n = zone index + 1 (us-east-1a
  subnet-01000000000000001 .. us-east-1d subnet-01000000000000004; us-west-2a
  subnet-02000000000000001 ..; ap-northeast-1a subnet-03000000000000001 ..),
  CIDR 10.<c-1>.<zone index>.0/24, defaultForAz and mapPublicIpOnLaunch
  true.  Each VPC has its `default` security group (sg-01000000000000001,
  sg-02000000000000001, sg-03000000000000001: all in from itself, all out).
  DescribeVpcs filters is-default (the real name; isDefault is refused),
  vpc-id, state, cidr, cidr-block; DescribeSubnets vpc-id,
  availability-zone, availability-zone-id, default-for-az, subnet-id,
  state, cidr-block.  Zone ids: use1-az1.., usw2-az1.., apne1-az1.. in zone
  order.
  Instance types: every aws row of the catalog, in the catalog's regions
  (a type is described and offered only in regions that have a row for it):
  vCPUs, memory, GPU (name = the catalog model up to the first '-', NVIDIA,
  count, memory), EFA when the catalog interconnect is efa, with
  maximumNetworkCards = maximumEfaInterfaces = 4 for p4d/p4de, 32 for
  p5.48xlarge and p5e, 16 for p5en, 1 for other EFA types; other types 1 card,
  efaSupported false.  A type of a --seed with gpu_count 0 has no gpuInfo,
  and its gpu_manufacturer (default NVIDIA) names the GPUs' maker.
  Offerings: every zone of those regions EXCEPT that us-east-1d offers no
  p* type (a client must check offerings; RunInstances
  there answers Unsupported).
  Images, per region, n as below (us-east-1 n=2 is ami-01000000000000002),
  in this answer order:
    n=1 Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.6 (Ubuntu 22.04) 20261020   created 2026-10-21
    n=2 Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.7 (Ubuntu 22.04) 20261118   created 2026-11-19  <- newest amazon x86_64 PyTorch
    n=3 Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.5 (Ubuntu 22.04) 20260912   created 2026-09-13
    n=4 Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.3 (Ubuntu 22.04) 20250611   created 2025-06-12,
        deprecationTime 2026-06-11: hidden unless IncludeDeprecated=true or asked by ImageId.N
    n=5 Deep Learning ARM64 OSS Nvidia Driver AMI GPU PyTorch 2.7 (Ubuntu 22.04) 20261125  arm64
    n=6 Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.7 (Ubuntu 22.04) 20261127   owner 210987654321,
        no alias (not amazon), newest of all: a trap for clients that skip Owner.1=amazon
    n=7 Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20261110           created 2026-11-11
    n=8 Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20261122           created 2026-11-23  <- newest Base
  (us-east-1: newest PyTorch ami-01000000000000002, newest Base
  ami-01000000000000008; us-west-2 ami-02000000000000002 / ..08;
  ap-northeast-1 ami-03000000000000002 / ..08.)  All: rootDeviceName
  /dev/sda1, one EBS mapping of 75 GiB (snapshot snap-0<c>..<n>), state
  available; amazon ones owner 898082745236 alias amazon.  Owner.N takes
  amazon, self, aws-marketplace or an account id.
  Spot prices: for each aws catalog row with a spot price, one price per
  offering zone: price x (1 + 0.01 x zone index), 6 decimals, timestamp
  2026-11-29T00:00:00.000Z, product description Linux/UNIX.  StartTime is
  accepted; EndTime before the timestamp leaves the price out.
  Elastic IP quota ("max_elastic_ips"): 5 per region, EC2's default (a
  number for every region, or {region: number}).

Resources and rules (beyond aws.md 2.2-2.12)
  * Ids from counters (reset by /_fake/reset): instances i-0<16 hex>
    (i-00000000000000001, ...), reservations r-0.., network interfaces
    eni-0.., volumes vol-0.., security groups sg-0.., rules sgr-0.., key pairs
    key-0.., placement groups pg-0.., spot requests sir-<8 hex>.
  * Instance addresses: primary private IP 10.<c-1>.<zone index>.<m>, m =
    the instance counter (wrapping in 1..254); secondary ENA/EFA NICs count
    down from .254 in the same /24; efa-only NICs have no IP.  A public IP
    198.51.100.<m> exists only with a single NIC and either
    AssociatePublicIpAddress=true or (not given and the subnet maps public
    IPs), and <ipAddress> shows it only while `running`.  Terminated
    instances, as on EC2, show no private IP, subnet, VPC or NICs.
  * Lifecycle: RunInstances answers `pending`.  A DescribeInstances request
    advances every instance on its page, and every instance it would select
    but for its instance-state-name filter (so polling for `running` alone
    cannot stall): pending stays pending for --pending-polls such requests,
    then shows running; shutting-down (after TerminateInstances) shows
    terminated; an instance doomed by a `partial` fault shows terminated with
    stateReason Server.InsufficientInstanceCapacity.  The instance-state-name
    filter sees the state the answer will show.  Terminated instances stay.
  * RunInstances validation order: ClientToken (<= 64 chars; the same token
    with the same parameters in the region answers the original reservation,
    current states, nothing new; with other parameters ->
    IdempotentParameterMismatch; only successful launches record a token; a
    request whose token is in flight in another request, delays included,
    waits for that one to end first, so one token never launches twice),
    MinCount/MaxCount, InstanceType, ImageId (InvalidAMIID.Malformed /
    .NotFound; an arm64 image on an x86_64 type -> InvalidParameterValue),
    NetworkInterface.N vs SecurityGroupId/SubnetId ->
    InvalidParameterCombination, the zone (Placement.AvailabilityZone, else
    the subnet's, else the first zone offering the type; a placement zone
    that differs from the subnet's -> InvalidParameterValue; not offered ->
    Unsupported), subnets (InvalidSubnetID.NotFound), security groups
    (InvalidGroup.NotFound; another VPC than the subnet's ->
    InvalidParameter), KeyName (InvalidKeyPair.NotFound), placement group
    (InvalidPlacementGroup.Unknown; a cluster group is bound to the zone of
    its first live instance, a launch into another zone answers
    InvalidParameterCombination "The placement group 'X' is in availability
    zone Z ..." -- real EC2's wording for this case varies), NICs (EFA rules;
    AssociatePublicIpAddress with more than one NIC), UserData (base64,
    <= 16384 bytes decoded), block devices (volume type, io1/io2 need Iops,
    Iops not on gp2/st1/sc1/standard, Throughput only gp3, the root volume
    not smaller than the image's -> InvalidBlockDeviceMapping), spot options
    (one-time with stop/hibernate -> InvalidParameterCombination, MaxPrice
    below the zone's price -> SpotMaxPriceTooLow), metadata options, tag
    specifications (key <= 128 and value <= 256 characters, no aws: key ->
    InvalidParameterValue; more than 50 tags a resource ->
    TagLimitExceeded).  Missing ImageId or InstanceType -> MissingParameter.
  * Security groups: a new group gets the default egress rule (all to
    0.0.0.0/0).  Duplicate rules -> InvalidPermission.Duplicate (nothing of
    the call is added).  DeleteSecurityGroup: default group -> CannotDelete;
    used by a non-terminated instance or referenced by another group's rule
    -> DependencyViolation.
  * Placement groups: a cluster group unbinds from its zone when it has no
    non-terminated instance left.  DeletePlacementGroup while a
    non-terminated instance is in it -> InvalidPlacementGroup.InUse.
  * Key pairs: fingerprint is the MD5 of the key blob as colon hex for RSA,
    base64 SHA-256 (no padding) for ED25519, as EC2 documents for imports.
  * Network interfaces (RunInstances NetworkInterface.N): InterfaceType
    interface (ENA), efa (EFA with ENA) or efa-only (EFA only, no IP
    address) -- efa and efa-only only on EFA types, at most
    maximumEfaInterfaces of them; one per (card, device) pair; card 0
    device 0 is required and may not be efa-only (InvalidParameterValue
    "The primary network interface cannot be of type efa-only.", after the
    EC2 User Guide: "You can't use an EFA-only network interface as the
    primary network interface").  AssociatePublicIpAddress with more than
    one interface -> InvalidParameterCombination (EC2's wording).
  * Elastic IPs (VPC only; ids eipalloc-0<16 hex>, eipassoc-0..; public
    addresses 203.0.113.<100 + n mod 150>): AllocateAddress beyond the
    region's quota (DescribeAccountAttributes vpc-max-elastic-ips, see the
    seed) -> AddressLimitExceeded "The maximum number of addresses has been
    reached.".  AssociateAddress needs AllocationId and exactly one of
    InstanceId / NetworkInterfaceId (else InvalidParameterCombination):
      - by InstanceId of a `pending` instance -> InvalidInstanceID "The
        pending instance 'i-..' is not in a valid state for this
        operation."; of an instance with several interfaces ->
        InvalidInstanceID "There are multiple interfaces attached to
        instance 'i-..'. Please specify an interface ID for the operation
        instead." (checked in this order);
      - by NetworkInterfaceId of an interface whose instance is `pending`
        -> IncorrectInstanceState "The pending-instance-creation instance
        to which 'eni-..' is attached is not in a valid state for this
        operation" (what EC2 answers while an instance is pending is
        behaviour reported by its users, aws.md "Public addresses on EFA
        (multi-card) nodes" section 1, not documentation; `pending` is the
        state the last DescribeInstances showed, see Lifecycle);
      - an efa-only interface -> InvalidParameterValue "You can't assign
        an IP address to an EFA-only network interface (eni-..)." (the
        User Guide's sentence; EC2's code for it is not documented);
      - an address already associated, unless AllowReassociation=true ->
        Resource.AlreadyAssociated;
      - an interface that already has another address: that one comes
        off (stays allocated), as EC2 documents.
    The address of card 0 device 0 is the instance's public IP
    (<ipAddress> while running; the interface's <association> shows
    allocationId and associationId).  DisassociateAddress by AssociationId
    (or PublicIp): unknown -> InvalidAssociationID.NotFound
    (InvalidIPAddress.NotFound).  ReleaseAddress of an associated address
    -> InvalidIPAddress.InUse; unknown -> InvalidAllocationID.NotFound.
    An instance reaching `terminated` loses its addresses (they stay
    allocated).  DescribeAddresses filters allocation-id, public-ip,
    instance-id, association-id, network-interface-id, domain,
    network-border-group, tag:K, tag-key, tag-value.
    DescribeAccountAttributes AttributeName.N of supported-platforms (VPC),
    default-vpc, max-instances (20), vpc-max-security-groups-per-interface
    (5), max-elastic-ips (5), vpc-max-elastic-ips (the quota); none given:
    all; another name -> InvalidParameterValue.

Fault rules (--faults FILE, POST /_fake/faults appends, DELETE clears)
  A JSON list of objects (a single object is taken as a list of one):
    "action":  "RunInstances", any action name, or "*"   (required)
    matchers (optional; a string or a list, `*`/`?` wildcards):
    "region"   the credential scope's region
    "zone", "instance_type", "market" ("spot"|"on-demand"): RunInstances
               only (the launch zone as resolved above); a rule with one of
               these never matches another action
    one effect:
    "code": C [, "status": S, "message": M]  answer this EC2 error
    "delay_ms": N        sleep N ms, then go on (further rules still apply)
    "drop": true         close the connection without a reply; the request
                         is not carried out
    "lose_reply": true   carry the request out, then close the connection
                         without a reply (for ClientToken retries)
    "partial": K         RunInstances succeeds but only the first K instances
                         of the call come up; the rest show terminated with
                         stateReason Server.InsufficientInstanceCapacity at
                         their first describe
    "capacity": K        RunInstances launches at most K instances (fewer
                         than MinCount -> InsufficientInstanceCapacity, nothing
                         starts)
    "body": TEXT [, "status": S, "content_type": T, "retry_after": N]
                         answer TEXT as it is with status S (default 500) and
                         Content-Type T (default text/html), no EC2 error
                         document: what a stand-in that does not implement an
                         action, or a proxy, may answer; with retry_after, a
                         Retry-After: N header too
    "empty": true        a Describe* action answers a valid empty list, as
                         EC2 may for a resource made a moment ago (its
                         Describe calls are eventually consistent)
    "times": N           apply to the first N matching requests (default:
                         every one)
    "after": N           let the first N matching requests pass untouched,
                         then apply (counts before "times")
  Rules are tried in order after authentication and the Version/Action
  checks; every matching delay applies, then the first matching other rule.
  Example: [{"action": "RunInstances", "region": "us-east-1",
  "zone": "us-east-1a", "code": "InsufficientInstanceCapacity"},
  {"action": "*", "code": "RequestLimitExceeded", "times": 1}]

Control endpoints (no signature; logged as action "_fake/<name>")
  GET    /_fake/state    JSON of the whole world (instances with id, region,
                         zone, state, type, tags, client_token, launch_index,
                         lifecycle, user_data (decoded text, gunzipped), ...; security
                         groups with rules, key pairs, placement groups,
                         vpcs, subnets, faults with what is left of times)
  POST   /_fake/reset    back to the seed (faults and the request counter stay)
  POST   /_fake/preempt  {"instance_id": ".."}: a spot interruption, the
                         instance is terminated at once with stateReason
                         Server.SpotInstanceTermination (404 unknown, 400 not
                         spot, 409 already shutting down or terminated).
                         With "notice_s": N (> 0), as EC2 does it: first the
                         notice (its IMDS spot/instance-action, --boot;
                         "action": "terminate" unless given, "time" N s
                         later), the termination N s later (real EC2: two
                         minutes), whether or not anyone asks
  POST   /_fake/finish   {"instance_id": "..", "console": "text"}: the node's
                         job ended: the text is added to its serial console
                         (GetConsoleOutput) and the instance is terminated
                         with stateReason Client.InstanceInitiatedShutdown
                         (404 unknown, 409 already shutting down or terminated)
  POST   /_fake/node     {"instance_id": "..", "public_ip": "127.0.0.1",
                         "console": "text"} (each but the id optional): give
                         a live instance that public IP (shown while
                         running; a test points it at a local sshd) and add
                         the text to its serial console, as a booting node
                         prints its SSH host keys there (404 unknown, 409
                         shutting down or terminated)
  POST   /_fake/advance  finish every transition now: pending -> running,
                         shutting-down and doomed -> terminated
  GET    /_fake/checkip  "203.0.113.7\\n" (stands in for checkip.amazonaws.com)
  GET    /_fake/boot     --boot only: {"pid", "host_ip", "subnet", "uplink",
                         "vpc_pid", "nodes": [{"instance_id", "ip",
                         "hostname", "state" (booting|up|ended), "pid",
                         "stopped_by" (null: the node itself, "api",
                         "fake"), "error", "power_log": ["EPOCH CMD ARGS"]}]}
  GET    /_fake/instance_credentials  the credentials minted for booted
                         instances with an IamInstanceProfile: [{"instance_id",
                         "profile", "role", "access_key_id",
                         "secret_access_key", "token", "issued",
                         "expiration", "node"}] ([] without --boot)
  GET    /_fake/faults   the rules with "left" (remaining times) and "hits"
  GET|POST|DELETE /_fake/servicequotas  Service Quotas' values (servicequotas.py)
  GET|POST|DELETE /_fake/iam  IAM roles, policies and instance profiles (iam.py;
                         /_fake/state has them as "iam"); RunInstances with
                         IamInstanceProfile.Name takes an existing profile only
  POST   /_fake/faults   append rules (JSON body); DELETE /_fake/faults clears
  Answers are JSON ({"ok": true} unless said), 400 {"error": ..} on bad input.

Log (--log FILE): one JSON object per line, per request, written when the
answer is decided (concurrent requests may land out of n order):
  {"n": 7, "request_id": "00000000-0000-4000-8000-000000000007",
   "action": "RunInstances", "region": "us-east-1",
   "params": {"ImageId": "ami-01000000000000002", "MinCount": "2", ...,
              "UserData": "#!/bin/bash\\n..."},
   "status": 200, "error": null, "client_token": "gpuctl-demo-1",
   "fault": null}
  n counts every request from 1 (control ones too).  action is null when
  the request had none; region is the credential scope's (null when the
  Authorization header could not be parsed); params are all form and query
  parameters except Action and Version, decoded, with UserData replaced by
  its decoded text, gunzipped when gzip (kept as sent when not valid base64); status is the HTTP
  status (0 when the connection was dropped); error the EC2 error code or
  null; client_token the ClientToken parameter or null; fault null or the
  effect applied ("code", "drop", "lose_reply", "partial", "capacity",
  "delay" -- a delay followed by another effect names the other).  An
  authentication failure adds "auth": {"reason", "canonical_request",
  "string_to_sign"} (the last two when the signature was computed).
  Control requests: {"n", "request_id", "action": "_fake/state", "region":
  null, "params": <JSON body or {}>, "status", "error": null,
  "client_token": null, "fault": null}.
"""
import argparse
import base64
import binascii
import copy
import csv
import datetime
import functools
import hashlib
import gzip
import hmac
import json
import os
import re
import sys
import threading
import time
from urllib.parse import parse_qsl, urlsplit
from xml.sax.saxutils import escape

from botocore.credentials import Credentials

import ec2_boot  # tests/fake/ec2_boot.py: --boot, instances that run their user-data
import fakeserve  # tests/fake/fakeserve.py: listen, announce the port, serve; SigV4
import servicequotas  # tests/fake/servicequotas.py: Service Quotas on the same port
import iam  # tests/fake/iam.py: IAM roles and instance profiles on the same port

API_VERSION = "2016-11-15"
NS = "http://ec2.amazonaws.com/doc/%s/" % API_VERSION
AMAZON_OWNER = "898082745236"
OTHER_OWNER = "210987654321"
SPOT_TIMESTAMP = "2026-11-29T00:00:00.000Z"
MAX_SKEW_S = 15 * 60
USER_DATA_LIMIT = 16384
CHECKIP = "203.0.113.7\n"

ARGS = None
LOCK = threading.RLock()      # guards WORLD, FAULTS, the sequence and the log
WORLD = None
FAULTS = []
INFLIGHT = {}                 # (region, ClientToken) -> lock held while a RunInstances runs
SEQ = {"n": 0}
BOOT = None                   # ec2_boot.Booter with --boot

# Default HTTP status per error code (aws.md 3.2); anything else is 400.
STATUS = {
    "InsufficientInstanceCapacity": 500, "InsufficientCapacity": 500,
    "InsufficientHostCapacity": 500, "InsufficientReservedInstanceCapacity": 500,
    "InternalError": 500, "InternalFailure": 500,
    "RequestLimitExceeded": 503, "Unavailable": 503, "ServiceUnavailable": 503,
    "AuthFailure": 401, "UnauthorizedOperation": 403, "DryRunOperation": 412,
}
DEFAULT_MESSAGES = {
    "InsufficientInstanceCapacity": "We currently do not have sufficient capacity in the Availability Zone you requested. Our system will be working on provisioning additional capacity.",
    "RequestLimitExceeded": "Request limit exceeded.",
    "InternalError": "An internal error has occurred",
    "Unavailable": "The service is unavailable. Please try again shortly.",
    "VcpuLimitExceeded": "You have requested more vCPU capacity than your current vCPU limit of 0 allows for the instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.",
    "MaxSpotInstanceCountExceeded": "Max spot instance count exceeded",
    "InstanceLimitExceeded": "You have requested more instances than your current instance limit allows for the specified instance type.",
    "UnauthorizedOperation": "You are not authorized to perform this operation.",
    "AuthFailure": "AWS was not able to validate the provided access credentials",
}
STATE_CODES = {"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48,
               "stopping": 64, "stopped": 80}
REASONS = {
    "user": ("Client.UserInitiatedShutdown", "Client.UserInitiatedShutdown: User initiated shutdown"),
    "spot": ("Server.SpotInstanceTermination", "Server.SpotInstanceTermination: Spot instance termination"),
    "capacity": ("Server.InsufficientInstanceCapacity",
                 "Server.InsufficientInstanceCapacity: Insufficient capacity to satisfy the request"),
    "guest": ("Client.InstanceInitiatedShutdown",
              "Client.InstanceInitiatedShutdown: Instance initiated shutdown"),
}


class ApiError(Exception):
    """An EC2 error answer."""

    def __init__(self, code, message, status=None):
        super().__init__(message)
        self.code, self.message = code, message
        self.status = status or STATUS.get(code, 400)


def bad_value(message):
    return ApiError("InvalidParameterValue", message)


def now():
    return time.time() + ARGS.clock_offset


def iso(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def parse_time(text, what):
    try:
        t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise bad_value("Value (%s) for parameter %s is invalid." % (text, what))
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.timestamp()


# ---------------------------------------------------------------- XML ----

def x(name, value):
    """<name>value</name>: value is text (escaped), a bool, a number, a list
    of already built children, or None (nothing at all)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        value = "true" if value else "false"
    if isinstance(value, list):
        inner = "".join(value)
        return "<%s>%s</%s>" % (name, inner, name) if inner else "<%s/>" % name
    return "<%s>%s</%s>" % (name, escape(str(value)), name)


def item_set(name, entries):
    """<name><item>..</item>...</name>; each entry a list of children or a
    plain value."""
    return x(name, [x("item", e) for e in entries])


def tag_set(tags):
    return item_set("tagSet", [[x("key", k), x("value", v)] for k, v in tags.items()])


def ok_xml(action, request_id, body):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<%sResponse xmlns="%s">%s%s</%sResponse>'
            % (action, NS, x("requestId", request_id), body, action))


def error_xml(code, message, request_id):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>%s%s</Error></Errors>%s</Response>'
            % (x("Code", code), x("Message", message), x("RequestID", request_id)))


# ----------------------------------------------------------- params ----

class Params:
    """The decoded Query API parameters of one request (or one member)."""

    def __init__(self, d, prefix=""):
        self.d, self.prefix = d, prefix

    def get(self, name, default=None):
        return self.d.get(name, default)

    def has(self, name):
        return name in self.d

    def indexes(self, prefix):
        out = set()
        for k in self.d:
            if k.startswith(prefix + "."):
                head = k[len(prefix) + 1:].split(".", 1)[0]
                if not head.isdigit() or int(head) < 1:
                    raise ApiError("UnknownParameter", "The parameter %s%s is not recognized" % (self.prefix, k))
                out.add(int(head))
        return sorted(out)

    def list(self, prefix):
        return [self.d["%s.%d" % (prefix, n)] for n in self.indexes(prefix) if "%s.%d" % (prefix, n) in self.d]

    def sub(self, prefix, members=None):
        d = {k[len(prefix) + 1:]: v for k, v in self.d.items() if k.startswith(prefix + ".")}
        if members is not None:
            for k in d:
                if k.split(".", 1)[0] not in members:
                    raise ApiError("UnknownParameter", "The parameter %s%s.%s is not recognized" % (self.prefix, prefix, k))
        return Params(d, self.prefix + prefix + ".")

    def structs(self, prefix, members):
        return [self.sub("%s.%d" % (prefix, n), members) for n in self.indexes(prefix)]

    def bool(self, name, default=None):
        v = self.d.get(name)
        if v is None:
            return default
        if v.lower() in ("true", "false"):
            return v.lower() == "true"
        raise bad_value("Invalid value '%s' for %s%s: must be true or false" % (v, self.prefix, name))

    def int(self, name, default=None, lo=None, hi=None):
        v = self.d.get(name)
        if v is None:
            return default
        try:
            n = int(v)
        except ValueError:
            raise bad_value("Invalid value '%s' for %s%s: not an integer" % (v, self.prefix, name))
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            expect = ("between %d and %d" % (lo, hi)) if hi is not None else ("of at least %d" % lo)
            raise bad_value("Value (%s) for parameter %s%s is invalid. Expecting a value %s."
                            % (v, self.prefix, name, expect))
        return n

    def require(self, name):
        v = self.d.get(name)
        if v is None or v == "":
            raise ApiError("MissingParameter", "The request must contain the parameter %s%s" % (self.prefix, name))
        return v


def tags_from_specs(p, allowed_types):
    """TagSpecification.N -> {resource type: {key: value}}."""
    out = {}
    for spec in p.structs("TagSpecification", {"ResourceType", "Tag"}):
        rtype = spec.require("ResourceType")
        if rtype not in allowed_types:
            raise bad_value("'%s' is not a valid taggable resource type for this operation." % rtype)
        if rtype in out:
            raise bad_value("The same resource type may not be specified more than once in tag specifications (%s)" % rtype)
        tags = {}
        for t in spec.structs("Tag", {"Key", "Value"}):
            key = t.require("Key")
            value = t.get("Value", "")
            if key.lower().startswith("aws:"):
                raise bad_value("Tag keys starting with 'aws:' are reserved for internal use")
            if len(key) > 128 or len(value) > 256:
                raise bad_value("Tag key or value too long: %s" % key)
            if key in tags:
                raise bad_value("Duplicate tag key '%s' specified." % key)
            tags[key] = value
        # EC2 error codes: TagLimitExceeded, at most 50 tags a resource
        if len(tags) > 50:
            raise ApiError("TagLimitExceeded", "The limit on the number of tags that you can "
                           "assign to the specified resource has been reached (%d > 50)" % len(tags))
        out[rtype] = tags
    return out


# --------------------------------------------------------- filters ----

@functools.lru_cache(maxsize=1024)
def wildcard(pattern):
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "*" else "." if c == "?" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.S)


def wild_match(pattern, value):
    return wildcard(pattern).fullmatch(value) is not None


def parse_filters(p, allowed, tags=True):
    out = []
    for f in p.structs("Filter", {"Name", "Value"}):
        name = f.require("Name")
        values = f.list("Value")
        known = name in allowed or (tags and (name.startswith("tag:") or name in ("tag-key", "tag-value")))
        if not known:
            raise bad_value("The filter '%s' is invalid" % name)
        if not values:
            raise bad_value("The filter '%s' requires at least one value" % name)
        out.append((name, values))
    return out


def as_strings(v):
    if v is None:
        return []
    if isinstance(v, (list, tuple, set)):
        return [s for e in v for s in as_strings(e)]
    if isinstance(v, bool):
        return ["true" if v else "false"]
    return [str(v)]


def filters_match(obj, filters, fields, tags_of=None):
    """fields: filter name -> function(obj) giving a value or list."""
    for name, patterns in filters:
        if name.startswith("tag:"):
            v = (tags_of(obj) or {}).get(name[4:]) if tags_of else None
        elif name == "tag-key":
            v = list((tags_of(obj) or {}).keys()) if tags_of else None
        elif name == "tag-value":
            v = list((tags_of(obj) or {}).values()) if tags_of else None
        else:
            v = fields[name](obj)
        values = as_strings(v)
        if not any(wild_match(pat, s) for pat in patterns for s in values):
            return False
    return True


def encode_token(ctx, offset):
    raw = json.dumps({"a": ctx.action, "r": ctx.region["name"], "o": offset}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(ctx, token):
    if not token:
        return 0
    try:
        d = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if d["a"] == ctx.action and d["r"] == ctx.region["name"] and isinstance(d["o"], int) and d["o"] >= 0:
            return d["o"]
    except (ValueError, KeyError, TypeError, binascii.Error):
        pass
    raise ApiError("InvalidPaginationToken", "The specified pagination token is not valid or is expired.")


def paginate(ctx, rows, lo=5, hi=1000):
    """(page, next token or None) of rows for this request."""
    limit = ctx.p.int("MaxResults", lo=lo, hi=hi)
    size = limit if limit is not None else ARGS.page_size
    start = decode_token(ctx, ctx.p.get("NextToken"))
    if not size:
        return rows[start:], None
    page = rows[start:start + size]
    more = start + size < len(rows)
    return page, (encode_token(ctx, start + size) if more else None)


# ----------------------------------------------------------- world ----

def num(text, default=0.0):
    try:
        return float(text)
    except (TypeError, ValueError):
        return default


def network_cards(itype, efa):
    family = itype.split(".", 1)[0]
    if not efa:
        return 1
    if family in ("p4d", "p4de"):
        return 4
    if itype == "p5.48xlarge" or family == "p5e":
        return 32
    if family == "p5en":
        return 16
    return 1


def load_catalog(path):
    """aws rows of the catalog -> {type: facts}, in catalog order."""
    types = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["provider"] != "aws":
                continue
            name = row["instance_type"]
            t = types.get(name)
            if t is None:
                efa = row["interconnect"] == "efa"
                cards = network_cards(name, efa)
                gbps = row["interconnect_gbps"]
                t = types[name] = {
                    "vcpus": int(num(row["vcpus"])),
                    "memory_mib": int(num(row["memory_gib"]) * 1024),
                    "gpu_name": row["gpu_model"].split("-", 1)[0],
                    "gpu_count": int(num(row["gpu_count"])),
                    "gpu_memory_mib": int(num(row["gpu_memory_gib"]) * 1024),
                    "efa": efa,
                    "max_network_cards": cards,
                    "max_efa_interfaces": cards if efa else 0,
                    "network_performance": ("%s Gigabit" % gbps) if gbps else "Up to 25 Gigabit",
                    "architecture": "x86_64",
                    "regions": [],
                    "spot": {},
                }
            t["regions"].append(row["region"])
            if row["price_spot_usd_hr"]:
                t["spot"][row["region"]] = num(row["price_spot_usd_hr"])
    return types


def rid(prefix, c, n):
    return "%s-0%d%015x" % (prefix, c, n)


IMAGES = [  # (n, name, creation date, architecture, owner, deprecation time)
    (1, "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.6 (Ubuntu 22.04) 20261020", "2026-10-21T09:14:05.000Z", "x86_64", AMAZON_OWNER, None),
    (2, "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.7 (Ubuntu 22.04) 20261118", "2026-11-19T07:32:41.000Z", "x86_64", AMAZON_OWNER, None),
    (3, "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.5 (Ubuntu 22.04) 20260912", "2026-09-13T11:02:17.000Z", "x86_64", AMAZON_OWNER, None),
    (4, "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.3 (Ubuntu 22.04) 20250611", "2025-06-12T05:45:00.000Z", "x86_64", AMAZON_OWNER, "2026-06-11T00:00:00.000Z"),
    (5, "Deep Learning ARM64 OSS Nvidia Driver AMI GPU PyTorch 2.7 (Ubuntu 22.04) 20261125", "2026-11-26T03:20:00.000Z", "arm64", AMAZON_OWNER, None),
    (6, "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.7 (Ubuntu 22.04) 20261127", "2026-11-27T18:00:00.000Z", "x86_64", OTHER_OWNER, None),
    (7, "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20261110", "2026-11-11T10:00:00.000Z", "x86_64", AMAZON_OWNER, None),
    (8, "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20261122", "2026-11-23T10:00:00.000Z", "x86_64", AMAZON_OWNER, None),
]
REGIONS = [("us-east-1", "use1", "abcd"), ("us-west-2", "usw2", "abc"), ("ap-northeast-1", "apne1", "acd")]


def default_seed(catalog_path):
    regions = []
    for c, (name, short, letters) in enumerate(REGIONS, 1):
        zones = [name + l for l in letters]
        images = []
        for n, iname, created, arch, owner, deprecated in IMAGES:
            images.append({
                "id": rid("ami", c, n), "name": iname, "description": iname.replace(" 2026", " built 2026"),
                "owner_id": owner, "owner_alias": "amazon" if owner == AMAZON_OWNER else None,
                "architecture": arch, "creation_date": created, "deprecation_time": deprecated,
                "state": "available", "root_device_name": "/dev/sda1", "volume_size": 75,
                "snapshot_id": rid("snap", c, n),
            })
        regions.append({
            "name": name,
            "zones": zones,
            "zone_ids": ["%s-az%d" % (short, i + 1) for i in range(len(zones))],
            "vpc": {"id": rid("vpc", c, 1), "cidr": "10.%d.0.0/16" % (c - 1)},
            "default_security_group": rid("sg", c, 1),
            "subnets": [{"id": rid("subnet", c, i + 1), "zone": z, "cidr": "10.%d.%d.0/24" % (c - 1, i),
                         "default_for_az": True, "map_public_ip": True} for i, z in enumerate(zones)],
            "unoffered": {"us-east-1d": ["p*"]} if name == "us-east-1" else {},
            "images": images,
        })
    return {
        "account_id": "123456789012",
        "regions": regions,
        "instance_types": load_catalog(catalog_path),
        "spot_timestamp": SPOT_TIMESTAMP,
        "max_elastic_ips": 5,
    }


class World:
    """Everything the fake knows; every method runs under LOCK."""

    def __init__(self, seed):
        self.seed = copy.deepcopy(seed)
        self.account = seed["account_id"]
        self.regions = {}
        for i, r in enumerate(self.seed["regions"]):
            r["index"] = i
            self.regions[r["name"]] = r
        self.types = self.seed["instance_types"]
        self.counters = {}
        self.instances = {}        # id -> instance dict, launch order
        self.reservations = {}     # id -> reservation dict
        self.tokens = {}           # (region, client token) -> (fingerprint, reservation id)
        self.key_pairs = {}        # (region, name) -> key pair
        self.security_groups = {}  # id -> group
        self.placement_groups = {}  # (region, name) -> group
        self.addresses = {}        # allocation id -> Elastic IP
        for r in self.regions.values():
            sg = r["default_security_group"]
            self.security_groups[sg] = {
                "id": sg, "region": r["name"], "name": "default", "vpc_id": r["vpc"]["id"],
                "description": "default VPC security group", "tags": {}, "default": True,
                "rules": [self.rule(sg, False, "-1", None, None, None, sg),
                          self.rule(sg, True, "-1", None, None, "0.0.0.0/0", None)],
            }

    def next(self, kind):
        self.counters[kind] = self.counters.get(kind, 0) + 1
        return self.counters[kind]

    def new_id(self, prefix):
        return "%s-0%016x" % (prefix, self.next(prefix))

    def rule(self, group_id, egress, proto, lo, hi, cidr, group, description=None):
        return {"id": self.new_id("sgr"), "group_id": group_id, "egress": egress, "protocol": proto,
                "from": lo, "to": hi, "cidr": cidr, "group": group, "description": description}

    def offered(self, itype, region, zone):
        t = self.types.get(itype)
        if t is None or region["name"] not in t["regions"]:
            return False
        return not any(wild_match(p, itype) for p in region["unoffered"].get(zone, []))

    def subnet(self, region, subnet_id):
        for s in region["subnets"]:
            if s["id"] == subnet_id:
                return s
        return None

    def default_subnet(self, region, zone):
        for s in region["subnets"]:
            if s["zone"] == zone and s.get("default_for_az"):
                return s
        for s in region["subnets"]:
            if s["zone"] == zone:
                return s
        return None

    def live(self, inst):
        return inst["state"] != "terminated"

    def default_sg(self, region):
        return region["default_security_group"]

    def max_elastic_ips(self, region):
        """The region's Elastic IP quota (seed "max_elastic_ips": a number
        for every region or {region: number}; EC2's default is 5)."""
        q = self.seed.get("max_elastic_ips", 5)
        return q.get(region["name"], 5) if isinstance(q, dict) else q

    def nic(self, eni):
        """The network interface eni of a live instance, or None."""
        for inst in self.instances.values():
            if not self.live(inst):
                continue
            for nic in inst["network_interfaces"]:
                if nic["id"] == eni:
                    return nic
        return None

    def disassociate(self, a):
        if a["network_interface_id"]:
            inst = self.instances.get(a["instance_id"])
            nic = next((n for n in inst["network_interfaces"] if n["id"] == a["network_interface_id"]), None) \
                if inst else None
            if nic and nic["card"] == 0 and nic["device"] == 0 and inst["public_ip"] == a["public_ip"]:
                inst["public_ip"] = None
        a["instance_id"] = a["network_interface_id"] = a["association_id"] = None

    def spot_price(self, region, itype, zone):
        """The zone's spot price: catalog price x (1 + 0.01 x zone index)."""
        t = self.types.get(itype)
        if t is None or region["name"] not in t["spot"] or zone not in region["zones"]:
            return None
        return round(t["spot"][region["name"]] * (1 + 0.01 * region["zones"].index(zone)), 6)

    # -- instance state transitions (see the module docstring) --
    def peek(self, inst):
        if inst["state"] == "shutting-down" or (inst["state"] == "pending" and inst["doomed"]):
            return "terminated"
        if inst["state"] == "pending" and inst["pending_seen"] >= ARGS.pending_polls:
            return "running"
        return inst["state"]

    def advance(self, inst, force=False):
        if inst["state"] == "pending" and inst["doomed"]:
            self.set_state(inst, "terminated", "capacity")
        elif inst["state"] == "shutting-down":
            self.set_state(inst, "terminated")
        elif inst["state"] == "pending":
            if force or inst["pending_seen"] >= ARGS.pending_polls:
                self.set_state(inst, "running")
            else:
                inst["pending_seen"] += 1

    def set_state(self, inst, state, reason=None):
        inst["state"] = state
        if reason:
            inst["state_reason"] = reason
        if state == "running":
            inst["metadata"]["state"] = "applied"
        if state == "terminated":
            self.release_placement(inst)
            # an Elastic IP comes off a terminated instance (it stays allocated)
            for a in self.addresses.values():
                if a["instance_id"] == inst["id"]:
                    self.disassociate(a)
            inst["public_ip"] = None
        if BOOT is not None:   # --boot: the node boots (running) or stops
            BOOT.on_state(inst, state)

    def release_placement(self, inst):
        pg = self.placement_groups.get((inst["region"], inst["placement_group"])) if inst["placement_group"] else None
        if pg and pg["zone"] and not any(
                i["placement_group"] == pg["name"] and i["region"] == pg["region"] and self.live(i)
                for i in self.instances.values()):
            pg["zone"] = None

    def state_json(self):
        return {
            "account_id": self.account,
            "instances": [dict((k, v) for k, v in i.items() if k not in ("params_fingerprint",))
                          for i in self.instances.values()],
            "reservations": list(self.reservations.values()),
            "security_groups": list(self.security_groups.values()),
            "key_pairs": list(self.key_pairs.values()),
            "placement_groups": list(self.placement_groups.values()),
            "addresses": list(self.addresses.values()),
            "vpcs": [dict(r["vpc"], region=r["name"]) for r in self.regions.values()],
            "subnets": [dict(s, region=r["name"]) for r in self.regions.values() for s in r["subnets"]],
            "faults": FAULTS,
            "iam": iam.state(),
            "requests": SEQ["n"],
        }


# --------------------------------------------------------- actions ----

ACTIONS = {}
COMMON_PARAMS = {"Action", "Version", "DryRun"}
DESCRIBE = {"Filter", "MaxResults", "NextToken"}


def action(name, params=(), mutates=True):
    """Register a handler; params are the top-level names it takes."""
    def deco(fn):
        ACTIONS[name] = (fn, set(params) | COMMON_PARAMS, mutates)
        return fn
    return deco


class Ctx:
    def __init__(self, action_name, region, params, request_id):
        self.action, self.region, self.p, self.request_id = action_name, region, params, request_id
        self.world = WORLD
        self.partial = None      # from a fault: only the first K instances come up
        self.capacity = None     # from a fault: at most K instances

    def dry_run_point(self):
        if self.p.bool("DryRun", False):
            raise ApiError("DryRunOperation", "Request would have succeeded, but DryRun flag is set.")


def state_xml(name, state):
    return x(name, [x("code", STATE_CODES[state]), x("name", state)])


def ip_octet(n):
    return (n - 1) % 254 + 1


# ---- instances ----

INSTANCE_ID = re.compile(r"^i-[0-9a-f]{8}([0-9a-f]{9})?$")


def check_instance_ids(ids):
    for i in ids:
        if not INSTANCE_ID.match(i):
            raise ApiError("InvalidInstanceID.Malformed", 'Invalid id: "%s"' % i)


def missing_ids_error(code, what, missing):
    if len(missing) == 1:
        return ApiError(code, "The %s ID '%s' does not exist" % (what, missing[0]))
    return ApiError(code, "The %s IDs '%s' do not exist" % (what, ", ".join(missing)))


def instance_xml(w, inst):
    region = w.regions[inst["region"]]
    state = inst["state"]
    live = state != "terminated"
    groups = [[x("groupId", g), x("groupName", w.security_groups[g]["name"] if g in w.security_groups else None)]
              for g in inst["security_groups"]]
    if region["name"] == "us-east-1":
        private_dns = "ip-%s.ec2.internal" % inst["private_ip"].replace(".", "-")
    else:
        private_dns = "ip-%s.%s.compute.internal" % (inst["private_ip"].replace(".", "-"), region["name"])
    public = inst["public_ip"] if state == "running" else None
    public_dns = ("ec2-%s.compute-1.amazonaws.com" % public.replace(".", "-")) if public else ""
    nics = []
    if live:
        for nic in inst["network_interfaces"]:
            assoc = None
            eip = next((a for a in w.addresses.values() if a["network_interface_id"] == nic["id"]), None)
            if eip and state == "running":
                assoc = [x("publicIp", eip["public_ip"]), x("publicDnsName", public_dns if eip["public_ip"] == public else ""),
                         x("ipOwnerId", w.account), x("allocationId", eip["id"]),
                         x("associationId", eip["association_id"])]
            elif public and nic["device"] == 0 and nic["card"] == 0:
                assoc = [x("publicIp", public), x("publicDnsName", public_dns), x("ipOwnerId", "amazon")]
            nics.append([
                x("networkInterfaceId", nic["id"]), x("subnetId", nic["subnet_id"]), x("vpcId", nic["vpc_id"]),
                x("description", ""), x("ownerId", w.account), x("status", "in-use"),
                x("macAddress", nic["mac"]), x("privateIpAddress", nic["private_ip"]),
                x("sourceDestCheck", True),
                item_set("groupSet", [[x("groupId", g), x("groupName", w.security_groups[g]["name"] if g in w.security_groups else None)]
                                      for g in nic["security_groups"]]),
                x("attachment", [x("attachmentId", nic["id"].replace("eni-", "eni-attach-")),
                                 x("deviceIndex", nic["device"]), x("networkCardIndex", nic["card"]),
                                 x("status", "attached" if state == "running" else "attaching"),
                                 x("attachTime", inst["launch_time"]),
                                 x("deleteOnTermination", nic["delete_on_termination"])]),
                x("association", assoc) if assoc else "",
                x("interfaceType", nic["type"]),
            ])
    reason = None
    if inst["state_reason"] and state in ("shutting-down", "terminated"):
        reason = REASONS[inst["state_reason"]]
    elif state == "pending":
        reason = ("pending", "pending")
    transition = ""
    if inst["state_reason"] == "user" and state in ("shutting-down", "terminated"):
        transition = "User initiated (%s)" % inst["terminate_time"]
    elif reason and state == "terminated":
        transition = reason[1]
    meta = inst["metadata"]
    body = [
        x("instanceId", inst["id"]), x("imageId", inst["image_id"]), state_xml("instanceState", state),
        x("privateDnsName", private_dns if live else ""), x("dnsName", public_dns),
        x("reason", transition), x("keyName", inst["key_name"]), x("amiLaunchIndex", inst["launch_index"]),
        item_set("productCodes", []), x("instanceType", inst["type"]), x("launchTime", inst["launch_time"]),
        x("placement", [x("availabilityZone", inst["zone"]), x("groupName", inst["placement_group"] or ""),
                        x("tenancy", inst["tenancy"])]),
        x("monitoring", [x("state", "disabled")]),
        x("subnetId", inst["subnet_id"] if live else None), x("vpcId", inst["vpc_id"] if live else None),
        x("privateIpAddress", inst["private_ip"] if live else None), x("ipAddress", public),
        x("sourceDestCheck", True if live else None),
        item_set("groupSet", groups),
        x("stateReason", [x("code", reason[0]), x("message", reason[1])]) if reason else "",
        x("architecture", w.types[inst["type"]]["architecture"]), x("rootDeviceType", "ebs"),
        x("rootDeviceName", inst["root_device_name"]),
        item_set("blockDeviceMapping", [] if not live else [
            [x("deviceName", b["device"]), x("ebs", [x("volumeId", b["volume_id"]),
                                                     x("status", "attached" if state == "running" else "attaching"),
                                                     x("attachTime", inst["launch_time"]),
                                                     x("deleteOnTermination", b["delete_on_termination"])])]
            for b in inst["block_devices"]]),
        x("virtualizationType", "hvm"), x("clientToken", inst["client_token"] or ""),
        x("instanceLifecycle", inst["lifecycle"]), x("spotInstanceRequestId", inst["spot_request_id"]),
        tag_set(inst["tags"]) if inst["tags"] else "",
        x("iamInstanceProfile", [x("arn", inst["iam_instance_profile"]), x("id", "AIPAFAKEPROFILE")])
        if inst["iam_instance_profile"] else "",
        x("hypervisor", "xen"), item_set("networkInterfaceSet", nics),
        x("ebsOptimized", inst["ebs_optimized"]), x("enaSupport", True),
        x("metadataOptions", [x("state", meta["state"]), x("httpTokens", meta["http_tokens"]),
                              x("httpPutResponseHopLimit", meta["hop_limit"]),
                              x("httpEndpoint", meta["http_endpoint"]),
                              x("instanceMetadataTags", meta["instance_metadata_tags"])]),
        x("platformDetails", "Linux/UNIX"), x("usageOperation", "RunInstances"),
    ]
    return body


def reservation_xml(w, res, instances):
    return [x("reservationId", res["id"]), x("ownerId", w.account), item_set("groupSet", []),
            item_set("instancesSet", [instance_xml(w, i) for i in instances])]


INSTANCE_FILTERS = {
    "instance-state-name": lambda i: i["_shown"],
    "instance-state-code": lambda i: STATE_CODES[i["_shown"]],
    "client-token": lambda i: i["client_token"],
    "availability-zone": lambda i: i["zone"],
    "instance-type": lambda i: i["type"],
    "placement-group-name": lambda i: i["placement_group"],
    "instance-lifecycle": lambda i: i["lifecycle"],
    "instance-id": lambda i: i["id"],
    "image-id": lambda i: i["image_id"],
    "key-name": lambda i: i["key_name"],
    "subnet-id": lambda i: i["subnet_id"],
    "vpc-id": lambda i: i["vpc_id"],
    "reservation-id": lambda i: i["reservation_id"],
    "private-ip-address": lambda i: i["private_ip"],
    "ip-address": lambda i: i["public_ip"] if i["_shown"] == "running" else None,
    "instance.group-id": lambda i: i["security_groups"],
    "network-interface.interface-type": lambda i: [n["type"] for n in i["network_interfaces"]],
    "spot-instance-request-id": lambda i: i["spot_request_id"],
}


@action("DescribeInstances", DESCRIBE | {"InstanceId"}, mutates=False)
def describe_instances(ctx):
    w, p = ctx.world, ctx.p
    ids = p.list("InstanceId")
    if ids and p.has("MaxResults"):
        raise ApiError("InvalidParameterCombination",
                       "The parameter instancesSet cannot be used with the parameter maxResults")
    check_instance_ids(ids)
    filters = parse_filters(p, INSTANCE_FILTERS)
    mine = [i for i in w.instances.values() if i["region"] == ctx.region["name"]]
    if ids:
        known = {i["id"] for i in mine}
        missing = [i for i in ids if i not in known]
        if missing:
            raise missing_ids_error("InvalidInstanceID.NotFound", "instance", missing)
        mine = [i for i in mine if i["id"] in ids]
    state_filters = [f for f in filters if f[0] in ("instance-state-name", "instance-state-code")]
    other_filters = [f for f in filters if f not in state_filters]
    selected, excluded_by_state = [], []
    try:
        for inst in mine:
            inst["_shown"] = w.peek(inst)   # the state this answer will show
            if not filters_match(inst, other_filters, INSTANCE_FILTERS, lambda i: i["tags"]):
                continue
            if filters_match(inst, state_filters, INSTANCE_FILTERS):
                selected.append(inst)
            else:
                excluded_by_state.append(inst)
    finally:
        for inst in mine:
            inst.pop("_shown", None)
    page, token = paginate(ctx, selected)
    for inst in page + excluded_by_state:
        w.advance(inst)
    groups = []   # consecutive instances of one reservation share an item
    for inst in page:
        if groups and groups[-1][0] == inst["reservation_id"]:
            groups[-1][1].append(inst)
        else:
            groups.append((inst["reservation_id"], [inst]))
    body = item_set("reservationSet", [reservation_xml(w, w.reservations[r], insts) for r, insts in groups])
    return body + x("nextToken", token)


@action("TerminateInstances", {"InstanceId"})
def terminate_instances(ctx):
    w = ctx.world
    ids = ctx.p.list("InstanceId")
    if not ids:
        raise ApiError("MissingParameter", "The request must contain the parameter InstanceId")
    check_instance_ids(ids)
    missing = [i for i in ids if i not in w.instances or w.instances[i]["region"] != ctx.region["name"]]
    if missing:
        raise missing_ids_error("InvalidInstanceID.NotFound", "instance", missing)
    ctx.dry_run_point()
    items = []
    for iid in ids:
        inst = w.instances[iid]
        before = inst["state"]
        if before in ("pending", "running", "stopping", "stopped"):
            inst["doomed"] = False
            inst["terminate_time"] = datetime.datetime.fromtimestamp(now(), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S GMT")
            w.set_state(inst, "shutting-down", "user")
        items.append([x("instanceId", iid), state_xml("currentState", inst["state"]), state_xml("previousState", before)])
    return item_set("instancesSet", items)


# ---- RunInstances ----

RUN_PARAMS = {
    "ImageId", "InstanceType", "MinCount", "MaxCount", "KeyName", "SecurityGroupId", "SecurityGroup",
    "SubnetId", "UserData", "ClientToken", "TagSpecification", "BlockDeviceMapping", "Placement",
    "NetworkInterface", "InstanceMarketOptions", "MetadataOptions", "IamInstanceProfile", "EbsOptimized",
    "InstanceInitiatedShutdownBehavior", "Monitoring", "DisableApiTermination", "DisableApiStop",
    "PrivateIpAddress", "CreditSpecification", "CpuOptions", "HibernationOptions", "EnclaveOptions",
    "MaintenanceOptions", "PrivateDnsNameOptions", "CapacityReservationSpecification", "AdditionalInfo",
}
NIC_MEMBERS = {"DeviceIndex", "NetworkCardIndex", "InterfaceType", "SubnetId", "SecurityGroupId",
               "DeleteOnTermination", "AssociatePublicIpAddress", "Description", "PrivateIpAddress",
               "SecondaryPrivateIpAddressCount", "NetworkInterfaceId", "Ipv6AddressCount",
               "AssociateCarrierIpAddress", "Ipv4PrefixCount", "Ipv6PrefixCount", "PrivateIpAddresses",
               "Ipv6Addresses", "Ipv4Prefix", "Ipv6Prefix"}
VOLUME_TYPES = {"gp2", "gp3", "io1", "io2", "st1", "sc1", "standard"}
RUN_TAG_TYPES = {"instance", "volume", "network-interface", "spot-instances-request", "elastic-gpu"}


def fingerprint(p):
    return hashlib.sha256(json.dumps(sorted(p.d.items())).encode()).hexdigest()


def resolve_zone(ctx, strict):
    """The launch zone: Placement.AvailabilityZone, else the subnet's, else
    the first zone offering the type.  strict=False never raises (faults)."""
    w, p, region = ctx.world, ctx.p, ctx.region
    itype = p.get("InstanceType")
    asked = p.get("Placement.AvailabilityZone")
    subnet_id = p.get("SubnetId") or p.get("NetworkInterface.1.SubnetId")
    subnet = w.subnet(region, subnet_id) if subnet_id else None
    if subnet_id and subnet is None:
        if strict:
            raise ApiError("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist" % subnet_id)
        return None
    if asked:
        if asked not in region["zones"]:
            if strict:
                raise bad_value("Invalid availability zone: [%s]" % asked)
            return None
        if subnet and subnet["zone"] != asked:
            if strict:
                raise bad_value("Value (%s) for parameter availabilityZone is invalid. Subnet '%s' is in the "
                                "availability zone %s" % (asked, subnet["id"], subnet["zone"]))
            return None
        return asked
    if subnet:
        return subnet["zone"]
    for z in region["zones"]:
        if w.offered(itype, region, z):
            return z
    if strict:
        raise ApiError("Unsupported", "Your requested instance type (%s) is not supported in your requested "
                                      "region (%s)." % (itype, region["name"]))
    return None


def check_offered(w, region, itype, zone):
    if w.offered(itype, region, zone):
        return
    others = [z for z in region["zones"] if w.offered(itype, region, z)]
    msg = "Your requested instance type (%s) is not supported in your requested Availability Zone (%s)." % (itype, zone)
    if others:
        msg += " Please retry your request by not specifying an Availability Zone or choosing %s." % ", ".join(others)
    raise ApiError("Unsupported", msg)


def find_group(w, region, gid):
    g = w.security_groups.get(gid)
    if g is None or g["region"] != region["name"]:
        raise ApiError("InvalidGroup.NotFound", "The security group '%s' does not exist" % gid)
    return g


def parse_nics(ctx, itype_facts, zone):
    """NetworkInterface.N -> NIC specs sorted by (card, device), or None."""
    w, p, region = ctx.world, ctx.p, ctx.region
    nic_specs = p.structs("NetworkInterface", NIC_MEMBERS)
    if not nic_specs:
        return None
    if len(nic_specs) > 1 and any(s.has("AssociatePublicIpAddress") for s in nic_specs):
        raise ApiError("InvalidParameterCombination",
                       "The associatePublicIPAddress parameter cannot be specified when launching with multiple network interfaces.")
    nics, seen, efa_count = [], set(), 0
    for s in nic_specs:
        if s.has("NetworkInterfaceId"):
            raise bad_value("Attaching existing network interfaces is not supported by this fake")
        if not s.has("DeviceIndex"):
            raise ApiError("MissingParameter", "Each network interface requires a device index.")
        device = s.int("DeviceIndex", lo=0, hi=31)
        card = s.int("NetworkCardIndex", 0, lo=0)
        kind = s.get("InterfaceType", "interface")
        if kind not in ("interface", "efa", "efa-only"):
            raise bad_value("Value (%s) for parameter interfaceType is invalid." % kind)
        if card >= itype_facts["max_network_cards"]:
            raise bad_value("Network card index %d is not valid: the instance type supports %d network card(s)."
                            % (card, itype_facts["max_network_cards"]))
        if kind != "interface":
            if not itype_facts["efa"]:
                raise bad_value("Interface type %s is not supported for the requested instance type." % kind)
            efa_count += 1
        if (card, device) in seen:
            raise bad_value("Each network interface requires a unique device index and network card index pair.")
        seen.add((card, device))
        subnet_id = s.get("SubnetId")
        subnet = w.subnet(region, subnet_id) if subnet_id else w.default_subnet(region, zone)
        if subnet is None:
            raise ApiError("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist" % subnet_id)
        if subnet["zone"] != zone:
            raise bad_value("The network interfaces must all be in subnets of availability zone %s; subnet '%s' "
                            "is in %s" % (zone, subnet["id"], subnet["zone"]))
        sgs = s.list("SecurityGroupId") or [w.default_sg(region)]
        for g in sgs:
            if find_group(w, region, g)["vpc_id"] != region["vpc"]["id"]:
                raise ApiError("InvalidParameter", "Security group %s and subnet %s belong to different networks."
                               % (g, subnet["id"]))
        nics.append({"type": kind, "card": card, "device": device, "subnet_id": subnet["id"],
                     "subnet": subnet, "security_groups": sgs,
                     "delete_on_termination": s.bool("DeleteOnTermination", True),
                     "public": s.bool("AssociatePublicIpAddress")})
    if efa_count > itype_facts["max_efa_interfaces"]:
        raise bad_value("The instance type supports at most %d EFA interface(s); %d were requested."
                        % (itype_facts["max_efa_interfaces"], efa_count))
    if (0, 0) not in seen:
        raise bad_value("A network interface with device index 0 on network card 0 is required.")
    if any(n["card"] == 0 and n["device"] == 0 and n["type"] == "efa-only" for n in nics):
        raise bad_value("The primary network interface cannot be of type efa-only.")
    nics.sort(key=lambda n: (n["card"], n["device"]))
    return nics


def parse_block_devices(ctx, image):
    out = []
    for s in ctx.p.structs("BlockDeviceMapping", {"DeviceName", "Ebs", "NoDevice", "VirtualName"}):
        device = s.require("DeviceName")
        ebs = s.sub("Ebs", {"VolumeSize", "VolumeType", "Iops", "Throughput", "DeleteOnTermination",
                            "Encrypted", "KmsKeyId", "SnapshotId", "OutpostArn"})
        vtype = ebs.get("VolumeType", "gp3" if device == image["root_device_name"] else "gp2")
        if vtype not in VOLUME_TYPES:
            raise bad_value("Value (%s) for parameter volumeType is invalid. Expecting one of %s."
                            % (vtype, ", ".join(sorted(VOLUME_TYPES))))
        size = ebs.int("VolumeSize", lo=1, hi=65536)
        iops = ebs.int("Iops", lo=100, hi=256000)
        throughput = ebs.int("Throughput", lo=125, hi=1000)
        if vtype in ("io1", "io2") and iops is None:
            raise ApiError("InvalidParameterCombination", "The parameter iops must be specified for %s volumes." % vtype)
        if vtype in ("gp2", "st1", "sc1", "standard") and iops is not None:
            raise ApiError("InvalidParameterCombination", "The parameter iops is not supported for %s volumes." % vtype)
        if throughput is not None and vtype != "gp3":
            raise ApiError("InvalidParameterCombination", "The parameter throughput is only supported for gp3 volumes.")
        if device == image["root_device_name"] and size is not None and size < image["volume_size"]:
            raise ApiError("InvalidBlockDeviceMapping", "Volume of size %dGB is smaller than snapshot '%s', expect size >= %dGB"
                           % (size, image["snapshot_id"], image["volume_size"]))
        out.append({"device": device, "size": size, "type": vtype, "iops": iops, "throughput": throughput,
                    "delete_on_termination": ebs.bool("DeleteOnTermination", True)})
    if not any(b["device"] == image["root_device_name"] for b in out):
        out.insert(0, {"device": image["root_device_name"], "size": image["volume_size"], "type": "gp3",
                       "iops": None, "throughput": None, "delete_on_termination": True})
    return out


def parse_market(ctx, itype, zone):
    p = ctx.p
    m = p.sub("InstanceMarketOptions", {"MarketType", "SpotOptions"})
    if not m.d:
        return None
    kind = m.require("MarketType")
    if kind != "spot":
        raise bad_value("Value (%s) for parameter marketType is invalid. This fake supports spot." % kind)
    s = m.sub("SpotOptions", {"MaxPrice", "SpotInstanceType", "InstanceInterruptionBehavior",
                              "BlockDurationMinutes", "ValidUntil"})
    stype = s.get("SpotInstanceType", "one-time")
    behaviour = s.get("InstanceInterruptionBehavior", "terminate")
    if stype not in ("one-time", "persistent"):
        raise bad_value("Value (%s) for parameter spotInstanceType is invalid." % stype)
    if behaviour not in ("terminate", "stop", "hibernate"):
        raise bad_value("Value (%s) for parameter instanceInterruptionBehavior is invalid." % behaviour)
    if stype == "one-time" and behaviour != "terminate":
        raise ApiError("InvalidParameterCombination",
                       "The instance interruption behavior %s is only supported with persistent Spot requests." % behaviour)
    price = ctx.world.spot_price(ctx.region, itype, zone)
    if s.has("MaxPrice"):
        try:
            max_price = float(s.get("MaxPrice"))
        except ValueError:
            raise bad_value("Value (%s) for parameter maxPrice is invalid." % s.get("MaxPrice"))
        if price is not None and max_price < price:
            raise ApiError("SpotMaxPriceTooLow",
                           "Your Spot request price of %s is lower than the minimum required Spot request "
                           "fulfillment price of %s." % (s.get("MaxPrice"), "%.6f" % price))
    return {"spot_instance_type": stype, "interruption_behavior": behaviour, "max_price": s.get("MaxPrice")}


def parse_metadata(ctx):
    m = ctx.p.sub("MetadataOptions", {"HttpTokens", "HttpPutResponseHopLimit", "HttpEndpoint",
                                      "HttpProtocolIpv6", "InstanceMetadataTags"})
    out = {"state": "pending", "http_tokens": m.get("HttpTokens", "optional"),
           "hop_limit": m.int("HttpPutResponseHopLimit", 1, lo=1, hi=64),
           "http_endpoint": m.get("HttpEndpoint", "enabled"),
           "instance_metadata_tags": m.get("InstanceMetadataTags", "disabled")}
    for key, allowed in (("http_tokens", ("optional", "required")), ("http_endpoint", ("enabled", "disabled")),
                         ("instance_metadata_tags", ("enabled", "disabled"))):
        if out[key] not in allowed:
            raise bad_value("Value (%s) for parameter %s is invalid." % (out[key], key))
    return out


def decode_user_data(text):
    """Decoded bytes, or raise InvalidParameterValue."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise bad_value("Invalid BASE64 encoding of user data.")
    if len(data) > USER_DATA_LIMIT:
        raise bad_value("User data is limited to %d bytes" % USER_DATA_LIMIT)
    return data


def user_data_text(data):
    """User-data as cloud-init reads it: gunzipped when gzip, as text."""
    if data is None:
        return None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            pass
    return data.decode("utf-8", "replace")


@action("RunInstances", RUN_PARAMS)
def run_instances(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    token = p.get("ClientToken")
    if token is not None:
        if len(token) > 64 or not token.isascii():
            raise bad_value("Value (%s) for parameter clientToken is invalid. It must be at most 64 ASCII characters." % token)
        previous = w.tokens.get((region["name"], token))
        if previous:
            if previous[0] != fingerprint(p):
                raise ApiError("IdempotentParameterMismatch",
                               "Arguments on this idempotent request are inconsistent with arguments used in previous request(s).")
            res = w.reservations[previous[1]]
            return "".join(reservation_xml(w, res, [w.instances[i] for i in res["instances"]]))
    min_count = p.int("MinCount", lo=1)
    max_count = p.int("MaxCount", lo=1)
    if min_count is None or max_count is None:
        raise ApiError("MissingParameter", "The request must contain the parameters MinCount and MaxCount")
    if min_count > max_count:
        raise bad_value("MinCount (%d) must be less than or equal to MaxCount (%d)" % (min_count, max_count))
    itype = p.require("InstanceType")
    facts = w.types.get(itype)
    if facts is None:
        raise bad_value("Invalid value '%s' for InstanceType." % itype)
    if region["name"] not in facts["regions"]:
        raise ApiError("Unsupported", "Your requested instance type (%s) is not supported in your requested region (%s)."
                       % (itype, region["name"]))
    image_id = p.require("ImageId")
    if not re.match(r"^ami-[0-9a-f]{8}([0-9a-f]{9})?$", image_id):
        raise ApiError("InvalidAMIID.Malformed", 'Invalid id: "%s" (expecting "ami-...")' % image_id)
    image = next((i for i in region["images"] if i["id"] == image_id), None)
    if image is None:
        raise ApiError("InvalidAMIID.NotFound", "The image id '[%s]' does not exist" % image_id)
    if image["architecture"] != facts["architecture"]:
        raise bad_value("The architecture '%s' of the specified instance type does not match the architecture '%s' "
                        "of the specified AMI. Specify an instance type and an AMI that have matching architectures, "
                        "and try again." % (facts["architecture"], image["architecture"]))
    if p.indexes("NetworkInterface") and (p.list("SecurityGroupId") or p.list("SecurityGroup")):
        raise ApiError("InvalidParameterCombination",
                       "Network interfaces and an instance-level security groups may not be specified on the same request")
    if p.indexes("NetworkInterface") and p.has("SubnetId"):
        raise ApiError("InvalidParameterCombination",
                       "Network interfaces and an instance-level subnet ID may not be specified on the same request")
    zone = resolve_zone(ctx, strict=True)
    check_offered(w, region, itype, zone)
    placement = p.sub("Placement", {"AvailabilityZone", "GroupName", "GroupId", "Tenancy", "PartitionNumber",
                                    "Affinity", "HostId", "SpreadDomain", "HostResourceGroupArn"})
    tenancy = placement.get("Tenancy", "default")
    if tenancy not in ("default", "dedicated", "host"):
        raise bad_value("Value (%s) for parameter tenancy is invalid." % tenancy)
    # subnet and security groups (top-level form)
    subnet_id = p.get("SubnetId")
    subnet = w.subnet(region, subnet_id) if subnet_id else w.default_subnet(region, zone)
    if subnet is None:
        raise ApiError("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist" % subnet_id)
    top_sgs = list(p.list("SecurityGroupId"))
    for name in p.list("SecurityGroup"):
        g = next((g for g in w.security_groups.values() if g["region"] == region["name"]
                  and g["name"] == name and g["vpc_id"] == region["vpc"]["id"]), None)
        if g is None:
            raise ApiError("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'"
                           % (name, region["vpc"]["id"]))
        top_sgs.append(g["id"])
    for g in top_sgs:
        if find_group(w, region, g)["vpc_id"] != region["vpc"]["id"]:
            raise ApiError("InvalidParameter", "Security group %s and subnet %s belong to different networks." % (g, subnet["id"]))
    key_name = p.get("KeyName")
    if key_name is not None and (region["name"], key_name) not in w.key_pairs:
        raise ApiError("InvalidKeyPair.NotFound", "The key pair '%s' does not exist" % key_name)
    pg = None
    if placement.get("GroupName") or placement.get("GroupId"):
        pg_name, pg_id = placement.get("GroupName"), placement.get("GroupId")
        pg = next((g for g in w.placement_groups.values() if g["region"] == region["name"]
                   and ((pg_name and g["name"] == pg_name) or (pg_id and g["id"] == pg_id))), None)
        if pg is None:
            raise ApiError("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown." % (pg_name or pg_id))
        if pg["strategy"] == "cluster" and pg["zone"] and pg["zone"] != zone:
            raise ApiError("InvalidParameterCombination",
                           "The placement group '%s' is in availability zone %s; instances cannot be launched into it "
                           "in %s." % (pg["name"], pg["zone"], zone))
    nics = parse_nics(ctx, facts, zone)
    user_data = None
    if p.has("UserData"):
        user_data = decode_user_data(p.get("UserData"))
    block_devices = parse_block_devices(ctx, image)
    market = parse_market(ctx, itype, zone)
    metadata = parse_metadata(ctx)
    tag_specs = tags_from_specs(p, RUN_TAG_TYPES)
    shutdown = p.get("InstanceInitiatedShutdownBehavior", "stop")
    if shutdown not in ("stop", "terminate"):
        raise bad_value("Value (%s) for parameter instanceInitiatedShutdownBehavior is invalid." % shutdown)
    iam_profile = p.get("IamInstanceProfile.Arn") or p.get("IamInstanceProfile.Name")
    # -- the instance profile (iam.py): an existing one only, as EC2 sees IAM --
    if p.get("IamInstanceProfile.Name"):
        refused = iam.profile_for_run(p.get("IamInstanceProfile.Name"))
        if refused:
            raise bad_value(refused)
    # --
    ebs_optimized = p.bool("EbsOptimized", True)
    ctx.dry_run_point()

    count = max_count if ctx.capacity is None else min(max_count, ctx.capacity)
    if count < min_count:
        others = [z for z in region["zones"] if z != zone and w.offered(itype, region, z)]
        raise ApiError("InsufficientInstanceCapacity",
                       "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). "
                       "Our system will be working on provisioning additional capacity. You can currently get %s "
                       "capacity by not specifying an Availability Zone in your request or choosing %s."
                       % (itype, zone, itype, ", ".join(others)))
    if nics is None:
        sgs = top_sgs or [w.default_sg(region)]
        nics = [{"type": "interface", "card": 0, "device": 0, "subnet_id": subnet["id"], "subnet": subnet,
                 "security_groups": sgs, "delete_on_termination": True, "public": None}]
    primary = nics[0]
    res = {"id": w.new_id("r"), "region": region["name"], "instances": [], "client_token": token}
    launch_time = iso(now())
    zone_index = region["zones"].index(zone)
    for k in range(count):
        n = w.next("i")
        iid = "i-0%016x" % n
        octet = ip_octet(n)
        base = "10.%d.%d." % (region["index"], zone_index)
        inst_nics = []
        for nic in nics:
            if nic["type"] == "efa-only":
                ip = None
            elif nic is primary:
                ip = base + str(octet)
            else:
                ip = base + str(254 - (w.next("secondary-ip-%s" % zone) - 1) % 127)
            inst_nics.append({"id": w.new_id("eni"), "instance_id": iid, "type": nic["type"], "card": nic["card"],
                              "device": nic["device"], "subnet_id": nic["subnet_id"], "vpc_id": region["vpc"]["id"],
                              "private_ip": ip, "security_groups": list(nic["security_groups"]),
                              "delete_on_termination": nic["delete_on_termination"],
                              "mac": "02:00:00:%02x:%02x:%02x" % ((n >> 8) & 255, n & 255, len(inst_nics)),
                              "tags": dict(tag_specs.get("network-interface", {}))})
        wants_public = primary["public"]
        if wants_public is None:
            wants_public = primary["subnet"].get("map_public_ip", False)
        public = "198.51.100.%d" % octet if (len(nics) == 1 and wants_public) else None
        inst = {
            "id": iid, "region": region["name"], "zone": zone, "type": itype, "image_id": image_id,
            "state": "pending", "pending_seen": 0, "doomed": ctx.partial is not None and k >= ctx.partial,
            "state_reason": None, "terminate_time": None,
            "reservation_id": res["id"], "launch_index": k, "launch_time": launch_time,
            "client_token": token, "key_name": key_name,
            "security_groups": list(primary["security_groups"]),
            "subnet_id": primary["subnet_id"], "vpc_id": region["vpc"]["id"],
            "private_ip": inst_nics[0]["private_ip"] or base + str(octet), "public_ip": public,
            "placement_group": pg["name"] if pg else None, "tenancy": tenancy,
            "lifecycle": "spot" if market else None,
            "spot_request_id": ("sir-%08x" % w.next("sir")) if market else None,
            "market": market, "tags": dict(tag_specs.get("instance", {})), "tag_specifications": tag_specs,
            "user_data": user_data_text(user_data),
            "network_interfaces": inst_nics,
            "block_devices": [dict(b, volume_id=w.new_id("vol"), tags=dict(tag_specs.get("volume", {})))
                              for b in block_devices],
            "root_device_name": image["root_device_name"],
            "metadata": dict(metadata), "shutdown_behavior": shutdown, "iam_instance_profile": iam_profile,
            "ebs_optimized": ebs_optimized,
        }
        w.instances[iid] = inst
        res["instances"].append(iid)
        if BOOT is not None:
            boot_launched(w, inst, user_data)
    if pg and pg["strategy"] == "cluster" and not pg["zone"]:
        pg["zone"] = zone
    w.reservations[res["id"]] = res
    if token is not None:
        w.tokens[(region["name"], token)] = (fingerprint(p), res["id"])
    return "".join(reservation_xml(w, res, [w.instances[i] for i in res["instances"]]))


# ---- instance types, offerings, spot prices ----

def instance_type_xml(name, t):
    cards = t["max_network_cards"]
    per_card = 8 if cards == 1 else 2
    net = [x("networkPerformance", t["network_performance"]),
           x("maximumNetworkInterfaces", per_card * cards), x("maximumNetworkCards", cards),
           x("defaultNetworkCardIndex", 0),
           item_set("networkCards", [[x("networkCardIndex", i), x("networkPerformance", t["network_performance"]),
                                      x("maximumNetworkInterfaces", per_card)] for i in range(cards)]),
           x("ipv4AddressesPerInterface", 50), x("ipv6AddressesPerInterface", 50), x("ipv6Supported", True),
           x("enaSupport", "required"), x("efaSupported", t["efa"])]
    if t["efa"]:
        net.append(x("efaInfo", [x("maximumEfaInterfaces", t["max_efa_interfaces"])]))
    return [
        x("instanceType", name), x("currentGeneration", True), x("freeTierEligible", False),
        item_set("supportedUsageClasses", ["on-demand", "spot"]),
        item_set("supportedRootDeviceTypes", ["ebs"]), item_set("supportedVirtualizationTypes", ["hvm"]),
        x("bareMetal", name.endswith(".metal")), x("hypervisor", "" if name.endswith(".metal") else "nitro"),
        x("processorInfo", [item_set("supportedArchitectures", [t["architecture"]])]),
        x("vCpuInfo", [x("defaultVCpus", t["vcpus"]), x("defaultCores", max(1, t["vcpus"] // 2)),
                       x("defaultThreadsPerCore", 2 if t["vcpus"] > 1 else 1)]),
        x("memoryInfo", [x("sizeInMiB", t["memory_mib"])]),
        x("instanceStorageSupported", False),
        x("ebsInfo", [x("ebsOptimizedSupport", "default"), x("encryptionSupport", "supported"),
                      x("nvmeSupport", "required")]),
        x("networkInfo", net),
    ] + ([
        x("gpuInfo", [item_set("gpus", [[x("name", t["gpu_name"]),
                                         x("manufacturer", t.get("gpu_manufacturer", "NVIDIA")),
                                         x("count", t["gpu_count"]),
                                         x("memoryInfo", [x("sizeInMiB", t["gpu_memory_mib"])])]]),
                      x("totalGpuMemoryInMiB", t["gpu_count"] * t["gpu_memory_mib"])]),
    ] if t["gpu_count"] else []) + [
        x("placementGroupInfo", [item_set("supportedStrategies", ["cluster", "partition", "spread"])]),
        x("hibernationSupported", False), x("burstablePerformanceSupported", False),
        x("dedicatedHostsSupported", False), x("autoRecoverySupported", True),
        item_set("supportedBootModes", ["legacy-bios", "uefi"]),
    ]


TYPE_FILTERS = {
    "instance-type": lambda nt: nt[0],
    "network-info.efa-supported": lambda nt: nt[1]["efa"],
    "processor-info.supported-architecture": lambda nt: nt[1]["architecture"],
    "vcpu-info.default-vcpus": lambda nt: nt[1]["vcpus"],
    "current-generation": lambda nt: True,
    "bare-metal": lambda nt: nt[0].endswith(".metal"),
    "supported-usage-class": lambda nt: ["on-demand", "spot"],
    "memory-info.size-in-mib": lambda nt: nt[1]["memory_mib"],
}


@action("DescribeInstanceTypes", DESCRIBE | {"InstanceType"}, mutates=False)
def describe_instance_types(ctx):
    w = ctx.world
    names = ctx.p.list("InstanceType")
    if len(names) > 100:
        raise bad_value("The maximum number of instance types is 100.")
    here = [(n, t) for n, t in w.types.items() if ctx.region["name"] in t["regions"]]
    if names:
        missing = [n for n in names if n not in dict(here)]
        if missing:
            raise ApiError("InvalidInstanceType", "The following supplied instance types do not exist: [%s]"
                           % ", ".join(missing))
        here = [nt for nt in here if nt[0] in names]
    filters = parse_filters(ctx.p, TYPE_FILTERS, tags=False)
    rows = [nt for nt in here if filters_match(nt, filters, TYPE_FILTERS)]
    page, token = paginate(ctx, rows, 5, 100)
    return item_set("instanceTypeSet", [instance_type_xml(n, t) for n, t in page]) + x("nextToken", token)


OFFERING_FILTERS = {"instance-type": lambda o: o[0], "location": lambda o: o[1]}


@action("DescribeInstanceTypeOfferings", DESCRIBE | {"LocationType"}, mutates=False)
def describe_instance_type_offerings(ctx):
    w, region = ctx.world, ctx.region
    ltype = ctx.p.get("LocationType", "region")
    if ltype not in ("region", "availability-zone", "availability-zone-id"):
        raise bad_value("Value (%s) for parameter locationType is invalid." % ltype)
    filters = parse_filters(ctx.p, OFFERING_FILTERS, tags=False)
    rows = []
    for name, t in w.types.items():
        if region["name"] not in t["regions"]:
            continue
        if ltype == "region":
            rows.append((name, region["name"]))
        else:
            for i, z in enumerate(region["zones"]):
                if w.offered(name, region, z):
                    rows.append((name, z if ltype == "availability-zone" else region["zone_ids"][i]))
    rows = [r for r in rows if filters_match(r, filters, OFFERING_FILTERS)]
    page, token = paginate(ctx, rows)
    return item_set("instanceTypeOfferingSet", [[x("instanceType", n), x("locationType", ltype), x("location", loc)]
                                                for n, loc in page]) + x("nextToken", token)


SPOT_FILTERS = {
    "availability-zone": lambda s: s["zone"], "instance-type": lambda s: s["type"],
    "product-description": lambda s: "Linux/UNIX", "spot-price": lambda s: s["price"],
    "timestamp": lambda s: s["timestamp"],
}


@action("DescribeSpotPriceHistory", DESCRIBE | {"InstanceType", "ProductDescription", "AvailabilityZone",
                                                "StartTime", "EndTime"}, mutates=False)
def describe_spot_price_history(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    types = p.list("InstanceType")
    products = p.list("ProductDescription")
    zone = p.get("AvailabilityZone")
    start = parse_time(p.get("StartTime"), "startTime") if p.has("StartTime") else None
    end = parse_time(p.get("EndTime"), "endTime") if p.has("EndTime") else None
    if start is not None and end is not None and end < start:
        raise bad_value("The end time must be later than the start time.")
    filters = parse_filters(p, SPOT_FILTERS, tags=False)
    stamp = w.seed.get("spot_timestamp", SPOT_TIMESTAMP)
    in_window = end is None or end >= parse_time(stamp, "timestamp")
    rows = []
    for name, t in w.types.items():
        if region["name"] not in t["spot"] or (types and name not in types):
            continue
        for z in region["zones"]:
            if not w.offered(name, region, z) or (zone and z != zone):
                continue
            rows.append({"type": name, "zone": z, "price": "%.6f" % w.spot_price(region, name, z), "timestamp": stamp})
    if products and "Linux/UNIX" not in products:
        rows = []
    if not in_window:
        rows = []
    rows = [r for r in rows if filters_match(r, filters, SPOT_FILTERS)]
    page, token = paginate(ctx, rows, 1, 1000)
    return item_set("spotPriceHistorySet", [[x("availabilityZone", r["zone"]), x("instanceType", r["type"]),
                                             x("productDescription", "Linux/UNIX"), x("spotPrice", r["price"]),
                                             x("timestamp", r["timestamp"])] for r in page]) + x("nextToken", token)


# ---- images ----

IMAGE_FILTERS = {
    "name": lambda i: i["name"], "state": lambda i: i["state"], "architecture": lambda i: i["architecture"],
    "image-id": lambda i: i["id"], "owner-alias": lambda i: i["owner_alias"], "owner-id": lambda i: i["owner_id"],
    "is-public": lambda i: True, "root-device-type": lambda i: "ebs", "root-device-name": lambda i: i["root_device_name"],
    "virtualization-type": lambda i: "hvm", "image-type": lambda i: "machine", "description": lambda i: i["description"],
    "platform-details": lambda i: "Linux/UNIX",
}


def image_xml(img):
    location = "%s/%s" % (img["owner_alias"] or img["owner_id"], img["name"])
    return [
        x("imageId", img["id"]), x("imageLocation", location), x("imageState", img["state"]),
        x("imageOwnerId", img["owner_id"]), x("creationDate", img["creation_date"]), x("isPublic", True),
        x("architecture", img["architecture"]), x("imageType", "machine"), x("sriovNetSupport", "simple"),
        x("imageOwnerAlias", img["owner_alias"]), x("name", img["name"]), x("description", img["description"]),
        x("rootDeviceType", "ebs"), x("rootDeviceName", img["root_device_name"]),
        item_set("blockDeviceMapping", [[x("deviceName", img["root_device_name"]),
                                         x("ebs", [x("deleteOnTermination", True), x("snapshotId", img["snapshot_id"]),
                                                   x("volumeSize", img["volume_size"]), x("volumeType", "gp3"),
                                                   x("encrypted", False)])]]),
        x("virtualizationType", "hvm"), x("hypervisor", "xen"), x("enaSupport", True),
        x("platformDetails", "Linux/UNIX"), x("usageOperation", "RunInstances"),
        x("deprecationTime", img["deprecation_time"]), x("bootMode", "uefi-preferred"),
    ]


@action("DescribeImages", DESCRIBE | {"Owner", "ImageId", "ExecutableBy", "IncludeDeprecated",
                                      "IncludeDisabled"}, mutates=False)
def describe_images(ctx):
    w, p = ctx.world, ctx.p
    ids = p.list("ImageId")
    if ids and p.has("MaxResults"):
        raise ApiError("InvalidParameterCombination", "The parameter imagesSet cannot be used with the parameter maxResults")
    owners = p.list("Owner")
    include_deprecated = p.bool("IncludeDeprecated", False)
    filters = parse_filters(p, IMAGE_FILTERS)
    images = ctx.region["images"]
    if ids:
        have = {i["id"] for i in images}
        missing = [i for i in ids if i not in have]
        if missing:
            raise ApiError("InvalidAMIID.NotFound", "The image id '[%s]' does not exist" % ", ".join(missing))
        images = [i for i in images if i["id"] in ids]

    def owned(img):
        for o in owners:
            if o == "amazon" and img["owner_alias"] == "amazon":
                return True
            if o == "self" and img["owner_id"] == w.account:
                return True
            if o == "aws-marketplace" and img["owner_alias"] == "aws-marketplace":
                return True
            if o == img["owner_id"]:
                return True
        return not owners

    def current(img):
        dep = img.get("deprecation_time")
        return include_deprecated or ids or not dep or parse_time(dep, "deprecationTime") > now() \
            or img["owner_id"] == w.account

    rows = [i for i in images if owned(i) and current(i) and filters_match(i, filters, IMAGE_FILTERS, lambda i: i.get("tags", {}))]
    page, token = paginate(ctx, rows, 1, 1000)
    return item_set("imagesSet", [image_xml(i) for i in page]) + x("nextToken", token)


# ---- regions, zones, VPCs, subnets ----

@action("DescribeRegions", {"Filter", "RegionName", "AllRegions"}, mutates=False)
def describe_regions(ctx):
    fields = {"region-name": lambda r: r["name"], "endpoint": lambda r: "ec2.%s.amazonaws.com" % r["name"],
              "opt-in-status": lambda r: "opt-in-not-required"}
    filters = parse_filters(ctx.p, fields, tags=False)
    names = ctx.p.list("RegionName")
    for n in names:
        if n not in ctx.world.regions:
            raise bad_value("Invalid region: %s" % n)
    rows = [r for r in ctx.world.regions.values() if (not names or r["name"] in names) and filters_match(r, filters, fields)]
    return item_set("regionInfo", [[x("regionName", r["name"]), x("regionEndpoint", "ec2.%s.amazonaws.com" % r["name"]),
                                    x("optInStatus", "opt-in-not-required")] for r in rows])


@action("DescribeAvailabilityZones", {"Filter", "ZoneName", "ZoneId", "AllAvailabilityZones"}, mutates=False)
def describe_availability_zones(ctx):
    region = ctx.region
    zones = [{"name": z, "id": region["zone_ids"][i]} for i, z in enumerate(region["zones"])]
    fields = {"zone-name": lambda z: z["name"], "zone-id": lambda z: z["id"], "region-name": lambda z: region["name"],
              "state": lambda z: "available", "zone-type": lambda z: "availability-zone",
              "opt-in-status": lambda z: "opt-in-not-required"}
    filters = parse_filters(ctx.p, fields, tags=False)
    names, ids = ctx.p.list("ZoneName"), ctx.p.list("ZoneId")
    for n in names:
        if n not in region["zones"]:
            raise bad_value("Invalid availability zone: [%s]" % n)
    rows = [z for z in zones if (not names or z["name"] in names) and (not ids or z["id"] in ids)
            and filters_match(z, filters, fields)]
    return item_set("availabilityZoneInfo", [
        [x("zoneName", z["name"]), x("zoneId", z["id"]), x("zoneState", "available"),
         x("optInStatus", "opt-in-not-required"), item_set("messageSet", []), x("regionName", region["name"]),
         x("groupName", region["name"]), x("networkBorderGroup", region["name"]), x("zoneType", "availability-zone")]
        for z in rows])


@action("DescribeVpcs", DESCRIBE | {"VpcId"}, mutates=False)
def describe_vpcs(ctx):
    region = ctx.region
    vpc = region["vpc"]
    fields = {"is-default": lambda v: True, "vpc-id": lambda v: v["id"], "state": lambda v: "available",
              "cidr": lambda v: v["cidr"], "cidr-block": lambda v: v["cidr"], "owner-id": lambda v: ctx.world.account}
    filters = parse_filters(ctx.p, fields)
    ids = ctx.p.list("VpcId")
    missing = [i for i in ids if i != vpc["id"]]
    if missing:
        raise missing_ids_error("InvalidVpcID.NotFound", "vpc", missing)
    rows = [v for v in [vpc] if filters_match(v, filters, fields, lambda v: {})]
    page, token = paginate(ctx, rows)
    return item_set("vpcSet", [[x("vpcId", v["id"]), x("ownerId", ctx.world.account), x("state", "available"),
                                x("cidrBlock", v["cidr"]), x("dhcpOptionsId", "dopt-0%d000000000000001" % (region["index"] + 1)),
                                x("instanceTenancy", "default"), x("isDefault", True), tag_set({})]
                               for v in page]) + x("nextToken", token)


@action("DescribeSubnets", DESCRIBE | {"SubnetId"}, mutates=False)
def describe_subnets(ctx):
    region = ctx.region
    zone_id = {z: region["zone_ids"][i] for i, z in enumerate(region["zones"])}
    fields = {"vpc-id": lambda s: region["vpc"]["id"], "availability-zone": lambda s: s["zone"],
              "availability-zone-id": lambda s: zone_id.get(s["zone"]), "default-for-az": lambda s: s.get("default_for_az", False),
              "subnet-id": lambda s: s["id"], "state": lambda s: "available", "cidr-block": lambda s: s["cidr"],
              "map-public-ip-on-launch": lambda s: s.get("map_public_ip", False), "owner-id": lambda s: ctx.world.account}
    filters = parse_filters(ctx.p, fields)
    ids = ctx.p.list("SubnetId")
    have = {s["id"] for s in region["subnets"]}
    missing = [i for i in ids if i not in have]
    if missing:
        raise missing_ids_error("InvalidSubnetID.NotFound", "subnet", missing)
    rows = [s for s in region["subnets"] if (not ids or s["id"] in ids) and filters_match(s, filters, fields, lambda s: s.get("tags", {}))]
    page, token = paginate(ctx, rows)
    return item_set("subnetSet", [
        [x("subnetId", s["id"]), x("subnetArn", "arn:aws:ec2:%s:%s:subnet/%s" % (region["name"], ctx.world.account, s["id"])),
         x("state", "available"), x("ownerId", ctx.world.account), x("vpcId", region["vpc"]["id"]),
         x("cidrBlock", s["cidr"]), x("availableIpAddressCount", 251), x("availabilityZone", s["zone"]),
         x("availabilityZoneId", zone_id.get(s["zone"])), x("defaultForAz", s.get("default_for_az", False)),
         x("mapPublicIpOnLaunch", s.get("map_public_ip", False)), x("assignIpv6AddressOnCreation", False),
         tag_set(s.get("tags", {}))] for s in page]) + x("nextToken", token)


# ---- key pairs ----

def key_fingerprint(line):
    """(type, fingerprint) of an OpenSSH public key line, or raise."""
    fields = line.strip().split()
    if len(fields) < 2 or fields[0] not in ("ssh-rsa", "ssh-ed25519"):
        raise ApiError("InvalidKeyPair.Format", "Key is not in valid OpenSSH public key format")
    try:
        blob = base64.b64decode(fields[1], validate=True)
    except (binascii.Error, ValueError):
        raise ApiError("InvalidKeyPair.Format", "Key is not in valid OpenSSH public key format")
    if len(blob) < 4 or blob[4:4 + int.from_bytes(blob[:4], "big")] != fields[0].encode():
        raise ApiError("InvalidKeyPair.Format", "Key is not in valid OpenSSH public key format")
    if fields[0] == "ssh-rsa":
        return "rsa", ":".join("%02x" % b for b in hashlib.md5(blob).digest())
    return "ed25519", base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def key_xml(k, include_public=False):
    return [x("keyPairId", k["id"]), x("keyFingerprint", k["fingerprint"]), x("keyName", k["name"]),
            x("keyType", k["type"]), tag_set(k["tags"]), x("publicKey", k["public_key"] if include_public else None),
            x("createTime", k["create_time"])]


@action("ImportKeyPair", {"KeyName", "PublicKeyMaterial", "TagSpecification"})
def import_key_pair(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    name = p.require("KeyName")
    material = p.require("PublicKeyMaterial")
    try:
        line = base64.b64decode(material, validate=True).decode("ascii")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ApiError("InvalidKeyPair.Format", "Key is not in valid OpenSSH public key format")
    ktype, fp = key_fingerprint(line)
    tags = tags_from_specs(p, {"key-pair"}).get("key-pair", {})
    if (region["name"], name) in w.key_pairs:
        raise ApiError("InvalidKeyPair.Duplicate", "The keypair '%s' already exists." % name)
    ctx.dry_run_point()
    k = {"id": w.new_id("key"), "region": region["name"], "name": name, "fingerprint": fp, "type": ktype,
         "tags": tags, "public_key": line.strip(), "create_time": iso(now())}
    w.key_pairs[(region["name"], name)] = k
    return x("keyFingerprint", fp) + x("keyName", name) + x("keyPairId", k["id"]) + (tag_set(tags) if tags else "")


KEY_FILTERS = {"key-name": lambda k: k["name"], "key-pair-id": lambda k: k["id"],
               "fingerprint": lambda k: k["fingerprint"], "key-type": lambda k: k["type"]}


@action("DescribeKeyPairs", {"Filter", "KeyName", "KeyPairId", "IncludePublicKey"}, mutates=False)
def describe_key_pairs(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    names, ids = p.list("KeyName"), p.list("KeyPairId")
    mine = [k for k in w.key_pairs.values() if k["region"] == region["name"]]
    for n in names:
        if not any(k["name"] == n for k in mine):
            raise ApiError("InvalidKeyPair.NotFound", "The key pair '%s' does not exist" % n)
    for i in ids:
        if not any(k["id"] == i for k in mine):
            raise ApiError("InvalidKeyPair.NotFound", "The key pair '%s' does not exist" % i)
    filters = parse_filters(p, KEY_FILTERS)
    rows = [k for k in mine if (not names or k["name"] in names) and (not ids or k["id"] in ids)
            and filters_match(k, filters, KEY_FILTERS, lambda k: k["tags"])]
    include = p.bool("IncludePublicKey", False)
    return item_set("keySet", [key_xml(k, include) for k in rows])


@action("DeleteKeyPair", {"KeyName", "KeyPairId"})
def delete_key_pair(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    name, kid = p.get("KeyName"), p.get("KeyPairId")
    if not name and not kid:
        raise ApiError("MissingParameter", "The request must contain the parameter KeyName or KeyPairId")
    ctx.dry_run_point()
    found = None
    for key, k in list(w.key_pairs.items()):
        if k["region"] == region["name"] and (k["name"] == name or k["id"] == kid):
            found = k
            del w.key_pairs[key]
    return x("return", True) + x("keyPairId", found["id"] if found else None)


# ---- security groups ----

PROTOCOLS = {"tcp": "tcp", "6": "tcp", "udp": "udp", "17": "udp", "icmp": "icmp", "1": "icmp",
             "-1": "-1", "all": "-1"}


def permissions_xml(rules):
    """EC2's ipPermissions: rules grouped by protocol and port range."""
    groups = {}
    for r in rules:
        groups.setdefault((r["protocol"], r["from"], r["to"]), []).append(r)
    out = []
    for (proto, lo, hi), rs in groups.items():
        out.append([
            x("ipProtocol", proto), x("fromPort", lo), x("toPort", hi),
            item_set("groups", [[x("userId", WORLD.account), x("groupId", r["group"])] for r in rs if r["group"]]),
            item_set("ipRanges", [[x("cidrIp", r["cidr"]), x("description", r["description"])] for r in rs if r["cidr"]]),
            item_set("ipv6Ranges", []), item_set("prefixListIds", []),
        ])
    return out


def sg_xml(g):
    return [x("ownerId", WORLD.account), x("groupId", g["id"]), x("groupName", g["name"]),
            x("groupDescription", g["description"]),
            item_set("ipPermissions", permissions_xml([r for r in g["rules"] if not r["egress"]])),
            item_set("ipPermissionsEgress", permissions_xml([r for r in g["rules"] if r["egress"]])),
            x("vpcId", g["vpc_id"]), tag_set(g["tags"])]


@action("CreateSecurityGroup", {"GroupName", "GroupDescription", "VpcId", "TagSpecification"})
def create_security_group(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    name = p.require("GroupName")
    description = p.require("GroupDescription")
    if len(name) > 255 or len(description) > 255:
        raise bad_value("Group name and description are limited to 255 characters")
    if name.startswith("sg-"):
        raise bad_value("Group names may not be in the format sg-*")
    vpc_id = p.get("VpcId", region["vpc"]["id"])
    if vpc_id != region["vpc"]["id"]:
        raise ApiError("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist" % vpc_id)
    tags = tags_from_specs(p, {"security-group"}).get("security-group", {})
    if any(g["region"] == region["name"] and g["vpc_id"] == vpc_id and g["name"] == name
           for g in w.security_groups.values()):
        raise ApiError("InvalidGroup.Duplicate", "The security group '%s' already exists for VPC '%s'" % (name, vpc_id))
    ctx.dry_run_point()
    gid = w.new_id("sg")
    w.security_groups[gid] = {"id": gid, "region": region["name"], "name": name, "vpc_id": vpc_id,
                              "description": description, "tags": tags, "default": False,
                              "rules": [w.rule(gid, True, "-1", None, None, "0.0.0.0/0", None)]}
    arn = "arn:aws:ec2:%s:%s:security-group/%s" % (region["name"], w.account, gid)
    return x("return", True) + x("groupId", gid) + (tag_set(tags) if tags else "") + x("securityGroupArn", arn)


SG_FILTERS = {"group-name": lambda g: g["name"], "group-id": lambda g: g["id"], "vpc-id": lambda g: g["vpc_id"],
              "description": lambda g: g["description"], "owner-id": lambda g: WORLD.account}


@action("DescribeSecurityGroups", DESCRIBE | {"GroupId", "GroupName"}, mutates=False)
def describe_security_groups(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    mine = [g for g in w.security_groups.values() if g["region"] == region["name"]]
    ids, names = p.list("GroupId"), p.list("GroupName")
    for i in ids:
        if not any(g["id"] == i for g in mine):
            raise ApiError("InvalidGroup.NotFound", "The security group '%s' does not exist" % i)
    for n in names:
        if not any(g["name"] == n and g["vpc_id"] == region["vpc"]["id"] for g in mine):
            raise ApiError("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'"
                           % (n, region["vpc"]["id"]))
    filters = parse_filters(p, SG_FILTERS)
    rows = [g for g in mine if (not ids or g["id"] in ids) and (not names or g["name"] in names)
            and filters_match(g, filters, SG_FILTERS, lambda g: g["tags"])]
    page, token = paginate(ctx, rows)
    return item_set("securityGroupInfo", [sg_xml(g) for g in page]) + x("nextToken", token)


def authorize(ctx, egress):
    w, p, region = ctx.world, ctx.p, ctx.region
    gid = p.get("GroupId")
    if gid is None and not egress and p.get("GroupName"):
        g = next((g for g in w.security_groups.values() if g["region"] == region["name"]
                  and g["name"] == p.get("GroupName") and g["vpc_id"] == region["vpc"]["id"]), None)
        if g is None:
            raise ApiError("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'"
                           % (p.get("GroupName"), region["vpc"]["id"]))
    else:
        g = find_group(w, region, p.require("GroupId"))
    perms = p.structs("IpPermissions", {"IpProtocol", "FromPort", "ToPort", "IpRanges", "Groups",
                                        "Ipv6Ranges", "PrefixListIds"})
    legacy = {k: p.get(k) for k in ("IpProtocol", "FromPort", "ToPort", "CidrIp") if p.has(k)}
    if legacy:   # the older top-level form: one protocol, ports and CIDR
        if perms:
            raise ApiError("InvalidParameterCombination",
                           "IpPermissions may not be combined with IpProtocol, FromPort, ToPort or CidrIp")
        form = {k: v for k, v in legacy.items() if k != "CidrIp"}
        if "CidrIp" in legacy:
            form["IpRanges.1.CidrIp"] = legacy["CidrIp"]
        perms = [Params(form)]
    if not perms:
        raise ApiError("MissingParameter", "The request must contain the parameter ipPermissions")
    tags = tags_from_specs(p, {"security-group-rule"}).get("security-group-rule", {})
    new = []
    for perm in perms:
        raw = perm.require("IpProtocol")
        proto = PROTOCOLS.get(raw.lower(), raw if raw.isdigit() else None)
        if proto is None:
            raise bad_value("Invalid value '%s' for IP protocol. Unknown protocol." % raw)
        lo, hi = perm.int("FromPort", lo=-1, hi=65535), perm.int("ToPort", lo=-1, hi=65535)
        if proto == "-1":
            lo = hi = None
        elif proto in ("tcp", "udp"):
            if lo is None or hi is None:
                raise bad_value("Invalid value for portRange. Must specify both from and to ports with TCP/UDP.")
            if lo > hi or lo < 0:
                raise bad_value("Invalid value for portRange. The from port (%d) must be less than or equal to the "
                                "to port (%d)." % (lo, hi))
        sources = []
        for r in perm.structs("IpRanges", {"CidrIp", "Description"}):
            cidr = r.require("CidrIp")
            if not re.match(r"^\d{1,3}(\.\d{1,3}){3}/\d{1,2}$", cidr):
                raise bad_value("CIDR block %s is malformed" % cidr)
            sources.append((cidr, None, r.get("Description")))
        for r in perm.structs("Groups", {"GroupId", "GroupName", "UserId", "Description", "VpcId",
                                         "VpcPeeringConnectionId", "PeeringStatus"}):
            ref = r.get("GroupId")
            if ref is None:
                raise ApiError("MissingParameter", "The request must contain the parameter groupId in Groups")
            find_group(w, region, ref)
            sources.append((None, ref, r.get("Description")))
        if not sources:
            raise ApiError("MissingParameter", "Each permission needs at least one source or destination "
                                               "(IpRanges or Groups)")
        for cidr, ref, desc in sources:
            new.append((proto, lo, hi, cidr, ref, desc))
    existing = {(r["protocol"], r["from"], r["to"], r["cidr"], r["group"]) for r in g["rules"] if r["egress"] == egress}
    seen = set()
    for proto, lo, hi, cidr, ref, desc in new:
        key = (proto, lo, hi, cidr, ref)
        if key in existing or key in seen:
            ports = "" if proto == "-1" else ", from port: %s, to port: %s" % (lo, hi)
            raise ApiError("InvalidPermission.Duplicate", 'the specified rule "peer: %s, %s%s, ALLOW" already exists'
                           % (cidr or ref, proto.upper() if proto != "-1" else "ALL", ports))
        seen.add(key)
    ctx.dry_run_point()
    added = []
    for proto, lo, hi, cidr, ref, desc in new:
        r = w.rule(g["id"], egress, proto, lo, hi, cidr, ref, desc)
        r["tags"] = dict(tags)
        g["rules"].append(r)
        added.append(r)
    return x("return", True) + item_set("securityGroupRuleSet", [
        [x("securityGroupRuleId", r["id"]), x("groupId", g["id"]), x("groupOwnerId", w.account),
         x("isEgress", egress), x("ipProtocol", r["protocol"]),
         x("fromPort", -1 if r["from"] is None else r["from"]), x("toPort", -1 if r["to"] is None else r["to"]),
         x("cidrIpv4", r["cidr"]),
         x("referencedGroupInfo", [x("groupId", r["group"]), x("userId", w.account)]) if r["group"] else "",
         x("description", r["description"]), tag_set(r["tags"]) if r["tags"] else ""] for r in added])


@action("AuthorizeSecurityGroupIngress", {"GroupId", "GroupName", "IpPermissions", "TagSpecification",
                                         "IpProtocol", "FromPort", "ToPort", "CidrIp"})
def authorize_ingress(ctx):
    return authorize(ctx, False)


@action("AuthorizeSecurityGroupEgress", {"GroupId", "IpPermissions", "TagSpecification",
                                        "IpProtocol", "FromPort", "ToPort", "CidrIp"})
def authorize_egress(ctx):
    return authorize(ctx, True)


@action("DeleteSecurityGroup", {"GroupId", "GroupName"})
def delete_security_group(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    if p.get("GroupId"):
        g = find_group(w, region, p.get("GroupId"))
    elif p.get("GroupName"):
        g = next((g for g in w.security_groups.values() if g["region"] == region["name"]
                  and g["name"] == p.get("GroupName") and g["vpc_id"] == region["vpc"]["id"]), None)
        if g is None:
            raise ApiError("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'"
                           % (p.get("GroupName"), region["vpc"]["id"]))
    else:
        raise ApiError("MissingParameter", "The request must contain the parameter GroupId or GroupName")
    if g["default"]:
        raise ApiError("CannotDelete", "the specified group: \"%s\" name: \"default\" cannot be deleted by a user" % g["id"])
    users = [i for i in w.instances.values() if w.live(i)
             and any(g["id"] in n["security_groups"] for n in i["network_interfaces"])]
    referrers = [o for o in w.security_groups.values() if o["id"] != g["id"]
                 and any(r["group"] == g["id"] for r in o["rules"])]
    if users or referrers:
        raise ApiError("DependencyViolation", "resource %s has a dependent object" % g["id"])
    ctx.dry_run_point()
    del w.security_groups[g["id"]]
    return x("return", True) + x("groupId", g["id"])


# ---- placement groups ----

def pg_xml(g):
    return [x("groupName", g["name"]), x("state", "available"), x("strategy", g["strategy"]),
            x("partitionCount", g["partition_count"]), x("groupId", g["id"]), tag_set(g["tags"]),
            x("groupArn", "arn:aws:ec2:%s:%s:placement-group/%s" % (g["region"], WORLD.account, g["name"])),
            x("spreadLevel", g["spread_level"])]


@action("CreatePlacementGroup", {"GroupName", "Strategy", "PartitionCount", "SpreadLevel", "TagSpecification"})
def create_placement_group(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    name = p.require("GroupName")
    strategy = p.require("Strategy")
    if strategy not in ("cluster", "spread", "partition"):
        raise bad_value("Value (%s) for parameter strategy is invalid. Expecting one of cluster, spread, partition." % strategy)
    partitions = p.int("PartitionCount", lo=1, hi=7)
    if partitions is not None and strategy != "partition":
        raise ApiError("InvalidParameterCombination", "PartitionCount is only valid with the partition strategy")
    spread = p.get("SpreadLevel")
    if spread is not None and strategy != "spread":
        raise ApiError("InvalidParameterCombination", "SpreadLevel is only valid with the spread strategy")
    tags = tags_from_specs(p, {"placement-group"}).get("placement-group", {})
    if (region["name"], name) in w.placement_groups:
        raise ApiError("InvalidPlacementGroup.Duplicate", "The Placement Group '%s' already exists." % name)
    ctx.dry_run_point()
    g = {"id": w.new_id("pg"), "region": region["name"], "name": name, "strategy": strategy,
         "partition_count": (partitions or 2) if strategy == "partition" else None,
         "spread_level": (spread or "rack") if strategy == "spread" else None, "tags": tags, "zone": None}
    w.placement_groups[(region["name"], name)] = g
    return x("return", True) + x("placementGroup", pg_xml(g))


PG_FILTERS = {"group-name": lambda g: g["name"], "group-id": lambda g: g["id"], "strategy": lambda g: g["strategy"],
              "state": lambda g: "available", "spread-level": lambda g: g["spread_level"],
              "group-arn": lambda g: "arn:aws:ec2:%s:%s:placement-group/%s" % (g["region"], WORLD.account, g["name"])}


@action("DescribePlacementGroups", {"Filter", "GroupName", "GroupId"}, mutates=False)
def describe_placement_groups(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    mine = [g for g in w.placement_groups.values() if g["region"] == region["name"]]
    names, ids = p.list("GroupName"), p.list("GroupId")
    for n in names + ids:
        if not any(g["name"] == n or g["id"] == n for g in mine):
            raise ApiError("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown." % n)
    filters = parse_filters(p, PG_FILTERS)
    rows = [g for g in mine if (not names or g["name"] in names) and (not ids or g["id"] in ids)
            and filters_match(g, filters, PG_FILTERS, lambda g: g["tags"])]
    return item_set("placementGroupSet", [pg_xml(g) for g in rows])


@action("DeletePlacementGroup", {"GroupName"})
def delete_placement_group(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    name = p.require("GroupName")
    g = w.placement_groups.get((region["name"], name))
    if g is None:
        raise ApiError("InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown." % name)
    if any(i["region"] == region["name"] and i["placement_group"] == name and w.live(i) for i in w.instances.values()):
        raise ApiError("InvalidPlacementGroup.InUse", "The placement group '%s' is in use and may not be deleted." % name)
    ctx.dry_run_point()
    del w.placement_groups[(region["name"], name)]
    return x("return", True)


# ---- boot mode (--boot DIR, tests/fake/ec2_boot.py): instances run their
# user-data as nodes of their own on this machine ----

def boot_launched(w, inst, user_data):
    """RunInstances made inst: its address is its node's on the fake's
    bridge (private, and public when it has one), and the node will get the
    user-data and the key pair's public key."""
    ip = BOOT.address(int(inst["id"][2:], 16))
    inst["private_ip"] = ip
    if inst["network_interfaces"][0]["private_ip"]:
        inst["network_interfaces"][0]["private_ip"] = ip
    if inst["public_ip"]:
        inst["public_ip"] = ip
    key = w.key_pairs.get((inst["region"], inst["key_name"])) if inst["key_name"] else None
    BOOT.launched(inst, user_data, key["public_key"] if key else None)


def boot_role_of(profile):
    """The role of an instance profile (ARN or name): its name, unless the
    fake's IAM knows better."""
    return profile.rsplit("/", 1)[-1]


def boot_powered_off(iid):
    """A booted node powered itself off: EC2's instance-initiated
    shutdown (terminate, or stop when launched so)."""
    with LOCK:
        inst = WORLD.instances.get(iid)
        if inst is None or inst["state"] not in ("pending", "running"):
            return
        inst["doomed"] = False
        if inst["shutdown_behavior"] == "terminate":
            WORLD.set_state(inst, "shutting-down", "guest")
        else:
            WORLD.set_state(inst, "stopped", "guest")


def boot_log(entry):
    with LOCK:
        SEQ["n"] += 1
        entry["n"] = SEQ["n"]
        log(entry)


def console_of(inst):
    """The serial console: what the fake was told, then what the node printed."""
    return inst.get("console", "") + (BOOT.console(inst["id"]) if BOOT is not None else "")


# ---- console output (EC2 API Reference: GetConsoleOutput): the serial
# console's text, base64; kept after termination (EC2 keeps the last 64 KB
# for at least an hour after the last post, which termination makes) ----

@action("GetConsoleOutput", {"InstanceId", "Latest"}, mutates=False)
def get_console_output(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    iid = p.require("InstanceId")
    inst = w.instances.get(iid)
    if inst is None or inst["region"] != region["name"]:
        raise ApiError("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist" % iid)
    text = console_of(inst)[-65536:]
    return x("instanceId", iid) + x("timestamp", iso(now())) + \
        x("output", base64.b64encode(text.encode("utf-8")).decode("ascii") if text else None)


# ---- Elastic IPs (EC2 API Reference: AllocateAddress, AssociateAddress,
# DisassociateAddress, DescribeAddresses, ReleaseAddress,
# DescribeAccountAttributes; VPC domain only).  The refusals of a pending
# instance are EC2's behaviour as peers report it (aws.md, "Public
# addresses on EFA (multi-card) nodes", section 1), not its documentation.

def address_xml(w, a):
    nic = w.nic(a["network_interface_id"]) if a["network_interface_id"] else None
    return [x("publicIp", a["public_ip"]), x("allocationId", a["id"]), x("domain", "vpc"),
            x("associationId", a["association_id"]), x("instanceId", a["instance_id"]),
            x("networkInterfaceId", a["network_interface_id"]),
            x("networkInterfaceOwnerId", w.account if nic else None),
            x("privateIpAddress", nic["private_ip"] if nic else None),
            x("networkBorderGroup", a["region"]), x("publicIpv4Pool", "amazon"),
            tag_set(a["tags"])]


@action("AllocateAddress", {"Domain", "TagSpecification", "NetworkBorderGroup"})
def allocate_address(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    domain = p.get("Domain")
    if domain not in (None, "vpc"):
        raise bad_value("Invalid value '%s' for domain." % domain)
    tags = tags_from_specs(p, {"elastic-ip"}).get("elastic-ip", {})
    ctx.dry_run_point()
    if sum(1 for a in w.addresses.values() if a["region"] == region["name"]) >= w.max_elastic_ips(region):
        raise ApiError("AddressLimitExceeded", "The maximum number of addresses has been reached.")
    n = w.next("eip")
    a = {"id": "eipalloc-0%016x" % n, "region": region["name"], "public_ip": "203.0.113.%d" % (100 + n % 150),
         "association_id": None, "instance_id": None, "network_interface_id": None, "tags": tags}
    w.addresses[a["id"]] = a
    return x("publicIp", a["public_ip"]) + x("allocationId", a["id"]) + x("domain", "vpc") + \
        x("networkBorderGroup", region["name"]) + x("publicIpv4Pool", "amazon") + (tag_set(tags) if tags else "")


@action("AssociateAddress", {"AllocationId", "NetworkInterfaceId", "InstanceId", "AllowReassociation",
                             "PrivateIpAddress", "PublicIp"})
def associate_address(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    aid = p.require("AllocationId")
    a = w.addresses.get(aid)
    if a is None or a["region"] != region["name"]:
        raise ApiError("InvalidAllocationID.NotFound", "The allocation ID '%s' does not exist" % aid)
    eni, iid = p.get("NetworkInterfaceId"), p.get("InstanceId")
    if bool(eni) == bool(iid):
        raise ApiError("InvalidParameterCombination", "Exactly one of InstanceId and NetworkInterfaceId is required")
    if iid:
        check_instance_ids([iid])
        inst = w.instances.get(iid)
        if inst is None or inst["region"] != region["name"] or not w.live(inst):
            raise ApiError("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist" % iid)
        if inst["state"] == "pending":
            raise ApiError("InvalidInstanceID", "The pending instance '%s' is not in a valid state for this "
                           "operation." % iid)
        if len(inst["network_interfaces"]) > 1:
            raise ApiError("InvalidInstanceID", "There are multiple interfaces attached to instance "
                           "'%s'. Please specify an interface ID for the operation instead." % iid)
        nic = inst["network_interfaces"][0]
    else:
        nic = w.nic(eni)
        inst = w.instances[nic["instance_id"]] if nic else None
        if nic is None or inst["region"] != region["name"] or not w.live(inst):
            raise ApiError("InvalidNetworkInterfaceID.NotFound", "The networkInterface ID '%s' does not exist" % eni)
        if inst["state"] == "pending":
            raise ApiError("IncorrectInstanceState", "The pending-instance-creation instance to which '%s' is "
                           "attached is not in a valid state for this operation" % eni)
    if nic["type"] == "efa-only":
        raise bad_value("You can't assign an IP address to an EFA-only network interface (%s)." % nic["id"])
    if a["association_id"] and not p.bool("AllowReassociation", False):
        raise ApiError("Resource.AlreadyAssociated", "resource %s is already associated with associate-id %s"
                       % (aid, a["association_id"]))
    ctx.dry_run_point()
    w.disassociate(a)
    # an address the interface already has comes off it (it stays allocated)
    for other in w.addresses.values():
        if other["network_interface_id"] == nic["id"]:
            w.disassociate(other)
    a["association_id"] = "eipassoc-0%016x" % w.next("eipassoc")
    a["instance_id"], a["network_interface_id"] = inst["id"], nic["id"]
    if nic["device"] == 0 and nic["card"] == 0:
        inst["public_ip"] = a["public_ip"]
    return x("return", True) + x("associationId", a["association_id"])


@action("DisassociateAddress", {"AssociationId", "PublicIp"})
def disassociate_address(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    assoc, ip = p.get("AssociationId"), p.get("PublicIp")
    if bool(assoc) == bool(ip):
        raise ApiError("InvalidParameterCombination", "Exactly one of AssociationId and PublicIp is required")
    a = next((a for a in w.addresses.values() if a["region"] == region["name"] and a["association_id"]
              and (a["association_id"] == assoc or a["public_ip"] == ip)), None)
    if a is None:
        if assoc:
            raise ApiError("InvalidAssociationID.NotFound", "The association ID '%s' does not exist" % assoc)
        raise ApiError("InvalidIPAddress.NotFound", "Address %s not found." % ip)
    ctx.dry_run_point()
    w.disassociate(a)
    return x("return", True)


ADDRESS_FILTERS = {"allocation-id": lambda a: a["id"], "public-ip": lambda a: a["public_ip"],
                   "instance-id": lambda a: a["instance_id"], "association-id": lambda a: a["association_id"],
                   "network-interface-id": lambda a: a["network_interface_id"], "domain": lambda a: "vpc",
                   "network-border-group": lambda a: a["region"]}


@action("DescribeAddresses", {"Filter", "AllocationId", "PublicIp"}, mutates=False)
def describe_addresses(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    mine = [a for a in w.addresses.values() if a["region"] == region["name"]]
    ids = p.list("AllocationId")
    for i in ids:
        if not any(a["id"] == i for a in mine):
            raise ApiError("InvalidAllocationID.NotFound", "The allocation ID '%s' does not exist" % i)
    filters = parse_filters(p, ADDRESS_FILTERS)
    rows = [a for a in mine if (not ids or a["id"] in ids)
            and filters_match(a, filters, ADDRESS_FILTERS, lambda a: a["tags"])]
    return item_set("addressesSet", [address_xml(w, a) for a in rows])


@action("ReleaseAddress", {"AllocationId", "PublicIp", "NetworkBorderGroup"})
def release_address(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    aid = p.require("AllocationId")
    a = w.addresses.get(aid)
    if a is None or a["region"] != region["name"]:
        raise ApiError("InvalidAllocationID.NotFound", "The allocation ID '%s' does not exist" % aid)
    if a["association_id"]:
        raise ApiError("InvalidIPAddress.InUse", "Address %s is in use." % a["public_ip"])
    ctx.dry_run_point()
    del w.addresses[aid]
    return x("return", True)


def account_attributes(w, region):
    return {"supported-platforms": ["VPC"], "default-vpc": [region["vpc"]["id"]], "max-instances": ["20"],
            "vpc-max-security-groups-per-interface": ["5"], "max-elastic-ips": ["5"],
            "vpc-max-elastic-ips": [str(w.max_elastic_ips(region))]}


@action("DescribeAccountAttributes", {"AttributeName"}, mutates=False)
def describe_account_attributes(ctx):
    w, p, region = ctx.world, ctx.p, ctx.region
    attrs = account_attributes(w, region)
    names = p.list("AttributeName") or list(attrs)
    for name in names:
        if name not in attrs:
            raise bad_value("Value (%s) for parameter attributeName is invalid. Unknown attribute." % name)
    return item_set("accountAttributeSet", [
        [x("attributeName", name), item_set("attributeValueSet", [[x("attributeValue", v)] for v in attrs[name]])]
        for name in names])


# ---------------------------------------------------------- faults ----

FAULT_KEYS = {"action", "region", "zone", "instance_type", "market", "code", "status", "message",
              "delay_ms", "drop", "lose_reply", "partial", "capacity", "body", "content_type",
              "retry_after", "empty", "times", "after", "comment"}
EFFECTS = ("code", "delay_ms", "drop", "lose_reply", "partial", "capacity", "body", "empty")
# the list each Describe* answer holds, for "empty"
EMPTY_LISTS = {"DescribeInstances": "reservationSet", "DescribeAddresses": "addressesSet",
               "DescribeImages": "imagesSet", "DescribeInstanceTypeOfferings": "instanceTypeOfferingSet",
               "DescribeInstanceTypes": "instanceTypeSet", "DescribeKeyPairs": "keySet",
               "DescribePlacementGroups": "placementGroupSet", "DescribeSecurityGroups": "securityGroupInfo",
               "DescribeSpotPriceHistory": "spotPriceHistorySet", "DescribeSubnets": "subnetSet",
               "DescribeVpcs": "vpcSet"}


def check_fault(rule):
    if not isinstance(rule, dict):
        raise ValueError("a fault rule must be an object")
    unknown = set(rule) - FAULT_KEYS
    if unknown:
        raise ValueError("unknown fault rule keys: %s" % ", ".join(sorted(unknown)))
    if "action" not in rule:
        raise ValueError("a fault rule needs \"action\"")
    effects = [e for e in EFFECTS if e in rule]
    if len(effects) != 1:
        raise ValueError("a fault rule needs exactly one of %s" % ", ".join(EFFECTS))
    if effects[0] in ("partial", "capacity") and rule["action"] != "RunInstances":
        raise ValueError("\"%s\" only applies to RunInstances" % effects[0])
    if effects[0] == "empty" and rule["action"] not in EMPTY_LISTS:
        raise ValueError("\"empty\" applies to one of %s" % ", ".join(sorted(EMPTY_LISTS)))
    for k in ("delay_ms", "partial", "capacity", "times", "after", "status", "retry_after"):
        if k in rule and (not isinstance(rule[k], int) or isinstance(rule[k], bool) or rule[k] < 0):
            raise ValueError("\"%s\" must be a non-negative integer" % k)
    rule = dict(rule)
    rule["effect"] = effects[0]
    rule["left"] = rule.get("times")
    rule["skip"] = rule.get("after", 0)
    rule["hits"] = 0
    return rule


def load_faults(doc):
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list):
        raise ValueError("faults must be a JSON list of rules")
    return [check_fault(r) for r in doc]


def fault_matches(rule, facts):
    if rule["action"] != "*" and rule["action"] != facts["action"]:
        return False
    for key in ("region", "zone", "instance_type", "market"):
        if key not in rule:
            continue
        have = facts.get(key)
        wanted = rule[key] if isinstance(rule[key], list) else [rule[key]]
        if have is None or not any(wild_match(str(pat), have) for pat in wanted):
            return False
    return True


def pick_faults(facts):
    """(total delay in ms, the terminal rule or None); consumes times."""
    delay, chosen = 0, None
    for rule in FAULTS:
        if rule["left"] == 0 or not fault_matches(rule, facts):
            continue
        if rule["skip"] > 0:
            rule["skip"] -= 1
            continue
        if rule["effect"] == "delay_ms":
            delay += rule["delay_ms"]
        elif chosen is None:
            chosen = rule
        else:
            continue
        rule["hits"] += 1
        if rule["left"] is not None:
            rule["left"] -= 1
    return delay, chosen


def fault_message(code, facts):
    if code == "InsufficientInstanceCapacity" and facts.get("zone") and facts.get("instance_type"):
        return ("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). "
                "Our system will be working on provisioning additional capacity. You can currently get %s capacity "
                "by not specifying an Availability Zone in your request or choosing another zone."
                % (facts["instance_type"], facts["zone"], facts["instance_type"]))
    return DEFAULT_MESSAGES.get(code, "%s (injected fault)" % code)


def run_facts(ctx):
    facts = {"action": ctx.action, "region": ctx.region["name"]}
    if ctx.action == "RunInstances":
        facts["instance_type"] = ctx.p.get("InstanceType")
        facts["market"] = "spot" if ctx.p.get("InstanceMarketOptions.MarketType") == "spot" else "on-demand"
        try:
            facts["zone"] = resolve_zone(ctx, strict=False)
        except ApiError:
            facts["zone"] = None
    return facts


# ------------------------------------------------------------ auth ----


class AuthError(Exception):
    def __init__(self, reason, message=DEFAULT_MESSAGES["AuthFailure"], code="AuthFailure", debug=None):
        super().__init__(reason)
        self.reason, self.message, self.code, self.debug = reason, message, code, debug or {}


def parse_authorization(value):
    parts = fakeserve.auth_params(value)
    if parts is None:
        raise AuthError("Authorization is not AWS4-HMAC-SHA256",
                        "Authorization header is not AWS4-HMAC-SHA256 (only Signature Version 4 is accepted)")
    for k in ("Credential", "SignedHeaders", "Signature"):
        if not parts.get(k):
            raise AuthError("no %s" % k, "Authorization header requires '%s' parameter." % k)
    scope = parts["Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise AuthError("malformed Credential", "Credential should be scoped to a valid region, not '%s'." % parts["Credential"])
    return scope, parts["SignedHeaders"].split(";"), parts["Signature"]


def verify(method, path, query_pairs, header_pairs, body):
    """The credential scope's region, or raise AuthError."""
    headers = fakeserve.header_lists(header_pairs)
    auth = headers.get("authorization")
    if not auth:
        raise AuthError("no Authorization header", "Request is missing Authentication Token")
    scope, signed, signature = parse_authorization(auth[0])
    akid, date, region, service, _ = scope
    if akid != ARGS.access_key:
        raise AuthError("unknown access key id %s" % akid)
    if service != "ec2":
        raise AuthError("service %s is not ec2" % service,
                        "Credential should be scoped to correct service: 'ec2'.")
    if region not in WORLD.regions:
        raise AuthError("unknown region %s" % region,
                        "Credential should be scoped to a valid region, not '%s'." % region)
    amz_date = (headers.get("x-amz-date") or [""])[0].strip()
    if not re.match(r"^\d{8}T\d{6}Z$", amz_date):
        raise AuthError("no valid X-Amz-Date", "Request must contain a valid X-Amz-Date header (YYYYMMDDTHHMMSSZ).")
    if date != amz_date[:8]:
        raise AuthError("scope date %s is not the X-Amz-Date day %s" % (date, amz_date[:8]),
                        "Credential should be scoped to a valid date: '%s' is not '%s'." % (date, amz_date[:8]))
    signed_set = set(signed)
    for must in ("host", "x-amz-date"):
        if must not in signed_set:
            raise AuthError("%s is not signed" % must, "'%s' must be a signed header." % must.title())
    for name in signed:
        if name != name.lower() or name not in headers:
            raise AuthError("signed header %r missing" % name, "Signed header '%s' is missing from the request." % name)
    token = headers.get("x-amz-security-token")
    if ARGS.session_token is not None:
        if not token or token[0] != ARGS.session_token or "x-amz-security-token" not in signed_set:
            raise AuthError("session token missing, wrong or unsigned",
                            "The security token included in the request is invalid.")
    elif token:
        raise AuthError("a session token was sent to a fake without one",
                        "The security token included in the request is invalid.")
    host = headers["host"][0]
    canonical, to_sign, expected = fakeserve.sigv4(
        Credentials(ARGS.access_key, ARGS.secret_key, ARGS.session_token), "ec2", region, signed_set,
        header_pairs, method, "http://%s%s" % (host, path), body, amz_date, params=query_pairs)
    debug = {"canonical_request": canonical, "string_to_sign": to_sign}
    if sorted(signed_set) != signed:   # botocore's SignedHeaders: the sorted lowercase names, once each
        raise AuthError("SignedHeaders not sorted lowercase names", debug=debug)
    if not hmac.compare_digest(expected, signature):
        raise AuthError("signature mismatch", debug=debug)
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    if abs(when - now()) > MAX_SKEW_S:
        raise AuthError("X-Amz-Date %s is more than 15 minutes from the fake's clock" % amz_date,
                        "Request has expired. Timestamp date is %s; the server time is %s." % (amz_date, iso(now())),
                        code="RequestExpired")
    return region


# ------------------------------------------------------------ HTTP ----

def log(entry):
    if ARGS.log:
        with open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def request_id(n):
    return "00000000-0000-4000-8000-%012d" % n


def log_params(params):
    out = {}
    for k, v in params.items():
        if k in ("Action", "Version"):
            continue
        if k == "UserData":
            try:
                v = user_data_text(base64.b64decode(v, validate=True))
            except (binascii.Error, ValueError, OSError, EOFError):
                pass
        out[k] = v
    return out


class Handler(fakeserve.Handler):
    server_name = "AmazonEC2"

    def clock(self):
        return now()

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def reply(self, status, body, content_type, rid=None, retry_after=None):
        data = body.encode("utf-8")
        self.send_response(status)   # also sends Date (date_time_string: the fake's clock)
        self.send_header("Content-Type", content_type)
        if rid:
            self.send_header("x-amzn-RequestId", rid)
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def handle_any(self):
        body = self.read_body()
        parts = urlsplit(self.path)
        with LOCK:
            SEQ["n"] += 1
            n = SEQ["n"]
        if servicequotas.wants(self, parts.path):
            return servicequotas.handle(self, n, parts, body, {"args": ARGS, "regions": WORLD.regions, "now": now,
                                                               "log": log, "lock": LOCK, "request_id": request_id})
        if iam.wants(self, parts.path):
            return iam.handle(self, n, parts, body, {"args": ARGS, "now": now, "log": log, "lock": LOCK,
                                                     "request_id": request_id})
        if parts.path.startswith("/_fake/"):
            return self.control(n, parts.path[len("/_fake/"):], body)
        return self.api(n, parts, body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any

    # -- the EC2 API --
    def api(self, n, parts, body):
        rid = request_id(n)
        entry = {"n": n, "request_id": rid, "action": None, "region": None, "params": {}, "status": None,
                 "error": None, "client_token": None, "fault": None}
        query = parse_qsl(parts.query, keep_blank_values=True)
        params = dict(query)

        def fail(code, message, status=None):
            err = ApiError(code, message, status)
            entry.update(status=err.status, error=code)
            with LOCK:
                log(entry)
            self.reply(err.status, error_xml(code, message, rid), "text/xml;charset=UTF-8", rid)

        if self.command not in ("GET", "POST"):
            return fail("UnsupportedHttpVerb", "The HTTP verb %s is not supported" % self.command, 405)
        if self.command == "POST" and body:
            ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if ctype != "application/x-www-form-urlencoded":
                return fail("InvalidRequest", "Content-Type must be application/x-www-form-urlencoded, not '%s'"
                            % self.headers.get("Content-Type", ""))
            try:
                form = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
            except (UnicodeDecodeError, ValueError):
                return fail("InvalidRequest", "The request body is not valid application/x-www-form-urlencoded UTF-8")
            params.update(dict(form))
        entry["action"] = params.get("Action")
        entry["params"] = log_params(params)
        entry["client_token"] = params.get("ClientToken")
        try:
            region_name = verify(self.command, parts.path or "/", query, self.headers.items(), body)
        except AuthError as e:
            try:
                entry["region"] = parse_authorization(self.headers.get("Authorization", ""))[0][2]
            except AuthError:
                pass
            entry["auth"] = dict(e.debug, reason=e.reason)
            return fail(e.code, e.message)   # every answer has a Date header (the fake's clock)
        entry["region"] = region_name
        if parts.path not in ("", "/"):
            return fail("InvalidRequest", "The request path must be /, not %s" % parts.path)
        if "Version" not in params:
            return fail("MissingParameter", "The request must contain the parameter Version")
        if params["Version"] != API_VERSION:
            return fail("NoSuchVersion", "The requested version (%s) of service AmazonEC2 does not exist"
                        % params["Version"])
        name = params.get("Action")
        if not name:
            return fail("MissingAction", "The request must contain the parameter Action")
        if name not in ACTIONS:
            return fail("InvalidAction", "The action %s is not valid for this web service." % name)
        fn, allowed, mutates = ACTIONS[name]
        for k in params:
            if k.split(".", 1)[0] not in allowed:
                return fail("UnknownParameter", "The parameter %s is not recognized" % k)
        token = params.get("ClientToken") if name == "RunInstances" else None
        if token:
            # EC2 makes at most one launch per token, also for a request that
            # arrives while the first with that token is still in flight
            # (aws.md 2.2; "Ensuring idempotency"): it waits for the first,
            # then answers as that one did (its reservation, or a fresh try
            # when it failed).
            with LOCK:
                gate = INFLIGHT.setdefault((region_name, token), threading.Lock())
            with gate:
                return self.carry_out(entry, rid, name, region_name, params, fail)
        return self.carry_out(entry, rid, name, region_name, params, fail)

    def carry_out(self, entry, rid, name, region_name, params, fail):
        fn, _, mutates = ACTIONS[name]
        with LOCK:
            ctx = Ctx(name, WORLD.regions[region_name], Params({k: v for k, v in params.items()
                                                                 if k not in ("Action", "Version")}), rid)
            facts = run_facts(ctx)
            delay, rule = pick_faults(facts)
        if delay:
            entry["fault"] = "delay"
            time.sleep(delay / 1000.0)
        if rule is not None:
            entry["fault"] = rule["effect"]
            if rule["effect"] == "drop":
                entry["status"] = 0
                with LOCK:
                    log(entry)
                self.close_connection = True
                return
            if rule["effect"] == "code":
                code = rule["code"]
                return fail(code, rule.get("message") or fault_message(code, facts), rule.get("status"))
            if rule["effect"] == "empty":
                entry["status"] = 200
                with LOCK:
                    log(entry)
                return self.reply(200, ok_xml(name, rid, item_set(EMPTY_LISTS[name], [])),
                                  "text/xml;charset=UTF-8", rid)
            if rule["effect"] == "body":
                status = rule.get("status", 500)
                entry.update(status=status, error="HTTP %d" % status)
                with LOCK:
                    log(entry)
                return self.reply(status, rule["body"], rule.get("content_type", "text/html"), rid,
                                  rule.get("retry_after"))
            if rule["effect"] == "partial":
                ctx.partial = rule["partial"]
            if rule["effect"] == "capacity":
                ctx.capacity = rule["capacity"]
        with LOCK:
            try:
                if not mutates:
                    ctx.dry_run_point()
                out = fn(ctx)
            except ApiError as e:
                entry.update(status=e.status, error=e.code)
                log(entry)
                xml = error_xml(e.code, e.message, rid)
                status = e.status
            else:
                status = 200
                entry["status"] = 200
                if rule is not None and rule["effect"] == "lose_reply":
                    entry["status"] = 0
                log(entry)
                xml = ok_xml(name, rid, out)
        if rule is not None and rule["effect"] == "lose_reply":
            self.close_connection = True
            return
        self.reply(status, xml, "text/xml;charset=UTF-8", rid)

    # -- control endpoints --
    def control(self, n, name, body):
        global WORLD
        rid = request_id(n)
        try:
            doc = json.loads(body) if body.strip() else {}
        except ValueError:
            doc = None
        entry = {"n": n, "request_id": rid, "action": "_fake/" + name, "region": None,
                 "params": doc if doc is not None else {"_raw": body.decode("utf-8", "replace")},
                 "status": 200, "error": None, "client_token": None, "fault": None}
        status, out, ctype = 200, {"ok": True}, "application/json"
        if BOOT is not None and (self.command, name) == ("POST", "reset"):
            BOOT.reset()   # outside LOCK: a node ending now takes it
        with LOCK:
            route = (self.command, name)
            if route == ("GET", "state"):
                out = WORLD.state_json()
            elif route == ("POST", "reset"):
                WORLD = World(SEED)
            elif route == ("POST", "advance"):
                for inst in WORLD.instances.values():
                    if inst["state"] in ("pending", "shutting-down"):
                        WORLD.advance(inst, force=True)
            elif route == ("POST", "preempt"):
                inst, refused = live_instance(doc, spot=True)
                notice_s = doc.get("notice_s", 0) if isinstance(doc, dict) else 0
                action = doc.get("action", "terminate") if isinstance(doc, dict) else "terminate"
                if refused:
                    status, out = refused
                elif not isinstance(notice_s, (int, float)) or notice_s < 0 or \
                        action not in ("terminate", "stop", "hibernate"):
                    status, out = 400, {"error": "notice_s must be a number >= 0, action "
                                                 "terminate|stop|hibernate"}
                elif notice_s > 0:
                    inst["notice"] = {"action": action,
                                      "time": iso(now() + notice_s).replace(".000Z", "Z")}
                    threading.Timer(notice_s, interrupt_later, (inst["id"],)).start()
                else:
                    inst["doomed"] = False
                    WORLD.set_state(inst, "terminated", "spot")
            elif route == ("POST", "finish"):
                # the node's job ended: its bootstrap wrote a line to the
                # serial console and powered the instance off
                inst, refused = live_instance(doc)
                if refused:
                    status, out = refused
                else:
                    inst["console"] = inst.get("console", "") + str(doc.get("console", ""))
                    inst["doomed"] = False
                    WORLD.set_state(inst, "terminated", "guest")
            elif route == ("POST", "node"):
                inst, refused = live_instance(doc)
                if refused:
                    status, out = refused
                else:
                    if "public_ip" in doc:
                        inst["public_ip"] = str(doc["public_ip"])
                    inst["console"] = inst.get("console", "") + str(doc.get("console", ""))
            elif route == ("GET", "instance_credentials"):
                out = BOOT.credentials() if BOOT is not None else []
            elif route == ("GET", "boot") and BOOT is not None:
                out = BOOT.describe()
            elif route == ("GET", "checkip"):
                out, ctype = CHECKIP, "text/plain"
            elif route == ("GET", "faults"):
                out = FAULTS
            elif route == ("POST", "faults"):
                try:
                    FAULTS.extend(load_faults(doc))
                    out = {"ok": True, "rules": len(FAULTS)}
                except ValueError as e:
                    status, out = 400, {"error": str(e)}
            elif route == ("DELETE", "faults"):
                FAULTS.clear()
            else:
                status, out = 404, {"error": "no control endpoint %s /_fake/%s" % route}
            entry["status"] = status
            log(entry)
        text = out if isinstance(out, str) else json.dumps(out, indent=1)
        self.reply(status, text, ctype, rid)


def interrupt_later(iid):
    """The end of a spot notice (/_fake/preempt with notice_s): the
    instance is terminated, unless it is gone already."""
    with LOCK:
        inst = WORLD.instances.get(iid)
        if inst is not None and inst.get("notice") and \
                inst["state"] not in ("shutting-down", "terminated"):
            inst["doomed"] = False
            WORLD.set_state(inst, "terminated", "spot")


def live_instance(doc, spot=False):
    """The instance a control request names ({"instance_id": ID}) while it
    is neither shutting down nor terminated (nor, with spot, on demand), and
    None; or None and (status, out) refusing the request: 404, 400, 409."""
    iid = doc.get("instance_id") if isinstance(doc, dict) else None
    inst = WORLD.instances.get(iid)
    if inst is None:
        return None, (404, {"error": "no instance %r" % iid})
    if spot and inst["lifecycle"] != "spot":
        return None, (400, {"error": "%s is not a spot instance" % iid})
    if inst["state"] in ("shutting-down", "terminated"):
        return None, (409, {"error": "%s is already %s" % (iid, inst["state"])})
    return inst, None


SEED = None


def main():
    global ARGS, WORLD, SEED, BOOT
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--access-key", default="AKIDEXAMPLE")
    ap.add_argument("--secret-key", default="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    ap.add_argument("--session-token")
    ap.add_argument("--log")
    ap.add_argument("--exit-on-stdin-eof", action="store_true")
    ap.add_argument("--page-size", type=int, default=2)
    ap.add_argument("--pending-polls", type=int, default=1)
    ap.add_argument("--faults")
    ap.add_argument("--seed")
    ap.add_argument("--catalog", default=os.path.join(here, "..", "..", "providers", "aws", "catalog.csv"))
    ap.add_argument("--clock-offset", type=float, default=0.0)
    ap.add_argument("--print-seed", action="store_true")
    ap.add_argument("--boot", metavar="DIR")
    ARGS = ap.parse_args()
    if ARGS.page_size < 0 or ARGS.pending_polls < 0:
        ap.error("--page-size and --pending-polls must not be negative")
    seed = default_seed(ARGS.catalog)
    if ARGS.print_seed:
        json.dump(seed, sys.stdout, indent=1)
        print()
        return
    if ARGS.seed:
        with open(ARGS.seed, encoding="utf-8") as f:
            seed.update(json.load(f))
    SEED = seed
    WORLD = World(SEED)
    if ARGS.faults:
        with open(ARGS.faults, encoding="utf-8") as f:
            try:
                FAULTS.extend(load_faults(json.load(f)))
            except ValueError as e:
                ap.error("--faults %s: %s" % (ARGS.faults, e))
    server = fakeserve.listen(Handler)
    if ARGS.boot:
        try:
            BOOT = ec2_boot.Booter(ARGS.boot, server.server_address[1], boot_log, boot_powered_off,
                                   lambda profile: boot_role_of(profile))
        except (RuntimeError, OSError) as e:
            ap.error("--boot %s: %s" % (ARGS.boot, e))
    fakeserve.serve(server, ARGS.exit_on_stdin_eof)


if __name__ == "__main__":
    main()
